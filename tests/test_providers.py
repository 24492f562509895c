"""Provider-ready requests: blocks that join to the frozen text, breakpoints, schema forms, retries, CLI."""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.testing import CliRunner

from tests.helpers.common import BUG17
from tests.helpers.session_helpers import (
    assess,
    conclude,
    db_dump,
    decision,
    query,
    recall,
    result,
    state_bytes,
)
from workingset import DecisionRejected, Investigation, Request, UsageError, load_stored_context
from workingset.cli.commands import app
from workingset.decisions import parse_decision
from workingset.encoders import get_encoder
from workingset.providers import APPEND_ONLY, MAX_BREAKPOINTS, PROVIDERS, strict_schema
from workingset.runs.layout import read_run

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def joined(msgs: dict, provider: str) -> str:
    first = (msgs["input"] if provider == "openai-responses" else msgs["messages"])[0]
    assert first["role"] == "user"
    return "".join(part["text"] for part in first["content"])


def breakpoints(msgs: dict) -> list[int]:
    """Character offsets at which the first user message's blocks carry cache_control."""
    at, ends = 0, []
    for part in msgs["messages"][0]["content"]:
        at += len(part["text"])
        if "cache_control" in part:
            ends.append(at)
    return ends


@pytest.fixture
def inv(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v8", clock=CLOCK
    ) as inv:
        yield inv


@pytest.fixture
def pending(inv):
    """A v8 request for H1 whose previous result E000007 is unsettled (rule A wants it assessed)."""
    r1 = inv.next_request("H1")
    inv.record(
        inv.submit(r1.request_id, decision(query("select 9"))).action,
        result("nine", query="select 9"),
    )
    return inv.next_request("H1")


def test_every_encoder_and_provider_joins_to_the_frozen_text(encoder, tmp_path):
    state = load_stored_context((BUG17 / "bug17-r0018.json").read_bytes()).state
    out = encoder.render(state, "H1")
    req = Request.of(out, "bug17-r0018", state)
    for provider in PROVIDERS:
        assert joined(req.messages(provider), provider) == out.text
    msgs = req.messages("anthropic")
    assert (
        breakpoints(msgs) == list(out.stable_ends())
        and 0 < len(breakpoints(msgs)) <= MAX_BREAKPOINTS
    )
    # One block per run of a section category, an append-only section's chunks one each; never an empty one.
    texts = [p["text"] for p in msgs["messages"][0]["content"]]
    runs = [
        c
        for i, (c, _) in enumerate(out.chunks)
        if i == 0 or out.chunks[i - 1][0] != c or c in APPEND_ONLY
    ]
    assert all(texts) and len(texts) == len(runs)


def test_render_messages_on_every_bug17_context():
    """`render --messages anthropic` on each stored context: at most 4 breakpoints, blocks joining to `render`."""
    runner = CliRunner()
    for path, ctx in read_run(str(BUG17)):
        text = runner.invoke(app, ["render", str(path)]).stdout
        res = runner.invoke(app, ["render", str(path), "--messages", "anthropic"])
        assert res.exit_code == 0, res.stderr
        msgs = json.loads(res.stdout)
        assert joined(msgs, "anthropic") == text
        assert 1 <= len(breakpoints(msgs)) <= MAX_BREAKPOINTS
        assert msgs["tools"][0]["input_schema"] == get_encoder(ctx.encoder).decision_schema


def test_more_than_four_stable_ends_keep_the_last_four():
    text = "abcdefghij"
    req = Request(request_id="x-r0001", encoder="v10", hypothesis="H1", text=text, shown=[], indexed=[], chars=10,
                  hash="-", block_ends=[1, 2, 3, 4, 5, 6, 10], cache_ends=[1, 2, 3, 4, 5, 6])  # fmt: skip
    assert breakpoints(req.messages("anthropic")) == [3, 4, 5, 6]
    assert joined(req.messages("anthropic"), "anthropic") == text


def test_ttl_and_option_errors(inv):
    req = inv.next_request("H1")
    marks = [
        p["cache_control"]
        for p in req.messages("anthropic", ttl="1h")["messages"][0]["content"]
        if "cache_control" in p
    ]
    assert marks and all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks)
    for kwargs, code in [
        (dict(provider="gemini"), "unknown_provider"),
        (dict(provider="anthropic", ttl="10m"), "usage_error"),
        (dict(provider="openai", ttl="1h"), "usage_error"),
        (dict(provider="anthropic", strict=False), "usage_error"),
    ]:
        with pytest.raises(UsageError) as info:
            req.messages(**kwargs)
        assert info.value.code == code


