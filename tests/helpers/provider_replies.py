"""A mock provider endpoint; the replies the providers send are `workingset.testing`'s builders (the SDKs build their types from them).

`httpx2` (the HTTP library of the SDKs) is imported where it is used, like the SDKs (`sdks.require`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.helpers.sdks import require
from workingset.testing import anthropic_reply, chat_reply, responses_reply

__all__ = [
    "Provider",
    "anthropic_reply",
    "chat_reply",
    "responses_reply",
]  # the builders: one copy, the library's

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
