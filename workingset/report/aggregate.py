"""`workingset report RUN… --out FILE` of several runs: the aggregate first, then a section per run.

The numbers are `compare RUN… --summary --json`'s object, embedded as it is (`ws-compare-many`)
and shown as tables: the aggregate under each cost model, then each run's row under the first
(the model the verdict bills by), the rows where the default encoder is not the cheapest marked
with who beats it, each linking to that run's section (`#run-N`: its totals and its verdict).

The aggregate's bill with recalls against its share of used identifiers in view is drawn
where `AGGREGATE_PICTURE_HOOK` is (`aggregate_picture`), one point per strategy, the frontier
drawn; the runs are compared with `--use` for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..compare.engine import DEFAULT_LABEL
from ..compare.tables import ratio_text
from ..compare.verdict import WITH_RECALLS, billed_by, decide, how_billed, many_verdict
from .page import _ASSETS, _json

AGGREGATE_PICTURE_HOOK = "aggregate-picture"  # the element id the aggregate's picture fills


def aggregate_picture(many: Mapping[str, Any]) -> str:
    """The aggregate's bill with recalls against its share of used identifiers in view, one point per strategy.

    A static SVG (`report.tradeoff.tradeoff_svg`) under the cost model the verdict bills by,
    with the frontier drawn; "" when the runs were compared without `--use`.
    """
    from .tradeoff import tradeoff_svg

    agg = many["aggregate"]
    model = billed_by(agg["options"])
    if model not in (agg.get("with_recalls") or {}):
        return ""
    return (f"<h2>What it costs against what the model could see (over {agg['runs']} runs)</h2>"
            + tradeoff_svg(agg, model))  # fmt: skip


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[str] = ()
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{escape(classes[i]) if i < len(classes) else ""}">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows)
    )  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _aggregate(agg: Mapping[str, Any]) -> str:
    names, parts = agg["options"]["strategies"], []
    for model, per in agg["models"].items():
        rows = [[escape(s), f"{per[s]['total']:,.1f}", ratio_text(per[s]["ratio"]), ratio_text(per[s]["median_ratio"]),
                 ratio_text(per[s]["worst_ratio"]), str(per[s]["wins"])] for s in names]  # fmt: skip
        parts.append(f"<h3>cost model {escape(model)}</h3>" + _table(
            ["strategy", "total cost (full-price tokens)", "ratio", "median run ratio", "worst run ratio", "wins"], rows))  # fmt: skip
    return "".join(parts)


def _rows(many: Mapping[str, Any], model: str) -> str:
    agg = many["aggregate"]
    names, base = agg["options"]["strategies"], agg["base"]
    rows, classes = [], []
    for i, r in enumerate(agg["rows"]):
        costs, idle = r["cost"][model], set(r.get("idle", ()))
        low = min(costs.values())
        cheapest = [s for s in names if costs[s] == low and s not in idle]
        loses = ""
        if DEFAULT_LABEL in costs and costs[DEFAULT_LABEL] > low:
            loses = f"to {', '.join(cheapest)} ({ratio_text(costs[DEFAULT_LABEL] / low if low else None)} of its cost)"
        cells = [f'<a href="#run-{i + 1}">{escape(r["run"])}</a>', str(r["contexts"]), f"{costs[base]:,.1f}",
                 escape(", ".join(cheapest)), escape(loses)]  # fmt: skip
        cells += [
            "idle" if s in idle else ratio_text(costs[s] / costs[base] if costs[base] else None)
            for s in names[1:]
        ]
        rows.append(cells)
        classes.append("loses" if loses else "")
    headers = [
        "run",
        "contexts",
        f"{base} cost",
        "cheapest",
        f"where {DEFAULT_LABEL} loses",
        *names[1:],
    ]
    return _table(headers, rows, classes)


def _run_section(i: int, data: Mapping[str, Any], row: Mapping[str, Any], model: str) -> str:
    names, idle = data["strategies"], row.get("idle", [])
    parts = [f'<section id="run-{i}"><h3>{escape(data["run"])}</h3>',
             f'<p class="hint">{row["contexts"]} contexts · <a href="#top">back to the aggregate</a></p>']  # fmt: skip
    for m, billed in data.get("cache", {}).items():
        rows = [[escape(s), f"{billed['total'][s]['effective_cost']:,.1f}", f"{billed['total'][s]['read_tokens']:,}",
                 f"{billed['total'][s]['written_tokens']:,}", f"{billed['total'][s]['uncached_tokens']:,}"] for s in names]  # fmt: skip
        parts.append(f"<h4>billed under {escape(m)}</h4>" + _table(
            ["strategy", "cost (full-price tokens)", "read", "written", "uncached"], rows))  # fmt: skip
    how = how_billed(model) if model in data.get("cache", {}) else "effective cost"
    recalled = (row.get("with_recalls") or {}).get(model)
    if recalled is not None:  # the bill with recalls, as the page's verdict (compare --use)
        costs = {s: recalled[s]["effective_cost"] for s in names}
        said = (
            f"verdict (with recalls): {decide(costs, data['base'], f'{how}, {WITH_RECALLS}', idle)}"
        )
    else:
        said = f"verdict: {decide(row['cost'][model], data['base'], how, idle)}"
    parts.append(f'<p class="verdict">{escape(said)}</p>')
    return "".join(parts) + "</section>"


def aggregate_data(paths: Sequence[str], names: Sequence[str] | None, *, cache: Sequence[str], cache_options: Any,
                   recall: bool, encoding: str, cached_price: float, jobs: int) -> dict[str, Any]:  # fmt: skip
    """`compare RUN… --summary --json`'s object for the page: by default the transcript, the default encoder, every baseline."""
    from ..compare.baselines import BASELINES
    from ..compare.billing import model_names
    from ..compare.many import compare_runs_cli
    from ..runs.layout import read_fixed_prompt
    from . import DEFAULT_CACHE, resolve_strategies

    transcript = next(iter(BASELINES))
    names = (
        list(names)
        if names
        else [transcript, DEFAULT_LABEL, *(b for b in BASELINES if b != transcript)]
    )
    renderers = resolve_strategies(names)[0]

    def per_run(run: str) -> dict:
        return resolve_strategies(names, read_fixed_prompt(run))[0]

    return compare_runs_cli(paths, None, renderers, jobs, per_run=per_run, summary=True, token_cache=True,
                            recall=recall, encoding=encoding, cached_price=cached_price,
                            cache=model_names(cache) or DEFAULT_CACHE, cache_options=cache_options, sections=False,
                            availability=False, use=True)  # fmt: skip


