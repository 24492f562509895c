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


def tradeoff_svg(data: Mapping[str, Any], model: str) -> str:
    """The same picture as a static SVG (no script: the many-run page), deterministic; "" with no point."""
    from html import escape

    points = tradeoff_points(data, model)
    if not points:
        return ""
    front = frontier(points)
    width, height, left, right, top, bottom = 720, 360, 80, 150, 20, 50
    low, high = min(p.cost for p in points), max(p.cost for p in points)
    span = (high - low) or high or 1.0
    low, high = max(0.0, low - 0.05 * span), high + 0.05 * span

    def x(cost: float) -> float:
        return left + (cost - low) / (high - low) * (width - left - right)

    def y(share: float) -> float:
        return top + (100.0 - share) / 100.0 * (height - top - bottom)

    on_front = {p.strategy for p in front}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="bill with recalls against share in view">',
             f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" stroke="#57606a"/>',
             f'<line x1="{left}" y1="{y(0):.1f}" x2="{left}" y2="{top}" stroke="#57606a"/>']  # fmt: skip
    for share in (0, 25, 50, 75, 100):
        parts.append(
            f'<text x="{left - 8}" y="{y(share) + 4:.1f}" text-anchor="end" font-size="11">{share}%</text>'
        )
    for cost in (low, (low + high) / 2, high):
        parts.append(
            f'<text x="{x(cost):.1f}" y="{y(0) + 16:.1f}" text-anchor="middle" font-size="11">{cost:,.0f}</text>'
        )
    parts.append(f'<text x="{(left + width - right) / 2:.1f}" y="{height - 8}" text-anchor="middle" font-size="12">'
                 f"bill with recalls under {escape(model)} (full-price input tokens)</text>")  # fmt: skip
    parts.append(f'<text x="14" y="{(top + y(0)) / 2:.1f}" font-size="12" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(top + y(0)) / 2:.1f})">% of used identifiers in view</text>')  # fmt: skip
    if len(front) > 1:
        line = " ".join(f"{x(p.cost):.1f},{y(p.share):.1f}" for p in front)
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="#cf222e" stroke-dasharray="4 3"/>'
        )
    # Points drawn at one spot share one label; labels are then pushed down until none overlaps another.
    spots: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        spots.setdefault((f"{x(p.cost):.1f}", f"{y(p.share):.1f}"), []).append(p)
    placed: list[tuple[float, float, float]] = []  # (left, baseline, right) of each label drawn
    for (cx, cy), group in sorted(spots.items(), key=lambda kv: (float(kv[0][1]), float(kv[0][0]))):
        colour = "#cf222e" if any(p.strategy in on_front for p in group) else "#57606a"
        names = ", ".join(p.strategy for p in group)
        tip = "; ".join(f"{p.strategy}: {p.cost:,.1f}, {p.share:.1f}% in view" for p in group)
        parts.append(
            f'<circle cx="{cx}" cy="{cy}" r="5" fill="{colour}"><title>{escape(tip)}</title></circle>'
        )
        lx, ly = float(cx) + 8, float(cy) - 6
        end = lx + 6.2 * len(names)  # about 6 pixels a character at 11 px
        while any(a < end and lx < b and abs(ly - base) < 13 for a, base, b in placed):
            ly += 13
        placed.append((lx, ly, end))
        parts.append(f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="11">{escape(names)}</text>')
    return "".join(parts) + "</svg>"


__all__ = ["Point", "frontier", "tradeoff_figure", "tradeoff_points", "tradeoff_svg"]
