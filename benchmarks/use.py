"""What each strategy showed of what the next step used, and its bill with recalls, over the corpus (issue 31).

Run: .venv/bin/python benchmarks/use.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

Measured: bug17 and every entry of the corpus manifest (`benchmarks/corpus.json`) present
under the corpus root (`--root`, default `$WORKINGSET_CORPUS` or `../shared/corpus/raw`),
each imported with the project's importer. Per run, `compare --use`'s measure
(`workingset.compare.recalls.compare_use`) of v14, v15, v16, v15 with no bound (`v15:budget=100000000`, the
largest budget it takes: its format alone) and every baseline `compare` knows, under
`anthropic` and `openai-5.6` (5-minute TTL, 1,024-token minimum, reads 0.1×; the whole
request): each strategy's share of used identifiers in view, the steps that need a recall,
the steps with something gone, and its bill as recorded and with recalls. The baselines are
billed twice: sending the agent's fixed prompt (as the agent did) and without it; v14, v15 and v16
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
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BUG17  # noqa: E402
from _results import CHECK_FLAG, ROOT, write_section  # noqa: E402
from corpus import MANIFEST, corpus_root, load_manifest, resolve  # noqa: E402

from workingset.encoders.journal.base import MAX_BUDGET  # noqa: E402

MODELS = ("anthropic", "openai-5.6")
# v15 at the largest budget it takes: no context of these runs comes near it, so it never compacts or pages. Its
# bill beside v15's splits what v15 costs into its format (the preamble, the case, heads and decision rows) and what
# its bound (pages, compactions and the recalls they imply) saves.
UNBOUNDED = f"v15:budget={MAX_BUDGET}"
CANDIDATES, TRANSCRIPT = ("v14", "v15", "v16", UNBOUNDED), "full-transcript"
SIZES = ((0, 20, "<20"), (20, 40, "20–39"), (40, 150, "40–149"), (150, 10**9, "≥150"))


def load_run(job: tuple[str, str, str, str]) -> tuple[list[Any], Any, dict[str, Any]]:
    """One run of a job (name, source, format, scratch directory), imported with the project's importer (bug17 as it
    is): its contexts, its fixed prompt, and `compare_use`'s keyword arguments for it."""
    from workingset.compare.billing import CacheOptions
    from workingset.importers import import_trajectory, write_import
    from workingset.runs.layout import read_fixed_prompt, read_retries, read_run

    name, source, fmt, tmp = job
    path = Path(source)
    if path != BUG17:
        out = Path(tmp) / name
        write_import(import_trajectory(fmt, path), out)
        path = out
    contexts = [ctx for _, ctx in read_run(path)]
    fixed = read_fixed_prompt(path)
    options = dict(
        fixed=fixed,
        cache=MODELS,
        cache_options=CacheOptions(),
        retries=read_retries(path, contexts),
    )
    return contexts, fixed, options


def measure(job: tuple[str, str, str, str]) -> dict[str, Any]:
    """One run: per strategy its use counts, and per model its bills (with and without the fixed prompt)."""
    from workingset.compare.engine import baseline_renderers, version_renderer
    from workingset.compare.recalls import compare_use

    contexts, fixed, options = load_run(job)
    with_fixed = {**{c: version_renderer(c) for c in CANDIDATES}, **baseline_renderers(fixed)}
    uc = compare_use(contexts, with_fixed, **options)  # type: ignore[arg-type]
    bare = compare_use(contexts, baseline_renderers(None), **options) if fixed is not None else uc  # type: ignore[arg-type]
    row: dict[str, Any] = {
        "contexts": len(contexts),
        "use": {s: uc.use(s).to_json() for s in uc.strategies},
    }
    row["bill"] = {m: {s: {"recorded": b.as_recorded.cost, "with_recalls": b.cost} for s, b in uc.bills[m].items()}
                   for m in MODELS}  # fmt: skip
    # Where each bill goes: cache reads, cache writes (what a compaction rewrites included), uncached input, output.
    row["parts"] = {m: {s: _parts(b, options["cache_options"].cached_price) for s, b in uc.bills[m].items()}
                    for m in MODELS}  # fmt: skip
    row["bare"] = {m: {s: (bare.bills[m][s] if s in bare.bills[m] else uc.bills[m][s]).cost for s in uc.strategies}
                   for m in MODELS}  # fmt: skip
    row["bare_recorded"] = {m: {s: (bare.bills[m][s] if s in bare.bills[m] else uc.bills[m][s]).as_recorded.cost
                                for s in uc.strategies} for m in MODELS}  # fmt: skip
    return row


