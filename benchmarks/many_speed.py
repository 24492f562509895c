"""Many-run compare speed: the 67 corpus runs at once, cold and warm, as a user runs it (issue 33, item 11).

Run: .venv/bin/python benchmarks/many_speed.py [--corpus DIR] [--no-all]

Every trajectory of the corpus (default `../shared/corpus/all` beside the repository, the 67
runs of `benchmarks/corpus.json`) is imported (run file layout) into one folder, and the folder
is compared by the command line in a fresh process, `--summary` (the aggregate: what a user
reads of 67 runs), with compare's default `--jobs`:

- the floor, the baseline every time is divided by: `compare DIR --base v10 --candidate v14
  --summary`, warm (two versions, no baseline, no cache model: reading, rendering and counting);
- the common command, `compare DIR --baselines --cache anthropic,openai-5.6 --summary`, cold
  (an empty cache directory: token counts and bills) and then warm (the same directory again);
- `--all` (every version) with the same options, cold (another empty directory), unless `--no-all`.

Each row gives wall and CPU seconds (user and system time of the command and its workers) and
the load average when it started: the machine is shared, so wall time can be several times the
CPU time over the jobs. Targets (issue 33): the common command within 120 s cold and 30 s warm
on 2 cores, `--all` within 360 s cold. Writes the `many_speed` section of RESULTS.md (timed).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, write_section  # noqa: E402
from trajectories import detect  # noqa: E402

from workingset.importers import import_trajectory, write_import  # noqa: E402

CLI = [sys.executable, "-m", "workingset.cli"]
CORPUS = ROOT.parent / "shared" / "corpus" / "all"
COMMON = ("--baselines", "--cache", "anthropic,openai-5.6", "--summary")
TARGETS = {"common, cold": 120.0, "common, warm": 30.0, "--all, cold": 360.0}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and its workers, once reaped
    return used.ru_utime + used.ru_stime


def _time(folder: Path, cache: Path, *args: str) -> tuple[float, float, float]:
    """(wall, CPU, load average at the start) of one `compare` process over the folder."""
    env = {**os.environ, "WORKINGSET_CACHE_DIR": str(cache)}
    load, cpu, start = os.getloadavg()[0], _cpu(), time.perf_counter()
    subprocess.run([*CLI, "compare", str(folder), *args], env=env, cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start, _cpu() - cpu, load


def main() -> None:
    """Time the many-run commands over the corpus and write the `many_speed` section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=CORPUS, help="trajectories (default: %(default)s)"
    )
    parser.add_argument("--no-all", action="store_true", help="leave out the --all measurement")
    parser.add_argument(
        "--check", action="store_true", help="(timed section: nothing is rechecked)"
    )
    args = parser.parse_args()
    from workingset.compare.parallel import default_jobs

    entries = sorted(p for p in args.corpus.iterdir() if detect(p)) if args.corpus.is_dir() else []
    if not entries:
        sys.exit(f"no trajectories under {args.corpus}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work, contexts = Path(tmp), 0
        for path in entries:
            imported = import_trajectory(detect(path), path)
            write_import(imported, work / "runs" / path.name)
            contexts += len(imported.states)
        folder = work / "runs"
        _time(folder, work / "floor", "--base", "v10", "--candidate", "v14", "--summary")  # warm it
        floor = _time(folder, work / "floor", "--base", "v10", "--candidate", "v14", "--summary")
        plan = [("common, cold", "common", COMMON), ("common, warm", "common", COMMON)]
        if not args.no_all:
            plan.append(("--all, cold", "all", ("--all", *COMMON)))
        measured = {name: _time(folder, work / cache, *extra) for name, cache, extra in plan}
    headers = [
        "command",
        "wall s",
        "CPU s",
        "load at start",
        "wall / floor",
        "CPU / floor",
        "target (wall)",
    ]
    rows.append(["floor: `--base v10 --candidate v14 --summary`, warm", f"{floor[0]:.1f}", f"{floor[1]:.1f}",
                 f"{floor[2]:.2f}", "1.00", "1.00", ""])  # fmt: skip
    for name, (wall, cpu, load) in measured.items():
        target = TARGETS[name]
        verdict = (
            f"{target:.0f} s: {'met' if wall <= target else f'missed by {wall - target:.0f} s'}"
        )
        rows.append([name, f"{wall:.1f}", f"{cpu:.1f}", f"{load:.2f}", f"{wall / floor[0]:.2f}",
                     f"{cpu / floor[1]:.2f}", verdict])  # fmt: skip
    table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True,
                     colalign=["left"] + ["right"] * 6)  # fmt: skip
    body = (
        f"Corpus: `{args.corpus.relative_to(ROOT.parent) if args.corpus.is_relative_to(ROOT.parent) else args.corpus}`, "
        f"{len(entries)} runs, {contexts:,} contexts, imported into one folder (run files). Each command is "
        f"`workingset compare FOLDER …` in a fresh process with compare's default `--jobs` ({default_jobs()} here); "
        "`common` is `--baselines --cache anthropic,openai-5.6 --summary`, cold with an empty cache "
        "directory (token counts and bills), then warm with the same one; `--all, cold` adds `--all` with another empty one. "
        "The floor (two versions, no baseline, no cache model, warm) is measured in the same run, and every "
        "time is also given as a multiple of it, which travels across machines better than seconds.\n\n"
        + table
    )
    write_section(
        "many_speed", "Many-run compare speed: the common command and --all", body, timed=True
    )


if __name__ == "__main__":
    main()
