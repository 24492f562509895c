"""Compare speed: `workingset compare RUN --all --baselines` on real runs, cold and warm.

Run: .venv/bin/python benchmarks/compare_speed.py [--corpus DIR] [--run DIR ...] [--jobs N]

Every trajectory under the corpus (default `../shared/corpus/raw` beside the repository,
or `$WORKINGSET_CORPUS`), the long run of `../shared/corpus/all/`, and every run given
with `--run`, is imported (run file layout) and compared by the command line in a fresh
process, as a user runs it, each time with `--all --baselines` (every version and
baseline): `cold, --jobs 1` (one process), with an empty token cache directory; `cold`, as
a user runs it (no `--jobs`: the available CPUs, at most 8), with another empty one; `warm,
--jobs 1`, the first command again (token counts and the parsed vocabulary now on disk);
`warm`, without `--jobs`; and `off`, warm in memory terms but with `--no-token-cache`
(one process). `--jobs N` sets the parallel columns' jobs instead of the default. Wall-clock seconds of the whole process
(start-up included) and CPU seconds of the process and its workers, one run each.
It also counts the lines `compare` prints with and without `--summary`, and measures a
floor in the same run: `workingset compare RUN --base v8 --candidate v9 --summary` of the
longest run with a warm token cache (start-up, reading the run and two cheap versions:
what no `--all --baselines` can beat), so the cold time is also given as a multiple of
it, which travels across machines better than seconds. Writes the
`compare_speed` section of RESULTS.md (timed).
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

from _data import long_runs  # noqa: E402
from _results import ROOT, write_section  # noqa: E402
from trajectories import CORPUS, DEFAULT_CORPUS, detect  # noqa: E402

from workingset.importers import import_trajectory, write_import  # noqa: E402

CLI = [sys.executable, "-m", "workingset.cli"]


def _cpu() -> float:
    used = resource.getrusage(
        resource.RUSAGE_CHILDREN
    )  # reaped descendants: the command and its workers
    return used.ru_utime + used.ru_stime


def _compare(run: Path, cache: Path, *extra: str) -> tuple[str, str]:
    """('wall / CPU' seconds, stdout) of one `compare --all --baselines` process."""
    env = {**os.environ, "WORKINGSET_CACHE_DIR": str(cache)}
    cpu, start = _cpu(), time.perf_counter()
    out = subprocess.run([*CLI, "compare", str(run), "--all", "--baselines", *extra], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return f"{time.perf_counter() - start:.1f} / {_cpu() - cpu:.1f}", out.stdout


def measure(name: str, run: Path, steps: int, work: Path, jobs: list[str]) -> list[str]:
    cache = work / f"cache-{name}"
    cold, full = _compare(run, cache, "--jobs", "1")
    cold_jobs, _ = _compare(run, work / f"cache-{name}-jobs", *jobs)
    warm, _ = _compare(run, cache, "--jobs", "1")
    parallel, _ = _compare(run, cache, *jobs)
    off, _ = _compare(run, cache, "--no-token-cache", "--jobs", "1")
    _, short = _compare(run, cache, "--summary")
    return [
        name,
        f"{steps}",
        f"{len(full.splitlines())}",
        f"{len(short.splitlines())}",
        cold,
        cold_jobs,
        warm,
        parallel,
        off,
    ]


def _floor(run: Path, cache: Path, times: int = 3) -> float:
    """Wall seconds of the floor: the fastest of `times` warm `compare RUN --base v8 --candidate v9 --summary` processes.

    A floor is what nothing beats, so the fastest is taken: on a shared machine one run can
    be slowed by other work several times over.
    """
    _compare_plain(run, cache)  # warm its cache first
    env = {**os.environ, "WORKINGSET_CACHE_DIR": str(cache)}
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        subprocess.run([*CLI, "compare", str(run), "--base", "v8", "--candidate", "v9", "--summary", "--jobs", "1"],
                       env=env, cwd=ROOT, capture_output=True, check=True)  # fmt: skip
        best = min(best, time.perf_counter() - start)
    return best


def _compare_plain(run: Path, cache: Path) -> None:
    env = {**os.environ, "WORKINGSET_CACHE_DIR": str(cache)}
    subprocess.run([*CLI, "compare", str(run), "--base", "v8", "--candidate", "v9", "--summary", "--jobs", "1"], env=env,
                   cwd=ROOT, capture_output=True, check=True)  # fmt: skip


def _target(rows: list[list[str]], headers: list[str], floor: float) -> str:
    """The issue's target, checked on the longest run: `compare --all --baselines` within 5 s of wall time."""
    longest = max(rows, key=lambda r: int(r[1]))
    walls = {h: float(v.split(" / ")[0]) for h, v in zip(headers[4:8], longest[4:8])}
    said = "; ".join(
        f"{h} {w:.1f} s ({'met' if w <= 5 else 'missed'}, {w / floor:.1f}x the floor)"
        for h, w in walls.items()
    )
    return (
        f"\nFloor, measured in this run: `compare {longest[0]} --base v8 --candidate v9 --summary`, warm, the fastest of 3: "
        f"{floor:.1f} s.\n\nTarget, the longest run ({longest[0]}, {longest[1]} steps) within 5 s of wall time: {said}.\n"
    )