def _parts(bill: Any, cached_price: float) -> dict[str, float]:
    """A with-recalls bill in its parts, in full-price input-token units; they add up to `bill.cost`."""
    read = cached_price * bill.input.read
    return {"read": read, "written": bill.input.cost - bill.input.uncached - read,
            "uncached": float(bill.input.uncached), "output": bill.output_cost}  # fmt: skip


PARTS = (
    ("read", "cache reads"),
    ("written", "cache writes"),
    ("uncached", "uncached input"),
    ("output", "output"),
)


def where_it_goes(rows: list[dict[str, Any]]) -> str:
    """Per model and strategy (the candidates and the transcript), each part of the with-recalls bill over `rows`,
    as a ratio to the transcript's whole bill; then, under the first model, how v15's parts compare, in words."""
    table, said = [], []
    for m in MODELS:
        whole = math.fsum(r["bill"][m][TRANSCRIPT]["with_recalls"] for r in rows)
        sums = {
            s: {k: math.fsum(r["parts"][m][s][k] for r in rows) for k, _ in PARTS}
            for s in (*CANDIDATES, TRANSCRIPT)
        }
        for s, parts in sums.items():
            table.append(
                [
                    m,
                    s,
                    *(_x(parts[k], whole) for k, _ in PARTS),
                    _x(math.fsum(parts.values()), whole),
                ]
            )
        if m != MODELS[0]:
            continue  # the other model's parts are in the table, in the same proportions
        v14, v15, t = sums["v14"], sums["v15"], sums[TRANSCRIPT]
        more = math.fsum(v15.values()) - math.fsum(v14.values())
        said.append(f"under {m}, v15's cache reads are {_x(v15['read'], t['read'])}× the transcript's and its cache "
                    f"writes {_x(v15['written'], t['written'])}×; v15's bill passes v14's by {_x(more, whole)} of "
                    f"the transcript's bill, {_x(v15['written'] - v14['written'], whole)} of it in cache writes and "
                    f"{_x(v15['read'] - v14['read'], whole)} in cache reads; output is {_x(t['output'], whole)} of "
                    "the transcript's bill, the same for every strategy but for the added turns (the other model's parts are "
                    f"in the table); v15's format alone ({UNBOUNDED}, never compacted or paged) costs "
                    f"{_x(math.fsum(sums[UNBOUNDED].values()), whole)} of the transcript's bill, and its bound (pages, "
                    f"compactions and the recalls they imply) brings that to {_x(math.fsum(v15.values()), whole)}")  # fmt: skip
    headers = ["model", "strategy", *(label for _, label in PARTS), "whole bill"]
    return (tabulate(table, headers=headers, tablefmt="github", disable_numparse=True) + "\n\n"
            + "Over these runs, " + "; ".join(said) + ". A compaction rewrites what it keeps (v15 keeps two thirds "
            "of the journal's room, v14 a third), and every request reads what the context shows; no context "
            "strategy goes below the output's share.")  # fmt: skip


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


def _runs(missing: list[str]) -> str:
    return (
        "none"
        if not missing
        else f"{len(missing)}: " + ", ".join(missing[:6]) + (" …" if len(missing) > 6 else "")
    )


def _ratio(r: dict[str, Any], s: str, m: str, bare: bool = False) -> float:
    """Strategy `s`'s bill with recalls on the run row `r` under model `m`, over the transcript's (`bare`: both
    without the agent's fixed prompt)."""
    if bare:
        return r["bare"][m][s] / r["bare"][m][TRANSCRIPT]
    return r["bill"][m][s]["with_recalls"] / r["bill"][m][TRANSCRIPT]["with_recalls"]


