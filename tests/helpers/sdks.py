"""The provider SDKs, imported by the tests that use them: a skip where one is absent, a failure in CI.

`anthropic`, `openai` and their HTTP library `httpx2` are test dependencies (`.[test]`), not
the library's: a checkout without them still runs every other test. In CI (`CI=true`) they
are installed, so a missing one fails the test instead of skipping it, as conftest.py does
for PostgreSQL and Chromium.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType
from typing import Any

import pytest


def require(module: str) -> ModuleType:
    """Import `module` for the calling test; skip it (fail it under `CI=true`) where it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f"{module} is not installed ({exc}; pip install -e '.[test]')"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {why}")
        pytest.skip(why)


def reply_types() -> tuple[type, type, type]:
    """The SDKs' reply types: anthropic's `Message`, openai's `ChatCompletion` and `Response`."""
    return (
        require("anthropic.types").Message,
        require("openai.types.chat").ChatCompletion,
        require("openai.types.responses").Response,
    )


@functools.cache
def request_validators() -> tuple[Any, Any]:
    """pydantic validators of the SDKs' request types, built once (each takes about 30 ms to build):
    anthropic's `MessageCreateParamsNonStreaming`, openai's chat `CompletionCreateParamsNonStreaming`."""
    from pydantic import TypeAdapter

    return (
        TypeAdapter(
            require("anthropic.types").message_create_params.MessageCreateParamsNonStreaming
        ),
        TypeAdapter(
            require("openai.types.chat").completion_create_params.CompletionCreateParamsNonStreaming
        ),
    )


def mock_anthropic_in(tmp_path: Any, monkeypatch: Any, handler: Any) -> None:
    """Run a docs example in `tmp_path` (with encodings/example-state.json) against `handler` as Anthropic's endpoint.

    `anthropic.Anthropic()` then returns a client whose requests go to `handler` (an
    `httpx.MockTransport` handler): no network, no key, no retries.
    """
    from pathlib import Path

    anthropic, httpx2 = require("anthropic"), require("httpx2")
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "encodings").mkdir()
    (tmp_path / "encodings" / "example-state.json").write_bytes(
        (root / "encodings" / "example-state.json").read_bytes()
    )
    monkeypatch.chdir(tmp_path)
    real = anthropic.Anthropic
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    monkeypatch.setattr(
        anthropic, "Anthropic", lambda: real(api_key="test-key", http_client=client, max_retries=0)
    )
