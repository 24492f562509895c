"""The hostile-reply battery: provider replies with fields of the wrong type, as dicts and as SDK objects.

Each reply is a valid one with one field replaced (`choices` an object, `content` a number, a
tool call's `arguments` a list, a tool input holding `10**5000` or nested 100,000 levels, …).
`answer_of` must give an answer or a `ReplyUnusable` with its documented code, never a Python
error; the SDK form is the same JSON put into the SDK type with `model_construct`, which checks
nothing, as a hand-built or proxied object would be.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.provider_replies import anthropic_reply, chat_reply, responses_reply
from tests.helpers.sdks import reply_types
from workingset import ReplyUnusable, UsageError
from workingset.session.answers import answer_of

DECISION = {
    "next": {"kind": "query", "source": "pg:orders", "query": "select 1", "purpose": "check"}
}
TEXT = json.dumps(DECISION)


def _deep(n: int) -> dict:
    node: dict = {}
    top = node
    for _ in range(n):
        node["a"] = {}
        node = node["a"]
    return top


def _chat_call(arguments) -> dict:
    reply = chat_reply("")
    reply["choices"][0]["finish_reason"] = "tool_calls"
    reply["choices"][0]["message"].update(content=None, tool_calls=[
        {"id": "call_1", "type": "function", "function": {"name": "submit_decision", "arguments": arguments}}])  # fmt: skip
    return reply


def _fc(arguments) -> dict:
    reply = responses_reply("")
    reply["output"] = [{"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "submit_decision",
                        "arguments": arguments, "status": "completed"}]  # fmt: skip
    return reply


BASES = {
    "anthropic-tool": ("Message", lambda: anthropic_reply(DECISION)),
    "anthropic-text": (
        "Message",
        lambda: dict(
            anthropic_reply(DECISION),
            content=[{"type": "text", "text": TEXT}],
            stop_reason="end_turn",
        ),
    ),  # fmt: skip
    "chat": ("ChatCompletion", lambda: chat_reply(TEXT)),
    "chat-tool": ("ChatCompletion", lambda: _chat_call(TEXT)),
    "responses": ("Response", lambda: responses_reply(TEXT)),
    "responses-call": ("Response", lambda: _fc(TEXT)),
}
WRONG = {"int": 5, "str": "x", "list": ["x"], "dict": {"x": 1}, "float": 1.5, "bool": True}

# (base, path to replace, the values put there, the code expected: None = an answer comes back)
PLACES = [
    ("anthropic-tool", ["content"], ["int", "str", "dict"], "reply_malformed"),
    ("anthropic-tool", ["content", 0], ["int", "str", "list"], "reply_malformed"),
    ("anthropic-tool", ["stop_reason"], ["int", "list", "dict"], "reply_malformed"),
    ("anthropic-text", ["content", 0, "text"], ["int", "list", "dict", "bool"], "reply_malformed"),
    ("chat", ["choices"], ["dict", "str", "int", "list"], "reply_malformed"),
    ("chat", ["choices", 0], ["str", "int", "list"], "reply_malformed"),
    ("chat", ["choices", 0, "message"], ["str", "int", "list"], "reply_malformed"),
    ("chat", ["choices", 0, "message", "content"], ["int", "dict", "float", "bool"], "reply_malformed"),
    ("chat", ["choices", 0, "message", "refusal"], ["int", "list", "dict"], "reply_malformed"),
    ("chat", ["choices", 0, "finish_reason"], ["int", "list", "dict"], "reply_malformed"),
    ("chat-tool", ["choices", 0, "message", "tool_calls"], ["dict", "str", "int"], "reply_malformed"),
    ("chat-tool", ["choices", 0, "message", "tool_calls", 0], ["str", "int"], "reply_malformed"),
    ("chat-tool", ["choices", 0, "message", "tool_calls", 0, "function"], ["str", "list"], "reply_malformed"),
    ("chat-tool", ["choices", 0, "message", "tool_calls", 0, "function", "arguments"], ["int", "list", "dict"],
     "reply_malformed"),
    ("responses", ["output"], ["str", "dict", "int"], "reply_malformed"),
    ("responses", ["output", 0], ["str", "int"], "reply_malformed"),
    ("responses", ["output", 0, "content"], ["str", "dict"], "reply_malformed"),
    ("responses", ["output", 0, "content", 0], ["str", "int"], "reply_malformed"),
    ("responses", ["output", 0, "content", 0, "text"], ["int", "list"], "reply_malformed"),
    ("responses", ["incomplete_details"], ["str", "int", "list"], "reply_malformed"),
    ("responses", ["status"], ["int", "dict"], "reply_malformed"),
    ("responses-call", ["output", 0, "arguments"], ["int", "list", "dict"], "reply_malformed"),
]  # fmt: skip


def _put(reply: dict, path: list, value) -> dict:
    out = copy.deepcopy(reply)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _cases():
    for base, path, kinds, code in PLACES:
        for kind in kinds:
            yield pytest.param(base, _put(BASES[base][1](), path, WRONG[kind]), code,
                               id=f"{base}:{'.'.join(map(str, path))}={kind}")  # fmt: skip
    tool = BASES["anthropic-tool"][1]
    huge = tool()
    huge["content"][0]["input"] = {
        "next": {"kind": "query", "source": "pg:x", "query": "q", "purpose": 10**5000}
    }
    yield pytest.param("anthropic-tool", huge, "reply_malformed", id="tool-input-10**5000")
    deep = tool()
    deep["content"][0]["input"] = _deep(100_000)
    yield pytest.param("anthropic-tool", deep, "reply_malformed", id="tool-input-100k-deep")
    odd = tool()
    odd["content"][0]["input"] = [10**5000]
    yield pytest.param("anthropic-tool", odd, "reply_malformed", id="tool-input-list-10**5000")
    # Valid forms that must be read, not refused.
    parts = chat_reply("")
    parts["choices"][0]["message"]["content"] = [
        {"type": "text", "text": TEXT[:10]},
        {"type": "text", "text": TEXT[10:]},
    ]
    yield pytest.param("ChatCompletion", parts, None, id="chat-content-parts")
    refused = chat_reply("")
    refused["choices"][0]["message"]["content"] = [{"type": "refusal", "refusal": "no"}]
    yield pytest.param("ChatCompletion", refused, "reply_refused", id="chat-content-refusal-part")
    bad_part = chat_reply("")
    bad_part["choices"][0]["message"]["content"] = [{"type": "text", "text": 5}]
    yield pytest.param(
        "ChatCompletion", bad_part, "reply_malformed", id="chat-content-part-text-int"
    )
    not_part = chat_reply("")
    not_part["choices"][0]["message"]["content"] = ["x"]
    yield pytest.param(
        "ChatCompletion", not_part, "reply_malformed", id="chat-content-part-a-string"
    )
    non_dict = tool()
    non_dict["content"][0]["input"] = [1, 2]
    yield pytest.param(
        "anthropic-tool", non_dict, None, id="tool-input-a-list-goes-to-submit-as-text"
    )


CASES = list(_cases())


def _sdk_type(base: str):
    Message, ChatCompletion, Response = reply_types()
    name = BASES[base][0] if base in BASES else base
    return {"Message": Message, "ChatCompletion": ChatCompletion, "Response": Response}[name]


def _check(reply, code):
    if code is None:
        assert isinstance(answer_of(reply), (str, dict))
        return
    with pytest.raises(ReplyUnusable) as info:
        answer_of(reply)
    err = info.value
    assert err.code == code, err.message
    assert "\n" not in err.message and len(err.message) < 400


def test_the_battery_is_about_seventy_replies():
    assert len(CASES) >= 70


@pytest.mark.parametrize(("base", "reply", "code"), CASES)
def test_a_hostile_dict_reply_gives_its_code(base, reply, code):
    _check(reply, code)


@pytest.mark.parametrize(("base", "reply", "code"), CASES)
def test_a_hostile_sdk_object_gives_its_code(base, reply, code):
    kind = _sdk_type(base)
    # `model_construct` checks nothing and keeps nested dicts as they are: what a proxy or a hand-built object gives.
    thing = kind.model_construct(**reply)
    if code is None:
        assert isinstance(answer_of(thing), (str, dict))
        return
    with pytest.raises(ReplyUnusable) as info:
        answer_of(thing)
    assert info.value.code in {code, "reply_malformed"}, info.value.message


def test_the_path_of_the_wrong_field_is_named():
    reply = _chat_call(5)
    with pytest.raises(ReplyUnusable) as info:
        answer_of(reply)
    assert info.value.details["path"] == "$.choices[0].message.tool_calls[0].function.arguments"
    assert "int" in info.value.message


def test_content_parts_are_read_as_their_text():
    reply = chat_reply("")
    reply["choices"][0]["message"]["content"] = [{"type": "text", "text": "```json\n"}, {"type": "text", "text": TEXT},
                                                 {"type": "text", "text": "\n```"}]  # fmt: skip
    assert answer_of(reply) == "```json\n" + TEXT + "\n```"
    kind = _sdk_type("ChatCompletion")
    assert answer_of(kind.model_construct(**reply)) == "```json\n" + TEXT + "\n```"


def test_a_key_that_is_not_text_is_still_a_usage_error():
    with pytest.raises(UsageError):
        answer_of({1: 2, (1, 2): 3})


# -- through `turn`: kept, asked again, never a Python error ------------------------------------------


@pytest.fixture
def inv(tmp_path):
    from tests.helpers.session_helpers import state_bytes
    from workingset import Investigation

    with Investigation.create(str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v8",
                              clock=lambda: "2026-06-10T21:00:00Z") as handle:  # fmt: skip
        yield handle


class _Model:
    def __init__(self, *replies):
        self.replies, self.bodies = list(replies), []

    def __call__(self, body):
        self.bodies.append(body)
        return self.replies.pop(0)


@pytest.mark.parametrize(
    ("base", "reply", "code"), [c for c in CASES if c.values[2] == "reply_malformed"][::4]
)
def test_turn_keeps_a_malformed_reply_and_stays_open(inv, base, reply, code):
    from workingset import WorkingsetError

    with pytest.raises(WorkingsetError) as info:
        inv.turn(
            _Model(reply, reply), BASES[base][0] == "Message" and "anthropic" or "openai", retries=1
        )
    assert info.value.code == "turn_incomplete"
    assert info.value.details["last"]["code"] == "reply_malformed"
    assert inv.show().status == "active"


def test_a_tool_input_nested_500_levels_is_rejected_and_sent_back_as_text(inv):
    from tests.helpers.session_helpers import decision, query

    deep = anthropic_reply(DECISION)
    deep["content"][0]["input"] = _deep(490)
    good = anthropic_reply(decision(query("select 1")))
    model = _Model(deep, good)
    applied = inv.turn(model, "anthropic", retries=1)
    assert applied.applied == "query"
    retry = model.bodies[1]["messages"]
    assert (
        retry[1]["role"] == "assistant" and retry[1]["content"][0]["type"] == "text"
    )  # too deep for a tool_use
    assert "schema_violation" in json.dumps(retry[2])


def test_a_reply_that_is_not_json_is_kept_as_a_note_and_the_export_replays(inv, tmp_path):
    from tests.helpers.session_helpers import decision, query
    from workingset.session.frozen_replay import replay_export

    huge = anthropic_reply(DECISION)
    huge["content"][0]["input"] = {"next": 10**5000}
    applied = inv.turn(
        _Model(huge, anthropic_reply(decision(query("select 1")))), "anthropic", retries=1
    )
    assert applied.applied == "query"
    out = tmp_path / "export"
    inv.export(str(out))
    lines = [json.loads(x) for x in (out / "answers.jsonl").read_text().splitlines()]
    assert lines[0]["code"] == "reply_malformed" and "unreadable" in lines[0]["answer"]
    assert replay_export(out).ok


# -- fuzz: any JSON value at any field of a valid reply --------------------------------------------------


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(sorted(BASES)), pick=st.integers(min_value=0), value=_JSON)
def test_any_value_anywhere_gives_an_answer_or_a_code(base, pick, value):
    reply = BASES[base][1]()
    paths = [p for p in _paths(reply) if p]
    hostile = _put(reply, list(paths[pick % len(paths)]), value)
    try:
        got = answer_of(hostile)
    except (ReplyUnusable, UsageError) as err:
        assert err.code in {
            "reply_malformed",
            "reply_empty",
            "reply_truncated",
            "reply_refused",
            "usage_error",
        }
    else:
        assert isinstance(got, (str, dict))
