"""The answer in a provider's reply: what a controller submits after its model call.

`answer_of` takes an Anthropic `Message`, an OpenAI `ChatCompletion` or an OpenAI Responses
`Response`, as the SDK object or its JSON (a dict), and returns the answer to `submit`: the
`submit_decision` tool call's input, else the reply's text as it came (`submit` itself
accepts one fenced ```json block). A reply that holds no answer is a `ReplyUnusable` with a
stable code, so a controller never submits half a decision or a refusal:

- `reply_truncated`: the model stopped at its output limit (Anthropic `stop_reason`
  `max_tokens` or `model_context_window_exceeded`, OpenAI `finish_reason` `length`, a
  Response `incomplete` for `max_output_tokens`); a tool call cut short is not a decision.
- `reply_refused`: the model declined (Anthropic `stop_reason` `refusal`, OpenAI `refusal`
  content or `content_filter`).
- `reply_empty`: neither a `submit_decision` call nor any text.
- `reply_malformed`: a field the answer is read from has the wrong type (`choices` not a
  list, `content` a number, a tool call's `arguments` not text, …), or the tool's input is
  not JSON (a number past 4,300 digits, nesting past `MAX_DEPTH`).

Nothing here imports an SDK: SDK objects are read through their `model_dump`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import ReplyUnusable, UsageError
from ..io.limits import MAX_DEPTH, nesting_depth
from ..providers import TOOL_NAME, Answer

_TRUNCATED_ANTHROPIC = ("max_tokens", "model_context_window_exceeded")
_NOTHING: dict[str, Any] = {}


def answer_of(reply: Any) -> Answer:
    """The answer a provider reply carries: a tool call's input (a dict, or JSON text for OpenAI), else its text."""
    data = _as_dict(reply)
    if data.get("type") == "message" and "content" in data:
        return _anthropic(data)
    if "choices" in data:
        return _chat(data)
    if data.get("object") == "response" or ("output" in data and "status" in data):
        return _response(data)
    keys = sorted(str(k) for k in data)[:8]
    raise UsageError(
        "not a provider reply: expected an Anthropic Message, an OpenAI ChatCompletion or an OpenAI Response "
        f"(the SDK object or its JSON), got {type(reply).__name__} with keys {keys}",
        details={"keys": keys},
    )


def _as_dict(reply: Any) -> dict[str, Any]:
    if isinstance(reply, dict):
        return reply
    dump = getattr(reply, "model_dump", None)  # the SDKs' pydantic models
    if callable(dump):
        try:
            # An object built with `model_construct` may hold anything: its dump can fail.
            data = dump(mode="json", warnings=False)
        except (
            Exception
        ) as exc:  # pydantic raises its own serialization errors, RecursionError, ValueError, …
            raise ReplyUnusable(
                f"the {type(reply).__name__} reply cannot be read as JSON ({type(exc).__name__})",
                code="reply_malformed",
                details={"provider": type(reply).__name__, "path": "$"},
            ) from None
        if isinstance(data, dict):
            return data
    raise UsageError(
        f"not a provider reply: {type(reply).__name__} is neither an SDK reply object nor a dict"
    )


def _unusable(why: str, provider: str, *, code: str, **details: Any) -> ReplyUnusable:
    return ReplyUnusable(f"the {provider} reply holds no decision: {why}", code=code,
                         details={"provider": provider, **details})  # fmt: skip


def _malformed(provider: str, path: str, want: str, value: Any) -> ReplyUnusable:
    return _unusable(f"{path} is {type(value).__name__}, not {want}", provider, code="reply_malformed",
                     path=path)  # fmt: skip


def _get(
    obj: dict[str, Any], key: str, kind: type | tuple[type, ...], provider: str, path: str
) -> Any:
    """`obj[key]` when it is of `kind` (or absent/null: None); any other type is `reply_malformed`."""
    value = obj.get(key)
    if value is None or isinstance(value, kind):
        return value
    want = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    raise _malformed(provider, f"{path}.{key}", _WANT.get(want, want), value)


_WANT = {"dict": "an object", "list": "an array", "str": "text"}


def _items(
    obj: dict[str, Any], key: str, provider: str, path: str
) -> list[tuple[str, dict[str, Any]]]:
    """The objects of the array `obj[key]` with their paths (absent: none); a non-object item is `reply_malformed`."""
    out = []
    for i, item in enumerate(_get(obj, key, list, provider, path) or []):
        if not isinstance(item, dict):
            raise _malformed(provider, f"{path}.{key}[{i}]", "an object", item)
        out.append((f"{path}.{key}[{i}]", item))
    return out