def targets(
    measured: list[tuple[str, dict[str, Any], dict[str, Any]]], candidate: str = "v15"
) -> str:
    """Issue 32's targets for `candidate`, each with its figure, its figure on the holdout runs alone (the manifest's
    runs that played no part in choosing v15's rules) and the runs that miss it, under both models.

    Read from the same rows as the tables: in view and recall steps over the corpus (and its
    main and holdout splits); per run of 20+ contexts the bill with recalls at most the
    transcript's (with its fixed prompt), of 40+ also without it; on shorter runs at most 1.1x
    or at most the preamble's tokens as billed above it (written once at 1.25x, then read at
    0.1x by each later context); over the corpus at most 0.6x; on 40+ contexts no baseline both
    cheaper and more in view, and cheaper than every baseline.
    """
    from workingset.encoders import get_encoder
    from workingset.tokens.count import count_tokens

    preamble = count_tokens(get_encoder(candidate).preamble, "cl100k_base")
    corpus = [m for m in measured if m[0] != "fixtures/bug17"]
    rows = []

    def share(sel: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> tuple[float, float]:
        u = [r["use"][candidate] for _, _, r in sel]
        used, in_view = sum(x["used"] for x in u), sum(x["in_view"] for x in u)
        steps, recall = sum(x["steps"] for x in u), sum(x["steps_needing_recall"] for x in u)
        return (in_view / used if used else 1.0), (recall / steps if steps else 0.0)

    splits = [
        ("all", corpus),
        *((v, [m for m in corpus if m[1]["split"] == v]) for v in ("main", "holdout")),
    ]
    views = {k: share(v) for k, v in splits if v}
    held = views.get("holdout")  # None: the manifest has no holdout run

    def held_pct(k: int) -> str:
        return "n/a" if held is None else f"{100 * held[k]:.1f}%"

    rows.append(["used identifiers in view ≥ 97%", ", ".join(f"{k} {100 * v[0]:.1f}%" for k, v in views.items()),
                 held_pct(0), "met" if all(v[0] >= 0.97 for v in views.values()) else "missed", ""])  # fmt: skip
    rows.append(["steps needing a recall ≤ 3%", ", ".join(f"{k} {100 * v[1]:.1f}%" for k, v in views.items()),
                 held_pct(1), "met" if all(v[1] <= 0.03 for v in views.values()) else "missed", ""])  # fmt: skip
    holdout = {n for n, i, _ in corpus if i["split"] == "holdout"}

    def per_run(target: str, runs: list[str], missing: list[str]) -> list[str]:
        """A per-run target's row: over every run, over the holdout runs alone, the verdict and the runs that miss."""
        held_runs = [n for n in runs if n in holdout]
        held_missing = [n for n in missing if n in holdout]
        return [target, f"{len(runs) - len(missing)} of {len(runs)} runs",
                f"{len(held_runs) - len(held_missing)} of {len(held_runs)} runs", "met" if not missing else "missed",
                _runs(missing)]  # fmt: skip

    def frac(u: dict[str, int]) -> float:
        return u["in_view"] / u["used"] if u["used"] else 1.0

    long = [m for m in corpus if m[2]["contexts"] >= 40]
    long_names = [n for n, _, _ in long]
    below = [n for n, _, r in long if frac(r["use"][candidate]) < frac(r["use"]["masking-10"])]
    rows.append(per_run("in view ≥ masking-10's on every run of 40+ contexts", long_names, below))
    for m in MODELS:

        def ratio(r: dict[str, Any], s: str = candidate, bare: bool = False, m: str = m) -> float:
            return _ratio(r, s, m, bare)

        over20 = [n for n, _, r in corpus if r["contexts"] >= 20 and ratio(r) > 1.0]
        runs20 = [n for n, _, r in corpus if r["contexts"] >= 20]
        rows.append(
            per_run(f"{m}: ≤ 1.0x the transcript on every run of 20+ contexts", runs20, over20)
        )
        bare40 = [n for n, _, r in long if ratio(r, bare=True) > 1.0]
        rows.append(per_run(f"{m}: ≤ 1.0x the transcript without its fixed prompt on every run of 40+", long_names,
                            bare40))  # fmt: skip
        short = [(n, r) for n, _, r in corpus if r["contexts"] < 20]
        allowed = [n for n, r in short if ratio(r) > 1.1 and r["bill"][m][candidate]["with_recalls"]
                   - r["bill"][m][TRANSCRIPT]["with_recalls"] > preamble * (1.25 + 0.1 * (r["contexts"] - 1))]  # fmt: skip
        rows.append(per_run(f"{m}: shorter runs ≤ 1.1x, or at most the preamble ({preamble:,} tokens) as billed above it",
                            [n for n, _ in short], allowed))  # fmt: skip

        def over(
            sel: list[tuple[str, dict[str, Any], dict[str, Any]]], m: str = m
        ) -> tuple[float, float]:
            return (math.fsum(r["bill"][m][candidate]["with_recalls"] for _, _, r in sel),
                    math.fsum(r["bill"][m][TRANSCRIPT]["with_recalls"] for _, _, r in sel))  # fmt: skip

        total, base = over(corpus)
        rows.append([f"{m}: ≤ 0.6x the transcript over the corpus", _x(total, base),
                     _x(*over([c for c in corpus if c[0] in holdout])), "met" if total <= 0.6 * base else "missed", ""])  # fmt: skip
        dominated, pricier = [], []
        for n, _, r in long:
            cost, view = ratio(r), frac(r["use"][candidate])
            others = [s for s in r["use"] if s not in (*CANDIDATES, TRANSCRIPT)] + [TRANSCRIPT]
            if any(ratio(r, s) < cost and frac(r["use"][s]) > view for s in others):
                dominated.append(n)
            if any(ratio(r, s) <= cost for s in others):
                pricier.append(n)
        rows.append(per_run(f"{m}: on the frontier on every run of 40+ (no baseline cheaper and more in view)",
                            long_names, dominated))  # fmt: skip
        rows.append(
            per_run(f"{m}: cheaper than every baseline on every run of 40+", long_names, pricier)
        )
    return tabulate(rows, headers=["target (issue 32)", candidate, f"{candidate}, holdout runs alone", "verdict",
                                   "runs that miss"], tablefmt="github", disable_numparse=True)  # fmt: skip


def why_over(measured: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    """Why v15 costs more than the transcript on runs of 20+ contexts, under the first model: of those runs, the ones
    whose format alone (v15 with no bound) already does, and the ones where only the bound does; and on how many of
    the runs of 20+ the bound costs more than it saves."""
    m = MODELS[0]
    runs = [r for n, _, r in measured if n != "fixtures/bug17" and r["contexts"] >= 20]
    over = [r for r in runs if _ratio(r, "v15", m) > 1.0]
    format_over = [r for r in over if _ratio(r, UNBOUNDED, m) > 1.0]
    bound_worse = [r for r in runs if _ratio(r, "v15", m) > _ratio(r, UNBOUNDED, m)]
    return (f"Why, under {m}: of the {len(over)} runs of 20+ contexts on which v15 costs more than the transcript, "
            f"{len(format_over)} cost more with no bound too ({UNBOUNDED}: v15's format alone passes the "
            f"transcript's bill there) and {len(over) - len(format_over)} only with it. On {len(bound_worse)} of the "
            f"{len(runs)} runs of 20+ contexts v15's bound costs more than it saves: its compactions rewrite more than "
            "the reads they spare before the run ends. What each part of the format costs: `benchmarks/v15_parts.py`; "
            "what leaner entries would show and cost: `benchmarks/v15_lean.py`.")  # fmt: skip


def check_transcript(measured: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    """The full transcript shows every output, and v15 with no bound every entry whole: every used identifier in
    view on every run, and no step needing a recall."""
    for name, _, row in measured:
        for s in (TRANSCRIPT, UNBOUNDED):
            u = row["use"][s]
            if u["in_view"] != u["used"] or u["steps_needing_recall"]:
                sys.exit(f"{name}: {s} shows {u['in_view']} of {u['used']} used identifiers, "
                         f"{u['steps_needing_recall']} steps need a recall")  # fmt: skip


def corpus_jobs(root: Path, manifest: Path) -> tuple[list[Any], list[Any], dict[str, dict[str, str]],
                                                     list[tuple[str, str, str]]]:  # fmt: skip
    """The manifest's entries, those present under `root`, each run's split, agent and model, and the jobs
    (name, source, format): bug17 first, then every run present. Exits when an entry differs from the manifest."""
    entries = [resolve(e, root) for e in load_manifest(manifest)]
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
    jobs = [("fixtures/bug17", str(BUG17), "")]
    for r in present:
        info[r.entry.name] = {
            "split": r.entry.split,
            "agent": r.entry.agent.split(" ")[0],
            "model": r.entry.model or "n/a",
        }
        # The manifest says each run's format (a single-file OpenHands event list has no telling layout).
        jobs.append((r.entry.name, str(r.path), r.entry.format))
    return entries, present, info, jobs


def run_jobs(
    work: Callable[[tuple[str, str, str, str]], Any], jobs: list[tuple[str, str, str]], n: int
) -> list[Any]:
    """`work` on every job, in a scratch directory for the imports, on `n` worker processes; results in job order."""
    with tempfile.TemporaryDirectory() as tmp:
        tasks = [(name, source, fmt, tmp) for name, source, fmt in jobs]
        if n > 1:
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(work, tasks))
        return [work(task) for task in tasks]


def corpus_arguments(description: str, section: str) -> tuple[argparse.Namespace, Path]:
    """The command line of a script measuring a corpus manifest's runs (--root, --manifest, --section, --jobs,
    --check), and the corpus root it names."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--root", type=Path, default=None, help="corpus root (default: $WORKINGSET_CORPUS or ../shared/corpus/raw)")  # fmt: skip
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpus manifest")
    parser.add_argument("--section", default=section, help="RESULTS.md section to write")
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (one run at a time each)"
    )
    parser.add_argument(CHECK_FLAG, action="store_true", help="compare with RESULTS.md instead of writing it")  # fmt: skip
    args = parser.parse_args()
    return args, (ROOT / args.root).resolve() if args.root else corpus_root()


def shown_root(root: Path) -> str:
    """The corpus root as a section names it: beside the repository, relative to it."""
    try:
        return f"../{root.relative_to(ROOT.parent)}"
    except ValueError:
        return str(root)


def main() -> None:
    """Import and measure every run; write the section."""
    args, root = corpus_arguments(__doc__.splitlines()[0], "use")
    entries, present, info, jobs = corpus_jobs(root, args.manifest)
    rows = run_jobs(measure, jobs, args.jobs)
    measured = [(name, info[name], row) for (name, _, _), row in zip(jobs, rows)]
    check_transcript(measured)
    names = list(rows[0]["use"])
    corpus = [m for m in measured if m[0] != "fixtures/bug17"]
    shown = shown_root(root)
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
    parts += ["", "### Where the bill goes", "", "Each part of the with-recalls bill over the corpus's runs (bug17 aside), "
              "as a ratio to the transcript's whole bill; cache writes include what each compaction rewrites.", "",
              where_it_goes([r for _, _, r in corpus])]  # fmt: skip
    parts += ["", "### v15's targets", "", "Issue 32's targets for v15 over these runs (bug17 aside), with recalls billed; "
              "the baselines are the transcript strategies above (neither v14 nor v15 with no bound is one). The third column is each target on the "
              "manifest's holdout runs alone, which played no part in choosing v15's rules.", "", targets(measured), "",
              why_over(measured)]  # fmt: skip
    parts += ["", "### v16's targets", "", "The same targets for v16, which takes v15's choice by use with v14's share "
              "and page and writes compact entries: none of its rules was chosen by measuring runs, so every run here "
              "is one it was not chosen on; the third column is the holdout runs alone, as above.", "",
              targets(measured, "v16")]  # fmt: skip
    parts += ["", "### Each run", "", "<details><summary>Per run and strategy (bills over the same run's full "
              "transcript)</summary>", "", per_run(measured, names), "", "</details>"]  # fmt: skip
    write_section(
        args.section,
        f"What the next step used, in view, and the bill with recalls ({shown})",
        "\n".join(parts),
    )


if __name__ == "__main__":
    main()
