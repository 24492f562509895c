"""The fixture and the long real run the benchmarks read beside the corpus's five (`../shared/corpus/raw`).

The 167-step OpenHands run is an entry of the corpus (`benchmarks/corpus.json`), stored with the
other 66 in `../shared/corpus/all/` (their sources and licences are in `../shared/corpus/`); it
is read from there in place. `$WORKINGSET_CORPUS_ALL` points elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUG17 = ROOT / "fixtures" / "bug17"
CORPUS_ALL = Path(
    os.environ.get("WORKINGSET_CORPUS_ALL") or ROOT.parent / "shared" / "corpus" / "all"
)
LONG_RUNS = (
    "openhands-v1-sonnet4-pylint-167",
)  # OpenHands V1 conversation directories of the corpus


def long_runs() -> list[Path]:
    """The long runs' directories (a trajectory each) in `CORPUS_ALL`; exits naming the first one absent."""
    out = [CORPUS_ALL / name for name in LONG_RUNS]
    for path in out:
        if not path.is_dir():
            sys.exit(
                f"the long run {path} is absent (../shared/corpus/all, or $WORKINGSET_CORPUS_ALL)"
            )
    return out


def cost_runs(corpus: Sequence[Path], into: Path) -> list[tuple[str, Path]]:
    """(name, run directory) of bug17, each corpus trajectory and each long run, the latter two imported into `into`."""
    from trajectories import detect  # a sibling script of this one

    from workingset.importers import import_trajectory, write_import

    runs = [("fixtures/bug17", BUG17)]
    for path in [*corpus, *long_runs()]:
        write_import(import_trajectory(detect(path), path), into / path.name)
        runs.append((path.name, into / path.name))
    return runs