def render_aggregate(many: Mapping[str, Any]) -> str:
    """The page of several runs (deterministic: the same object, the same bytes)."""
    agg = many["aggregate"]
    model = billed_by(agg["options"])
    totals = {s: agg["models"][model][s]["total"] for s in agg["options"]["strategies"]}
    title = f"workingset report: {agg['runs']} runs"
    sections = "".join(
        _run_section(i + 1, data, row, model) for i, (data, row) in enumerate(zip(many["runs"], agg["rows"]))
    )  # fmt: skip
    css = (_ASSETS / "report.css").read_text("utf-8") + "\ntr.loses td { background: #ffebe9; }\n"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{css}</style></head><body>\n"
        f'<h1 id="top">{escape(title)}, {agg["contexts"]:,} contexts</h1>\n'
        f'<p id="verdict-line">{"<br>".join(map(escape, many_verdict(agg, totals, model).splitlines()))}</p>\n'
        f'<div id="{AGGREGATE_PICTURE_HOOK}">{aggregate_picture(many)}</div>\n'
        f"<h2>The aggregate</h2>{_aggregate(agg)}\n"
        f"<h2>Each run (billed under {escape(model)}; a marked row: {DEFAULT_LABEL} is not the cheapest)</h2>"
        f"{_rows(many, model)}\n<h2>The runs</h2>{sections}\n"
        f'<script type="application/json" id="ws-compare-many">{_json(many)}</script>\n</body></html>\n'
    )
