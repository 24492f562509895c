"""v14's OpenAI form: one strict schema for every turn (assessment required, nullable), rule A still enforced.

OpenAI puts the structured-output schema before the messages in the cached prefix, so a schema
that named this turn's result to assess (v1–v13's strict form) made every such turn miss the
cache. v14's strict schema is the same whatever `assess` is; workingset's own validation keeps
rule A, and a null assessment is read as none. Older versions send and accept what they did.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from msgspec import UNSET

from tests.helpers.provider_replies import Provider, chat_reply
from tests.helpers.sdks import require
from tests.helpers.session_helpers import (
    assess,
    conclude,
    decision,
    query,
    recall,
    result,
    state_bytes,
)
from workingset import DecisionRejected, Investigation
from workingset.decisions import parse_decision
from workingset.encoders import get_encoder
from workingset.providers import strict_schema

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def open_analysis(tmp_path, encoder: str):
    return Investigation.create(
        str(tmp_path / f"{encoder}.sqlite3"), state_bytes(), encoder=encoder, clock=CLOCK
    )


def with_pending(inv):
    """H1's first request answered with a query and its result recorded: the next one must assess E000007."""
    first = inv.next_request("H1")
    inv.record(
        inv.submit(first.request_id, decision(query("select 9"))).action,
        result("nine", query="select 9"),
    )
    return first, inv.next_request("H1")


def response_schema(req, provider: str = "openai", **kw) -> dict:
    body = req.messages(provider, **kw)
    if provider == "openai":
        return body["response_format"]["json_schema"]["schema"]
    return body["text"]["format"]["schema"]


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_v14_sends_one_strict_schema_whatever_rule_a_wants(tmp_path):
    with open_analysis(tmp_path, "v14") as inv:
        first, second = with_pending(inv)
        assert first.assess is None and second.assess == "E000007"
        for provider in ("openai", "openai-responses"):
            for model in (None, "gpt-5.6"):
                kw = {"model": model} if provider == "openai" else {}
                assert response_schema(first, provider, **kw) == response_schema(
                    second, provider, **kw
                )
        schema = response_schema(second)
    frozen = get_encoder("v14").decision_schema
    assert schema == strict_schema(frozen, None, stable=True)
    assert schema == strict_schema(frozen, "E000007", stable=True)
    assessment = schema["properties"]["assessment"]
    assert assessment["anyOf"][1] == {"type": "null"}
    assert assessment["anyOf"][0]["properties"]["evidence_ref"] == {
        "type": "string",
        "pattern": "^E[0-9]{6}$",
    }
    assert schema["required"] == ["assessment", "notes", "next"]


def test_the_stable_schema_is_openai_strict_and_every_instance_parses():
    frozen = get_encoder("v14").decision_schema
    strict = strict_schema(frozen, None, stable=True)
    jsonschema.Draft202012Validator.check_schema(strict)
    for node in _walk(strict):
        assert not {"oneOf", "uniqueItems", "const", "$schema", "allOf"} & set(node)
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
    paged = {"kind": "recall", "evidence_refs": ["E000002"], "entries": ["N000001"],
             "pages": ["E000002:2"]}  # fmt: skip
    nexts = [query("q"), conclude("refuted", "E000001"), paged]
    for nxt in nexts:
        for assessment in (None, assess("E000004")):
            sample = {"assessment": assessment, "notes": [], "next": nxt}
            jsonschema.validate(sample, strict)  # what strict mode can produce ...
            parsed = parse_decision(  # ... is a decision v14 reads
                json.dumps(sample).encode(),
                supports_recall=True,
                supports_pages=True,
                null_assessment=True,
            )
            if assessment is None:
                assert parsed.assessment is UNSET
                with pytest.raises(jsonschema.ValidationError):
                    jsonschema.validate(sample, frozen)  # the one instance the frozen schema lacks
            else:
                jsonschema.validate(sample, frozen)
                assert parsed.assessment.evidence_ref == "E000004"
    # A recall's list without `entries` and `pages` is not in strict mode's form (every key required).
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"assessment": None, "notes": [], "next": recall("E000002")}, strict)


