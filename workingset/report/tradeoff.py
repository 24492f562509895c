"""The trade-off in one picture: each strategy's bill with recalls against its share of used identifiers in view.

`tradeoff_figure(data, model)` takes either one run's `compare --use --json` object or a
many-run aggregate (`compare RUN… --use --json`'s `aggregate`) and returns a plotly figure
as plain JSON (`{"data": [...], "layout": {...}}`): one point per strategy, x its bill
with recalls under `model` (full-price input tokens: a run's `effective_cost`, the
aggregate's `total`), y its share of used identifiers in view, and the Pareto frontier
drawn through the strategies no other is both cheaper (or as cheap) and more in view (or as
much) than. The page draws it with plotly.js (`Plotly.react`); nothing here computes a
number, it only reads them. Strategies whose steps used nothing (no share) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..compare.use import Use


class Point(NamedTuple):
    strategy: str
    cost: float  # the bill with recalls, full-price input tokens
    share: float  # percent of used identifiers in view


def tradeoff_points(data: Mapping[str, Any], model: str) -> list[Point]:
    """One point per strategy with a share in view, in the data's strategy order."""
    bills = data["with_recalls"][model]
    aggregate = "rows" in data  # a many-run aggregate: summed bills, its share over all runs
    names = data["options"]["strategies"] if aggregate else data["strategies"]
    out = []
    for s in names:
        share = (
            data["use"][s]["share_in_view"]
            if aggregate
            else Use.from_json(data["use"][s]).share_in_view()
        )
        if share is None:
            continue
        cost = bills[s]["total"] if aggregate else bills[s]["effective_cost"]
        out.append(Point(s, float(cost), 100.0 * share))
    return out


def frontier(points: list[Point]) -> list[Point]:
    """The points no other point dominates (as cheap or cheaper and as much or more in view, one strictly), by cost."""

    def dominated(p: Point) -> bool:
        return any(q.cost <= p.cost and q.share >= p.share and (q.cost < p.cost or q.share > p.share)
                   for q in points)  # fmt: skip

    return sorted(
        (p for p in points if not dominated(p)), key=lambda p: (p.cost, -p.share, p.strategy)
    )


def tradeoff_figure(data: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The plotly figure (JSON) of the trade-off under one cache model."""
    points = tradeoff_points(data, model)
    front = frontier(points)
    on_front = {p.strategy for p in front}
    scatter = {
        "type": "scatter", "mode": "markers+text", "name": "strategies",
        "x": [p.cost for p in points], "y": [p.share for p in points], "text": [p.strategy for p in points],
        "textposition": "top center",
        "marker": {"size": 11, "color": ["#cf222e" if p.strategy in on_front else "#57606a" for p in points]},
        "hovertemplate": "%{text}<br>with recalls: %{x:,.1f}<br>in view: %{y:.1f}%<extra></extra>",
    }  # fmt: skip
    line = {
        "type": "scatter", "mode": "lines", "name": "frontier", "x": [p.cost for p in front],
        "y": [p.share for p in front], "line": {"color": "#cf222e", "dash": "dot"}, "hoverinfo": "skip",
    }  # fmt: skip
    layout = {
        "height": 380, "margin": {"t": 10, "l": 70, "r": 20, "b": 60}, "showlegend": False,
        "xaxis": {"title": {"text": f"bill with recalls under {model} (full-price input tokens)"}},
        "yaxis": {"title": {"text": "% of used identifiers in view"}, "range": [0, 105]},
    }  # fmt: skip
    return {"data": [line, scatter], "layout": layout, "frontier": [p.strategy for p in front]}


__all__ = ["Point", "frontier", "tradeoff_figure", "tradeoff_points"]
