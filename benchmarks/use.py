"""What each strategy showed of what the next step used, and its bill with recalls, over the corpus (issue 31).

Run: .venv/bin/python benchmarks/use.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

Measured: bug17 and every entry of the corpus manifest (`benchmarks/corpus.json`) present
under the corpus root (`--root`, default `$WORKINGSET_CORPUS` or `../shared/corpus/raw`),
each imported with the project's importer. Per run, `compare --use`'s measure
(`workingset.compare.recalls.compare_use`) of v14, v15 and every baseline `compare` knows, under
`anthropic` and `openai-5.6` (5-minute TTL, 1,024-token minimum, reads 0.1×; the whole
request): each strategy's share of used identifiers in view, the steps that need a recall,
the steps with something gone, and its bill as recorded and with recalls. The baselines are
billed twice: sending the agent's fixed prompt (as the agent did) and without it; v14 and v15
send none either way. The used identifiers are the same in both (the fixed prompt's text is never
counted as used).

Tables: the whole corpus; per stratum (contexts <20, 20–39, 40–149, ≥150; agent; model;
main and holdout); and per run. Ratios are to the full transcript's bill with its fixed
prompt. Writes the section `--section` (default `use`) of RESULTS.md (deterministic).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BUG17  # noqa: E402
from _results import CHECK_FLAG, ROOT, write_section  # noqa: E402
from corpus import MANIFEST, corpus_root, load_manifest, resolve  # noqa: E402
from trajectories import detect  # noqa: E402

MODELS = ("anthropic", "openai-5.6")
CANDIDATES, TRANSCRIPT = ("v14", "v15"), "full-transcript"
SIZES = ((0, 20, "<20"), (20, 40, "20–39"), (40, 150, "40–149"), (150, 10**9, "≥150"))


def measure(job: tuple[str, str, str]) -> dict[str, Any]:
    """One run: per strategy its use counts, and per model its bills (with and without the fixed prompt)."""
    from workingset.compare.billing import CacheOptions
    from workingset.compare.engine import baseline_renderers, version_renderer
    from workingset.compare.recalls import compare_use
    from workingset.importers import import_trajectory, write_import
    from workingset.runs.layout import read_fixed_prompt, read_retries, read_run

    name, source, tmp = job
    path = Path(source)
    if path != BUG17:
        out = Path(tmp) / name
        write_import(import_trajectory(detect(path), path), out)
        path = out
    contexts = [ctx for _, ctx in read_run(path)]
    fixed = read_fixed_prompt(path)
    options = dict(
        fixed=fixed,
        cache=MODELS,
        cache_options=CacheOptions(),
        retries=read_retries(path, contexts),
    )
    with_fixed = {**{c: version_renderer(c) for c in CANDIDATES}, **baseline_renderers(fixed)}
    uc = compare_use(contexts, with_fixed, **options)  # type: ignore[arg-type]
    bare = compare_use(contexts, baseline_renderers(None), **options) if fixed is not None else uc  # type: ignore[arg-type]
    row: dict[str, Any] = {
        "contexts": len(contexts),
        "use": {s: uc.use(s).to_json() for s in uc.strategies},
    }
    row["bill"] = {m: {s: {"recorded": b.as_recorded.cost, "with_recalls": b.cost} for s, b in uc.bills[m].items()}
                   for m in MODELS}  # fmt: skip
    row["bare"] = {m: {s: (bare.bills[m][s] if s in bare.bills[m] else uc.bills[m][s]).cost for s in uc.strategies}
                   for m in MODELS}  # fmt: skip
    row["bare_recorded"] = {m: {s: (bare.bills[m][s] if s in bare.bills[m] else uc.bills[m][s]).as_recorded.cost
                                for s in uc.strategies} for m in MODELS}  # fmt: skip
    return row


def _pct(part: int, whole: int) -> str:
    return "n/a" if not whole else f"{100 * part / whole:.1f}%"


def _x(value: float, base: float) -> str:
    return "n/a" if not base else f"{value / base:.3f}"


def summary(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Per strategy over `rows`: share in view, recall and gone steps, and each model's bill ratios to the transcript."""
    table = []
    for s in names:
        used = sum(r["use"][s]["used"] for r in rows)
        in_view = sum(r["use"][s]["in_view"] for r in rows)
        steps = sum(r["use"][s]["steps"] for r in rows)
        recall = sum(r["use"][s]["steps_needing_recall"] for r in rows)
        gone = sum(r["use"][s]["steps_with_gone"] for r in rows)
        cells = [
            s,
            _pct(in_view, used),
            f"{recall} ({_pct(recall, steps)})",
            f"{gone} ({_pct(gone, steps)})",
        ]
        for m in MODELS:
            base = math.fsum(r["bill"][m][TRANSCRIPT]["recorded"] for r in rows)
            base_with = math.fsum(r["bill"][m][TRANSCRIPT]["with_recalls"] for r in rows)
            rec = math.fsum(r["bill"][m][s]["recorded"] for r in rows)
            wr = math.fsum(r["bill"][m][s]["with_recalls"] for r in rows)
            bare = math.fsum(r["bare"][m][s] for r in rows)
            bare_base = math.fsum(r["bare"][m][TRANSCRIPT] for r in rows)
            cells += [_x(rec, base), _x(wr, base_with), _x(bare, bare_base)]
        table.append(cells)
    headers = ["strategy", "in view", "recall steps", "gone steps"]
    for m in MODELS:
        headers += [f"{m} as recorded", f"{m} with recalls", f"{m} with recalls, no fixed prompt"]
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


