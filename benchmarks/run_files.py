"""Run files: bytes on disk of an imported run in each layout, against its source's bytes.

Run: .venv/bin/python benchmarks/run_files.py [--corpus DIR]

Every trajectory under the corpus (default `../shared/corpus/raw` beside the repository)
is imported once and written in both layouts: `contexts` (one stored-context file per
step, each holding the whole state) and `run` (one run file, `workingset/run@1`, every
payload and record stored once). For each it reports the bytes of the source, of each
layout and their ratio to the source (the target: a run file at most 1.5× its source), and
the time to write and to read back each layout (medians, as a ratio: run file / contexts,
measured alternately in the same process). Writes the `run_files` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, median, paired, write_section  # noqa: E402
from trajectories import CORPUS, _rel, detect  # noqa: E402

from workingset.importers import ENCODER, HYPOTHESIS, import_trajectory  # noqa: E402
from workingset.runs import make_stored_context, read_run, write_layout  # noqa: E402


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def measure(path: Path, fmt: str, work: Path, repeat: int) -> list[str]:
    """One table row: steps, bytes of source and layouts, ratios, write and read time ratios."""
    im = import_trajectory(fmt, path)
    contexts = [make_stored_context(im.request_id(k), ENCODER, HYPOTHESIS, s) for k, s in enumerate(im.states, 1)]

    def write(layout: str) -> Path:
        out = work / layout
        shutil.rmtree(out, ignore_errors=True)
        write_layout(out, contexts, layout)
        return out

    src, files, packed = _bytes(path), _bytes(write("contexts")), _bytes(write("run"))
    w_run, w_files = paired(lambda: write("run"), lambda: write("contexts"), repeat, warmup=1)
    r_run, r_files = paired(lambda: read_run(work / "run"), lambda: read_run(work / "contexts"), repeat, warmup=1)
    return [
        path.name, f"{len(contexts)}", f"{src:,}", f"{files:,}", f"{files / src:.1f}×", f"{packed:,}",
        f"{packed / src:.2f}×", f"{median(w_run) / median(w_files):.2f}", f"{median(r_run) / median(r_files):.2f}",
    ]  # fmt: skip


def main() -> None:
    """Measure every corpus trajectory and write the `run_files` section of RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of trajectories (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions per layout (default: %(default)s)")
    args = parser.parse_args()
    entries = sorted(p for p in args.corpus.iterdir() if detect(p)) if args.corpus.is_dir() else []
    if not entries:
        sys.exit(f"no trajectories under {args.corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(p, detect(p), Path(tmp), args.repeat) for p in entries]
    headers = ["trajectory", "steps", "source bytes", "contexts layout", "vs source", "run file", "vs source",
               "write time run/contexts", "read time run/contexts"]  # fmt: skip
    table = tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * 8, disable_numparse=True)
    body = (
        f"Corpus: `{_rel(args.corpus)}`. Each trajectory is imported once (`workingset import`, encoder v7) and "
        "written in both layouts into a temporary directory: `contexts` is one stored-context file per step, "
        "each holding the whole state, so it grows with the square of the run; `run` (the import's default) is "
        "one run file in which every payload and record is stored once and each turn adds only what changed. "
        "Bytes are on-disk file sizes; the time columns are medians of alternate runs in one process, run file "
        "over contexts layout (below 1: the run file is faster). The target is a run file of at most 1.5× its "
        "source's bytes.\n\n" + table + "\n"
    )
    write_section("run_files", "Run files: bytes on disk per layout", body)


if __name__ == "__main__":
    main()
