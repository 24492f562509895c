"""The verdict of a comparison in one line: which strategy costs least over the run, by how much, under which measure."""

from __future__ import annotations

from collections.abc import Mapping

from .engine import Comparison, change_percent


def measure(cmp: Comparison, model: str | None = None) -> tuple[dict[str, float], str]:
    """Each strategy's cost over the run and the measure's name: `model`'s billing, else the effective cost.

    Without `model`, the first cache model `--cache` asked for bills it (what a provider
    charges); with none, the effective cost (`new + R × cached`, every context's shared
    prefix with the one before taken as cached).
    """
    model = model if model is not None else next(iter(cmp.caches), None)
    if model is not None:
        costs = {s: cmp.cache_total(model, s).cost for s in cmp.strategies}
        return costs, f"billed under the {model} cache model"
    costs = {s: cmp.total(s).cost for s in cmp.strategies}
    return costs, f"effective cost, cached tokens at {cmp.cached_price:g}x the price"


def cheapest(costs: Mapping[str, float], base: str, how: str) -> str:
    """The sentence: the cheapest strategy and its cost against the base (or, when the base is cheapest, the next)."""
    ranked = sorted(costs, key=lambda s: (costs[s], s != base))  # a tie goes to the base
    best = ranked[0]
    if len(ranked) == 1:
        return f"{best} costs {costs[best]:,.1f} full-price tokens ({how})"
    if best == base:
        other = ranked[1]
        if costs[other] == costs[best]:
            return f"{other} costs the same as {base}: {costs[base]:,.1f} full-price tokens ({how})"
        return (f"{base} is cheapest: {other}, the next, costs {_by(costs[base], costs[other])} more "
                f"({costs[other]:,.1f} against {costs[base]:,.1f} full-price tokens, {how})")  # fmt: skip
    return (f"{best} is cheapest: {_by(costs[base], costs[best])} less than {base} "
            f"({costs[best]:,.1f} against {costs[base]:,.1f} full-price tokens, {how})")  # fmt: skip


def verdict(cmp: Comparison) -> str:
    """The line `compare` ends with: `verdict: v13 is cheapest: 44.8% less than v10 (…)`."""
    costs, how = measure(cmp)
    return f"verdict: {cheapest(costs, cmp.strategies[0], how)}\n"


def _by(base: float, value: float) -> str:
    change = change_percent(base, value)
    return "an unmeasurable share" if change is None else f"{abs(change):.1f}%"
