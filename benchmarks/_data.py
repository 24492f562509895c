"""Real runs kept in `benchmarks/data/` (see its SOURCES.md), unpacked for a benchmark."""

from __future__ import annotations

import tarfile
from collections.abc import Sequence
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
BUG17 = DATA.parent.parent / "fixtures" / "bug17"
LONG_RUNS = (
    "openhands-v1-sonnet4-pylint-167",
)  # OpenHands V1 conversation directories, archived as NAME.tar.xz


def long_runs(into: Path) -> list[Path]:
    """Unpack each kept long run into `into` and return its directories (a trajectory each)."""
    out = []
    for name in LONG_RUNS:
        with tarfile.open(DATA / f"{name}.tar.xz") as archive:
            archive.extractall(into, filter="data")
        out.append(into / name)
    return out


def cost_runs(corpus: Sequence[Path], into: Path) -> list[tuple[str, Path]]:
    """(name, run directory) of bug17, each corpus trajectory and each kept long run, the latter two imported into `into`."""
    from trajectories import detect  # a sibling script of this one

    from workingset.importers import import_trajectory, write_import

    runs = [("fixtures/bug17", BUG17)]
    for path in [*corpus, *long_runs(into / "kept")]:
        write_import(import_trajectory(detect(path), path), into / path.name)
        runs.append((path.name, into / path.name))
    return runs
