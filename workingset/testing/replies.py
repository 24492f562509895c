"""Provider replies as JSON, for scripting a model in tests: the shapes the Anthropic and OpenAI APIs return.

Each builder returns the reply's JSON (a dict), which `answer_of`, `submit_reply` and `turn`
read as they read the SDK object, and from which the SDKs build their own types. Tool call,
text, refusal and a cut-off at the output limit, for Anthropic Messages and OpenAI Chat
Completions; a text reply for the OpenAI Responses API.
"""

from __future__ import annotations

import json
from typing import Any

TOOL = "submit_decision"


def anthropic_reply(tool_input: dict[str, Any], *, output_tokens: int = 40) -> dict[str, Any]:
    """An Anthropic Message that calls `submit_decision` with `tool_input` (`stop_reason` `tool_use`)."""
    content = [{"type": "tool_use", "id": "toolu_01", "name": TOOL, "input": tool_input}]
    return _message(content, "tool_use", output_tokens)


def anthropic_text(
    text: str, stop_reason: str = "end_turn", *, output_tokens: int = 40
) -> dict[str, Any]:
    """An Anthropic Message that answers in text instead of the tool (`stop_reason` `end_turn` unless given)."""
    return _message([{"type": "text", "text": text}], stop_reason, output_tokens)


def anthropic_refusal(text: str = "") -> dict[str, Any]:
    """An Anthropic Message the model declined (`stop_reason` `refusal`), with whatever text came before."""
    return _message([{"type": "text", "text": text}] if text else [], "refusal", 0)


def anthropic_cut_off(
    max_tokens: int = 1024, partial: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An Anthropic Message cut off at `max_tokens` (`stop_reason` `max_tokens`): a tool call whose input is cut short."""
    content = [{"type": "tool_use", "id": "toolu_01", "name": TOOL, "input": partial or {}}]
    return _message(content, "max_tokens", max_tokens)


def _message(content: list[dict[str, Any]], stop: str, output_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 1200, "output_tokens": output_tokens, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0},
    }  # fmt: skip


def chat_reply(content: str, *, completion_tokens: int = 40) -> dict[str, Any]:
    """An OpenAI ChatCompletion whose message is `content` (`finish_reason` `stop`): a structured output's JSON text."""
    message = {"role": "assistant", "content": content, "refusal": None}
    return _completion(message, "stop", completion_tokens)


def chat_tool_call(
    arguments: dict[str, Any] | str, *, completion_tokens: int = 40
) -> dict[str, Any]:
    """An OpenAI ChatCompletion that calls `submit_decision` with `arguments` (JSON text, or a dict to encode)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {"id": "call_1", "type": "function", "function": {"name": TOOL, "arguments": text}}
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
    return _completion(message, "tool_calls", completion_tokens)


def chat_refusal(refusal: str = "I can't help with that.") -> dict[str, Any]:
    """An OpenAI ChatCompletion the model refused: the message's `refusal`."""
    return _completion({"role": "assistant", "content": None, "refusal": refusal}, "stop", 10)


def chat_cut_off(content: str = '{"next": ', max_tokens: int = 1024) -> dict[str, Any]:
    """An OpenAI ChatCompletion cut off at the token limit (`finish_reason` `length`), its text cut short."""
    return _completion(
        {"role": "assistant", "content": content, "refusal": None}, "length", max_tokens
    )


def _completion(message: dict[str, Any], finish: str, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": message}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": completion_tokens,
                  "total_tokens": 1200 + completion_tokens},
    }  # fmt: skip


def responses_reply(text: str) -> dict[str, Any]:
    """An OpenAI Responses `Response` whose output is one message of `text`."""
    return {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-test", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
    }  # fmt: skip
