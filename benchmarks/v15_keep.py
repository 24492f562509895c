"""v15's one measured parameter, the share of the journal's room a compaction keeps, at a third, a half and two thirds.

Run: .venv/bin/python benchmarks/v15_keep.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

v15 keeps, at each compaction, the entries used last within a share of the journal's room
(`workingset.encoders.journal.walk15.KEEP`). Its other parameters are rules of the budget; this
one was chosen by measuring: of three simple splits of the room between what a compaction
keeps and what grows before the next one (a third, as v14; a half; two thirds), the smallest
whose share of used identifiers in view reaches issue 32's 97% on the corpus's main split.
This script makes that choice again from the runs, and shows what each share costs.

Measured: every entry of the corpus manifest (`benchmarks/corpus.json`) present under the
corpus root (`--root`, default `$WORKINGSET_CORPUS` or `../shared/corpus/raw`), imported and
measured as `benchmarks/use.py` measures them (`compare_use`, `anthropic` and `openai-5.6`, every
recall billed): v15 with each share (each worker process sets `walk15.KEEP` before it renders;
v15 as released keeps two thirds), and v14 beside them. bug17 is in neither split and is left
out. Tables: the main split, which the choice reads; the holdout split, which played no part
in it; all runs. With `--manifest benchmarks/unseen.json` (runs outside the corpus, all holdout) nothing is
chosen: the tables show how the choice holds there. Writes the section `--section` (default `v15_keep`) of
RESULTS.md (deterministic).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, write_section  # noqa: E402
from use import (  # noqa: E402
    MODELS,
    TRANSCRIPT,
    _pct,
    _x,
    corpus_arguments,
    corpus_jobs,
    load_run,
    run_jobs,
    shown_root,
)

SHARES = ((1, 3), (1, 2), (2, 3))  # the three simple splits of the room
TARGET = 0.97  # issue 32: used identifiers in view over the corpus


def measure(job: tuple[str, str, str, str]) -> dict[str, Any]:
    """One run: v14's and v15's (at each share) use counts and with-recalls bills, and the transcript's bill."""
    from workingset.compare.engine import baseline_renderers, version_renderer
    from workingset.compare.recalls import compare_use
    from workingset.encoders.journal import walk15

    contexts, fixed, options = load_run(job)
    released = walk15.KEEP
    out: dict[str, Any] = {}
    base = compare_use(contexts, {"v14": version_renderer("v14"), TRANSCRIPT: baseline_renderers(fixed)[TRANSCRIPT]},
                       **options)  # fmt: skip
    out["v14"] = _row(base, "v14")
    out[TRANSCRIPT] = _row(base, TRANSCRIPT)
    try:
        for share in SHARES:
            walk15.KEEP = share  # read at each compaction; this process only
            # A new renderer per share: its kept walk is made under the share.
            measured = compare_use(contexts, {"v15": version_renderer("v15")}, **options)
            out[_label(share)] = _row(measured, "v15")
    finally:
        walk15.KEEP = released
    return out


def _row(uc: Any, strategy: str) -> dict[str, Any]:
    return {
        "use": uc.use(strategy).to_json(),
        "bill": {m: uc.bills[m][strategy].cost for m in MODELS},
    }


def _label(share: tuple[int, int]) -> str:
    return f"v15, keep {share[0]}/{share[1]}"


def _in_view(rows: list[dict[str, Any]], s: str) -> float:
    used = sum(r[s]["use"]["used"] for r in rows)
    return sum(r[s]["use"]["in_view"] for r in rows) / used if used else 1.0