def test_the_tool_and_response_formats(inv):
    req = inv.next_request("H1")
    frozen = get_encoder("v8").decision_schema
    assert req.decision_schema == frozen and req.decision_schema is not frozen
    jsonschema.Draft202012Validator.check_schema(
        frozen
    )  # Anthropic validates input_schema as draft 2020-12
    msgs = req.messages("anthropic")
    assert msgs["tools"] == [
        {
            "name": "submit_decision",
            "description": msgs["tools"][0]["description"],
            "input_schema": frozen,
        }
    ]
    assert msgs["tool_choice"] == {"type": "tool", "name": "submit_decision"}
    chat = req.messages("openai")["response_format"]
    assert chat["type"] == "json_schema" and chat["json_schema"]["strict"] is True
    assert chat["json_schema"]["schema"] == strict_schema(frozen, None)
    loose = req.messages("openai", strict=False)["response_format"]["json_schema"]
    assert loose["strict"] is False and loose["schema"] == frozen
    fmt = req.messages("openai-responses")["text"]["format"]
    assert (
        fmt["type"] == "json_schema"
        and fmt["name"] == "decision"
        and fmt["schema"] == chat["json_schema"]["schema"]
    )
    # A copy of the frozen schema: changing it cannot reach the renderer.
    req.decision_schema["properties"].clear()
    assert inv.next_request("H1").text == req.text


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("version", ["v7", "v8", "v10"])
@pytest.mark.parametrize("pending_id", [None, "E000007"])
def test_the_strict_schema_is_openai_strict_and_narrower_than_the_frozen_one(version, pending_id):
    frozen = get_encoder(version).decision_schema
    strict = strict_schema(frozen, pending_id)
    jsonschema.Draft202012Validator.check_schema(strict)
    assert strict["type"] == "object" and "anyOf" not in strict
    for node in _walk(strict):
        assert not {"oneOf", "uniqueItems", "const", "$schema", "allOf"} & set(node)
        if node.get("type") == "object":
            assert node["additionalProperties"] is False and node["required"] == list(
                node["properties"]
            )
        if "enum" in node:
            assert node["type"] == "string"
    assert ("assessment" in strict["properties"]) == (pending_id is not None)
    recall_ok = get_encoder(version).supports_recall
    samples = [
        decision(query("q"), notes=[]),
        decision(conclude("refuted", "E000001"), notes=[{"kind": "note", "text": "t"}]),
    ]
    if recall_ok:
        samples.append(decision(recall("E000002", "E000003"), notes=[]))
    for sample in samples:
        if pending_id:
            sample["assessment"] = assess(pending_id)
        jsonschema.validate(sample, strict)  # what strict mode can produce ...
        jsonschema.validate(sample, frozen)  # ... the frozen schema accepts ...
        parse_decision(
            json.dumps(sample).encode(), supports_recall=recall_ok
        )  # ... and so does workingset
    # An assessment of anything but the pending result (or any, when none is pending) cannot come out.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(decision(query("q"), assess("E000001"), notes=[]), strict)


def test_requests_know_which_result_rule_a_wants(inv, pending):
    assert pending.assess == "E000007"
    evidence_ref = pending.messages("openai")["response_format"]["json_schema"]["schema"][
        "properties"
    ]["assessment"]
    assert evidence_ref["properties"]["evidence_ref"] == {"type": "string", "enum": ["E000007"]}
    assert inv.next_request("H1").assess == "E000007"  # the open request, re-rendered


def _rejection(inv, req, answer) -> DecisionRejected:
    with pytest.raises(DecisionRejected) as info:
        inv.submit(req.request_id, answer)
    return info.value


