"""An exported analysis: its stored contexts, its journal and every answer, side by side.

`Investigation.export(dir)` writes one stored-context file per request (`<request_id>.json`,
a run that `verify` and `compare` read) and, beside them, two JSON Lines files that hold
everything else the analysis was built from:

- `journal.jsonl`: a header line (`format`, `analysis_id`, `encoder`), then every event of
  the log except the answers, in order, each `{"seq", "kind", "at", ...the event's fields}`
  with payloads written out in full (`created` carries the initial state, `record` the
  evidence), and an `end` line with the final status, termination reason, state hash and
  the hash of every event, answers included (`event_hashes`).
- `answers.jsonl`: every submitted answer, accepted or rejected, verbatim, with its event
  number, time, request ID and outcome (a rejection's code, message and details).

Together with the stored contexts this is what `workingset replay` rebuilds the analysis
from, and what (prompt, answer) pairs for review or fine-tuning are joined from: an answer's
`request_id` names the stored context whose rendered text the model was answering. It is also
what the retry turns are read from (`retry_turns`): the further requests a rejection led to,
which `compare` bills and `workingset requests` prints.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Any

import msgspec

from ..errors import DecisionRejected, InvalidFile, StoreCorrupt
from ..io.limits import jsonl_lines
from ..model.hashing import canonical_json, hash_bytes
from ..model.state import State
from ..store import EventRow, Tx
from .log import (
    AnswerEvent,
    BudgetEvent,
    CreatedEvent,
    DecisionEvent,
    LifecycleEvent,
    RecordEvent,
    RequestEvent,
)

JOURNAL = "journal.jsonl"
ANSWERS = "answers.jsonl"
JOURNAL_FORMAT = "workingset/journal@1"

EVENT_TYPES: dict[str, type[msgspec.Struct]] = {
    "created": CreatedEvent,
    "request": RequestEvent,
    "answer": AnswerEvent,
    "decision": DecisionEvent,
    "record": RecordEvent,
    "pause": LifecycleEvent,
    "resume": LifecycleEvent,
    "cancel": LifecycleEvent,
    "fail": LifecycleEvent,
    "stop": LifecycleEvent,
    "budget": BudgetEvent,
}
_DECODERS = {kind: msgspec.json.Decoder(cls) for kind, cls in EVENT_TYPES.items()}


def event_hashes(lines: list[dict[str, Any]]) -> list[str]:
    """The `xxh3-128:` hash of each exported event's canonical JSON, in order: the end line's `event_hashes`.

    Replay feeds an event's recorded time and an answer's recorded bytes back in, so the
    fresh store reproduces them whatever they are; these hashes, written at export, are what
    an edited time or answer is caught against (an edit, not a forger who rewrites them too).
    """
    return [hash_bytes(canonical_json(line)) for line in lines]


def state_hash(state: State) -> str:
    """The `xxh3-128:` hash of a state's canonical JSON (keys sorted, compact): what replay compares last."""
    return hash_bytes(canonical_json(state))


