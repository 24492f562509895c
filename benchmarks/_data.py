"""Real runs kept in `benchmarks/data/` (see its SOURCES.md), unpacked for a benchmark."""

from __future__ import annotations

import tarfile
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
LONG_RUNS = ("openhands-v1-sonnet4-pylint-167",)  # OpenHands V1 conversation directories, archived as NAME.tar.xz


def long_runs(into: Path) -> list[Path]:
    """Unpack each kept long run into `into` and return its directories (a trajectory each)."""
    out = []
    for name in LONG_RUNS:
        with tarfile.open(DATA / f"{name}.tar.xz") as archive:
            archive.extractall(into, filter="data")
        out.append(into / name)
    return out
