"""The analysis's lifecycle read from its state: budget usage, the stop rules' tests, its stage and limitations.

Pure functions over a `State` (and the usage the event log counts): `controller.termination`
applies the rules in their order, `show`, the export and the report describe the outcome
with them. docs/protocol.md#status-and-termination states each rule; #stages and
#partial-outcomes the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from .costs import cost_text
from .records import Evidence, State, StopRules

_INCOMPLETE = re.compile(r"\b(partial|incomplete)\b", re.IGNORECASE)
# The budget dimensions, in the order `budget_exhausted` names the first one used up.
DIMENSIONS = ("iterations", "cost", "queries", "model_calls", "seconds")


@dataclass(frozen=True)
class Usage:
    """What the analysis has used of each bound beside `iteration` and `cost_used` (which the state holds).

    `queries` are the results recorded by a budget action (the state's evidence), `model_calls`
    the answers kept (every reply, retries and rejections too), `seconds` the wall-clock time
    since creation with paused time left out, up to the event that ended the analysis.
    """

    queries: int = 0
    model_calls: int = 0
    seconds: float = 0.0


def queries_run(state: State) -> int:
    """The queries run so far: evidence recorded for a budget action (a query's result)."""
    return sum(1 for ev in state.evidence if ev.budget.action is not None)


def rules(state: State) -> StopRules:
    """The state's stop thresholds (each None: off)."""
    return state.stop_rules if isinstance(state.stop_rules, StopRules) else StopRules()


def _limit(value: Any) -> int | None:
    return None if value is UNSET or value is None else int(value)


def exhausted(state: State, usage: Usage) -> tuple[str, str] | None:
    """The first budget dimension used up, as (dimension, plain sentence), or None."""
    b = state.budget
    if state.iteration >= b.max_iterations:
        return "iterations", f"It used {state.iteration} of its {b.max_iterations} iterations."
    if b.max_cost is not None and b.cost_used >= b.max_cost:
        return (
            "cost",
            f"It spent {cost_text(b.cost_used)} of its cost limit {cost_text(b.max_cost)}.",
        )
    checks = (
        ("queries", usage.queries, _limit(b.max_queries), "queries run"),
        ("model_calls", usage.model_calls, _limit(b.max_model_calls), "model calls"),
        ("seconds", usage.seconds, _limit(b.max_seconds), "seconds of execution time"),
    )
    for name, used, limit, what in checks:
        if limit is not None and used >= limit:
            shown = f"{used:g}" if isinstance(used, float) else str(used)
            return name, f"It used {shown} of its {limit} {what}."
    return None


def confident(state: State) -> str | None:
    """An open hypothesis whose confidence reached `success_confidence`, or None (rule 2)."""
    threshold = rules(state).success_confidence
    if threshold is None:
        return None
    for h in state.hypotheses:
        if h.disposition == "open" and h.confidence >= threshold:
            return h.id
    return None


def contradicted(state: State) -> str | None:
    """An open hypothesis whose accepted assessments contradict each other past `contradiction_confidence` (rule 4).

    A `supports` assessment is as strong as its confidence, a `refutes` one as 1 − its
    confidence (how sure it is that the hypothesis is wrong). When one hypothesis has both,
    each at least the threshold, the evidence the model accepted says both things and more
    turns of the same model will not settle it: a person should.
    """
    threshold = rules(state).contradiction_confidence
    if threshold is None:
        return None
    for h in state.hypotheses:
        if h.disposition != "open":
            continue
        rows = [r for r in h.history if r.kind == "assessment" and r.confidence is not None]
        supports = any(r.verdict == "supports" and r.confidence >= threshold for r in rows)  # type: ignore[operator]
        refutes = any(r.verdict == "refutes" and 1 - r.confidence >= threshold for r in rows)  # type: ignore[operator]
        if supports and refutes:
            return h.id
    return None


def below_minimum(state: State, hypothesis_id: str) -> bool:
    """Whether the hypothesis's confidence is below `min_confidence` (rule 5: it can no longer be scheduled)."""
    threshold = rules(state).min_confidence
    h = state.hypothesis(hypothesis_id)
    return threshold is not None and h is not None and h.confidence < threshold


def sentence(state: State, status: str, reason: str | None, usage: Usage) -> str | None:
    """One plain sentence saying why the analysis stopped (None while it has not)."""
    if reason is None:
        return None
    if reason == "cancelled":
        return "The analysis was cancelled."
    if reason == "failed":
        return "The analysis failed: a technical failure it cannot recover from."
    if reason == "root_cause_found":
        found = [h.id for h in state.hypotheses if h.disposition == "supported"]
        return f"Hypothesis {', '.join(found) or '?'} was concluded supported: the root cause was found."
    if reason == "confidence_reached":
        hid = confident(state) or "?"
        h = state.hypothesis(hid)
        level = f"{h.confidence:g}" if h else "?"
        return f"Hypothesis {hid} reached confidence {level}, at least the success threshold {rules(state).success_confidence:g}."
    if reason == "budget_exhausted":
        out = exhausted(state, usage)
        return f"The budget is exhausted: {out[1]}" if out else "The budget is exhausted."
    if reason == "unresolvable_contradiction":
        hid = contradicted(state) or "?"
        return (f"Hypothesis {hid} has accepted assessments that both support and refute it at confidence "
                f"{rules(state).contradiction_confidence:g} or more: a person should resolve it.")  # fmt: skip
    if reason == "no_candidate_above_minimum":
        return (f"No hypothesis that could take another turn has confidence {rules(state).min_confidence:g} "
                "or more: none is worth scheduling.")  # fmt: skip
    if reason == "inconclusive_human_review":
        return "No hypothesis can take another turn and none is supported: the outcome is for a person to review."
    return f"The analysis ended ({reason})."


def stage(state: State, status: str, open_request: bool, pending: bool) -> str:
    """The analysis's stage, derived from its state (docs/protocol.md#stages).

    A terminal or paused status is the stage itself; for an active analysis, the first that
    holds: a query pending (`executing`), a result recorded and not yet assessed
    (`evaluating`), a request open (`planning`), the latest accepted decision applied an
    assessment (`updating`), else `planning` (the next request is to be made).
    """
    if status != "active":
        return status
    if pending:
        return "executing"
    if any(ev.budget.status == "unsettled" for ev in state.evidence):
        return "evaluating"
    if open_request:
        return "planning"
    latest = [r for h in state.hypotheses for r in h.history if r.iteration == state.iteration]
    if any(r.kind == "assessment" for r in latest):
        return "updating"
    return "planning"


def _why(ev: Evidence, payload_known: bool) -> list[str]:
    c = ev.capture
    why = []
    if not payload_known:
        why.append("not_retained")
    if c.truncated:
        why.append("truncated")
    if c.next_cursor is not None or c.eof is False:
        why.append("paged")
    if c.coverage is not None and _INCOMPLETE.search(c.coverage):
        why.append("incomplete_coverage")
    return why


def limitations(state: State) -> list[dict[str, Any]]:
    """Each evidence item the outcome rests on only in part: `{"evidence", "why": [...]}`, in evidence order.

    `not_retained` (payload null: its content is unknown), `truncated` (the capture says so),
    `paged` (a next cursor, or `eof` false: pages past the one shown), `incomplete_coverage`
    (a `coverage` that says so: the word `partial` or `incomplete` in it, any case; `coverage`
    is otherwise free text, such as a time window, which says nothing of completeness).
    """
    out = []
    for ev in state.evidence:
        why = _why(ev, ev.payload is not None or ev.content_hash is not None)
        if why:
            out.append({"evidence": ev.id, "why": why})
    return out