def main() -> None:
    """Time `compare` on every corpus run (and each `--run`) and write the `compare_speed` section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="directory of trajectories (default: %(default)s)",
    )
    parser.add_argument(
        "--run", type=Path, action="append", default=[], help="a run to time as well (repeatable)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="--jobs of the parallel measurement (default: none given, compare's own default)",
    )
    parser.add_argument(
        "--check", action="store_true", help="(timed section: only its sizes are checked)"
    )
    args = parser.parse_args()
    from workingset.compare.parallel import default_jobs

    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    said = f"--jobs {args.jobs}" if jobs else f"default --jobs ({default_jobs()} here)"
    entries = sorted(p for p in args.corpus.iterdir() if detect(p)) if args.corpus.is_dir() else []
    if not entries and not args.run:
        sys.exit(f"no trajectories under {args.corpus}")
    rows, longest = [], (0, Path())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for path in entries + long_runs():
            imported = import_trajectory(detect(path), path)
            write_import(imported, work / path.name)
            rows.append(measure(path.name, work / path.name, len(imported.states), work, jobs))
            longest = max(longest, (len(imported.states), work / path.name), key=lambda t: t[0])
        for run in args.run:
            steps = (
                len(
                    subprocess.run(
                        [*CLI, "verify", str(run)], capture_output=True, text=True
                    ).stdout.splitlines()
                )
                - 1
            )
            rows.append(measure(run.name, run, steps, work, jobs))
            longest = max(longest, (steps, run), key=lambda t: t[0])
        floor = _floor(
            longest[1], work / "cache-floor"
        )  # after the rows, so that it sees the same machine
    headers = ["run", "steps", "lines printed", "with --summary", "cold, --jobs 1", f"cold, {said}", "warm, --jobs 1",
               f"warm, {said}", "warm, --no-token-cache"]  # fmt: skip
    table = tabulate(
        rows,
        headers=headers,
        tablefmt="github",
        colalign=["left"] + ["right"] * 8,
        disable_numparse=True,
    )
    body = (
        f"Corpus: `CORPUS={DEFAULT_CORPUS}` beside the repository, and the 167-step OpenHands run of "
        "`../shared/corpus/all/`. Each run is imported (run file) and compared by "
        "`workingset compare RUN --all --baselines` in a fresh process: cold with `--jobs 1` (one process, empty token "
        f"cache directory), cold with {said} (another empty one: what a user's first `compare` of a run takes), warm "
        f"with `--jobs 1` (the same again as the first), warm with {said}, and warm with `--no-token-cache` and "
        "`--jobs 1` (tokenizes again; the parsed vocabulary is still read from disk). Each cell is `wall / CPU` seconds of the whole process "
        "(start-up included; CPU: user and system time of the command and its worker processes), one run each. "
        "The machine is shared with other work (see the load average), so wall time is up to several times the "
        "CPU time; on an idle machine the wall time of one process is about its CPU time, and with `--jobs` about "
        "the CPU time over the jobs. The line columns count what `compare` prints without and with "
        "`--summary`.\n\n" + table + "\n" + _target(rows, headers, floor)
    )
    write_section("compare_speed", "Compare speed: cold, warm and parallel", body, timed=True)


if __name__ == "__main__":
    main()
