"""Provider-ready requests: the JSON a controller merges into an Anthropic or OpenAI API call.

A request's frozen text is cut into text blocks at its section boundaries (joined, they
are the text byte for byte, so hashes and `verify` never see this). Anthropic gets
`cache_control` breakpoints at the ends of the sections the encoder declares stable and a
forced tool whose input schema is the decision schema; OpenAI gets a `json_schema`
response format, strict by default (see `strict_schema` for the transformation). A retry
appends the rejected answer and the rejection, so a model can correct itself; the request
part never changes. Nothing here calls a provider: the SDKs are test dependencies only.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec

from .errors import DecisionRejected, UsageError
from .io.limits import Limits, nesting_depth

PROVIDERS = ("anthropic", "openai", "openai-responses")
TTLS = ("5m", "1h")
MAX_BREAKPOINTS = 4  # Anthropic's limit per request
TOOL_NAME = "submit_decision"
SCHEMA_NAME = "decision"
_DESCRIPTION = (
    "The decision answering this request: an optional assessment and notes, then the next step."
)
# Rejections a model cannot fix by answering again: the controller has to act.
NOT_RETRYABLE = ("stale_request", "analysis_closed")

Answer = str | bytes | dict
Retry = Sequence[tuple[Answer, DecisionRejected]]


class Renderable(Protocol):
    """What messages are built from: a `Request` (replies.py) has all of it."""

    request_id: str
    text: str
    block_ends: list[int]
    cache_ends: list[int]
    assess: str | None

    @property
    def decision_schema(self) -> dict[str, Any]: ...

    @property
    def stable_schema(self) -> bool:
        """Whether the encoder's strict OpenAI schema is the same every turn (`strict_schema(stable=True)`)."""
        ...


# Sections that only ever grow by whole chunks (v11's journal: one chunk per iteration): each
# chunk is its own block, so the previous turn's end is a block boundary a cache can read at.
APPEND_ONLY = frozenset({"journal"})


def section_ends(chunks: Iterable[tuple[str, int]]) -> list[int]:
    """Offsets where each block of the text ends: a run of same-category chunks, or one append-only chunk."""
    ends: list[int] = []
    at, previous = 0, None
    for category, n in chunks:
        if (category != previous or category in APPEND_ONLY) and at:
            ends.append(at)
        at += n
        previous = category
    if at:
        ends.append(at)
    return ends


def text_blocks(req: Renderable) -> list[tuple[str, bool]]:
    """The request text as (block, ends at a cache breakpoint) pairs; the blocks join to the text.

    Breakpoints are the declared stable ends; past Anthropic's 4 the last 4 are kept,
    because a longer cached prefix saves more.
    """
    ends = req.block_ends or [len(req.text)]
    if ends[-1] != len(req.text):
        raise ValueError(f"request {req.request_id}: its blocks do not cover its text")
    marks = set(req.cache_ends[-MAX_BREAKPOINTS:])
    blocks, at = [], 0
    for end in ends:
        blocks.append((req.text[at:end], end in marks))
        at = end
    return blocks


_GPT = re.compile(r"^gpt-([0-9]{1,6})(?:\.([0-9]{1,6}))?")  # bounded: a model name is outside text


def breakpoint_family(model: str | None) -> bool:
    """Whether an OpenAI model takes explicit `prompt_cache_breakpoint`s: GPT-5.6 and later families."""
    match = _GPT.match(model or "")
    return match is not None and (int(match.group(1)), int(match.group(2) or 0)) >= (5, 6)


