"""Provider requests sent through the official SDKs to a mock transport: the body they send, the answer back.

No network: each SDK client gets `http_client` with an `httpx2.MockTransport` (the HTTP
library these SDK releases are built on). The handler keeps the JSON body the SDK would
send and answers the way the provider answers a forced tool or a json_schema response.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.sdks import require

if TYPE_CHECKING:  # annotations only; the tests import it themselves
    pass

from tests.helpers.provider_replies import Provider, anthropic_reply, chat_reply, responses_reply
from tests.helpers.session_helpers import assess, decision, query, result, state_bytes
from workingset import DecisionRejected, Investigation
from workingset.encoders import get_encoder
from workingset.providers import strict_schema

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


@pytest.fixture
def pending(tmp_path):
    """A v8 analysis whose open request for H1 has E000007 unsettled (an assessment is required)."""
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v8", clock=CLOCK
    ) as inv:
        r1 = inv.next_request("H1")
        inv.record(
            inv.submit(r1.request_id, decision(query("select 9"))).action,
            result("nine", query="select 9"),
        )
        yield inv, inv.next_request("H1")


def test_anthropic_messages_and_a_retry_through_the_sdk(pending):
    anthropic = require("anthropic")
    inv, req = pending
    server = Provider()
    client = anthropic.Anthropic(api_key="test-key", http_client=server.client(), max_retries=0)
    wrong = decision(query("select 10"))  # forgets the assessment rule A requires
    server.replies.append(anthropic_reply(wrong))
    msg = client.messages.create(
        model="claude-test", max_tokens=1024, **req.messages("anthropic", ttl="1h")
    )

    body = server.bodies[0]
    assert server.paths == ["/v1/messages"] and body["model"] == "claude-test"
    (user,) = body["messages"]
    assert "".join(b["text"] for b in user["content"]) == req.text  # byte for byte
    ends, at = [], 0
    for block in user["content"]:
        at += len(block["text"])
        if "cache_control" in block:
            assert block["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
            ends.append(at)
    assert ends == req.cache_ends and 1 <= len(ends) <= 4
    assert body["tools"][0]["input_schema"] == get_encoder("v8").decision_schema
    assert body["tool_choice"] == {"type": "tool", "name": "submit_decision"}

    answer = msg.content[0].input  # the decision arrives as the tool's input, a dict
    with pytest.raises(DecisionRejected) as info:
        inv.submit(req.request_id, answer)
    assert info.value.code == "assessment_missing"

    fixed = decision(query("select 10"), assess("E000007", "refutes", 0.2))
    server.replies.append(anthropic_reply(fixed))
    again = inv.next_request()
    retry = again.messages("anthropic", retry=[(answer, info.value)], ttl="1h")
    msg = client.messages.create(model="claude-test", max_tokens=1024, **retry)
    sent = server.bodies[1]["messages"]
    assert sent[0] == user  # the open request is sent unchanged
    assert sent[1]["content"][0]["type"] == "tool_use" and sent[1]["content"][0]["input"] == wrong
    assert sent[2]["content"][0]["tool_use_id"] == sent[1]["content"][0]["id"]
    assert "assessment_missing" in sent[2]["content"][0]["content"]
    assert inv.submit(req.request_id, msg.content[0].input).applied == "query"


def test_openai_chat_completions_strict_json_schema_through_the_sdk(pending):
    openai = require("openai")
    inv, req = pending
    server = Provider()
    client = openai.OpenAI(api_key="test-key", http_client=server.client(), max_retries=0)
    fixed = decision(query("select 11"), assess("E000007"), notes=[])
    server.replies.append(chat_reply("```json\n" + json.dumps(fixed, indent=2) + "\n```"))
    completion = client.chat.completions.create(model="gpt-test", **req.messages("openai"))

    body = server.bodies[0]
    assert server.paths == ["/v1/chat/completions"]
    assert "".join(p["text"] for p in body["messages"][0]["content"]) == req.text
    fmt = body["response_format"]
    assert (
        fmt["type"] == "json_schema"
        and fmt["json_schema"]["strict"] is True
        and fmt["json_schema"]["name"] == "decision"
    )
    assert fmt["json_schema"]["schema"] == strict_schema(
        get_encoder("v8").decision_schema, "E000007"
    )
    # A fenced block around the JSON is accepted as it came.
    assert inv.submit(req.request_id, completion.choices[0].message.content).applied == "query"


def test_openai_responses_api_through_the_sdk(pending):
    openai = require("openai")
    inv, req = pending
    server = Provider()
    client = openai.OpenAI(api_key="test-key", http_client=server.client(), max_retries=0)
    server.replies.append(
        responses_reply(json.dumps(decision(query("select 12"), assess("E000007"))))
    )
    response = client.responses.create(
        model="gpt-test", **req.messages("openai-responses", strict=False)
    )

    body = server.bodies[0]
    assert server.paths == ["/v1/responses"]
    (user,) = body["input"]
    assert user["role"] == "user" and all(p["type"] == "input_text" for p in user["content"])
    assert "".join(p["text"] for p in user["content"]) == req.text
    assert body["text"]["format"]["strict"] is False
    assert body["text"]["format"]["schema"] == get_encoder("v8").decision_schema
    assert inv.submit(req.request_id, response.output_text).applied == "query"


def test_the_providers_doc_example_runs(tmp_path, monkeypatch):
    """docs/providers.md's retry loop, with the Anthropic client pointed at a mock that first answers wrongly."""
    anthropic = require("anthropic")
    root = Path(__file__).parent.parent
    code = (
        (root / "docs" / "providers.md").read_text().split("```python\n", 1)[1].split("```", 1)[0]
    )
    monkeypatch.chdir(tmp_path)
    with Investigation.create(
        "demo.sqlite3", (root / "encodings" / "example-state.json").read_bytes()
    ) as inv:
        req = inv.next_request()  # the example gets this open request back
    right = decision(query("select 1"), assess(req.assess) if req.assess else None)
    server = Provider()
    in_text = anthropic_reply(
        {}
    )  # the model answers in text, not through the tool (once a StopIteration)
    in_text.update(
        content=[{"type": "text", "text": '{"next": {"kind": "query"}}'}], stop_reason="end_turn"
    )
    server.replies += [in_text, anthropic_reply(right)]
    real = anthropic.Anthropic
    monkeypatch.setattr(
        anthropic,
        "Anthropic",
        lambda: real(api_key="test-key", http_client=server.client(), max_retries=0),
    )
    scope: dict = {}
    exec(compile(code, "docs/providers.md", "exec"), scope)
    assert scope["applied"].applied == "query" and [e.code for _, e in scope["tries"]] == [
        "schema_violation"
    ]
    assert (
        len(server.bodies[1]["messages"]) == 3
        and server.bodies[1]["messages"][0] == server.bodies[0]["messages"][0]
    )
    assert (
        server.bodies[1]["messages"][1]["content"] == in_text["content"]
    )  # the text try replayed as text
