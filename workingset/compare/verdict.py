"""The verdict of a comparison in one line: which strategy costs least over the run, by how much, under which measure.

One function decides (`decide`): it takes each strategy's cost under the measure the caller
bills by (`measure`: the first `--cache` model, else the effective cost), so a caller can
switch the billing it compares by without touching the wording.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .baselines import BASELINES
from .engine import Comparison, change_percent

PREFIX = "prefix"  # the many-run cost model of the effective cost: the ideal prefix cache at --cached-price

WITH_RECALLS = "recall and re-run turns and output tokens included"  # what the bill with recalls adds, as verdicts say it
TRANSCRIPT = "full-transcript"  # the baseline every other one starts from: an idle one repeats it


def measure(cmp: Comparison, model: str | None = None) -> tuple[dict[str, float], str]:
    """Each strategy's cost over the run and the measure's name: `model`'s billing, else the effective cost.

    Without `model`, the first cache model `--cache` asked for bills it (what a provider
    charges); with none, the effective cost (`new + R × cached`, every context's shared
    prefix with the one before taken as cached).
    """
    model = model if model is not None else next(iter(cmp.caches), None)
    if model is not None:
        costs = {s: cmp.cache_total(model, s).cost for s in cmp.strategies}
        return costs, how_billed(model)
    costs = {s: cmp.total(s).cost for s in cmp.strategies}
    return costs, f"effective cost, cached tokens at {cmp.cached_price:g}x the price"


def how_billed(model: str) -> str:
    """The measure's name under a cache model, as every verdict says it."""
    return f"billed under the {model} cache model"


def idle(cmp: Comparison) -> list[str]:
    """The baselines whose trigger never fired on this run: every context the same as the transcript's."""
    if TRANSCRIPT not in cmp.sizes:
        return []
    same = cmp.sizes[TRANSCRIPT]
    return [
        s for s in cmp.strategies if s in BASELINES and s != TRANSCRIPT and cmp.sizes[s] == same
    ]


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def cheapest(costs: Mapping[str, float], base: str, how: str) -> str:
    """The sentence: the cheapest strategy and its cost against the base (or, when the base is cheapest, the next).

    Strategies that tie at the least cost are all named.
    """
    ranked = sorted(costs, key=lambda s: (costs[s], s != base))  # the base first among equals
    best = ranked[0]
    if len(ranked) == 1:
        return f"{best} costs {costs[best]:,.1f} full-price tokens ({how})"
    tied = [s for s in ranked if costs[s] == costs[best]]
    if len(tied) > 1:
        rest = [s for s in ranked if costs[s] != costs[best]]
        line = f"{_names(tied)} tie as cheapest at {costs[best]:,.1f} full-price tokens ({how})"
        if best != base:
            line += f", {_by(costs[base], costs[best])} less than {base} ({costs[base]:,.1f})"
        elif rest:
            line += f"; {rest[0]}, the next, costs {_by(costs[best], costs[rest[0]])} more ({costs[rest[0]]:,.1f})"
        return line
    if best == base:
        other = ranked[1]
        return (f"{base} is cheapest: {other}, the next, costs {_by(costs[base], costs[other])} more "
                f"({costs[other]:,.1f} against {costs[base]:,.1f} full-price tokens, {how})")  # fmt: skip
    return (f"{best} is cheapest: {_by(costs[base], costs[best])} less than {base} "
            f"({costs[best]:,.1f} against {costs[base]:,.1f} full-price tokens, {how})")  # fmt: skip


def decide(costs: Mapping[str, float], base: str, how: str, idle: Collection[str] = (),
           where: str = "on this run") -> str:  # fmt: skip
    """The verdict sentence from each strategy's cost under one measure (the one place a verdict is decided).

    After who is cheapest: the best baseline other than the base and the cheapest (when
    there is one), and the baselines that never fired (they repeat the transcript's cost).
    """
    line = cheapest(costs, base, how)
    top = min(costs.values())
    others = [
        s for s in costs if s in BASELINES and s != base and s not in idle and costs[s] != top
    ]
    if others:
        best = min(others, key=lambda s: (costs[s], s))
        line += f"; the best other baseline, {best}, costs {costs[best]:,.1f}"
    if idle:
        verb = "fires" if len(idle) == 1 else "fire"
        line += f"; {_names(sorted(idle))} never {verb} {where} (the same as {TRANSCRIPT})"
    return line


def verdict(cmp: Comparison) -> str:
    """The line `compare` ends with: `verdict: v14 is cheapest: 28.4% less than full-transcript (…)`."""
    costs, how = measure(cmp)
    return f"verdict: {decide(costs, cmp.strategies[0], how, idle(cmp))}\n"


def billed_by(options: Mapping[str, Any]) -> str:
    """The cost model rows and verdict use: the first `--cache` model, else the ideal `prefix` model."""
    return options["cache"][0] if options["cache"] else PREFIX


def many_verdict(agg: Mapping[str, Any], totals: Mapping[str, float], model: str) -> str:
    """The many-run verdict: who costs least over all runs (`verdict.decide`), and on how many runs the candidate loses.

    With `--use` (the aggregate has `with_recalls` for `model`), the verdict is the bill with
    recalls, and the recorded requests' verdict follows it. A baseline that never fired on any
    run repeats the transcript everywhere, so it is named as such, never as the best other.
    """
    names, base, rows = agg["options"]["strategies"], agg["base"], agg["rows"]
    how = (
        how_billed(model)
        if model != PREFIX
        else f"effective cost, cached tokens at {agg['options']['cached_price']:g}x the price"
    )
    never = sorted(set.intersection(*(set(r.get("idle", ())) for r in rows))) if rows else []
    per_run = [r["cost"][model] for r in rows]
    recalled = (agg.get("with_recalls") or {}).get(model)
    recorded = f"verdict over {agg['runs']} runs: {decide(totals, base, how, never, 'on any run')}"
    if recalled is not None:
        recorded = f"  as recorded: {cheapest(totals, base, how + ', the recorded requests alone')}"
        totals = {s: recalled[s]["total"] for s in names}
        per_run = [{s: r["with_recalls"][model][s]["effective_cost"] for s in names} for r in rows]
        line = (f"verdict over {agg['runs']} runs (with recalls): "
                f"{decide(totals, base, f'{how}, {WITH_RECALLS}', never, 'on any run')}")  # fmt: skip
    else:
        line = recorded
    if len(names) > 1:
        candidate = names[1]
        losses = sum(costs[candidate] > min(costs.values()) for costs in per_run)
        line += (f"; {candidate} is the cheapest on every run" if not losses
                 else f"; {candidate} is not the cheapest on {losses} of {agg['runs']} runs")  # fmt: skip
    return line if recalled is None else f"{line}\n{recorded}"


def _by(base: float, value: float) -> str:
    change = change_percent(base, value)
    return "an unmeasurable share" if change is None else f"{abs(change):.1f}%"
