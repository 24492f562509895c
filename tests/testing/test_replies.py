"""`workingset.testing`: the reply builders are replies the SDKs accept, with the answer (or the code) each should give."""

from __future__ import annotations

import json

import pytest

from tests.helpers.sdks import reply_types
from workingset import ReplyUnusable, UsageError, answer_of
from workingset.testing import (
    FixedClock,
    ScriptedModel,
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

DECISION = {"next": {"kind": "query", "source": "pg", "query": "select 1", "purpose": "p"}}
TEXT = json.dumps(DECISION)


@pytest.mark.parametrize("kind, reply, expected", [
    ("Message", anthropic_reply(DECISION), DECISION),
    ("Message", anthropic_text(TEXT), TEXT),
    ("Message", anthropic_refusal("no"), "reply_refused"),
    ("Message", anthropic_cut_off(), "reply_truncated"),
    ("ChatCompletion", chat_reply(TEXT), TEXT),
    ("ChatCompletion", chat_tool_call(DECISION), TEXT),
    ("ChatCompletion", chat_refusal(), "reply_refused"),
    ("ChatCompletion", chat_cut_off(), "reply_truncated"),
    ("Response", responses_reply(TEXT), TEXT),
], ids=["anthropic-tool", "anthropic-text", "anthropic-refusal", "anthropic-cut", "chat-text", "chat-tool",
        "chat-refusal", "chat-cut", "responses-text"])  # fmt: skip
def test_each_builder_is_a_reply_the_sdk_builds_and_answer_of_reads(kind, reply, expected):
    types = dict(zip(("Message", "ChatCompletion", "Response"), reply_types()))
    sdk = types[kind].model_validate(reply)  # the SDK's own type accepts it
    for form in (reply, sdk):
        if isinstance(expected, str) and expected.startswith("reply_"):
            with pytest.raises(ReplyUnusable) as info:
                answer_of(form)
            assert info.value.code == expected
        else:
            assert answer_of(form) == expected


def test_a_cut_off_says_how_many_tokens_it_used():
    assert anthropic_cut_off(max_tokens=700)["usage"]["output_tokens"] == 700
    assert chat_cut_off(max_tokens=300)["usage"]["completion_tokens"] == 300


def test_the_fixed_clock_steps_from_its_start():
    clock = FixedClock("2026-03-01T23:59:59Z", step=2)
    assert [clock(), clock(), clock()] == [
        "2026-03-01T23:59:59Z",
        "2026-03-02T00:00:01Z",
        "2026-03-02T00:00:03Z",
    ]
    assert FixedClock()() == FixedClock()() == "2026-01-01T00:00:00Z"
    for bad in ({"start": "yesterday"}, {"step": -1}, {"step": 1.5}):
        with pytest.raises(UsageError):
            FixedClock(**bad)


def test_the_scripted_model_says_when_its_script_runs_out():
    class Attempt:  # what the model reads of an attempt when its script is done
        number = 2

        class request:  # noqa: N801
            request_id = "demo-r0001"

    model = ScriptedModel(lambda attempt: chat_reply(str(attempt.number)))
    assert model({"messages": []}, Attempt)["choices"][0]["message"]["content"] == "2"
    with pytest.raises(UsageError, match="no reply left for call 2"):
        model({"messages": []}, Attempt)
    assert model.left == 0 and len(model.bodies) == 2