def per_run(measured: list[tuple[str, dict[str, Any], dict[str, Any]]], names: list[str]) -> str:
    """One line per run and strategy: share in view, recall and gone steps, and its bills over the transcript's."""
    table = []
    for name, info, row in measured:
        for s in names:
            u = row["use"][s]
            cells = [name, str(row["contexts"]), info["split"], s, _pct(u["in_view"], u["used"]),
                     str(u["steps_needing_recall"]), str(u["steps_with_gone"])]  # fmt: skip
            for m in MODELS:
                bill, base = row["bill"][m][s], row["bill"][m][TRANSCRIPT]
                cells += [_x(bill["recorded"], base["recorded"]), _x(bill["with_recalls"], base["with_recalls"]),
                          _x(row["bare"][m][s], row["bare"][m][TRANSCRIPT])]  # fmt: skip
            table.append(cells)
    headers = ["run", "contexts", "split", "strategy", "in view", "recall steps", "gone steps"]
    for m in MODELS:
        headers += [f"{m} as recorded", f"{m} with recalls", f"{m} no fixed prompt"]
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


def check_transcript(measured: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    """The full transcript shows every output: every used identifier in view on every run, by construction."""
    for name, _, row in measured:
        u = row["use"][TRANSCRIPT]
        if u["in_view"] != u["used"]:
            sys.exit(
                f"{name}: the full transcript shows {u['in_view']} of {u['used']} used identifiers"
            )


def main() -> None:
    """Import and measure every run; write the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="corpus root (default: $WORKINGSET_CORPUS or ../shared/corpus/raw)")  # fmt: skip
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpus manifest")
    parser.add_argument("--section", default="use", help="RESULTS.md section to write")
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (one run at a time each)"
    )
    parser.add_argument(CHECK_FLAG, action="store_true", help="compare with RESULTS.md instead of writing it")  # fmt: skip
    args = parser.parse_args()
    root = (ROOT / args.root).resolve() if args.root else corpus_root()
    entries = [resolve(e, root) for e in load_manifest(args.manifest)]
    if any(r.status == "mismatch" for r in entries):
        sys.exit(f"{root}: some entries differ from the manifest (benchmarks/corpus.py --check)")
    present = [r for r in entries if r.status == "present"]
    info = {
        "fixtures/bug17": {
            "split": "not in the manifest",
            "agent": "workingset session",
            "model": "n/a",
        }
    }
    jobs = [("fixtures/bug17", str(BUG17))]
    for r in present:
        info[r.entry.name] = {
            "split": r.entry.split,
            "agent": r.entry.agent.split(" ")[0],
            "model": r.entry.model or "n/a",
        }
        jobs.append((r.entry.name, str(r.path)))
    with tempfile.TemporaryDirectory() as tmp:
        work = [(name, source, tmp) for name, source in jobs]
        if args.jobs > 1:
            with ProcessPoolExecutor(
                args.jobs, mp_context=multiprocessing.get_context("fork")
            ) as pool:
                rows = list(pool.map(measure, work))
        else:
            rows = [measure(job) for job in work]
    measured = [(name, info[name], row) for (name, _), row in zip(jobs, rows)]
    check_transcript(measured)
    names = list(rows[0]["use"])
    corpus = [m for m in measured if m[0] != "fixtures/bug17"]
    try:
        shown = f"../{root.relative_to(ROOT.parent)}"
    except ValueError:
        shown = str(root)
    parts = [
        f"Corpus root `{shown}` ({len(present)} of the {len(entries)} entries of "
        f"`{args.manifest.resolve().relative_to(ROOT)}` present) and bug17. A used identifier is one the next step's "
        "command, thought or decision names (`workingset.model.used`: paths, dotted, underscored and camel-case names, "
        "`line N`, hashes) that occurs in an earlier output and not in the case, the task or the agent's fixed prompt; "
        "*in view*: the context's text holds it. *Recall steps*: steps with something one recall away (v14's archived or "
        "paged entries); *gone steps*: steps with something no recall brings back (a masked or cleared output: a re-run). "
        "Bills are ratios to the full transcript's (with its fixed prompt; the last column: both without), over the "
        "runs' sums: *as recorded* bills the recorded requests; *with recalls* adds a recall turn before each recall "
        "step and a re-run turn per output gone, and every turn's output tokens at the model's output price "
        "(docs/billing.md). The rule is a proxy: an agent may know a name without seeing it.",
        "",
        f"### The corpus ({len(corpus)} runs)",
        "",
        summary([r for _, _, r in corpus], names),
    ]
    strata: list[tuple[str, list[dict[str, Any]]]] = []
    for low, high, label in SIZES:
        strata.append(
            (f"contexts {label}", [r for _, _, r in corpus if low <= r["contexts"] < high])
        )
    for key in ("split", "agent", "model"):
        for value in sorted({i[key] for _, i, _ in corpus}):
            strata.append((f"{key} {value}", [r for _, i, r in corpus if i[key] == value]))
    for title, picked in strata:
        if picked:
            parts += ["", f"### {title} ({len(picked)} runs)", "", summary(picked, names)]
    bug17 = [r for n, _, r in measured if n == "fixtures/bug17"]
    parts += ["", "### bug17", "", summary(bug17, names)]
    parts += ["", "### Each run", "", "<details><summary>Per run and strategy (bills over the same run's full "
              "transcript)</summary>", "", per_run(measured, names), "", "</details>"]  # fmt: skip
    write_section(
        args.section,
        f"What the next step used, in view, and the bill with recalls ({shown})",
        "\n".join(parts),
    )


if __name__ == "__main__":
    main()
