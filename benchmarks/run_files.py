"""Run files: bytes on disk of an imported run in each layout, against its source's bytes.

Run: .venv/bin/python benchmarks/run_files.py [--corpus DIR] [--check]

Every trajectory under the corpus (default `../shared/corpus/raw` beside the repository,
or `$WORKINGSET_CORPUS`), and the 167-step run of `../shared/corpus/all/`, is imported once and written in both layouts: `contexts` (one
stored-context file per step, each holding the whole state) and `run` (one run file,
`workingset/run@1`, every payload and record stored once). For each it reports the bytes
of the source, of each layout and their ratio to the source (the target: a run file at
most 1.5× its source). Sizes only, so the section is deterministic. Writes the
`run_files` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import long_runs  # noqa: E402
from _results import write_section  # noqa: E402
from trajectories import CORPUS, DEFAULT_CORPUS, detect  # noqa: E402

from workingset.importers import ENCODER, HYPOTHESIS, import_trajectory  # noqa: E402
from workingset.runs.layout import make_stored_context, read_run, write_layout  # noqa: E402


def _bytes(path: Path) -> int:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if path.is_dir()
        else path.stat().st_size
    )


def measure(path: Path, fmt: str, work: Path) -> list[str]:
    """One table row: steps, bytes of the source and of each layout, ratios to the source."""
    im = import_trajectory(fmt, path)
    contexts = [
        make_stored_context(im.request_id(k), ENCODER, HYPOTHESIS, s)
        for k, s in enumerate(im.states, 1)
    ]
    sizes = {}
    for layout in ("contexts", "run"):
        out = work / path.name / layout
        write_layout(out, contexts, layout)
        assert [c for _, c in read_run(out)] == contexts  # what was written reads back as written
        sizes[layout] = _bytes(out)
    src = _bytes(path)
    return [
        path.name, f"{len(contexts)}", f"{src:,}", f"{sizes['contexts']:,}", f"{sizes['contexts'] / src:.1f}×",
        f"{sizes['run']:,}", f"{sizes['run'] / src:.2f}×",
    ]  # fmt: skip


def main() -> None:
    """Measure every corpus trajectory and write the `run_files` section of RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="directory of trajectories (default: %(default)s)",
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with RESULTS.md instead of writing it"
    )
    args = parser.parse_args()
    entries = sorted(p for p in args.corpus.iterdir() if detect(p)) if args.corpus.is_dir() else []
    if not entries:
        sys.exit(f"no trajectories under {args.corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        kept = long_runs()
        rows = [measure(p, detect(p), Path(tmp)) for p in entries + kept]
    headers = [
        "trajectory",
        "steps",
        "source bytes",
        "contexts layout",
        "vs source",
        "run file",
        "vs source",
    ]
    table = tabulate(
        rows,
        headers=headers,
        tablefmt="github",
        colalign=["left"] + ["right"] * 6,
        disable_numparse=True,
    )
    body = (
        f"Corpus: `CORPUS={DEFAULT_CORPUS}` beside the repository, and the 167-step OpenHands run of `../shared/corpus/all/`. Each trajectory is imported once (`workingset import`, its default encoder v14) and "
        "written in both layouts into a temporary directory: `contexts` is one stored-context file per step, "
        "each holding the whole state, so it grows with the square of the run; `run` (the import's default) is "
        "one run file in which every payload and record is stored once and each turn adds only what changed. "
        "Bytes are file sizes (a directory's: the sum of its files); both layouts are read back and checked "
        "equal to what was written. The target is a run file of at most 1.5× its source's bytes.\n\n"
        + table
        + "\n"
    )
    write_section("run_files", "Run files: bytes on disk per layout", body)


if __name__ == "__main__":
    main()
