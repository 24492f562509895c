"""The bounds the event log counts (model calls, execution time), and a `stop` when one ran out between changes.

Model calls and time are used without a change to the state: a rejected reply is kept as an
`answer` event and changes nothing else, and time passes with no event at all. So besides the
termination policy that runs after every change, `stop_if_due` runs at the start of
`next_request` and `submit` of an analysis that sets `max_model_calls` or `max_seconds`: when
the policy ends the analysis there, it appends a `stop` event (status `completed`, the reason
and the plain sentence as its message) in its own transaction, and the call then finds the
analysis closed. The time is the session's clock (`Investigation(clock=...)`), never read by
the pure controller; a replay feeds the recorded times back, so it stops at the same event.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
from msgspec import UNSET

from .. import controller as ctl
from ..errors import WorkingsetError
from ..eventlog.log import LifecycleEvent
from ..eventlog.view import Replayed
from ..model import lifecycle
from ..model.state import State
from .calls import busy_hypotheses
from .replies import Limitation, Stop, Summary, Usage


def counts_outside_changes(state: State) -> bool:
    """Whether the state bounds something that is used between changes (model calls, seconds)."""
    b = state.budget
    return b.max_model_calls is not UNSET or b.max_seconds is not UNSET


@contextmanager
def checked_bounds(inv: Any) -> Iterator[None]:
    """Run `stop_if_due`, then the call inside with the clock pinned to the time it read (if it read one).

    One time for the check and the call's own events: a replay, which gives both the recorded
    time of the event, then decides exactly as the call did.
    """
    at = stop_if_due(inv)
    if at is None:
        yield
        return
    clock = inv._clock
    inv._clock = lambda: at
    try:
        yield
    finally:
        inv._clock = clock


def stop_if_due(inv: Any) -> str | None:
    """End an active analysis whose policy says it is over at the clock's time (a `stop` event); the time read, or None.

    `inv` is a `session.Investigation`. Only for an analysis that sets `max_model_calls` or
    `max_seconds` (its kept state tells; without one, a read transaction finds out). Anything
    wrong with the analysis (unknown, damaged) is left to the call that follows, which reports it.
    """
    try:
        return _stop_if_due(inv)
    except WorkingsetError:
        return None


def _stop_if_due(inv: Any) -> str | None:
    kept = inv.store.views.get(inv.analysis_id)
    if kept is None:
        with inv._call(write=False) as call:
            kept = call.sync()
    if not counts_outside_changes(kept.state):
        return None
    at = inv._clock()
    with inv._call(write=False) as call:  # the common case writes nothing: a read transaction
        if _due(inv, call, at) is None:
            return at
    with inv._call(write=True) as call:  # found due: again, in the write transaction, then stop
        due = _due(inv, call, at)
        if due is None:
            return at
        view, status, reason = due
        message = lifecycle.sentence(view.state, status, reason, view.usage(at))
        call.tx.abandon_open_requests(inv.analysis_id)
        call.change()
        call.append("stop", LifecycleEvent(status=status, prior_status=None, termination_reason=reason,
                                           message=message), at)  # fmt: skip
        call.tx.set_status(inv.analysis_id, status, None, reason)
        return at


def _due(inv: Any, call: Any, at: str) -> tuple[Replayed, Any, str | None] | None:
    """(view, status, reason) when the policy ends the active analysis at `at`, else None."""
    tx = call.tx
    if inv._row(tx).status != ctl.ACTIVE:
        return None
    view = call.checked(inv.store.path, tx.open_request(inv.analysis_id))
    if not counts_outside_changes(view.state):
        return None
    status, reason = ctl.termination(view.state, ctl.ACTIVE, busy_hypotheses(tx, inv.analysis_id),
                                     view.usage(at))  # fmt: skip
    return None if status == ctl.ACTIVE else (view, status, reason)


def usage_at(view: Replayed, at: str, answers: int = 0) -> lifecycle.Usage:
    """The view's usage at `at`, with `answers` more model calls (an answer this call is about to keep)."""
    used = view.usage(at)
    return lifecycle.Usage(
        queries=used.queries, model_calls=used.model_calls + answers, seconds=used.seconds
    )


def with_lifecycle(summary: Summary, view: Replayed) -> Summary:
    """`summary` with its stage, stop and limitations filled in from the state (and the log's counts)."""
    state, used = summary.state, view.usage()
    summary.stage = lifecycle.stage(state, summary.status, summary.open_request is not None,
                                    bool(summary.pending_actions))  # fmt: skip
    explanation = lifecycle.sentence(state, summary.status, summary.termination_reason, used)
    if summary.termination_reason is not None and explanation is not None:
        summary.stop = Stop(
            reason=summary.termination_reason, status=summary.status, explanation=explanation
        )
    summary.limitations = [Limitation(evidence=item["evidence"], why=item["why"])
                           for item in lifecycle.limitations(state)]  # fmt: skip
    summary.partial = summary.status == ctl.COMPLETED and bool(summary.limitations)
    return summary


def usage_of(view: Replayed) -> Usage:
    """What the analysis used of each bound, as of its last event (until it ended)."""
    state, used = view.state, view.usage()
    return Usage(iterations=state.iteration, cost=state.budget.cost_used, queries=used.queries,
                 model_calls=used.model_calls, seconds=used.seconds)  # fmt: skip


def end_fields(summary: Summary, usage: Usage) -> dict[str, object]:
    """What an export's end line says of the lifecycle (and a replay checks, where the line has it)."""
    return {"stage": summary.stage, "stop": msgspec.to_builtins(summary.stop), "usage": msgspec.to_builtins(usage),
            "partial": summary.partial, "limitations": msgspec.to_builtins(summary.limitations)}  # fmt: skip


def lifecycle_stage(tx: Any, analysis_id: str, summary: Summary) -> str:
    """The summary's stage with its open request read from the store (an export's summary is made without it)."""
    open_req = tx.open_request(analysis_id)
    return lifecycle.stage(
        summary.state, summary.status, open_req is not None, bool(summary.pending_actions)
    )
