"""Apply each mutation the frozen corpus must catch, run its test, report, and restore the file.

Run: .venv/bin/python tests/frozen/mutation_check.py

Each mutation is a one-line change of an encoder's output that the sampled snapshots
missed (issue 15). The check passes when the frozen-corpus test fails on every one of
them. The file is restored even when the run is interrupted; the script refuses to start
on a file with uncommitted changes, so it never overwrites work.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = "tests/encoders/test_frozen_corpus.py"
MUTATIONS = (  # (what it breaks, file, original text, mutated text)
    ("empty-rows remark when item_count and truncated are both null", "workingset/encoders/v01.py",
     "cap.truncated is not True", "cap.truncated is False"),
    ("v5 reference on an equal hash without equal payloads", "workingset/encoders/v05.py",
     "earlier is not None and earlier.payload == ev.payload", "earlier is not None"),
    ("fence language-tag limit 40 -> 39 characters", "workingset/encoders/_render.py",
     "FENCE_INFO_MAX_CHARS = 40", "FENCE_INFO_MAX_CHARS = 39"),
)  # fmt: skip


def failing_tests() -> list[str]:
    """The versions whose frozen-corpus test fails on the working tree as it is."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", TEST],
                         cwd=ROOT, capture_output=True, text=True).stdout  # fmt: skip
    # "FAILED tests/x.py::test_y[v5] - ..." -> "v5"
    return [line.split("[")[1].split("]")[0] for line in out.splitlines() if line.startswith("FAILED")]


def main() -> None:
    """Run every mutation; exit 1 if the test suite misses one."""
    if failing_tests():
        sys.exit(f"{TEST} fails before any mutation; fix that first")
    missed = 0
    for what, rel, old, new in MUTATIONS:
        path = ROOT / rel
        if subprocess.run(["git", "diff", "--quiet", "--", rel], cwd=ROOT).returncode:
            sys.exit(f"{rel} has uncommitted changes; commit or stash them first")
        original = path.read_text()
        if original.count(old) != 1:
            sys.exit(f"{rel}: expected {old!r} exactly once; update MUTATIONS")
        try:
            path.write_text(original.replace(old, new))
            failed = failing_tests()
        finally:
            path.write_text(original)
        missed += not failed
        verdict = f"caught, for {', '.join(failed)}" if failed else "MISSED"
        print(f"{what} ({rel}: {old!r} -> {new!r}): {verdict}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