def journal_lines(tx: Tx, analysis_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The analysis's events after `after` in their exported form: plain JSON data, payloads in full."""
    rows = tx.events(analysis_id, after=after)
    decoded = [(row, _decode(analysis_id, row)) for row in rows]
    wanted = [
        ev.content_hash for _, event in decoded for ev in _evidence_of(event) if ev.content_hash
    ]
    payloads = tx.payloads(wanted) if wanted else {}
    lines = []
    for row, event in decoded:
        for ev in _evidence_of(event):
            if ev.content_hash is not None and ev.payload is None:
                ev.payload = payloads[ev.content_hash]
        lines.append({"seq": row.seq, "kind": row.kind, "at": row.at, **msgspec.to_builtins(event)})
    return lines


def stored_lines(tx: Tx, analysis_id: str) -> list[dict[str, Any]]:
    """The analysis's events as stored, unchecked: each event's JSON as it is, payloads written out where readable.

    For an analysis the store can no longer render (`export --as-stored`): nothing is
    validated, so what was kept is read out even when the current types refuse it. An event
    whose data is not JSON is kept as its text under `"data"`; a payload that cannot be read is
    left null.
    """
    lines = []
    for row in tx.events(analysis_id):
        try:
            event = msgspec.json.decode(row.data)
        except msgspec.DecodeError:
            event = None
        fields = event if isinstance(event, dict) else {"data": row.data.decode("utf-8", "replace")}
        for ev in _stored_evidence(fields):
            digest = ev.get("content_hash")
            if ev.get("payload") is None and isinstance(digest, str):
                ev["payload"] = _stored_payload(tx, digest)
        line: dict[str, Any] = {"seq": row.seq, "kind": row.kind, "at": row.at}
        line.update(
            (k, v) for k, v in fields.items() if k not in line
        )  # the row's own seq, kind and time win
        lines.append(line)
    return lines


def _stored_evidence(fields: dict[str, Any]) -> list[dict[str, Any]]:
    state = fields.get("state")
    items = state.get("evidence") if isinstance(state, dict) else [fields.get("evidence")]
    return [ev for ev in items or () if isinstance(ev, dict)]


def _stored_payload(tx: Tx, digest: str) -> Any:
    try:
        return msgspec.to_builtins(tx.payloads([digest])[digest])
    except StoreCorrupt:
        return None


def write_journal(directory: str | os.PathLike[str], header: dict[str, Any], lines: list[dict[str, Any]],
                  end: dict[str, Any]) -> list[Path]:  # fmt: skip
    """Write `journal.jsonl` (header, every event but the answers, end) and `answers.jsonl`."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    journal = [
        {"format": JOURNAL_FORMAT, **header},
        *(x for x in lines if x["kind"] != "answer"),
        {"kind": "end", **end},
    ]
    answers = [x for x in lines if x["kind"] == "answer"]
    paths = []
    for name, items in ((JOURNAL, journal), (ANSWERS, answers)):
        path = root / name
        path.write_bytes(b"".join(msgspec.json.encode(item) + b"\n" for item in items))
        paths.append(path)
    return paths


def _decode(analysis_id: str, row: EventRow) -> msgspec.Struct:
    decoder = _DECODERS.get(row.kind)
    if decoder is None:
        raise StoreCorrupt(f"event {row.seq} of {analysis_id} has an unknown kind {row.kind!r}")
    try:
        return decoder.decode(row.data)
    except msgspec.DecodeError as exc:
        raise StoreCorrupt(f"event {row.seq} of {analysis_id} is damaged ({exc})") from None


def _evidence_of(event: msgspec.Struct) -> list[Any]:
    if isinstance(event, CreatedEvent):
        return list(event.state.evidence)
    if isinstance(event, RecordEvent):
        return [event.evidence]
    return []


# Rejections a model is not sent back (`providers.NOT_RETRYABLE`): the controller answered a stale or closed request.
_NOT_RETRIED = ("stale_request", "analysis_closed")

# A reply that held no answer (`session.answers`): kept, but nothing went back to the model, so it is
# no retry turn; the request it answered was sent (and billed) already.
NO_ANSWER = ("reply_truncated", "reply_refused", "reply_empty", "reply_malformed")

RetryTurn = tuple[bytes, DecisionRejected]  # a rejected answer as kept, and its rejection


def retry_turns(path: str | os.PathLike[str]) -> dict[str, list[RetryTurn]]:
    """The retry turns an `answers.jsonl` records: per request, the rejected answers each sent back to the model.

    A model's k-th answer to a request replied to the request carrying its k - 1 earlier
    rejected answers and their rejections (`providers.messages(..., retry=...)`). So a
    rejection is a retry turn when a later answer to the same request follows it (up to the
    accepted one): the last rejection of a turn that gave up (`turn_failed`) was sent nowhere.
    Rejections the model is not told (`stale_request`, `analysis_closed`) are no turn. A reply
    that held no answer (`reply_refused`, `reply_truncated`, `reply_empty`) is kept as a line
    of its own: it is no turn (the next try is the same body again, which is not billed a
    second time), but it shows that the request before it was sent, so a rejection it follows
    is a turn. Each answer is its kept bytes (a `too_large` one only its kept head). Oldest
    first; a request with no retry turn is absent. A line that is not an answer line is
    `invalid_file`.
    """
    answers: dict[str, list[tuple[bool, RetryTurn | None]]] = {}
    done: set[str] = set()
    for number, line in jsonl_lines(str(path)):  # bounded size and nesting, as `replay` reads it
        if not line.strip():
            continue
        event = _answer_line(path, number, line)
        if event.request_id in done or event.code in _NOT_RETRIED:
            continue
        if event.code in NO_ANSWER:
            answers.setdefault(event.request_id, []).append((False, None))
            continue
        data = _answer_data(path, number, event)
        err = DecisionRejected(
            event.message or "", code=event.code or "schema_violation", details=dict(event.details)
        )
        answers.setdefault(event.request_id, []).append((event.outcome == "accepted", (data, err)))
        if event.outcome == "accepted":
            done.add(event.request_id)
    # Every answer but a request's last replied to a retry; the answers before it are its turns.
    turns = {
        rid: [turn for _, turn in items[:-1] if turn is not None] for rid, items in answers.items()
    }
    return {rid: found for rid, found in turns.items() if found}


def _answer_line(path: str | os.PathLike[str], number: int, line: bytes) -> AnswerEvent:
    where = {"file": str(path), "line": number}
    try:
        item = msgspec.json.decode(line)
        if (
            not isinstance(item, dict)
            or item.get("kind") != "answer"
            or not isinstance(item.get("seq"), int)
        ):
            raise InvalidFile(
                f"{path}: line {number} is not an answer (kind answer, with its seq)", details=where
            )
        event = msgspec.convert(
            {k: v for k, v in item.items() if k not in ("seq", "kind", "at")}, AnswerEvent
        )
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidFile(
            f"{path}: line {number} is not an answer line ({exc})", details=where
        ) from None
    if event.outcome == "rejected" and not (event.code and event.message):
        raise InvalidFile(
            f"{path}: line {number} is a rejection without its code and message", details=where
        )
    return event


def _answer_data(path: str | os.PathLike[str], number: int, event: AnswerEvent) -> bytes:
    if event.encoding == "utf-8":
        return event.answer.encode("utf-8")
    try:
        return base64.b64decode(event.answer, validate=True)
    except binascii.Error:
        raise InvalidFile(
            f"{path}: line {number}: the answer is not base64",
            details={"file": str(path), "line": number},
        ) from None
