"""Turn application, scheduling and termination, as pure functions over a `State`.

The rules are docs/protocol.md#applying-an-accepted-decision and #status-and-termination.

Nothing here touches a store, the clock or an encoder: the session layer loads a state,
calls these, and persists what they return. The same functions replay the event log, so the
state a request was rendered from can always be rebuilt exactly.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .decisions import AnyDecision, Conclude, Query, Recall, assessment_of
from .errors import SessionError
from .model import lifecycle
from .model.costs import add_cost
from .model.lifecycle import Usage
from .model.state import Evidence, HistoryEntry, Note, RecallSelection, State

if TYPE_CHECKING:  # only the type: nothing here touches a store
    from .store import Status

# The statuses (`store.Status`), each typed as its literal.
ACTIVE: Final = "active"
PAUSED: Final = "paused"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})
ROOT_CAUSE_FOUND = "root_cause_found"
BUDGET_EXHAUSTED = "budget_exhausted"
INCONCLUSIVE_HUMAN_REVIEW = "inconclusive_human_review"
CONFIDENCE_REACHED = "confidence_reached"
UNRESOLVABLE_CONTRADICTION = "unresolvable_contradiction"
NO_CANDIDATE_ABOVE_MINIMUM = "no_candidate_above_minimum"


@dataclass(frozen=True)
class Allocated:
    """The IDs an accepted decision creates, allocated before applying so a replay reuses them."""

    notes: tuple[str, ...] = ()
    action: str | None = None


def _max_number(ids: Iterable[str | None]) -> int:
    return max((int(i[1:]) for i in ids if i), default=0)


@dataclass
class Numbers:
    """The highest evidence, note and budget-action numbers used so far, from which new IDs count on.

    `of` scans a state once; `count_decision` and `count_record` then keep the numbers up to
    date with each applied change, so allocating an ID does not rescan the whole state.
    """

    evidence: int = 0
    notes: int = 0
    actions: int = 0

    @classmethod
    def of(cls, state: State, known_actions: Iterable[str] = ()) -> Numbers:
        return cls(
            evidence=_max_number(e.id for e in state.evidence),
            notes=_max_number(n.id for n in state.notes),
            actions=_max_number([e.budget.action for e in state.evidence] + list(known_actions)),
        )

    def count_decision(self, ids: Allocated) -> None:
        self.notes = max(self.notes, _max_number(ids.notes))
        self.actions = max(self.actions, _max_number([ids.action]))

    def count_record(self, evidence: Evidence) -> None:
        self.evidence = max(self.evidence, _max_number([evidence.id]))
        self.actions = max(self.actions, _max_number([evidence.budget.action]))


def next_evidence_id(state: State, numbers: Numbers | None = None) -> str:
    """The next sequential evidence ID of this analysis (`numbers`, when given, are the state's)."""
    return f"E{(numbers or Numbers.of(state)).evidence + 1:06d}"


def allocate(
    state: State,
    decision: AnyDecision,
    known_actions: Iterable[str] = (),
    numbers: Numbers | None = None,
) -> Allocated:
    """Allocate note IDs and, for a query, a budget action ID not used in the state or the store.

    `numbers`, when given, are the state's and the store's (then `known_actions` is not needed).
    """
    numbers = numbers or Numbers.of(state, known_actions)
    notes = tuple(f"N{numbers.notes + 1 + i:06d}" for i in range(len(decision.notes)))
    action = f"B{numbers.actions + 1:06d}" if isinstance(decision.next, Query) else None
    return Allocated(notes=notes, action=action)


def apply_decision(state: State, hypothesis_id: str, decision: AnyDecision, ids: Allocated) -> int:
    """Apply an accepted decision in place in the §6 order; return the iteration it consumed."""
    hyp = state.hypothesis(hypothesis_id)
    if hyp is None:  # validated before; a replay of a damaged log could still get here
        raise SessionError(f"unknown hypothesis {hypothesis_id}", code="unknown_hypothesis")
    iteration = state.iteration + 1

    # 1. The assessment settles the previous result's budget action exactly once.
    a = assessment_of(decision)
    if a is not None:
        for ev in state.evidence:
            if ev.id == a.evidence_ref:
                ev.budget.status = "settled"
        hyp.confidence = a.confidence
        hyp.history.append(
            HistoryEntry(
                iteration=iteration,
                kind="assessment",
                evidence_refs=[a.evidence_ref],
                verdict=a.verdict,
                confidence=a.confidence,
                text=a.rationale,
            )
        )

    # 2. Notes go to the selected hypothesis.
    for nid, note in zip(ids.notes, decision.notes, strict=True):
        state.notes.append(
            Note(
                id=nid,
                hypothesis=hypothesis_id,
                kind=note.kind,
                text=note.text,
                status="open" if note.kind == "question" else None,
                iteration=iteration,
            )
        )

    # 3–4. A recall replaces the selection; a query or a conclusion clears it.
    nxt = decision.next
    if isinstance(nxt, Recall):
        entries, pages = list(getattr(nxt, "entries", ())), list(getattr(nxt, "pages", ()))
        state.recall[hypothesis_id] = RecallSelection(evidence_refs=list(nxt.evidence_refs), iteration=iteration,
                                                      entries=entries, pages=pages)  # fmt: skip
        # A v14 recall's entries and pages are not evidence IDs: the row's text names them.
        text = (
            " ".join([*(f"entry={ref}" for ref in entries), *(f"page={item}" for item in pages)])
            or None
        )
        hyp.history.append(
            HistoryEntry(
                iteration=iteration, kind="recall", evidence_refs=list(nxt.evidence_refs), text=text
            )
        )
    else:
        state.recall.pop(hypothesis_id, None)
    if isinstance(nxt, Query):
        text = f"source: {nxt.source}\nquery: {nxt.query}\npurpose: {nxt.purpose}"
        hyp.history.append(HistoryEntry(iteration=iteration, kind="query", text=text))
    elif isinstance(nxt, Conclude):
        hyp.disposition = nxt.disposition
        hyp.history.append(
            HistoryEntry(
                iteration=iteration,
                kind="conclude",
                evidence_refs=list(nxt.evidence_refs),
                verdict=nxt.disposition,
                text=nxt.diagnosis,
            )
        )

    # 5. Every accepted decision consumes one iteration, globally and for the hypothesis.
    state.iteration = iteration
    hyp.control.iterations_used += 1
    return iteration


def apply_record(state: State, evidence: Evidence) -> None:
    """Append a recorded query result in place: new unsettled evidence, the collector's previous result."""
    state.evidence.append(evidence)
    hyp = state.hypothesis(evidence.collector)
    if hyp is not None:
        hyp.control.previous_result = evidence.id
    state.budget.cost_used = add_cost(state.budget.cost_used, evidence.budget.cost)


def unavailable_reason(state: State, hypothesis_id: str) -> str | None:
    """Why a hypothesis can take no further turn (concluded, parked, out of iterations), or None."""
    hyp = state.hypothesis(hypothesis_id)
    if hyp is None:
        return "unknown"
    if hyp.disposition == "parked":
        return "parked"
    if hyp.disposition != "open":
        return f"concluded {hyp.disposition}"
    if hyp.control.iterations_used >= hyp.control.iteration_limit:
        return f"out of iterations ({hyp.control.iterations_used}/{hyp.control.iteration_limit})"
    if lifecycle.below_minimum(state, hypothesis_id):
        return f"below the minimum confidence ({hyp.confidence:g} < {lifecycle.rules(state).min_confidence:g})"
    return None


def _last_served(state: State, hypothesis_id: str) -> int:
    hyp = state.hypothesis(hypothesis_id)
    return max((h.iteration for h in hyp.history), default=-1) if hyp else -1


def _id_key(hid: str) -> tuple[int, str]:
    return (int(hid[1:]), hid)


def schedule(state: State, busy: Collection[str]) -> str:
    """Pick the next hypothesis: open, iterations left, no query pending; least recently served, then ID."""
    ready = [
        h.id
        for h in state.hypotheses
        if unavailable_reason(state, h.id) is None and h.id not in busy
    ]
    if not ready:
        raise SessionError(
            "every hypothesis that can take a turn has a query pending; record its result first",
            code="hypothesis_busy",
            details={"busy": sorted(busy, key=_id_key)},
        )
    return min(ready, key=lambda hid: (_last_served(state, hid), _id_key(hid)))


def check_choice(state: State, hypothesis_id: str, busy: Collection[str]) -> None:
    """Check that the caller's chosen hypothesis can take a turn now."""
    reason = unavailable_reason(state, hypothesis_id)
    if reason == "unknown":
        known = ", ".join(h.id for h in state.hypotheses)
        raise SessionError(
            f"no hypothesis {hypothesis_id} in analysis {state.analysis_id}; known: {known}",
            code="unknown_hypothesis",
            details={"hypothesis": hypothesis_id},
        )
    if reason is not None:
        raise SessionError(
            f"{hypothesis_id} cannot take another turn: {reason}",
            code="hypothesis_unavailable",
            details={"hypothesis": hypothesis_id, "reason": reason},
        )
    if hypothesis_id in busy:
        raise SessionError(
            f"{hypothesis_id} has a query pending; record its result first",
            code="hypothesis_busy",
            details={"hypothesis": hypothesis_id},
        )


def termination(
    state: State, status: Status, busy: Collection[str], usage: Usage | None = None
) -> tuple[Status, str | None]:
    """Evaluate the §7 termination policy for an active analysis: (status, reason), first match wins.

    Rule 1 (cancellation, failure) is the lifecycle calls' own; `usage` (None: nothing used
    beyond the state's own counts) is what the event log counts of the other bounds.
    """
    if status != ACTIVE:
        return status, None
    used = usage or Usage(queries=lifecycle.queries_run(state))
    if any(h.disposition == "supported" for h in state.hypotheses):
        return COMPLETED, ROOT_CAUSE_FOUND
    if lifecycle.confident(state) is not None:
        return COMPLETED, CONFIDENCE_REACHED
    if lifecycle.exhausted(state, used) is not None:
        return COMPLETED, BUDGET_EXHAUSTED
    if lifecycle.contradicted(state) is not None:
        return COMPLETED, UNRESOLVABLE_CONTRADICTION
    if not busy and all(unavailable_reason(state, h.id) is not None for h in state.hypotheses):
        # Only the minimum confidence keeps some hypothesis from a turn: rule 5 names it.
        held = any(_held_by_minimum(state, h.id) for h in state.hypotheses)
        return COMPLETED, NO_CANDIDATE_ABOVE_MINIMUM if held else INCONCLUSIVE_HUMAN_REVIEW
    return ACTIVE, None


def _held_by_minimum(state: State, hypothesis_id: str) -> bool:
    reason = unavailable_reason(state, hypothesis_id)
    return reason is not None and reason.startswith("below the minimum")
