"""A run pinned in a user's tests: every stored context verified, the export replayed, a golden `compare --json`.

What the pytest plugin (`pytest_plugin`, docs/testing.md) runs for each run it finds; usable
alone (`pin(run)`). A run is a directory of stored-context files (an export, an import) or a
run file. The golden is the run's `compare --json` output, kept beside it in the folder
`__snapshots__/` as `<run name>.compare.txt` (indented JSON; not `.json`, so that neither the
folder nor the file is taken for a run by `compare FOLDER`), with `"run"` the run's name, so
it does not depend on where the checkout is.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SNAPSHOTS = "__snapshots__"
DEFAULT_COMPARE_ARGS = ("--summary",)


class PinFailed(AssertionError):
    """A pinned run that no longer holds: the message says which check and what differs."""


def find_runs(root: str | os.PathLike[str]) -> list[Path]:
    """The runs under `root`, sorted: `root` itself if it is a run, else its entries that are runs.

    A run is a directory holding `.json` files (stored contexts or a run file), or a file
    (a run file). `__snapshots__/` and hidden entries are not runs.
    """
    from ..compare.many import is_run

    base = Path(root)
    if not base.is_dir():
        raise PinFailed(f"{base}: no such folder of runs")
    if _run_dir(base):
        return [base]
    return sorted(
        p
        for p in base.iterdir()
        if not p.name.startswith((".", "_")) and is_run(p) and (p.is_dir() or p.suffix == ".json")
    )


def _run_dir(path: Path) -> bool:
    return any(p.suffix == ".json" and p.is_file() for p in path.iterdir())


def golden_path(run: Path) -> Path:
    """Where the golden `compare --json` of `run` is kept: `__snapshots__/<name>.compare.txt` beside it."""
    return run.parent / SNAPSHOTS / f"{run.name}.compare.txt"


def verify_all(run: Path) -> int:
    """Verify every stored context of `run`; `PinFailed` naming each one that does not reproduce. Returns how many."""
    from ..runs.layout import read_run, verify_context

    verdicts = [verify_context(str(path), ctx) for path, ctx in read_run(run)]
    bad = [v for v in verdicts if v.status != "ok"]
    if bad:
        lines = [f"{v.file}: {v.status}" + "".join(f"\n    {d}" for d in v.diff) for v in bad]
        raise PinFailed(
            f"{len(bad)} of {len(verdicts)} stored contexts of {run} do not verify:\n"
            + "\n".join(lines)
        )
    return len(verdicts)


def replay(run: Path) -> bool:
    """Replay `run` if it is an export (it has `journal.jsonl`); `PinFailed` with the first divergence. False if not an export."""
    from ..eventlog.exports import JOURNAL
    from ..session.frozen_replay import replay_export

    if not (run.is_dir() and (run / JOURNAL).is_file()):
        return False
    report = replay_export(run)
    if report.divergence is not None:
        raise PinFailed(f"{run} does not replay:\n" + "\n".join(report.divergence.lines()))
    return True


def compare_text(run: Path, args: Sequence[str] = DEFAULT_COMPARE_ARGS) -> str:
    """`workingset compare RUN --json ARGS`, as the golden keeps it: indented, `"run"` the run's name, a final newline."""
    cmd = [
        sys.executable,
        "-m",
        "workingset.cli",
        "compare",
        str(run),
        "--json",
        "--jobs",
        "1",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise PinFailed(
            f"`{' '.join(cmd[2:])}` failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
        )
    data = json.loads(done.stdout)
    if isinstance(data, dict) and "run" in data:
        data["run"] = run.name
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def check_golden(
    run: Path, args: Sequence[str] = DEFAULT_COMPARE_ARGS, *, update: bool = False
) -> str:
    """Compare `run`'s `compare --json` with its golden; with `update`, write it instead. Returns what happened."""
    path = golden_path(run)
    now = compare_text(run, args)
    if update:
        if path.is_file() and path.read_text(encoding="utf-8") == now:
            return "unchanged"
        path.parent.mkdir(exist_ok=True)
        written = "updated" if path.is_file() else "written"
        path.write_text(now, encoding="utf-8")
        return written
    if not path.is_file():
        raise PinFailed(
            f"{run} has no golden `compare --json` ({path}); run pytest with --workingset-update to write it"
        )
    kept = path.read_text(encoding="utf-8")
    if kept != now:
        diff = difflib.unified_diff(
            kept.splitlines(), now.splitlines(), str(path), "compare --json now", lineterm=""
        )
        lines = list(diff)
        shown = "\n".join(lines[:60]) + (
            f"\n… {len(lines) - 60} more diff lines" if len(lines) > 60 else ""
        )
        raise PinFailed(
            f"{run}: `compare --json` differs from its golden (--workingset-update accepts it):\n{shown}"
        )
    return "matched"


def pin(
    run: str | os.PathLike[str],
    compare_args: Sequence[str] = DEFAULT_COMPARE_ARGS,
    *,
    update: bool = False,
) -> str:
    """Every check of one run, in order: verify, replay (an export), the golden. `PinFailed` at the first that fails."""
    path = Path(run)
    count = verify_all(path)
    replayed = replay(path)
    golden = check_golden(path, compare_args, update=update)
    return f"{count} stored contexts verified, {'replayed' if replayed else 'no export to replay'}, golden {golden}"
