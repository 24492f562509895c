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

Nothing here imports an SDK: SDK objects are read through their `model_dump`.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ReplyUnusable, UsageError
from ..providers import TOOL_NAME, Answer

_TRUNCATED_ANTHROPIC = ("max_tokens", "model_context_window_exceeded")


def answer_of(reply: Any) -> Answer:
    """The answer a provider reply carries: a tool call's input (a dict, or JSON text for OpenAI), else its text."""
    data = _as_dict(reply)
    if data.get("type") == "message" and "content" in data:
        return _anthropic(data)
    if "choices" in data:
        return _chat(data)
    if data.get("object") == "response" or ("output" in data and "status" in data):
        return _response(data)
    raise UsageError(
        "not a provider reply: expected an Anthropic Message, an OpenAI ChatCompletion or an OpenAI Response "
        f"(the SDK object or its JSON), got {type(reply).__name__} with keys {sorted(data)[:8]}",
        details={"keys": sorted(data)[:8]},
    )


def _as_dict(reply: Any) -> dict[str, Any]:
    if isinstance(reply, dict):
        return reply
    dump = getattr(reply, "model_dump", None)  # the SDKs' pydantic models
    if callable(dump):
        data = dump(mode="json")
        if isinstance(data, dict):
            return data
    raise UsageError(
        f"not a provider reply: {type(reply).__name__} is neither an SDK reply object nor a dict"
    )


def _unusable(why: str, provider: str, *, code: str, **details: Any) -> ReplyUnusable:
    return ReplyUnusable(f"the {provider} reply holds no decision: {why}", code=code,
                         details={"provider": provider, **details})  # fmt: skip


def _anthropic(data: dict[str, Any]) -> Answer:
    stop = data.get("stop_reason")
    if stop in _TRUNCATED_ANTHROPIC:
        raise _unusable(
            f"it stopped at {stop} (raise max_tokens)",
            "anthropic",
            code="reply_truncated",
            stop_reason=stop,
        )
    if stop == "refusal":
        raise _unusable("the model declined to answer (stop_reason refusal)", "anthropic", code="reply_refused",
                        stop_reason=stop)  # fmt: skip
    blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
    for block in blocks:
        if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            value = block.get("input")
            # The API gives an object; anything else goes to `submit` as JSON text, to be rejected there.
            return value if isinstance(value, dict) else json.dumps(value)
    return _text(
        "".join(b.get("text") or "" for b in blocks if b.get("type") == "text"),
        "anthropic",
        stop_reason=stop,
    )


def _chat(data: dict[str, Any]) -> Answer:
    choices = data.get("choices") or []
    if not choices:
        raise _unusable("it has no choices", "openai", code="reply_empty")
    choice = choices[0]
    finish = choice.get("finish_reason")
    message = choice.get("message") or {}
    if finish == "length":
        raise _unusable("it stopped at the token limit (finish_reason length)", "openai", code="reply_truncated",
                        finish_reason=finish)  # fmt: skip
    if message.get("refusal"):
        raise _unusable(
            f"the model refused: {message['refusal']}",
            "openai",
            code="reply_refused",
            finish_reason=finish,
        )
    if finish == "content_filter":
        raise _unusable("content filters withheld it (finish_reason content_filter)", "openai", code="reply_refused",
                        finish_reason=finish)  # fmt: skip
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        if function.get("name") == TOOL_NAME:
            return function.get("arguments") or ""
    return _text(message.get("content") or "", "openai", finish_reason=finish)


def _response(data: dict[str, Any]) -> Answer:
    provider = "openai-responses"
    reason = (data.get("incomplete_details") or {}).get("reason")
    if data.get("status") == "incomplete" and reason == "max_output_tokens":
        raise _unusable(
            "it stopped at max_output_tokens (status incomplete)",
            provider,
            code="reply_truncated",
            reason=reason,
        )
    if data.get("status") == "incomplete" and reason == "content_filter":
        raise _unusable(
            "content filters withheld it (status incomplete)",
            provider,
            code="reply_refused",
            reason=reason,
        )
    texts = []
    for item in data.get("output") or []:
        if item.get("type") == "function_call" and item.get("name") == TOOL_NAME:
            return item.get("arguments") or ""
        if item.get("type") != "message":
            continue
        for part in item.get("content") or []:
            if part.get("type") == "refusal":
                raise _unusable(
                    f"the model refused: {part.get('refusal')}", provider, code="reply_refused"
                )
            if part.get("type") == "output_text":
                texts.append(part.get("text") or "")
    return _text("".join(texts), provider, status=data.get("status"))


def _text(text: str, provider: str, **details: Any) -> str:
    if not text.strip():
        raise _unusable(f"no {TOOL_NAME} call and no text", provider, code="reply_empty", **details)
    return text
