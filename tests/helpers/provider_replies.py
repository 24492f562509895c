"""A mock provider endpoint and the replies the providers send, as JSON (the SDKs build their types from them).

`httpx2` (the HTTP library of the SDKs) is imported where it is used, like the SDKs (`sdks.require`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.helpers.sdks import require

if TYPE_CHECKING:
    import httpx2


class Provider:
    """A mock endpoint: records each request body, replies with the next queued JSON response."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.replies: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        httpx2 = require("httpx2")
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=self.replies.pop(0))

    def client(self) -> httpx2.Client:
        httpx2 = require("httpx2")
        return httpx2.Client(transport=httpx2.MockTransport(self))


def anthropic_reply(tool_input: dict) -> dict:
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "submit_decision", "input": tool_input}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }  # fmt: skip


def chat_reply(content: str) -> dict:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": content, "refusal": None}}],
    }  # fmt: skip


def responses_reply(text: str) -> dict:
    return {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-test", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
    }  # fmt: skip
