"""The event log of an analysis: its event records, and the replay that rebuilds a state from them.

The `created` event holds the initial state with its payloads moved to the store's
content-addressed payload table (the evidence keeps its `content_hash`); `decision` and
`record` events hold exactly what changed. Replaying them with the pure functions of
`controller` rebuilds the state at any event, which is how an exported request gets the
very state it was rendered from.

A `Replayed` (`view`) is such a state together with the last event it reflects. The session
keeps one per analysis and store connection, and at each call, inside the call's
transaction, `catch_up` applies only the events appended since (by this process or any
other), so a call costs what is new, not the whole history. A new process starts from the
analysis's latest snapshot (`snapshots`). Payloads are read only when the state must be
complete (`fill`, before rendering or showing it, or checking a recall or a span against it;
no other check or change looks at them), in batches, never one SELECT per item. The session
applies its own changes to a `Replayed` through `as_replayed` and `stored_payload`, which
give exactly the objects a replay decodes from the stored event, so a kept state never
differs from a fresh replay of the log.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast, overload

import msgspec

from .. import controller as ctl
from ..decisions import AnyDecision, Query, StoredDecision
from ..errors import StoreCorrupt, UsageError, WorkingsetError
from ..io.limits import Limits
from ..model.hashing import canonical_json
from ..model.state import (
    Capture,
    Cost,
    Evidence,
    Payload,
    Scope,
    State,
    check_capture,
    check_payload,
    decode_strict,
    is_timestamp,
    validate_state,
)  # fmt: skip
from ..store import EventRow, Manifest, Status, Tx
from . import snapshots
from .view import Replayed


class _Event(msgspec.Struct, kw_only=True):
    """Base of event records; later schema versions may add fields with defaults."""


class CreatedEvent(_Event, omit_defaults=True):
    state: State
    encoder: str
    status: Status
    termination_reason: str | None
    requests_before: int = (
        0  # the number of the stored context's request it was created from; new ones follow
    )


class RequestEvent(_Event):
    request_id: str
    hypothesis: str
    encoder: str
    manifest: Manifest  # the shown and indexed IDs, compactly (see `store.Manifest`)
    chars: int
    hash: str


class DecisionEvent(_Event):
    request_id: str
    hypothesis: str
    decision: StoredDecision  # the widest schema: it decodes every version's decisions
    notes: list[str]
    action: str | None
    iteration: int
    status: Status
    termination_reason: str | None


class RecordEvent(_Event):
    action: str
    evidence: Evidence  # payload null, content_hash kept: the payload lives in the payload table
    status: Status
    termination_reason: str | None


class AnswerEvent(_Event, kw_only=True, omit_defaults=True):
    """One submitted answer, verbatim, with its outcome: appended for every submission, accepted or not.

    It changes nothing else: not the state, the status, the open request or any index row.
    `answer` is the submitted bytes as UTF-8 text, or their base64 when they are not UTF-8
    (`encoding`). An accepted answer's event precedes its `decision` event in the same
    transaction; a rejected one carries the rejection's code, message and details.
    """

    request_id: str
    answer: str
    encoding: Literal["utf-8", "base64"] = "utf-8"
    # Set only when the answer was refused as `too_large`: its whole size; `answer` then keeps
    # its first `details.limit` bytes, so a flood of bytes cannot grow the store past the limit.
    size: int | None = None
    outcome: Literal["accepted", "rejected"]
    code: str | None = None
    message: str | None = None
    details: dict[str, Any] = {}

    @classmethod
    def of(cls, request_id: str, data: bytes, error: WorkingsetError | None = None, *,
           size: int | None = None) -> AnswerEvent:  # fmt: skip
        """The event for `data` submitted to `request_id`, accepted (no error) or rejected with `error`.

        `size` is the answer's whole size when `data` is only its head (kept as given).
        """
        limit = (
            error.details.get("limit") if error is not None and error.code == "too_large" else None
        )
        if size is None and isinstance(limit, int) and 0 <= limit < len(data):
            size, data = len(data), data[:limit]
        encoding: Literal["utf-8", "base64"]
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(data).decode("ascii"), "base64"
        if error is None:
            return cls(request_id=request_id, answer=text, encoding=encoding, outcome="accepted")
        return cls(request_id=request_id, answer=text, encoding=encoding, size=size, outcome="rejected",
                   code=error.code, message=error.message, details=msgspec.to_builtins(error.details))  # fmt: skip

    def data(self) -> bytes:
        """The kept bytes: the answer exactly as submitted, or its first `details.limit` bytes when `size` is set."""
        return (
            base64.b64decode(self.answer)
            if self.encoding == "base64"
            else self.answer.encode("utf-8")
        )


class LifecycleEvent(_Event):
    status: Status
    prior_status: Status | None
    termination_reason: str | None
    message: str | None = None


class BudgetEvent(_Event):
    """The analysis's encoder moved to a larger budget of its version: its next requests render with `encoder`.

    It changes no state: the analysis row's encoder is set in the same transaction, and the
    requests before it keep the encoder each was rendered with (`request` events).
    """

    encoder: str
    prior_encoder: str


_LIFECYCLE = msgspec.json.Decoder(LifecycleEvent)
ANSWER_DECODER = msgspec.json.Decoder(AnswerEvent)
# Every kind of event the log may hold; any other kind is damage.
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "created": msgspec.json.Decoder(CreatedEvent),
    "request": msgspec.json.Decoder(RequestEvent),
    "decision": msgspec.json.Decoder(DecisionEvent),
    "record": msgspec.json.Decoder(RecordEvent),
    "pause": _LIFECYCLE,
    "resume": _LIFECYCLE,
    "cancel": _LIFECYCLE,
    "fail": _LIFECYCLE,
    "stop": _LIFECYCLE,  # a bound the log counts (model calls, time) ended the analysis
    "answer": ANSWER_DECODER,  # changes nothing: a kept answer, accepted or rejected
    "budget": msgspec.json.Decoder(
        BudgetEvent
    ),  # changes no state: the encoder of the next requests
}
# The status a lifecycle event must set (resume: any status but these).
_LIFECYCLE_STATUS = {
    "pause": {"paused"},
    "cancel": {"cancelled"},
    "fail": {"failed"},
    "stop": {"completed"},
}


def encode_event(event: _Event) -> bytes:
    """The stored form of an event record."""
    return msgspec.json.encode(event)


_DECISION_DECODER = msgspec.json.Decoder(StoredDecision)
_EVIDENCE_DECODER = msgspec.json.Decoder(Evidence)
_PAYLOAD_DECODER = msgspec.json.Decoder(Payload)


@overload
def as_replayed(value: Evidence) -> Evidence: ...
@overload
def as_replayed(value: AnyDecision | StoredDecision) -> StoredDecision: ...
def as_replayed(value: Evidence | AnyDecision | StoredDecision) -> Evidence | StoredDecision:
    """The decision or evidence record exactly as a replay decodes it from its stored event (no shared objects)."""
    if isinstance(value, Evidence):
        return _EVIDENCE_DECODER.decode(msgspec.json.encode(value))
    return _DECISION_DECODER.decode(msgspec.json.encode(value))


def stored_payload(payload: Payload) -> Payload:
    """A payload exactly as the store gives it back (decoded from its canonical bytes)."""
    return _PAYLOAD_DECODER.decode(canonical_json(payload))


def damaged(analysis_id: str, seq: int | None, what: str, **details: Any) -> StoreCorrupt:
    """The error for damage found in the log of `analysis_id` at event `seq` (None: not one event)."""
    where = (
        f"event {seq} of {analysis_id}" if seq is not None else f"the event log of {analysis_id}"
    )
    return StoreCorrupt(
        f"{where}: {what}", details={"analysis": analysis_id, "seq": seq, **details}
    )


def _decode(analysis_id: str, rows: list[EventRow]) -> list[tuple[EventRow, Any]]:
    out = []
    for row in rows:
        decoder = _DECODERS.get(row.kind)
        if decoder is None:
            raise damaged(analysis_id, row.seq, f"unknown event kind {row.kind!r}", kind=row.kind)
        try:
            out.append((row, decoder.decode(row.data)))
        except msgspec.DecodeError as exc:
            raise damaged(
                analysis_id, row.seq, f"the {row.kind} event is damaged ({exc})", kind=row.kind
            ) from None
    return out


def _payloads(tx: Tx, decoded: list[tuple[EventRow, Any]]) -> dict[str, Payload]:
    """Every payload the events refer to, in one batched read."""
    wanted: list[str] = []
    for row, event in decoded:
        if row.kind == "created":
            wanted.extend(
                ev.content_hash
                for ev in event.state.evidence
                if ev.content_hash and ev.payload is None
            )
        elif (
            row.kind == "record" and event.evidence.content_hash and event.evidence.payload is None
        ):
            wanted.append(event.evidence.content_hash)
    return tx.payloads(wanted) if wanted else {}


def _stored_elsewhere(ev: Evidence) -> bool:
    return ev.content_hash is not None and ev.payload is None


def _fill(evidence: list[Evidence], payloads: Mapping[str, Payload]) -> None:
    for ev in evidence:
        # Each is a view's `unfilled` evidence, stored elsewhere: it has a content hash.
        payload = payloads.get(cast(str, ev.content_hash))
        if payload is None:
            raise StoreCorrupt(
                f"payload {ev.content_hash} of {ev.id} is missing", details={"evidence": ev.id}
            )
        ev.payload = payload


def fill(tx: Tx, view: Replayed) -> Replayed:
    """Read the payloads the view does not hold yet (one batched read), so its state is complete."""
    if view.unfilled:
        # `unfilled` holds evidence stored elsewhere only, each with its content hash.
        _fill(view.unfilled, tx.payloads(cast(str, ev.content_hash) for ev in view.unfilled))
        view.unfilled.clear()
        view.checked = 0
    return view


def check_stored(tx: Tx, view: Replayed) -> Replayed:
    """Check that the payloads the view does not hold yet are stored and hash right, without reading them into it.

    For the calls that need the state but not its payloads (`submit`, `record`, `resume`):
    a damaged payload row is then refused by them as by `show` and `next`, for the cost of
    reading and hashing the bytes once per kept state (not of decoding them, nor of keeping them).
    """
    if view.checked < len(view.unfilled):
        # `unfilled` holds evidence stored elsewhere only, each with its content hash.
        tx.check_payloads(cast(str, ev.content_hash) for ev in view.unfilled[view.checked :])
        view.checked = len(view.unfilled)
    return view


def _apply(analysis_id: str, view: Replayed | None, row: EventRow, event: Any) -> Replayed:
    """Apply one decoded event to `view` in place (None: it must be the `created` event); damage is `store_corrupt`.

    The events come from the store, so anything that keeps one from applying (an unknown
    hypothesis, a record before its query, a repeated event) is damage, named with its event.
    """
    try:
        return _apply_checked(analysis_id, view, row, event)
    except StoreCorrupt:
        raise
    except (
        WorkingsetError,
        LookupError,
        ValueError,
        TypeError,
        AttributeError,
        ArithmeticError,
    ) as exc:
        what = exc.message if isinstance(exc, WorkingsetError) else f"{type(exc).__name__}: {exc}"
        raise damaged(
            analysis_id, row.seq, f"the {row.kind} event cannot be replayed ({what})", kind=row.kind
        ) from None


def _validate_externalized(state: State, source: str) -> None:
    """`validate_state` for a state whose payloads live in the payload table (each still to be filled in).

    The payloads themselves are not checked again here: each was checked when it entered the
    store, and every read checks its bytes against its content hash. Their hashes are set
    aside for the check (which would want the payload beside each) and put back.
    """
    hashes = [
        (ev, ev.content_hash)
        for ev in state.evidence
        if ev.payload is None and ev.content_hash is not None
    ]
    for ev, _ in hashes:
        ev.content_hash = None
    try:
        validate_state(state, source)
    finally:
        for ev, digest in hashes:
            ev.content_hash = digest


def _number(ident: str | None) -> int:
    return int(ident[1:]) if ident else 0


def _apply_checked(analysis_id: str, view: Replayed | None, row: EventRow, event: Any) -> Replayed:
    def bad(what: str) -> StoreCorrupt:
        return damaged(analysis_id, row.seq, what, kind=row.kind)

    if (view is None) != (row.kind == "created"):
        raise bad("the log must start with exactly one `created` event")
    if row.kind == "created":
        try:
            _validate_externalized(event.state, f"event {row.seq}")
        except WorkingsetError as err:
            raise bad(f"its state is invalid ({err.message})") from None
        view = Replayed(state=event.state, seq=row.seq - 1, changed=0, numbers=ctl.Numbers.of(event.state),
                        requests_before=event.requests_before, base_bytes=len(row.data))  # fmt: skip
        view.unfilled.extend(ev for ev in event.state.evidence if _stored_elsewhere(ev))
    # Made just above, or given: only the `created` event comes without a view (checked first).
    assert view is not None
    if row.kind == "decision":
        is_query = isinstance(event.decision.next, Query)
        if is_query != (event.action is not None) or (
            is_query and _number(event.action) <= view.numbers.actions
        ):
            raise bad(f"its budget action {event.action} is not the next new one of a query")
        ids = ctl.Allocated(notes=tuple(event.notes), action=event.action)
        if view.apply_decision(event.hypothesis, event.decision, ids) != event.iteration:
            raise bad("replay reached a different iteration")
    elif row.kind == "record":
        ev = event.evidence
        if _number(ev.id) <= view.numbers.evidence:
            raise bad(f"evidence {ev.id} is not newer than the evidence before it")
        if (
            ev.budget.action != event.action
            or not 0 < _number(event.action) <= view.numbers.actions
        ):
            raise bad(f"it records {event.action}, which no earlier decision reserved")
        if _stored_elsewhere(ev):
            view.unfilled.append(ev)
        view.apply_record(ev)
    elif row.kind in _LIFECYCLE_STATUS and event.status not in _LIFECYCLE_STATUS[row.kind]:
        raise bad(f"a {row.kind} event that sets status {event.status}")
    view.note(row.seq, row.kind, 0 if row.kind == "created" else len(row.data), row.at,
              getattr(event, "status", None))  # fmt: skip
    return view


def catch_up(tx: Tx, analysis_id: str, view: Replayed | None, upto: int | None = None) -> Replayed:
    """Bring `view` (None: nothing yet) up to the last event (or `upto`), reading only the newer events.

    Runs inside the caller's transaction, so it sees every change committed by any process.
    The view is updated in place; if this raises, the view is unusable. Payloads are not read
    (see `fill`).
    """
    if view is None:
        view = snapshots.from_snapshot(tx, analysis_id, upto)
    decoded = _decode(
        analysis_id, tx.events(analysis_id, upto=upto, after=view.seq if view is not None else 0)
    )
    for row, event in decoded:
        view = _apply(analysis_id, view, row, event)
    if view is None:
        raise damaged(analysis_id, None, "it has no events")
    return view


def seed(analysis_id: str, created: EventRow, payloads: Mapping[str, Payload]) -> Replayed:
    """The view of a log holding only its `created` event, whose payloads the caller has (a new analysis)."""
    ((row, event),) = _decode(analysis_id, [created])
    view = _apply(analysis_id, None, row, event)
    _fill(view.unfilled, payloads)
    view.unfilled.clear()
    return view


def replay(
    tx: Tx, analysis_id: str, upto: int | None = None
) -> Iterator[tuple[EventRow, Any, State]]:
    """Yield (event row, decoded event, state after it) for each event; the one state object is updated in place."""
    decoded = _decode(analysis_id, tx.events(analysis_id, upto))
    payloads = _payloads(tx, decoded)
    view: Replayed | None = None
    for row, event in decoded:
        view = _apply(analysis_id, view, row, event)
        _fill(view.unfilled, payloads)
        view.unfilled.clear()
        yield row, event, view.state


class ResultInput(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The result of a pending query as the application records it (docs/protocol.md#results)."""

    scope: Scope
    capture: Capture
    payload: Payload | None
    cost: Cost = 0.0


_RESULT_DECODER = msgspec.json.Decoder(ResultInput)


def decode_result(
    data: bytes, source: str = "<result>", limits: Limits | None = None
) -> ResultInput:
    """Decode and check a query result: its limits, strict keys, rows as wide as their columns, numbers in range."""
    result = decode_strict(data, _RESULT_DECODER, source, kind="result", limits=limits)
    check_capture(result.capture, source, "$.capture")
    check_payload(result.payload, source, "$.payload")
    return result


def check_timestamp(value: str) -> None:
    """Check an RFC 3339 timestamp with an explicit offset (a capture time given by the caller)."""
    if not is_timestamp(value):
        raise UsageError(f"captured_at must be an RFC 3339 timestamp with an offset, not {value!r}")