def messages(
    req: Renderable,
    provider: str,
    *,
    retry: Retry = (),
    ttl: str | None = None,
    strict: bool | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The JSON object to merge into a provider call for `req` (model, max_tokens etc. are the caller's).

    `provider` is `anthropic` (Messages API), `openai` (Chat Completions) or
    `openai-responses` (Responses API). `retry` lists earlier (answer, rejection) pairs of
    this same request, oldest first. `ttl` (`5m` or `1h`, Anthropic only) is the cache
    entries' lifetime; `strict` (OpenAI only, default True) picks the strict transformed
    schema, or with False the frozen one as a hint the API does not enforce. `model` (the
    API model, OpenAI only) from GPT-5.6 on marks the declared stable ends with explicit
    `prompt_cache_breakpoint`s and turns the implicit breakpoint off (`prompt_cache_options`),
    which would otherwise write the changing tail every turn; older models get no marks.
    """
    check_options(provider, ttl, strict)
    strict = strict is not False
    pairs = _checked(retry)
    if provider == "anthropic":
        return _anthropic(req, pairs, ttl)
    schema = (
        strict_schema(req.decision_schema, req.assess, stable=req.stable_schema)
        if strict
        else req.decision_schema
    )
    marked = breakpoint_family(model)
    kind = "text" if provider == "openai" else "input_text"
    parts = []
    for block, cached in text_blocks(req):
        part: dict[str, Any] = {"type": kind, "text": block}
        if cached and marked:
            part["prompt_cache_breakpoint"] = {"mode": "explicit"}
        parts.append(part)
    turns = [{"role": "user", "content": parts}, *_plain_retry(req, pairs, provider)]
    out: dict[str, Any]
    if provider == "openai":
        fmt = {"name": SCHEMA_NAME, "description": _DESCRIPTION, "schema": schema, "strict": strict}
        out = {"messages": turns, "response_format": {"type": "json_schema", "json_schema": fmt}}
    else:
        fmt = {
            "type": "json_schema",
            "name": SCHEMA_NAME,
            "description": _DESCRIPTION,
            "schema": schema,
            "strict": strict,
        }
        out = {"input": turns, "text": {"format": fmt}}
    if marked:
        out["prompt_cache_options"] = {"mode": "explicit"}
    return out


def check_options(provider: str | None, ttl: str | None = None, strict: bool | None = None) -> None:
    """Reject a provider name or option that does not apply, before anything is rendered or stored."""
    if provider not in PROVIDERS:
        raise UsageError(f"no provider {provider!r}; available: {', '.join(PROVIDERS)}", code="unknown_provider",
                         details={"valid": list(PROVIDERS)})  # fmt: skip
    if ttl is not None and ttl not in TTLS:
        raise UsageError(
            f"a cache TTL is one of {', '.join(TTLS)}, not {ttl!r}", details={"valid": list(TTLS)}
        )
    if ttl is not None and provider != "anthropic":
        raise UsageError(
            f"a TTL sets Anthropic's cache breakpoints; {provider} caches prompts automatically"
        )
    if strict is not None and provider == "anthropic":
        raise UsageError(
            "strict chooses the OpenAI schema form; Anthropic gets the frozen schema as a tool"
        )


def _anthropic(
    req: Renderable, pairs: list[tuple[Answer, DecisionRejected]], ttl: str | None
) -> dict[str, Any]:
    mark: dict[str, str] = (
        {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}
    )
    content = []
    for block, cached in text_blocks(req):
        part: dict[str, Any] = {"type": "text", "text": block}
        if cached:
            part["cache_control"] = dict(mark)
        content.append(part)
    turns: list[dict[str, Any]] = [{"role": "user", "content": content}]
    for n, (answer, err) in enumerate(pairs, start=1):
        note = rejection_text(req, err, "anthropic")
        if isinstance(answer, dict):
            # The answer came as the forced tool's input: the reply has to be its tool_result.
            use_id = f"toolu_retry_{n}"
            turns.append({"role": "assistant", "content": [{"type": "tool_use", "id": use_id, "name": TOOL_NAME,
                                                            "input": answer}]})  # a copy, made by `_checked`  # fmt: skip
            turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "is_error": True,
                                                       "content": note}]})  # fmt: skip
        else:
            turns.append(
                {"role": "assistant", "content": [{"type": "text", "text": _as_text(answer)}]}
            )
            turns.append({"role": "user", "content": [{"type": "text", "text": note}]})
    tool = {"name": TOOL_NAME, "description": _DESCRIPTION, "input_schema": req.decision_schema}
    return {"messages": turns, "tools": [tool], "tool_choice": {"type": "tool", "name": TOOL_NAME}}


def _plain_retry(
    req: Renderable, pairs: list[tuple[Answer, DecisionRejected]], provider: str
) -> list[dict[str, Any]]:
    turns = []
    for answer, err in pairs:
        turns.append({"role": "assistant", "content": _as_text(answer)})
        turns.append({"role": "user", "content": rejection_text(req, err, provider)})
    return turns


def rejection_text(req: Renderable, err: DecisionRejected, provider: str) -> str:
    """What the model is told after a rejected answer: the code, the message, and what to do now."""
    how = (
        f"call {TOOL_NAME} again with the corrected decision"
        if provider == "anthropic"
        else "answer again with one corrected decision that follows the output schema"
    )
    if err.code == "malformed_json" and provider != "anthropic":
        how += ": the JSON object alone, with nothing around it"
    return (
        f"Your decision was rejected ({err.code}): {err.message}\n"
        f"Nothing was changed: request {req.request_id} is still open and its context above still holds. "
        f"Fix the decision and {how}."
    )


def _checked(retry: Retry) -> list[tuple[Answer, DecisionRejected]]:
    pairs = []
    for i, item in enumerate(retry):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise UsageError(f"retry[{i}] must be an (answer, DecisionRejected) pair")
        answer, err = item
        if not isinstance(answer, (str, bytes, dict)):
            raise UsageError(
                f"retry[{i}]: the answer is JSON text, bytes or a dict, not {type(answer).__name__}"
            )
        if not isinstance(err, DecisionRejected):
            raise UsageError(
                f"retry[{i}]: the rejection must be a DecisionRejected, not {type(err).__name__}"
            )
        if err.code in NOT_RETRYABLE:
            raise UsageError(
                f"retry[{i}]: {err.code} is not the model's to fix (the controller answered a stale or closed request)",
                details={"code": err.code},
            )
        pairs.append((_json_copy(answer, i) if isinstance(answer, dict) else answer, err))
    return pairs


def _json_copy(answer: dict[str, Any], i: int) -> Answer:
    """A copy of a tool-input answer made through its JSON (no recursion in Python); past `max_depth`, its JSON text.

    An answer nested deeper than the decision limit was refused for it: it goes back to the
    model as text, which no SDK or copy has to walk level by level.
    """
    try:
        text = msgspec.json.encode(answer)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise UsageError(f"retry[{i}]: the answer is not JSON ({type(exc).__name__})") from None
    limit = Limits.current().max_depth
    if nesting_depth(text, limit) > limit:
        return text.decode("utf-8")
    return msgspec.json.decode(text)


class Rejection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A rejection as `submit --json` printed it under `error`."""

    code: str
    message: str
    details: dict[str, Any] = {}


class RetryEntry(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One earlier try of the open request: the answer as received (text, or a tool's input) and its rejection."""

    answer: str | dict[str, Any]
    error: Rejection


_RETRY_FILE = msgspec.json.Decoder(list[RetryEntry])


def load_retry(data: bytes, source: str) -> list[tuple[Answer, DecisionRejected]]:
    """Read a retry file: a JSON array of `{"answer", "error"}` objects, oldest first (`invalid_file` if not)."""
    from .model.state import decode_strict

    entries = decode_strict(data, _RETRY_FILE, source)
    return [
        (
            e.answer,
            DecisionRejected(e.error.message, code=e.error.code, details=dict(e.error.details)),
        )
        for e in entries
    ]


def as_sent(answer: bytes, provider: str) -> Answer:
    """A kept answer as its retry request carries it: for Anthropic a JSON object is the forced tool's input, else the text.

    Anthropic's request forces the `submit_decision` tool, so its answer came as the tool's
    input (an object) and goes back as a `tool_use` with a `tool_result`; anything else (and
    every OpenAI answer) goes back as the text received. `Investigation.turn` builds its
    retries from the kept answers with it, and `compare` bills them with it: the same bodies.
    """
    text = answer.decode("utf-8", errors="replace")
    limit = Limits.current().max_depth  # deeper: refused for it, and sent back as text
    if provider == "anthropic" and nesting_depth(answer, limit) <= limit:
        try:
            value = msgspec.json.decode(answer)
        except msgspec.DecodeError:
            return text
        if isinstance(value, dict):
            return value
    return text


def _as_text(answer: Answer) -> str:
    if isinstance(answer, dict):
        return msgspec.json.encode(answer).decode("utf-8")
    if isinstance(answer, bytes):
        return answer.decode("utf-8", errors="replace")
    return answer


def strict_schema(
    schema: dict[str, Any], assess: str | None, *, stable: bool = False
) -> dict[str, Any]:
    """The decision schema in OpenAI's strict subset, for one request; every instance is valid under `schema`.

    Strict mode wants every property required, `anyOf` instead of `oneOf`, and no
    `uniqueItems`. So: `notes` becomes required (an empty list means none); `assessment`
    is required, naming exactly `assess`, when rule A requires one, and absent otherwise;
    the `next` variants become `anyOf`; recall's `uniqueItems` is dropped (workingset still
    rejects a repeat as `recall_duplicate`); `$schema` and `title` are left out.

    `stable` (v14) keeps the schema the same every turn, because OpenAI caches the schema
    before the messages: `assessment` is required but nullable (`anyOf` the object and
    `null`), its `evidence_ref` the frozen pattern, and `assess` is not used. A null
    assessment is the one instance the frozen schema does not accept: the encoder's parser
    reads it as no assessment (`parse_decision(null_assessment=True)`), and rule A is
    workingset's check, as it is for Anthropic's tool.
    """
    out = _strict(copy.deepcopy(schema))
    out.pop("$schema", None)
    out.pop("title", None)
    props = out["properties"]
    if stable:
        props["assessment"] = {"anyOf": [props["assessment"], {"type": "null"}]}
    elif assess is None:
        del props["assessment"]
    else:
        props["assessment"]["properties"]["evidence_ref"] = {"type": "string", "enum": [assess]}
    out["required"] = list(props)
    return out


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _strict(value) for key, value in node.items() if key != "uniqueItems"}
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "enum" in node and "type" not in node and all(isinstance(v, str) for v in node["enum"]):
        node["type"] = "string"
    if node.get("type") == "object" and "properties" in node:
        node["required"] = list(node["properties"])
        node["additionalProperties"] = False
    return node
