"""One try at answering a request: what `turn` hands `send` beside the body, rebuilt from the kept answers.

Every reply a request got is kept in the event log (`answer` events: the accepted one, each
rejected decision, and each reply that held no answer with its `reply_*` code). The tries of
the open request are read back from there, so a turn that restarts (after a crash, a network
error or a `turn_incomplete`) continues where it stopped: the rejected answers go back to the
model exactly as `compare` bills them (`providers.as_sent`), and the attempt's number counts
every reply the request got.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import DecisionRejected, ReplyUnusable, WorkingsetError
from ..eventlog.exports import NO_ANSWER
from ..eventlog.log import ANSWER_DECODER, AnswerEvent
from ..io.limits import MAX_DEPTH, nesting_depth
from ..providers import NOT_RETRYABLE, Answer, as_sent
from ..store import Tx
from .replies import Request

# After a cut-off: ask for this many times the output tokens the cut reply used (the limit it hit).
GROWTH = 2


@dataclass(frozen=True)
class Attempt:
    """One try at a request, as `send(body, attempt)` receives it.

    `number` counts every reply the request got before, kept in the store (1: the first try;
    it goes on after a restart). `last` is the last of them that was not accepted (a
    `DecisionRejected`, or a `ReplyUnusable` for a reply with no answer), None on a first try.
    `max_tokens` is set after a cut-off (`reply_truncated` at the output limit): twice the
    output tokens the cut reply used, the limit it hit, when the reply says how many; pass it
    to the model call. `body` is what `send` gets as its first argument.
    """

    request: Request
    provider: str
    number: int
    last: WorkingsetError | None
    max_tokens: int | None
    body: dict[str, Any]

    @property
    def hypothesis(self) -> str:
        """The hypothesis the request is for."""
        return self.request.hypothesis

    @property
    def assess(self) -> str | None:
        """The evidence ID the decision must assess (rule A), if any: the result the last query brought."""
        return self.request.assess


def kept_answers(tx: Tx, analysis_id: str, request: str, after: int) -> list[AnswerEvent]:
    """The answers kept for `request` in the events after `after` (its request event), oldest first."""
    out = []
    for row in tx.events(analysis_id, after=after):
        if row.kind == "answer":
            event = ANSWER_DECODER.decode(row.data)
            if event.request_id == request:
                out.append(event)
    return out


def retry_of(kept: list[AnswerEvent], provider: str) -> list[tuple[Answer, DecisionRejected]]:
    """The rejected answers the model is shown again, as `compare` bills them (`eventlog.exports.retry_turns`)."""
    return [
        (
            as_sent(event.data(), provider),
            DecisionRejected(
                event.message or "",
                code=event.code or "schema_violation",
                details=dict(event.details),
            ),
        )  # fmt: skip
        for event in kept
        if event.outcome == "rejected"
        and event.code not in NO_ANSWER
        and event.code not in NOT_RETRYABLE
    ]


def rejection(event: AnswerEvent) -> WorkingsetError:
    """The error a kept answer was refused with: a `ReplyUnusable` for a reply with no answer."""
    cls = ReplyUnusable if event.code in NO_ANSWER else DecisionRejected
    return cls(
        event.message or "", code=event.code or "schema_violation", details=dict(event.details)
    )


def suggested_max_tokens(reply: dict[str, Any] | None) -> int | None:
    """After a cut-off at the output limit: `GROWTH` times the output tokens the reply used; else None.

    Anthropic: "Raise max_tokens" for `stop_reason` `max_tokens` (a reply that filled the
    context window, `model_context_window_exceeded`, gains nothing from it). The used tokens
    are the reply's `usage.output_tokens` (Anthropic, OpenAI Responses) or
    `usage.completion_tokens` (Chat Completions).
    """
    if not isinstance(reply, dict):
        return None
    cut = (
        reply.get("stop_reason") == "max_tokens"
        or any(
            isinstance(c, dict) and c.get("finish_reason") == "length"
            for c in _list(reply.get("choices"))
        )
        or _get(reply, "incomplete_details").get("reason") == "max_output_tokens"
    )
    usage = _get(reply, "usage")
    used = usage.get("output_tokens", usage.get("completion_tokens"))
    if not cut or isinstance(used, bool) or not isinstance(used, int) or used <= 0:
        return None
    return used * GROWTH


def reply_bytes(reply: Any) -> bytes:
    """A reply `answer_of` found no answer in, as the JSON kept for it: the dict itself, or the SDK object's `model_dump`.

    A reply that is not JSON (`reply_malformed`: a number past 4,300 digits, nesting past
    what an encoder recurses through, an SDK object whose dump fails) keeps a note of what
    it was instead, as a JSON object `{"unreadable": …}`.
    """
    try:
        data = reply if isinstance(reply, dict) else reply.model_dump(mode="json", warnings=False)
        return msgspec.json.encode(data)
    # pydantic's own serialization errors, ValueError, TypeError, RecursionError
    except Exception as exc:
        note = f"{type(reply).__name__} that is not JSON ({type(exc).__name__})"
        return msgspec.json.encode({"unreadable": note})


def reply_json(data: bytes) -> dict[str, Any] | None:
    """A kept reply with no answer, read back (None if it is not a JSON object, or nests past `MAX_DEPTH`)."""
    if nesting_depth(data, MAX_DEPTH) > MAX_DEPTH:
        return None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _get(reply: dict[str, Any], key: str) -> dict[str, Any]:
    value = reply.get(key)
    return value if isinstance(value, dict) else {}


def sender(send: Callable[..., Any]) -> Callable[[dict[str, Any], Attempt], Any]:
    """`send` called as `send(body, attempt)` when it takes two arguments, else as `send(body)` (the first form)."""
    try:
        inspect.signature(send).bind(None, None)
    except (TypeError, ValueError):
        return lambda body, attempt: send(body)
    return send