def test_retry_messages_follow_the_unchanged_request(inv, pending):
    wrong = decision(query("select 1"))  # no assessment: rule A
    fenced_bad = '```json\n{"next": {"kind": "query"}}\n```'
    e1, e2 = _rejection(inv, pending, wrong), _rejection(inv, pending, fenced_bad)
    assert (e1.code, e2.code) == ("assessment_missing", "schema_violation")
    plain = pending.messages("anthropic")
    again = inv.next_request()
    msgs = again.messages("anthropic", retry=[(wrong, e1), (fenced_bad, e2)])
    assert again.text == pending.text and msgs["messages"][0] == plain["messages"][0]
    _, use, res, said, told = msgs["messages"]
    assert [m["role"] for m in msgs["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert use["content"] == [
        {"type": "tool_use", "id": "toolu_retry_1", "name": "submit_decision", "input": wrong}
    ]
    (tool_result,) = res["content"]
    assert (
        tool_result["type"] == "tool_result"
        and tool_result["tool_use_id"] == "toolu_retry_1"
        and tool_result["is_error"]
    )
    assert "(assessment_missing)" in tool_result["content"] and e1.message in tool_result["content"]
    assert pending.request_id in tool_result["content"]
    assert said["content"] == [
        {"type": "text", "text": fenced_bad}
    ]  # the answer exactly as received
    assert "(schema_violation)" in told["content"][0]["text"]

    chat = again.messages("openai", retry=[(wrong, e1), (fenced_bad, e2)])["messages"]
    assert chat[1] == {"role": "assistant", "content": json.dumps(wrong, separators=(",", ":"))}
    assert (
        chat[3] == {"role": "assistant", "content": fenced_bad}
        and "schema_violation" in chat[4]["content"]
    )
    resp = again.messages("openai-responses", retry=[(wrong.copy(), e1)])["input"]
    assert [m["role"] for m in resp] == ["user", "assistant", "user"] and e1.message in resp[2][
        "content"
    ]
    # A corrected answer is then accepted.
    assert (
        inv.submit(pending.request_id, decision(query("select 2"), assess("E000007"))).applied
        == "query"
    )


def test_retry_refuses_what_the_model_cannot_fix(inv):
    req = inv.next_request("H1")
    stale = DecisionRejected("request x was already answered", code="stale_request")
    closed = DecisionRejected("analysis demo is paused", code="analysis_closed")
    for bad in [
        [(b"{}", stale)],
        [("{}", closed)],
        [("{}", ValueError("x"))],
        [("{}",)],
        [(1, DecisionRejected("m", code="malformed_json"))],
    ]:
        with pytest.raises(UsageError):
            req.messages("openai", retry=bad)


def test_submit_accepts_one_fenced_json_block(inv):
    req = inv.next_request("H1")
    body = json.dumps(decision(query("select 3")), indent=2)
    for wrapped in [
        f"```json\n{body}\n```",
        f"\n  ```JSON\r\n{body}\r\n````\n",
        f"```\n{body}\n```",
    ]:
        parse_decision(wrapped.encode(), supports_recall=True)
    for bad in [f"```python\n{body}\n```", f"Here it is:\n```json\n{body}\n```", f"```json\n{body}\n```\n```json\n{body}\n```",
                f"```json {body} ```"]:  # fmt: skip
        with pytest.raises(DecisionRejected) as info:
            parse_decision(bad.encode(), supports_recall=True)
        assert info.value.code == "malformed_json"
    applied = inv.submit(req.request_id, f"```json\n{body}\n```")
    assert applied.applied == "query"
    assert inv.show().pending_actions[0].query == "select 3"


def test_next_messages_cli_and_bad_options_change_nothing(tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite3"
    monkeypatch.setenv("WORKINGSET_STORE", str(store))
    (tmp_path / "state.json").write_bytes(state_bytes())
    runner = CliRunner()
    # v10, named: a version without a context budget, whose `next --json` has no `budget` key.
    init = ["init", "--state", str(tmp_path / "state.json"), "--encoder", "v10"]
    assert runner.invoke(app, init).exit_code == 0
    before = db_dump(str(store))
    for args, code in [(["--messages", "gemini"], "unknown_provider"), (["--messages", "openai", "--ttl", "1h"], "usage_error"),
                       (["--ttl", "1h"], "usage_error"), (["--no-strict"], "usage_error")]:  # fmt: skip
        res = runner.invoke(app, ["next", "--analysis", "demo", *args, "--json"])
        assert res.exit_code == 2 and res.stderr.startswith(f"error: {code}: ")
        assert json.loads(res.stdout)["error"]["code"] == code
    assert db_dump(str(store)) == before  # no request was rendered or stored
    res = runner.invoke(
        app, ["next", "--analysis", "demo", "--messages", "anthropic", "--ttl", "1h"]
    )
    assert res.exit_code == 0, res.stderr
    spec = json.loads(runner.invoke(app, ["next", "--analysis", "demo", "--json"]).stdout)
    assert list(spec) == list(Request.PROTOCOL_KEYS)
    assert joined(json.loads(res.stdout), "anthropic") == spec["text"]
    loose = json.loads(
        runner.invoke(
            app, ["next", "--analysis", "demo", "--messages", "openai", "--no-strict"]
        ).stdout
    )
    assert loose["response_format"]["json_schema"]["strict"] is False


def test_the_cli_retry_loop(tmp_path, monkeypatch):
    """next --messages, a rejected submit --json, then next --messages --retry with that answer and error."""
    monkeypatch.setenv("WORKINGSET_STORE", str(tmp_path / "s.sqlite3"))
    (tmp_path / "state.json").write_bytes(state_bytes())
    runner = CliRunner()
    A = ["--analysis", "demo"]
    assert runner.invoke(app, ["init", "--state", str(tmp_path / "state.json")]).exit_code == 0
    (tmp_path / "none.json").write_text("[]")
    res = runner.invoke(
        app, ["next", *A, "--messages", "openai", "--retry", str(tmp_path / "none.json")]
    )
    assert res.exit_code == 2 and "needs an open request" in res.stderr  # and no request was made:
    first = json.loads(runner.invoke(app, ["next", *A, "--messages", "anthropic"]).stdout)
    answer = {"next": {"kind": "query", "source": "pg"}}
    rejected = runner.invoke(
        app, ["submit", *A, "--request", "demo-r0001", json.dumps(answer), "--json"]
    )
    assert rejected.exit_code == 2
    tries = [{"answer": answer, "error": json.loads(rejected.stdout)["error"]}]
    res = runner.invoke(
        app, ["next", *A, "--messages", "anthropic", "--retry", "-"], input=json.dumps(tries)
    )
    assert res.exit_code == 0, res.stderr
    msgs = json.loads(res.stdout)["messages"]
    assert msgs[0] == first["messages"][0] and len(msgs) == 3
    assert (
        msgs[1]["content"][0]["input"] == answer
        and "schema_violation" in msgs[2]["content"][0]["content"]
    )
    (tmp_path / "bad.json").write_text('[{"answer": "x", "error": {"code": "schema_violation"}}]')
    res = runner.invoke(
        app, ["next", *A, "--messages", "openai", "--retry", str(tmp_path / "bad.json"), "--json"]
    )
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "invalid_file"
    assert runner.invoke(app, ["next", *A, "--retry", str(tmp_path / "none.json")]).exit_code == 2


def test_gpt_56_requests_mark_the_stable_ends_and_older_models_none():
    """From GPT-5.6 on the OpenAI form carries explicit breakpoints at the stable ends, the implicit one off."""
    from workingset.providers import breakpoint_family

    state = load_stored_context((BUG17 / "bug17-r0018.json").read_bytes()).state
    out = get_encoder("v13").render(state, "H1")
    req = Request.of(out, "bug17-r0018", state)
    for provider in ("openai", "openai-responses"):
        body = req.messages(provider, model="gpt-5.6")
        key = "messages" if provider == "openai" else "input"
        parts = body[key][0]["content"]
        ends, at = [], 0
        for part in parts:
            at += len(part["text"])
            if "prompt_cache_breakpoint" in part:
                assert part["prompt_cache_breakpoint"] == {"mode": "explicit"}
                ends.append(at)
        assert ends == list(out.stable_ends()) and body["prompt_cache_options"] == {
            "mode": "explicit"
        }
        assert joined(body, provider) == out.text
        older = req.messages(provider, model="gpt-5.5")
        assert "prompt_cache_options" not in older and "prompt_cache_breakpoint" not in str(older)
        assert older == req.messages(provider)
    assert [breakpoint_family(m) for m in ("gpt-5.6", "gpt-5.6-mini", "gpt-6", "gpt-5.10", "gpt-5", "gpt-4o", "o3", None)] == [
        True, True, True, True, False, False, False, False]  # fmt: skip
