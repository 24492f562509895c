"""Issue 22's cost targets for v14, checked run by run, under `anthropic` and `openai-5.6`.

Run: .venv/bin/python benchmarks/v14_targets.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

Measured: bug17, the 167-step run of `../shared/corpus/all/`, and every entry of the corpus
manifest (`benchmarks/corpus.json`) present under the corpus root (`--root`, default
`$WORKINGSET_CORPUS` or `../shared/corpus/raw` beside the repository), each imported with
the project's importer into a temporary directory. One `workingset compare RUN… --base v7
--candidate v14 --baselines --cache anthropic,openai-5.6 --json` bills them all (5-minute
TTL, 1,024-token minimum, reads 0.1×; the whole request: tools, schema, text). Per run and
model, the targets of issue 22 (item 3):

- **T** — v14 at most 1.0× the full transcript on a run of 20 contexts or more, at most 1.1×
  on a shorter one;
- **B** — on a run of 40 contexts or more, v14 cheaper than every other baseline `compare`
  knows (masking-10, last-5, and the anchors: last-5-polling-5, clear-tool-uses,
  gemini-masking, openhands-condenser);
- **V** — v14 at most 0.3× v7.

Rows are grouped by the manifest's `split` (`main`, `holdout`; runs not in the manifest
apart), each with how many runs hold each target and every miss by its ratio. Writes the
section `--section` (default `v14_targets`) of RESULTS.md (deterministic).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BUG17, long_runs  # noqa: E402
from _results import CHECK_FLAG, ROOT, write_section  # noqa: E402
from corpus import MANIFEST, corpus_root, load_manifest, resolve  # noqa: E402
from trajectories import detect  # noqa: E402

MODELS = ("anthropic", "openai-5.6")
TRANSCRIPT = "full-transcript"
SHORT, LONG = 20, 40  # contexts: the two run lengths
LIMIT_LONG, LIMIT_SHORT, V7_SHARE = 1.0, 1.1, 0.3
GROUPS = ("main", "holdout", "not in the manifest")


def compare(runs: list[Path], jobs: int) -> dict:
    """`workingset compare --json` over every run: the aggregate's rows, one per run."""
    argv = [sys.executable, "-m", "workingset.cli", "compare", *map(str, runs), "--base", "v7",
            "--candidate", "v14", "--baselines", "--cache", ",".join(MODELS), "--json",
            "--jobs", str(jobs)]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare failed ({done.returncode}): {done.stderr.strip()}")
    return {row["run"]: row for row in json.loads(done.stdout)["aggregate"]["rows"]}


def check(row: dict) -> tuple[list[str], list[str]]:
    """The row's cells (per model: ×transcript, ×cheapest other baseline, ×v7) and its misses."""
    n, cells, misses = row["contexts"], [], []
    for model in MODELS:
        cost = row["cost"][model]
        v14 = cost["v14"]
        t = v14 / cost[TRANSCRIPT]
        others = {k: c for k, c in cost.items() if k not in ("v14", "v7", TRANSCRIPT)}
        cheapest = min(others, key=others.__getitem__)
        b = v14 / others[cheapest]
        v = v14 / cost["v7"]
        limit = LIMIT_LONG if n >= SHORT else LIMIT_SHORT
        if t > limit:
            misses.append(f"{model} T {t:.3f}× > {limit}×")
        if n >= LONG and b >= 1:
            misses.append(f"{model} B {b:.3f}× {cheapest}")
        if v > V7_SHARE:
            misses.append(f"{model} V {v:.3f}× > {V7_SHARE}×")
        cells += [f"{t:.3f}", f"{b:.3f} ({cheapest})", f"{v:.3f}"]
    return cells, misses


