"""`answer_of`: the answer in a provider reply, from the SDKs' own reply types (built from dicts, no network)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.provider_replies import anthropic_reply, chat_reply, responses_reply
from tests.helpers.sdks import reply_types
from workingset import ReplyUnusable, UsageError
from workingset.session.answers import answer_of
from workingset.testing import anthropic_text, chat_tool_call

DECISION = {
    "next": {"kind": "query", "source": "pg:orders", "query": "select 1", "purpose": "check"}
}
TEXT = json.dumps(DECISION)


def sdk(kind, data: dict):
    """The SDK's own reply object, as its client builds it from the JSON."""
    return kind.model_validate(data)


@pytest.mark.parametrize("as_sdk", [False, True], ids=["dict", "sdk"])
def test_the_answer_of_each_reply_form(as_sdk):
    Message, ChatCompletion, Response = reply_types()
    wrap = sdk if as_sdk else (lambda _kind, data: data)
    assert (
        answer_of(wrap(Message, anthropic_reply(DECISION))) == DECISION
    )  # the tool's input, a dict
    fenced = "```json\n" + TEXT + "\n```"
    assert (
        answer_of(wrap(Message, anthropic_text(fenced))) == fenced
    )  # text as it came: submit takes one fence
    assert answer_of(wrap(ChatCompletion, chat_reply(TEXT))) == TEXT
    assert answer_of(wrap(ChatCompletion, chat_tool_call(TEXT))) == TEXT
    assert answer_of(wrap(Response, responses_reply(fenced))) == fenced
    call = responses_reply("")
    call["output"] = [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "submit_decision",
                       "arguments": TEXT, "status": "completed"}]  # fmt: skip
    assert answer_of(wrap(Response, call)) == TEXT


def test_a_text_block_beside_the_tool_call_does_not_hide_it():
    Message, ChatCompletion, Response = reply_types()
    reply = anthropic_reply(DECISION)
    reply["content"].insert(0, {"type": "text", "text": "Let me decide."})
    assert answer_of(sdk(Message, reply)) == DECISION
    other = anthropic_reply(DECISION)
    other["content"] = [{"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": "x"}},
                        {"type": "text", "text": TEXT}]  # fmt: skip
    assert answer_of(sdk(Message, other)) == TEXT  # another tool is not the decision


def _code(reply) -> ReplyUnusable:
    with pytest.raises(ReplyUnusable) as info:
        answer_of(reply)
    return info.value


def test_a_reply_cut_off_at_its_limit_is_truncated_even_with_a_tool_call():
    Message, ChatCompletion, Response = reply_types()
    cut = anthropic_reply(DECISION)
    cut["stop_reason"] = "max_tokens"
    err = _code(sdk(Message, cut))
    assert err.code == "reply_truncated" and err.details == {
        "provider": "anthropic",
        "stop_reason": "max_tokens",
    }
    assert "max_tokens" in err.message
    window = anthropic_text(TEXT[:10], "model_context_window_exceeded")
    assert _code(sdk(Message, window)).code == "reply_truncated"
    length = chat_reply(TEXT[:10])
    length["choices"][0]["finish_reason"] = "length"
    assert _code(sdk(ChatCompletion, length)).code == "reply_truncated"
    partial = responses_reply(TEXT[:10])
    partial.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert _code(sdk(Response, partial)).code == "reply_truncated"


def test_a_refusal_is_refused():
    Message, ChatCompletion, Response = reply_types()
    assert (
        _code(sdk(Message, anthropic_text("I can't help with that.", "refusal"))).code
        == "reply_refused"
    )
    refusal = chat_reply("")
    refusal["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
    err = _code(sdk(ChatCompletion, refusal))
    assert err.code == "reply_refused" and "I can't help with that." in err.message
    filtered = chat_reply("")
    filtered["choices"][0]["finish_reason"] = "content_filter"
    assert _code(sdk(ChatCompletion, filtered)).code == "reply_refused"
    response = responses_reply("")
    response["output"][0]["content"] = [{"type": "refusal", "refusal": "no"}]
    assert _code(sdk(Response, response)).code == "reply_refused"


@pytest.mark.parametrize("reply", [
    ("Message", anthropic_text("")), ("Message", anthropic_text("  \n")), ("ChatCompletion", chat_reply("")),
    ("Response", responses_reply("")),
], ids=["anthropic", "anthropic-blank", "openai", "responses"])  # fmt: skip
def test_an_empty_reply_is_empty(reply):
    Message, ChatCompletion, Response = reply_types()
    name, data = reply
    kind = {"Message": Message, "ChatCompletion": ChatCompletion, "Response": Response}[name]
    assert _code(sdk(kind, data)).code == "reply_empty"
    empty = dict(data, content=[]) if kind is Message else data
    assert _code(sdk(kind, empty)).code == "reply_empty"


def test_no_choices_is_empty():
    reply = chat_reply(TEXT)
    reply["choices"] = []
    assert _code(reply).code == "reply_empty"


@pytest.mark.parametrize("thing", [None, "text", 3, {"id": "x"}, ["a"]], ids=repr)
def test_what_is_not_a_reply_is_a_usage_error(thing):
    with pytest.raises(UsageError) as info:
        answer_of(thing)
    assert info.value.code == "usage_error" and "not a provider reply" in info.value.message
