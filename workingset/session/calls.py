"""One API call of the session: its transaction and kept state (`Call`), and the helpers the calls share."""

from __future__ import annotations

from typing import Any

import msgspec

from .. import controller as ctl
from ..encoders import get_encoder
from ..errors import DecisionRejected, InvalidFile, SessionError, StoreCorrupt, UnknownEncoder
from ..eventlog.log import ResultInput, catch_up, check_stored, encode_event, fill, stored_payload
from ..eventlog.view import Replayed
from ..model.state import State
from ..store import ActionRow, AnalysisRow, RequestRecord, Tx
from .replies import PendingAction


def as_bytes(value: str | bytes | dict[str, Any] | msgspec.Struct, what: str = "state") -> bytes:
    """JSON input as bytes; a string that is not valid Unicode (a lone surrogate) is refused with the input's code."""
    if isinstance(value, bytes):
        return value
    try:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (dict, msgspec.Struct)):
            return msgspec.json.encode(value)
    except UnicodeEncodeError:
        message = f"the {what} holds a string that is not valid Unicode (a lone surrogate)"
        if what == "decision":
            raise DecisionRejected(message, code="malformed_json", details={"path": "$"}) from None
        raise InvalidFile(message, details={"file": f"<{what}>", "path": "$"}) from None
    raise TypeError(f"expected JSON text, bytes, a dict or a Struct, not {type(value).__name__}")


class Call:
    """One API call's transaction and the analysis's kept state, brought up to date on demand."""

    def __init__(self, tx: Tx, analysis_id: str, view: Replayed | None):
        self.tx = tx
        self.analysis_id = analysis_id
        self.view = view
        self.dirty = (
            False  # the view has been changed in memory by this call's own (uncommitted) work
        )

    def sync(self) -> Replayed:
        """The kept state with every event committed so far applied (a full replay if there is none)."""
        view, self.view = self.view, None  # unusable if catching up fails half-way
        self.view = catch_up(self.tx, self.analysis_id, view)
        return self.view

    def checked(self, path: str, open_req: RequestRecord | None) -> Replayed:
        """The synced state, found whole before a write that needs it: its open request in the log, its payloads stored right.

        What `show`, `next` and `export` find by rendering or reading everything, checked here
        without reading the payloads into the state (see `journal.check_stored`), so that no
        command appends to a log they refuse.
        """
        view = self.sync()
        check_in_log(path, self.analysis_id, open_req, view)
        return check_stored(self.tx, view)

    def complete(self) -> Replayed:
        """The synced state with every payload in place (for rendering or showing it)."""
        view, self.view = self.view, None  # unusable if filling fails half-way
        self.view = fill(
            self.tx, view if view is not None else catch_up(self.tx, self.analysis_id, None)
        )
        return self.view

    def change(self) -> Replayed:
        """The synced view, about to be changed by this call: kept only if the call commits."""
        assert self.view is not None, "sync() first"
        self.dirty = True
        return self.view

    def append(self, kind: str, event: Any, at: str) -> int:
        """Append this call's event; a synced view then reflects it (its change must already be applied)."""
        data = encode_event(event)
        seq = self.tx.append_event(self.analysis_id, kind, at, data)
        # A kept answer changes no state: a view that was current stays current past it.
        current = kind == "answer" and self.view is not None and self.view.seq == seq - 1
        if self.view is not None and (self.dirty or current):
            self.view.note(seq, kind, len(data), at, getattr(event, "status", None))
        return seq


def externalize(tx: Tx, state: State, payloads: dict[str, Any]) -> State:
    """Move every payload into the content-addressed payload table; the state keeps the hashes.

    `payloads` receives each one as the store gives it back, by hash.
    """
    for ev in state.evidence:
        if ev.payload is not None:
            digest = tx.put_payload(ev.payload)
            if digest not in payloads:
                payloads[digest] = stored_payload(ev.payload)
            ev.payload = None
    return state


def check_result_matches(result: ResultInput, action: ActionRow) -> None:
    """A result must be of the query its action decided: `capture.origin` is its source, `capture.query` its query."""
    for field, got, expected in (
        ("origin", result.capture.origin, action.source),
        ("query", result.capture.query, action.query),
    ):
        if got != expected:
            raise SessionError(
                f"the result's capture.{field} {got!r} is not the {'source' if field == 'origin' else 'query'} "
                f"{expected!r} that {action.action_id} decided; record the result of that query",
                code="result_mismatch",
                details={
                    "action": action.action_id,
                    "path": f"$.capture.{field}",
                    "expected": expected,
                    "got": got,
                },
            )


def evidence_ids(state: State) -> list[str]:
    return [ev.id for ev in state.evidence]


def busy_hypotheses(tx: Tx, analysis_id: str) -> set[str]:
    return {a.hypothesis for a in tx.pending_actions(analysis_id)}


def pending_action(a: ActionRow) -> PendingAction:
    return PendingAction(action=a.action_id, hypothesis=a.hypothesis, request_id=a.request_id, iteration=a.iteration,
                         source=a.source, query=a.query, purpose=a.purpose)  # fmt: skip


def closed(row: AnalysisRow, decision: bool = False) -> SessionError | DecisionRejected:
    why = f" ({row.termination_reason})" if row.termination_reason else ""
    hint = "; resume it first" if row.status == ctl.PAUSED else ""
    cls = DecisionRejected if decision else SessionError
    return cls(f"analysis {row.analysis_id} is {row.status}{why}{hint}", code="analysis_closed",
               details={"status": row.status, "termination_reason": row.termination_reason})  # fmt: skip


def stale(
    tx: Tx, analysis_id: str, request_id: str, open_req: RequestRecord | None
) -> DecisionRejected:
    known = tx.request(analysis_id, request_id)
    if known is not None:
        why = f"request {request_id} was already {known.status}"
    else:
        why = f"request {request_id} is not a request of analysis {analysis_id}"
    now = f"; the open request is {open_req.request_id}" if open_req else "; no request is open"
    return DecisionRejected(why + now, code="stale_request",
                            details={"request_id": request_id, "open_request": open_req.request_id if open_req else None})  # fmt: skip


def stored_encoder(name: str, owner: str) -> Any:
    """The encoder a store row names; an unknown name there is damage, not the caller's `unknown_encoder`."""
    try:
        return get_encoder(name)
    except UnknownEncoder as err:
        raise StoreCorrupt(
            f"{owner} names an unknown encoder ({err.message})", details={"encoder": name}
        ) from None


def points_nowhere(path: str, analysis_id: str, req: RequestRecord, seq: int) -> StoreCorrupt:
    """The error for a request row whose state event the log does not have."""
    return StoreCorrupt(f"store {path}: request {req.request_id} points at event {seq}, which the log of {analysis_id} "
                        "does not have", details={"analysis": analysis_id, "request_id": req.request_id, "seq": seq})  # fmt: skip


def check_in_log(path: str, analysis_id: str, req: RequestRecord | None, view: Replayed) -> None:
    """An open request must point into the log the state was replayed from (a deleted last event, a row past it).

    Every call that reads the state with an open request checks it, on either backend, so
    that a damage `next` and `export` report is never answered, or appended to, by `submit` or `show`.
    """
    if req is not None and not 1 <= req.state_seq <= view.seq:
        raise points_nowhere(path, analysis_id, req, req.state_seq)
