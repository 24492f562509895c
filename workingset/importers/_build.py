"""Turn a parsed trajectory into one investigation state per agent step (docs/protocol.md#the-investigation-state).

State k is the investigation after the agent's k-th action: hypothesis H1 (the agent's one
line of work) has run k queries; actions 1..k-1 were assessed by the step after them
(verdict `neutral`, no confidence stated) and are settled; action k is H1's previous
result, unsettled. Thoughts and feedback that came between action k-1 and action k belong
to state k; whatever follows the last action belongs to the last state.
"""

from __future__ import annotations

from typing import Literal

from ..errors import InvalidFile
from ..io.limits import MAX_COST
from ..model.costs import add_cost
from ..model.hashing import content_hash
from ..model.state import (
    Budget,
    Capture,
    Case,
    Control,
    Entity,
    Evidence,
    EvidenceBudget,
    HistoryEntry,
    Hypothesis,
    Note,
    State,
    TextPayload,
    validate_state,
)  # fmt: skip
from ._trajectory import EPOCH, Action, Feedback, Thought, Trajectory, fail

HYPOTHESIS = "H1"
CONFIDENCE = 0.5  # never changed: trajectories state no confidence
MECHANISM = (
    "Not stated by the source: the agent's line of work, imported from its trajectory. "
    "Its reasoning is in its notes."
)


def _spent(cost_used: float, cost: float, traj: Trajectory, step: int) -> float:
    """`cost_used` after `cost`; past the formats' cost range (`limits.MAX_COST`) the source is `invalid_file`."""
    total = add_cost(cost_used, cost)
    if total > MAX_COST:
        raise fail(traj.source, "$", f"the costs it records add up to {total:.6g} by step {step}, past the "
                                     f"largest budget cost_used of {MAX_COST:g}")  # fmt: skip
    return total


def _evidence(
    eid: str, item: Action | Feedback, iteration: int, captured_at: str, action: str | None
) -> tuple[Evidence, Evidence]:
    """The item as evidence: (unsettled, settled) for an action; (none, none) for feedback."""
    if isinstance(item, Action):
        capture = Capture(
            query=item.query, origin=item.origin, coverage=item.coverage, truncated=item.truncated
        )
        text, cost = item.output, item.cost
    else:
        capture = Capture(query=None, origin=item.origin)
        text, cost = item.text, 0.0
    payload = None if text is None else TextPayload(language=None, text=text)
    digest = None if payload is None else content_hash(payload)

    def make(status: Literal["none", "unsettled", "settled"]) -> Evidence:
        return Evidence(
            id=eid, collector=HYPOTHESIS, scope="query_result" if action else "feedback",
            capture=capture, payload=payload, content_hash=digest,
            budget=EvidenceBudget(action=action, status=status, cost=cost),
            iteration=iteration, captured_at=captured_at,
        )  # fmt: skip

    if action is None:
        none = make("none")
        return none, none
    return make("unsettled"), make("settled")


def build_states(traj: Trajectory, analysis: str) -> list[State]:
    """Return state 1 … state N, one per action of the trajectory, validated."""
    total = traj.actions
    limit = max(total, traj.max_iterations or 0)
    opened_at = traj.opened_at or EPOCH
    case = Case(
        title=traj.title, statement=traj.statement, opened_at=opened_at,
        entities=[Entity(id="agent", kind="agent", name=traj.agent, source=traj.model)],
    )  # fmt: skip
    settled: list[Evidence] = []
    notes: list[Note] = []
    history: list[HistoryEntry] = []
    states: list[State] = []
    step, cost_used, when = 0, 0.0, opened_at
    last: tuple[int, Evidence] | None = None  # (index in `settled`, unsettled version)

    def snapshot() -> None:
        assert last is not None
        evidence = list(settled)
        evidence[last[0]] = last[1]
        hypothesis = Hypothesis(
            id=HYPOTHESIS, title=f"{traj.agent} working on the case", mechanism=MECHANISM,
            confidence=CONFIDENCE, disposition="open",
            control=Control(iterations_used=step, iteration_limit=limit, previous_result=last[1].id),
            history=list(history),
        )  # fmt: skip
        states.append(State(
            analysis_id=analysis, iteration=step,
            budget=Budget(max_iterations=limit, max_cost=traj.max_cost, cost_used=cost_used),
            case=case, hypotheses=[hypothesis], evidence=evidence, notes=list(notes),
        ))  # fmt: skip

    for item in traj.items:
        iteration = min(step + 1, total) if not isinstance(item, Action) else step + 1
        when = item.timestamp or when
        if isinstance(item, Thought):
            cost_used = _spent(cost_used, item.cost, traj, step)
            if item.text.strip():
                notes.append(
                    Note(
                        id=f"N{len(notes) + 1:06d}",
                        hypothesis=HYPOTHESIS,
                        kind="note",
                        text=item.text,
                        iteration=iteration,
                    )
                )
            continue
        eid = f"E{len(settled) + 1:06d}"
        if isinstance(item, Feedback):
            settled.append(_evidence(eid, item, iteration, when, None)[1])
            continue
        step += 1
        cost_used = _spent(cost_used, item.cost, traj, step)
        if last is not None:
            history.append(
                HistoryEntry(
                    iteration=step, kind="assessment", evidence_refs=[last[1].id], verdict="neutral"
                )
            )
        unsettled, done = _evidence(eid, item, step, when, f"B{step:06d}")
        history.append(HistoryEntry(iteration=step, kind="query", evidence_refs=[eid]))
        settled.append(done)
        last = (len(settled) - 1, unsettled)
        if step < total:
            snapshot()  # what follows belongs to the next step; the last state takes the rest
    if last is not None:
        snapshot()
    _validate(states, traj.source)
    return states


def _validate(states: list[State], source: str) -> None:
    """Validate every state, in time linear in the run's length when they are valid.

    Every record of state k is a record of the last state too (its evidence, notes and
    history are prefixes of the last state's; its unsettled item differs from the settled one
    only in budget status, which validation does not judge), so the last state passing means
    every state passes. Only when it fails are the states checked in order, for the error of
    the first one that fails, as before (validating each was quadratic in the run's length).
    """
    if not states:
        return
    try:
        validate_state(states[-1], source)
    except InvalidFile:
        for state in states:
            validate_state(state, source)
        raise
