"""Test helpers for a controller's own tests: provider replies, a scripted model, a fixed clock (docs/controllers.md).

The pytest plugin that pins a user's runs (`workingset.testing.pytest_plugin`, docs/testing.md)
lives here too; pytest loads it by its entry point.
"""

from .replies import (
    anthropic_cut_off,
    anthropic_refusal,
    anthropic_reply,
    anthropic_text,
    chat_cut_off,
    chat_refusal,
    chat_reply,
    chat_tool_call,
    responses_reply,
)
from .scripted import FixedClock, ScriptedModel

__all__ = [
    "FixedClock",
    "ScriptedModel",
    "anthropic_cut_off",
    "anthropic_refusal",
    "anthropic_reply",
    "anthropic_text",
    "chat_cut_off",
    "chat_refusal",
    "chat_reply",
    "chat_tool_call",
    "responses_reply",
]