def group_table(rows: list[tuple[str, dict]]) -> str:
    """The per-run table of one group and its summary lines."""
    table, held = [], {"T": 0, "B": 0, "V": 0}
    long_runs_seen, missed = 0, []
    for name, row in rows:
        cells, misses = check(row)
        table.append([name, row["contexts"], *cells, "; ".join(misses) or "all hold"])
        long_runs_seen += row["contexts"] >= LONG
        for target in held:
            held[target] += not any(f" {target} " in m for m in misses)
        missed += [f"{name}: {m}" for m in misses]
    held["B"] -= len(rows) - long_runs_seen  # B applies to runs of 40 contexts or more only
    headers = ["run", "contexts"] + [f"{m} {what}" for m in MODELS
                                     for what in ("×transcript", "×cheapest other baseline", "×v7")]  # fmt: skip
    lines = [
        tabulate(table, headers=[*headers, "misses"], tablefmt="github", disable_numparse=True),
        "",
        f"T held on {held['T']} of {len(rows)} runs, B on {held['B']} of the {long_runs_seen} "
        f"runs of {LONG}+ contexts, V on {held['V']} of {len(rows)} (both models).",
    ]
    return "\n".join(lines)


def main() -> None:
    """Import, bill and check every run; write the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="corpus root (default: %(default)s → $WORKINGSET_CORPUS or ../shared/corpus/raw)")  # fmt: skip
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpus manifest")
    parser.add_argument("--section", default="v14_targets", help="RESULTS.md section to write")
    parser.add_argument("--jobs", type=int, default=1, help="compare's worker processes")
    parser.add_argument(CHECK_FLAG, action="store_true", help="compare with RESULTS.md instead of writing it")  # fmt: skip
    args = parser.parse_args()
    root = (ROOT / args.root).resolve() if args.root else corpus_root()
    entries = [resolve(e, root) for e in load_manifest(args.manifest)]
    present = [r for r in entries if r.status == "present"]
    if any(r.status == "mismatch" for r in entries):
        sys.exit(f"{root}: some entries differ from the manifest (benchmarks/corpus.py --check)")
    from workingset.importers import import_trajectory, write_import

    with tempfile.TemporaryDirectory() as tmp:
        runs: list[tuple[str, str, Path]] = [("fixtures/bug17", GROUPS[2], BUG17)]
        for resolved in present:
            out = Path(tmp) / resolved.entry.name
            write_import(import_trajectory(detect(resolved.path), resolved.path), out)
            runs.append((resolved.entry.name, resolved.entry.split, out))
        names = {r.entry.name for r in present}
        splits = {r.entry.name: r.entry.split for r in entries}
        for path in long_runs():
            if path.name in names:  # the corpus holds it too: measured once, with its split
                continue
            out = Path(tmp) / "kept-runs" / path.name
            write_import(import_trajectory(detect(path), path), out)
            runs.append((path.name, splits.get(path.name, GROUPS[2]), out))
        rows = compare([path for _, _, path in runs], args.jobs)
        measured = [(name, split, rows[str(path)]) for name, split, path in runs]
    try:
        shown_root = root.relative_to(ROOT.parent)
        shown = f"../{shown_root}"
    except ValueError:
        shown = str(root)
    parts = [
        f"Corpus root `{shown}` ({len(present)} of the {len(entries)} entries of "
        f"`{args.manifest.resolve().relative_to(ROOT)}` present), bug17 and the 167-step run of "
        "`../shared/corpus/all/` (once: with its split when the corpus holds it too). Cells: v14's cost over the run as billed, divided by the full "
        "transcript's, by the cheapest other baseline's (named) and by v7's. Targets (issue 22): "
        f"T ≤ {LIMIT_LONG}× the transcript on runs of {SHORT}+ contexts, ≤ {LIMIT_SHORT}× on shorter; "
        f"B cheaper than every other baseline on runs of {LONG}+; V ≤ {V7_SHARE}× v7.",
    ]
    for group in GROUPS:
        picked = [(name, row) for name, split, row in measured if split == group]
        if picked:
            parts += ["", f"### {group} ({len(picked)} runs)", "", group_table(picked)]
    write_section(args.section, f"v14's cost targets ({shown})", "\n".join(parts))


if __name__ == "__main__":
    main()