def _tool_input(value: Any, provider: str, path: str) -> Answer:
    """A tool's input as `submit` takes it: an object as it is, anything else as JSON text, to be rejected there.

    It must be JSON that `submit` can keep and a retry can send back: its text is made
    here once, at C speed and without recursion in Python, and its nesting bounded.
    """
    try:
        text = msgspec.json.encode(value)
    except (
        ValueError,
        TypeError,
        OverflowError,
        RecursionError,
    ) as exc:  # 10**5000, a set, 100k levels
        raise _unusable(
            f"{path} is not JSON ({exc})"[:300], provider, code="reply_malformed", path=path
        ) from None
    if nesting_depth(text, MAX_DEPTH) > MAX_DEPTH:
        raise _unusable(
            f"{path} nests deeper than {MAX_DEPTH} levels",
            provider,
            code="reply_malformed",
            path=path,
        )
    return value if isinstance(value, dict) else text.decode("utf-8")


def _anthropic(data: dict[str, Any]) -> Answer:
    p = "anthropic"
    stop = data.get("stop_reason")
    if stop is not None and not isinstance(stop, str):
        raise _malformed(p, "$.stop_reason", "text", stop)
    if stop in _TRUNCATED_ANTHROPIC:
        raise _unusable(
            f"it stopped at {stop} (raise max_tokens)", p, code="reply_truncated", stop_reason=stop
        )
    if stop == "refusal":
        raise _unusable("the model declined to answer (stop_reason refusal)", p, code="reply_refused",
                        stop_reason=stop)  # fmt: skip
    blocks = _items(data, "content", p, "$")
    for path, block in blocks:
        if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            # The API gives an object; anything else goes to `submit` as JSON text, to be rejected there.
            return _tool_input(block.get("input"), p, f"{path}.input")
    texts = [_get(b, "text", str, p, path) or "" for path, b in blocks if b.get("type") == "text"]
    return _text("".join(texts), p, stop_reason=stop)


def _chat(data: dict[str, Any]) -> Answer:
    p = "openai"
    choices = _items(data, "choices", p, "$")
    if not choices:
        raise _unusable("it has no choices", p, code="reply_empty")
    at, choice = choices[0]
    finish = _get(choice, "finish_reason", str, p, at)
    message = _get(choice, "message", dict, p, at) or _NOTHING
    at += ".message"
    if finish == "length":
        raise _unusable("it stopped at the token limit (finish_reason length)", p, code="reply_truncated",
                        finish_reason=finish)  # fmt: skip
    refusal = _get(message, "refusal", str, p, at)
    if refusal:
        raise _unusable(
            f"the model refused: {refusal}", p, code="reply_refused", finish_reason=finish
        )
    if finish == "content_filter":
        raise _unusable("content filters withheld it (finish_reason content_filter)", p, code="reply_refused",
                        finish_reason=finish)  # fmt: skip
    for path, call in _items(message, "tool_calls", p, at):
        function = _get(call, "function", dict, p, path) or _NOTHING
        if function.get("name") == TOOL_NAME:
            return _get(function, "arguments", str, p, f"{path}.function") or ""
    content = _get(message, "content", (str, list), p, at) or ""
    if isinstance(content, list):  # content parts: text parts, or one refusal part
        texts = []
        for path, part in _items(message, "content", p, at):
            if part.get("type") == "refusal":
                why = _get(part, "refusal", str, p, path)
                raise _unusable(
                    f"the model refused: {why}", p, code="reply_refused", finish_reason=finish
                )
            if part.get("type") == "text":
                texts.append(_get(part, "text", str, p, path) or "")
        content = "".join(texts)
    return _text(content, p, finish_reason=finish)


def _response(data: dict[str, Any]) -> Answer:
    p = "openai-responses"
    status = _get(data, "status", str, p, "$")
    reason = _get(_get(data, "incomplete_details", dict, p, "$") or _NOTHING, "reason", str, p,
                  "$.incomplete_details")  # fmt: skip
    if status == "incomplete" and reason == "max_output_tokens":
        raise _unusable("it stopped at max_output_tokens (status incomplete)", p, code="reply_truncated",
                        reason=reason)  # fmt: skip
    if status == "incomplete" and reason == "content_filter":
        raise _unusable(
            "content filters withheld it (status incomplete)",
            p,
            code="reply_refused",
            reason=reason,
        )
    texts = []
    for path, item in _items(data, "output", p, "$"):
        if item.get("type") == "function_call" and item.get("name") == TOOL_NAME:
            return _get(item, "arguments", str, p, path) or ""
        if item.get("type") != "message":
            continue
        for at, part in _items(item, "content", p, path):
            if part.get("type") == "refusal":
                why = _get(part, "refusal", str, p, at)
                raise _unusable(f"the model refused: {why}", p, code="reply_refused")
            if part.get("type") == "output_text":
                texts.append(_get(part, "text", str, p, at) or "")
    return _text("".join(texts), p, status=status)


def _text(text: str, provider: str, **details: Any) -> str:
    if not text.strip():
        raise _unusable(f"no {TOOL_NAME} call and no text", provider, code="reply_empty", **details)
    return text
