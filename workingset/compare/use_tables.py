"""`compare --use` as JSON data and text tables, and its verdict line (the with-recalls bill)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .engine import Comparison
from .recalls import UseComparison
from .tables import ratio_text, share_text
from .use import Use


def use_data(uc: UseComparison, cmp: Comparison) -> dict[str, Any]:
    """`"use"`: per strategy its counts; `"with_recalls"`: per cache model and strategy the bill, beside the recorded cost."""
    out: dict[str, Any] = {"use": {s: uc.use(s).to_json() for s in uc.strategies}}
    if uc.bills:
        out["with_recalls"] = {
            m: {s: bill.to_json() for s, bill in per.items()}
            for m, per in uc.bills.items()
        }  # fmt: skip
    return out


USE_CAPTION = (
    "What the next step used, in view (identifiers the agent's next command, thought or decision took from an "
    "earlier output: in the context's text, one recall away, or gone; steps: contexts whose next step used any)"
)


def use_text(uc: UseComparison, cmp: Comparison) -> str:
    """The use table, then per cache model each strategy's bill as recorded and with recalls."""
    from .tables import _table, _wrap

    rows = []
    for s in uc.strategies:
        u = uc.use(s)
        rows.append([s, f"{u.used:,}", share_text(u.share_in_view()), f"{u.recall_away:,}", f"{u.gone:,}",
                     f"{u.steps_needing_recall} of {u.steps}", f"{u.steps_with_gone} of {u.steps}"])  # fmt: skip
    parts = [_wrap(USE_CAPTION), _table(["strategy", "used", "in view", "recall away", "gone", "recall steps", "gone steps"],
                                 rows, left=1)]  # fmt: skip
    for m, per in uc.bills.items():
        rows = []
        for s in uc.strategies:
            b = per[s]
            rows.append([s, f"{cmp.cache_total(m, s).cost:,.1f}", f"{b.cost:,.1f}", f"{b.input.cost:,.1f}",
                         f"{b.output_tokens:,}", f"{b.recall_turns}", f"{b.rerun_turns}", f"{b.tool_prompt_tokens:,}"])  # fmt: skip
        price = "no output price" if per[uc.strategies[0]].output_price is None else \
            f"output at {per[uc.strategies[0]].output_price:g}x the input price"  # fmt: skip
        parts += ["", _wrap(f"Bill with recalls under {m} (full-price input tokens; the recorded requests, plus a recall "
                            f"turn before each step with something one recall away and a re-run turn per output gone; {price})"),
                  _table(["strategy", "as recorded", "with recalls", "input", "output tokens", "recall turns",
                          "re-run turns", "tool-use prompt tokens"], rows, left=1)]  # fmt: skip
    return "\n".join(parts) + "\n"


def use_verdict(uc: UseComparison, cmp: Comparison) -> str:
    """The verdict under the first cache model's with-recalls bill, and as recorded beside it; '' without a cache model."""
    from .verdict import WITH_RECALLS, cheapest, decide, how_billed, idle

    if not uc.bills:
        return ""
    model = next(iter(uc.bills))
    base = cmp.strategies[0]
    with_recalls = {s: uc.bills[model][s].cost for s in uc.strategies}
    recorded = {s: cmp.cache_total(model, s).cost for s in uc.strategies}
    shares = ", ".join(f"{s} {share_text(uc.use(s).share_in_view())}" for s in uc.strategies)
    import textwrap

    from .tables import WIDTH

    below = [f"as recorded: {cheapest(recorded, base, f'{how_billed(model)}, the recorded requests alone')}",
             f"used identifiers in view: {shares}"]  # fmt: skip
    return (f"verdict (with recalls): {decide(with_recalls, base, f'{how_billed(model)}, {WITH_RECALLS}', idle(cmp))}\n"
            + "".join(textwrap.fill(line, WIDTH, initial_indent="  ", subsequent_indent="    ") + "\n" for line in below))  # fmt: skip