def table(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Per strategy over `rows`: share in view, steps needing a recall, and each model's with-recalls bill ratio."""
    out = []
    for s in names:
        used = sum(r[s]["use"]["used"] for r in rows)
        in_view = sum(r[s]["use"]["in_view"] for r in rows)
        steps = sum(r[s]["use"]["steps"] for r in rows)
        recall = sum(r[s]["use"]["steps_needing_recall"] for r in rows)
        cells = [s, _pct(in_view, used), f"{recall} ({_pct(recall, steps)})"]
        for m in MODELS:
            base = math.fsum(r[TRANSCRIPT]["bill"][m] for r in rows)
            cells.append(_x(math.fsum(r[s]["bill"][m] for r in rows), base))
        out.append(cells)
    headers = ["strategy", "in view", "recall steps"] + [f"{m} with recalls" for m in MODELS]
    return tabulate(out, headers=headers, tablefmt="github", disable_numparse=True)


def choice(main: list[dict[str, Any]]) -> str:
    """The sentence that makes the choice: the smallest share whose in-view share on the main split reaches the target."""
    from workingset.encoders.journal import walk15

    reached = [s for s in SHARES if _in_view(main, _label(s)) >= TARGET]
    chosen = min(reached, key=lambda s: Fraction(*s)) if reached else None
    views = "; ".join(f"{s[0]}/{s[1]}: {100 * _in_view(main, _label(s)):.1f}%" for s in SHARES)
    said = f"On the main split ({len(main)} runs) the share in view is {views}. "
    if chosen is None:
        return said + f"No share reaches {TARGET:.0%}."
    released = "the share v15 was released with" if chosen == walk15.KEEP else (
        f"not the share v15 was released with ({walk15.KEEP[0]}/{walk15.KEEP[1]})")  # fmt: skip
    return (
        said
        + f"The smallest share that reaches {TARGET:.0%} is {chosen[0]}/{chosen[1]}: {released}."
    )


def trend(splits: list[tuple[str, list[dict[str, Any]]]]) -> str:
    """Whether, on each split, a larger share shows more and costs more under every model (what is kept is read by
    the next requests and rewritten by the next compaction)."""
    said = []
    for title, rows in splits:
        if not rows:
            continue
        views = [_in_view(rows, _label(s)) for s in SHARES]
        bills = {
            m: [math.fsum(r[_label(s)]["bill"][m] for r in rows) for s in SHARES] for m in MODELS
        }
        more = all(a < b for a, b in zip(views, views[1:]))
        dearer = [m for m in MODELS if all(a < b for a, b in zip(bills[m], bills[m][1:]))]
        shows = "shows more" if more else "does not always show more"
        if len(dearer) == len(MODELS):
            costs = f"costs more under {' and '.join(MODELS)}"
        elif dearer:
            costs = f"costs more under {', '.join(dearer)} only"
        else:
            costs = "does not always cost more under either model"
        said.append(f"on the {title} runs each larger share {shows} and {costs}")
    return (
        "What a compaction keeps is what the next requests read and what the next compaction rewrites: "
        + "; ".join(said)
        + "."
    )


def main() -> None:
    """Import and measure every run of the manifest; write the section."""
    args, root = corpus_arguments(__doc__.splitlines()[0], "v15_keep")
    entries, present, info, jobs = corpus_jobs(root, args.manifest)
    jobs = [j for j in jobs if j[0] != "fixtures/bug17"]
    rows = run_jobs(measure, jobs, args.jobs)
    split = {name: info[name]["split"] for name, _, _ in jobs}
    main_rows = [r for (name, _, _), r in zip(jobs, rows) if split[name] == "main"]
    holdout = [r for (name, _, _), r in zip(jobs, rows) if split[name] == "holdout"]
    names = ["v14", *(_label(s) for s in SHARES)]
    shown = shown_root(root)
    parts = [
        f"Corpus root `{shown}` ({len(present)} of the {len(entries)} entries of "
        f"`{args.manifest.resolve().relative_to(ROOT)}` present). "
        "v15 at each share of the journal's room a compaction keeps, and v14 (a third, chosen by age), measured as "
        "`benchmarks/use.py` measures them: *in view*, the share of the identifiers each next step used that its "
        "context holds; *recall steps*, the steps with something one recall away; bills with every recall billed, "
        "as ratios to the full transcript's (with its fixed prompt) over the runs' sums.",
    ]
    if main_rows:
        parts += ["", choice(main_rows)]
    else:  # runs outside the corpus: all holdout, so nothing to choose on; the tables show how the choice holds
        parts += ["", "None of these runs is in the main split: the choice is not made on them."]
    for title, picked in (("main", main_rows), ("holdout", holdout), ("all", rows)):
        if picked:
            parts += ["", f"### {title} ({len(picked)} runs)", "", table(picked, names)]
    parts += ["", trend([("main", main_rows), ("holdout", holdout)])]
    write_section(
        args.section, f"v15's keep share: a third, a half, two thirds ({shown})", "\n".join(parts)
    )


if __name__ == "__main__":
    main()
