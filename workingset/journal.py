"""The event log of an analysis: its event records, and the replay that rebuilds a state from them.

The `created` event holds the initial state with its payloads moved to the store's
content-addressed payload table (the evidence keeps its `content_hash`); `decision` and
`record` events hold exactly what changed. Replaying them with the pure functions of
`controller` rebuilds the state at any event, which is how an exported request gets the
very state it was rendered from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import msgspec

from . import controller as ctl
from .decisions import RecallDecision
from .errors import InvalidFile, StoreCorrupt, UsageError
from .model import Capture, Evidence, NonNegFloat, Payload, RowsPayload, Scope, State
from .store import Tx

_TIMESTAMP_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$")
_PATH_RE = re.compile(r" - at `(\$[^`]*)`$")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


class _Event(msgspec.Struct, kw_only=True):
    """Base of event records; later schema versions may add fields with defaults."""


class CreatedEvent(_Event):
    state: State
    encoder: str
    status: str
    termination_reason: str | None


class RequestEvent(_Event):
    request_id: str
    hypothesis: str
    encoder: str
    shown: list[str]
    indexed: list[str]
    chars: int
    hash: str


class DecisionEvent(_Event):
    request_id: str
    hypothesis: str
    decision: RecallDecision  # the widest schema: it decodes every version's decisions
    notes: list[str]
    action: str | None
    iteration: int
    status: str
    termination_reason: str | None


class RecordEvent(_Event):
    action: str
    evidence: Evidence  # payload null, content_hash kept: the payload lives in the payload table
    status: str
    termination_reason: str | None


class LifecycleEvent(_Event):
    status: str
    prior_status: str | None
    termination_reason: str | None
    message: str | None = None


_DECODERS = {
    "created": msgspec.json.Decoder(CreatedEvent),
    "decision": msgspec.json.Decoder(DecisionEvent),
    "record": msgspec.json.Decoder(RecordEvent),
}


def encode_event(event: _Event) -> bytes:
    """The stored form of an event record."""
    return msgspec.json.encode(event)


def replay(tx: Tx, analysis_id: str, upto: int | None = None) -> Iterator[tuple[int, State]]:
    """Yield (seq, state after that event) for each event; the one state object is updated in place."""
    payloads: dict[str, Payload] = {}

    def fill(ev: Evidence) -> None:
        if ev.content_hash is not None and ev.payload is None:
            if ev.content_hash not in payloads:
                payloads[ev.content_hash] = tx.payload(ev.content_hash)
            ev.payload = payloads[ev.content_hash]

    state: State | None = None
    for row in tx.events(analysis_id, upto):
        decoder = _DECODERS.get(row.kind)
        try:
            event: Any = decoder.decode(row.data) if decoder else None
        except msgspec.DecodeError as exc:
            raise StoreCorrupt(f"event {row.seq} of {analysis_id} is damaged ({exc})") from None
        if (state is None) != (row.kind == "created"):
            raise StoreCorrupt(f"event {row.seq} of {analysis_id}: the log must start with exactly one `created`")
        if row.kind == "created":
            state = event.state
            for ev in state.evidence:
                fill(ev)
        elif row.kind == "decision":
            ids = ctl.Allocated(notes=tuple(event.notes), action=event.action)
            if ctl.apply_decision(state, event.hypothesis, event.decision, ids) != event.iteration:
                raise StoreCorrupt(f"event {row.seq} of {analysis_id}: replay reached a different iteration")
        elif row.kind == "record":
            fill(event.evidence)
            ctl.apply_record(state, event.evidence)
        yield row.seq, state


class ResultInput(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The result of a pending query as the application records it (SPEC §8 `record`)."""

    scope: Scope
    capture: Capture
    payload: Payload | None
    cost: NonNegFloat = 0.0


_RESULT_DECODER = msgspec.json.Decoder(ResultInput)


def _bad(source: str, path: str, message: str) -> InvalidFile:
    return InvalidFile(f"{source}: {message} at {path}", details={"file": source, "path": path})


def decode_result(data: bytes, source: str = "<result>") -> ResultInput:
    """Decode and check a query result: strict keys, rows as wide as their columns, finite 64-bit numbers."""
    try:
        result = _RESULT_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _PATH_RE.search(text)
        raise _bad(source, match.group(1) if match else "$", _PATH_RE.sub("", text)) from None
    except msgspec.DecodeError as exc:
        raise InvalidFile(f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}) from None
    _scalar(result.cost, source, "$.cost")
    for name in ("page", "item_count"):
        _scalar(getattr(result.capture, name), source, f"$.capture.{name}")
    if isinstance(result.payload, RowsPayload):
        width = len(result.payload.columns)
        for r, row in enumerate(result.payload.rows):
            if len(row) != width:
                raise _bad(source, f"$.payload.rows[{r}]", f"row has {len(row)} cells for {width} columns")
            for c, cell in enumerate(row):
                _scalar(cell, source, f"$.payload.rows[{r}][{c}]")
    return result


def _scalar(value: Any, source: str, path: str) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
        raise _bad(source, path, "integer does not fit in 64 bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad(source, path, "NaN and infinities are not allowed")


def check_timestamp(value: str) -> None:
    """Check an RFC 3339 timestamp with an explicit offset (a capture time given by the caller)."""
    ok = isinstance(value, str) and _TIMESTAMP_RE.match(value) is not None
    if ok:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            ok = False
    if not ok:
        raise UsageError(f"captured_at must be an RFC 3339 timestamp with an offset, not {value!r}")