def aggregate_use(rows: list[Mapping[str, Any]], names: list[str]) -> dict[str, Any]:
    """Per strategy over many runs' rows: summed counts, the median and worst run's share in view (runs with use)."""
    import statistics

    out: dict[str, Any] = {}
    for s in names:
        per = [Use.from_json(r["use"][s]) for r in rows if "use" in r]
        total = sum(per, Use())
        shares = [(x, r["run"]) for r, u in zip([r for r in rows if "use" in r], per)
                  if (x := u.share_in_view()) is not None]  # fmt: skip
        worst = min(shares) if shares else None
        out[s] = {**total.to_json(), "share_in_view": total.share_in_view(),
                  "median_share_in_view": statistics.median(x for x, _ in shares) if shares else None,
                  "worst_share_in_view": None if worst is None else worst[0],
                  "worst_run": None if worst is None else worst[1]}  # fmt: skip
    return out


def aggregate_with_recalls(
    rows: list[Mapping[str, Any]], names: list[str], models: list[str]
) -> dict[str, Any]:
    """Per cache model and strategy over many runs: the with-recalls total, its ratio to the base, median and worst run ratio, wins (ties count for each)."""
    import math
    import statistics

    base = names[0]
    out: dict[str, Any] = {}
    for m in models:
        costs = [{s: r["with_recalls"][m][s]["effective_cost"] for s in names} for r in rows]
        recorded = [{s: r["with_recalls"][m][s]["as_recorded"] for s in names} for r in rows]
        per: dict[str, Any] = {}
        for s in names:
            ratios = [c[s] / c[base] for c in costs if c[base]]
            total, total_base = math.fsum(c[s] for c in costs), math.fsum(c[base] for c in costs)
            per[s] = {"total": total, "ratio": total / total_base if total_base else None,
                      "as_recorded": math.fsum(c[s] for c in recorded),
                      "median_ratio": statistics.median(ratios) if ratios else None,
                      "worst_ratio": max(ratios) if ratios else None,
                      "wins": sum(c[s] == min(c.values()) for c in costs)}  # fmt: skip
        out[m] = per
    return out


def aggregate_text(agg: Mapping[str, Any]) -> str:
    """The many-run tables of `--use`: what each strategy showed, then each model's with-recalls bill ('' without --use)."""
    from .tables import _table

    if "use" not in agg:
        return ""
    names, base = agg["options"]["strategies"], agg["base"]
    rows = []
    for s in names:
        u = agg["use"][s]
        worst = (
            "n/a"
            if u["worst_run"] is None
            else f"{share_text(u['worst_share_in_view'])} ({u['worst_run']})"
        )
        rows.append([s, f"{u['used']:,}", share_text(u["share_in_view"]), share_text(u["median_share_in_view"]), worst,
                     f"{u['steps_needing_recall']:,} of {u['steps']:,}", f"{u['steps_with_gone']:,} of {u['steps']:,}"])  # fmt: skip
    parts = ["", USE_CAPTION + "; over the runs",
             _table(["strategy", "used", "in view", "median run", "worst run", "recall steps", "gone steps"], rows, left=1)]  # fmt: skip
    for m, per in agg.get("with_recalls", {}).items():
        rows = [[s, f"{per[s]['total']:,.1f}", ratio_text(per[s]["ratio"]), ratio_text(per[s]["median_ratio"]), ratio_text(per[s]["worst_ratio"]),
                 f"{per[s]['wins']}", f"{per[s]['as_recorded']:,.1f}"] for s in names]  # fmt: skip
        parts += ["", f"Bill with recalls under {m} (recall and re-run turns and output tokens included; ratios to {base}; "
                      "wins: runs where a strategy costs least with recalls, ties count for each)",
                  _table(["strategy", "with recalls", "ratio", "median run ratio", "worst run ratio", "wins", "as recorded"],
                         rows)]  # fmt: skip
    return "\n".join(parts) + "\n"


__all__ = [
    "aggregate_text",
    "aggregate_with_recalls",
    "USE_CAPTION",
    "aggregate_use",
    "use_data",
    "use_text",
    "use_verdict",
]
