"""The frozen corpus: its states, one hash line per state and version, and adding a new version.

Usage: .venv/bin/python tests/frozen/corpus.py add-version N

`hashes.txt` holds one line per state and encoder version: the state's name, `vN`, the
rendered text's length in characters, its hash (as stored contexts record it) and a hash
of the shown and indexed ID lists. Lines of a version are written once, when the version
is added, and never rewritten: `add-version` refuses a version that already has lines.
"""

from __future__ import annotations

import gzip
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple

import msgspec

from workingset.encoders import ENCODERS
from workingset.model.hashing import hash_text
from workingset.model.state import State, validate_state
from workingset.runs.layout import read_run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STATES = HERE / "states.jsonl.gz"
HASHES = HERE / "hashes.txt"
BUG17 = ROOT / "fixtures" / "bug17"
ADD_COMMAND = ".venv/bin/python tests/frozen/corpus.py add-version {n}"
MANIFEST_DIGITS = 16  # of the manifest's xxh3-128 hex: plenty to tell lists apart


class Case(NamedTuple):
    """One state of the corpus and the hypothesis it is rendered for."""

    name: str
    state: State
    hypothesis: str


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    hypothesis: str
    forged_hashes: bool
    state: State


@cache
def cases() -> tuple[Case, ...]:
    """The generated and imported states, then every bug17 context, in a fixed order."""
    out = []
    for raw in gzip.decompress(STATES.read_bytes()).splitlines():
        line = msgspec.json.decode(raw, type=_Line)
        if not line.forged_hashes:  # forged states break the content-hash rule on purpose
            validate_state(line.state, line.name)
        out.append(Case(line.name, line.state, line.hypothesis))
    out.extend(Case(path.stem, ctx.state, ctx.hypothesis) for path, ctx in read_run(BUG17))
    return tuple(out)


def hash_line(case: Case, version: int) -> str:
    """The committed line for one state rendered by one version."""
    out = ENCODERS[version].render(case.state, case.hypothesis)
    manifest = hash_text(" ".join(out.shown) + " | " + " ".join(out.indexed)).split(":")[1][:MANIFEST_DIGITS]
    return f"{case.name} v{version} {out.chars} {out.hash} {manifest}"


def committed() -> dict[int, dict[str, str]]:
    """version -> state name -> committed line."""
    out: dict[int, dict[str, str]] = {}
    for line in HASHES.read_text(encoding="utf-8").splitlines():
        name, version = line.split(" ", 2)[:2]
        out.setdefault(int(version[1:]), {})[name] = line
    return out


def add_version(n: int) -> int:
    """Append the lines of version `n`, which must be registered and have no lines yet."""
    if n not in ENCODERS:
        sys.exit(f"no encoder v{n}; available: {', '.join(f'v{k}' for k in ENCODERS)}")
    if n in (committed() if HASHES.exists() else {}):
        sys.exit(f"v{n} already has frozen lines in {HASHES.relative_to(ROOT)}; they are never rewritten")
    lines = [hash_line(case, n) for case in cases()]
    with HASHES.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    print(f"added {len(lines)} lines for v{n} to {HASHES.relative_to(ROOT)}")
    return len(lines)


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] != "add-version" or not argv[1].isdigit():
        sys.exit(__doc__.split("\n\n")[1])
    add_version(int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