def test_null_and_left_out_assessments_parse_to_the_same_decision():
    def parsed(data: dict, **kw):
        return parse_decision(
            json.dumps(data).encode(), supports_recall=True, supports_pages=True, **kw
        )

    with_null = {"assessment": None, "notes": [], "next": query("q")}
    assert parsed(with_null, null_assessment=True) == parsed({"notes": [], "next": query("q")})
    with pytest.raises(DecisionRejected) as info:
        parsed(with_null)  # the frozen schema's reading, as before
    assert info.value.code == "schema_violation"
    assert info.value.details["path"] == "$.assessment"
    with pytest.raises(DecisionRejected) as info:  # a wrong type is still refused
        parsed({"assessment": "E000001", "next": query("q")}, null_assessment=True)
    assert info.value.code == "schema_violation"


def test_rule_a_is_still_enforced_and_a_wrong_answer_changes_nothing(tmp_path):
    with open_analysis(tmp_path, "v14") as inv:
        _, req = with_pending(inv)
        before = inv.show()
        wrong = [
            ({"assessment": None, "notes": [], "next": query("q")}, "assessment_missing"),
            (decision(query("q"), assess("E000001"), notes=[]), "assessment_mismatch"),
        ]
        for answer, code in wrong:
            with pytest.raises(DecisionRejected) as info:
                inv.submit(req.request_id, json.dumps(answer))
            assert info.value.code == code
            assert inv.show() == before
            assert inv.next_request().request_id == req.request_id  # still open
        applied = inv.submit(
            req.request_id, json.dumps(decision(query("q"), assess("E000007"), notes=[]))
        )
        assert applied.applied == "query"
        # The next turn has nothing pending for H2: a null assessment is none, and is accepted.
        nxt = inv.next_request("H2")
        assert nxt.assess is None
        answer = {"assessment": None, "notes": [], "next": query("select 2")}
        assert inv.submit(nxt.request_id, json.dumps(answer)).applied == "query"


@pytest.mark.parametrize("version", ["v8", "v13"])
def test_older_versions_send_and_accept_what_they_did(tmp_path, version):
    with open_analysis(tmp_path, version) as inv:
        first, req = with_pending(inv)
        schema = response_schema(req)
        assert schema == strict_schema(get_encoder(version).decision_schema, "E000007")
        assert schema["properties"]["assessment"]["properties"]["evidence_ref"] == {
            "type": "string",
            "enum": ["E000007"],
        }
        assert "assessment" not in response_schema(first)
        with pytest.raises(DecisionRejected) as info:
            inv.submit(req.request_id, json.dumps({"assessment": None, "next": query("q")}))
        assert info.value.code == "schema_violation"


def test_the_v14_body_through_the_openai_sdk(tmp_path):
    server = Provider()  # the shared mock endpoint (tests/helpers/provider_replies.py)
    client = require("openai").OpenAI(
        api_key="test-key", http_client=server.client(), max_retries=0
    )
    with open_analysis(tmp_path, "v14") as inv:
        first, req = with_pending(inv)
        fixed = decision(query("select 11"), assess("E000007"), notes=[])
        server.replies.append(chat_reply(json.dumps(fixed)))
        completion = client.chat.completions.create(
            model="gpt-5.6", **req.messages("openai", model="gpt-5.6")
        )
        body = server.bodies[0]
        assert "".join(p["text"] for p in body["messages"][0]["content"]) == req.text
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"] == strict_schema(
            get_encoder("v14").decision_schema, None, stable=True
        )
        assert body["prompt_cache_options"] == {"mode": "explicit"}
        assert inv.submit(req.request_id, completion.choices[0].message.content).applied == "query"

        nxt = inv.next_request("H2")
        none = {"assessment": None, "notes": [], "next": query("select 12")}
        server.replies.append(chat_reply(json.dumps(none)))
        completion = client.chat.completions.create(
            model="gpt-5.6", **nxt.messages("openai", model="gpt-5.6")
        )
        assert server.bodies[1]["response_format"] == body["response_format"]  # the same prefix
        assert inv.submit(nxt.request_id, completion.choices[0].message.content).applied == "query"


def test_the_format_document_shows_the_stable_assessment():
    doc = (Path(__file__).parent.parent / "encodings" / "v14.md").read_text(encoding="utf-8")
    section = doc.split("## The OpenAI strict schema\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```json\n", 1)[1].split("\n```", 1)[0]
    stable = strict_schema(get_encoder("v14").decision_schema, None, stable=True)
    assert json.loads("{" + block + "}") == {"assessment": stable["properties"]["assessment"]}
