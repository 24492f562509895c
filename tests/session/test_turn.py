"""The helpers a controller would otherwise write: `turn`, `Applied`'s decided query, `record(payload=)`, `open_or_create`."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers.provider_replies import Provider, anthropic_reply, chat_reply
from tests.helpers.sdks import require
from tests.helpers.session_helpers import assess, conclude, decision, query, recall, state_bytes
from workingset import Investigation, SqliteStore, WorkingsetError
from workingset.session.investigation import utc_now

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


@pytest.fixture
def inv(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v8", clock=CLOCK
    ) as handle:
        yield handle


def code_of(fn, *args, **kw) -> WorkingsetError:
    with pytest.raises(WorkingsetError) as info:
        fn(*args, **kw)
    return info.value


class Model:
    """A scripted `send`: keeps every body it was given and answers with the next reply."""

    def __init__(self, *replies):
        self.replies, self.bodies = list(replies), []

    def __call__(self, body):
        self.bodies.append(body)
        reply = self.replies.pop(0)
        return reply(self) if callable(reply) else reply


# -- Applied and record ------------------------------------------------------------------------------


def test_applied_carries_the_decided_query_and_record_takes_just_the_payload(inv):
    req = inv.next_request("H1")
    out = inv.submit(
        req.request_id, decision(query("select 7", source="pg:orders", purpose="count them"))
    )
    assert (out.hypothesis, out.source, out.query, out.purpose) == (
        "H1",
        "pg:orders",
        "select 7",
        "count them",
    )
    assert out.spec() == {"request_id": req.request_id, "applied": "query", "iteration": 1, "status": "active",
                          "action": out.action}  # `submit --json` keeps its documented keys  # fmt: skip
    rows = {"kind": "rows", "columns": ["n"], "rows": [[7]]}
    done = inv.record(out.action, payload=rows, cost=0.25, item_count=1)
    ev = inv.state.evidence[-1]
    assert done.evidence == ev.id and ev.payload.rows == [[7]] and ev.budget.cost == 0.25
    assert (ev.capture.query, ev.capture.origin, ev.capture.item_count, ev.scope) == ("select 7", "pg:orders", 1,
                                                                                      "query_result")  # fmt: skip


def test_applied_has_no_query_for_a_recall_or_a_conclusion(inv):
    out = inv.submit(inv.next_request("H1").request_id, decision(recall("E000001")))
    assert (
        out.applied == "recall"
        and (out.hypothesis, out.source, out.query, out.purpose) == (None,) * 4
    )
    req = inv.next_request("H1")  # shows the recalled E000001 in full
    out = inv.submit(req.request_id, decision(conclude("refuted", "E000001")))
    assert out.applied == "conclude" and out.source is None


def test_record_wants_the_result_or_the_payload_and_changes_nothing_otherwise(inv):
    action = inv.submit(inv.next_request("H1").request_id, decision(query())).action
    before = inv.show()
    for kw in (
        {},
        {"result": {"scope": "log"}, "payload": {"kind": "text", "language": None, "text": "x"}},
    ):
        err = code_of(inv.record, action, **kw)
        assert err.code == "usage_error" and "exactly one" in err.message
    assert (
        code_of(inv.record, action, payload={"kind": "rows"}).code == "invalid_file"
    )  # checked as a result is
    assert (
        code_of(inv.record, "B000099", payload={"kind": "rows", "columns": [], "rows": []}).code
        == "unknown_action"
    )
    assert inv.show() == before and inv.pending_actions()[0].action == action


# -- one bounded turn ----------------------------------------------------------------------------


def test_a_turn_retries_a_rejection_with_its_feedback_then_applies(inv):
    first = inv.submit(inv.next_request("H1").request_id, decision(query()))
    inv.record(
        first.action, payload={"kind": "rows", "columns": ["n"], "rows": [[1]]}
    )  # H1 now owes an assessment
    wrong, right = decision(query("select 2")), decision(query("select 2"), assess("E000007"))
    model = Model(anthropic_reply(wrong), anthropic_reply(right))
    out = inv.turn(model, "anthropic", retries=2, hypothesis="H1")
    assert out.applied == "query" and out.query == "select 2" and len(model.bodies) == 2
    (user,), retried = model.bodies[0]["messages"], model.bodies[1]["messages"]
    assert retried[0] == user and retried[1]["content"][0]["input"] == wrong
    assert "assessment_missing" in retried[2]["content"][0]["content"]


def test_a_reply_without_an_answer_is_asked_again_without_feedback(inv):
    cut = chat_reply('{"next": ')
    cut["choices"][0]["finish_reason"] = "length"
    model = Model(cut, chat_reply(json.dumps(decision(query()))))
    assert inv.turn(model, "openai", retries=1).applied == "query"
    assert (
        model.bodies[0] == model.bodies[1]
    )  # the same request again: there was no answer to reject


def test_when_the_tries_run_out_the_analysis_fails_with_the_reason(inv):
    model = Model(*[anthropic_reply({"next": {"kind": "query"}})] * 3)
    err = code_of(inv.turn, model, "anthropic", retries=2)
    assert (
        err.code == "turn_failed"
        and err.details["tries"] == 3
        and err.details["last"]["code"] == "schema_violation"
    )
    assert (
        len(model.bodies) == 3 and len(model.bodies[2]["messages"]) == 5
    )  # the request and two rejected tries
    summary = inv.show()
    assert summary.status == "failed" and summary.open_request is None
    assert err.details["request_id"] in err.message and "schema_violation" in err.message


def test_zero_retries_is_one_try(inv):
    model = Model(anthropic_reply({"next": {"kind": "query"}}))
    assert (
        code_of(inv.turn, model, "anthropic", retries=0).code == "turn_failed"
        and len(model.bodies) == 1
    )
    assert inv.status == "failed"


def test_what_the_model_cannot_fix_is_raised_at_once_and_not_retried(inv):
    def cancel_then_answer(model):
        inv.cancel()  # another process ended the analysis while the model was thinking
        return anthropic_reply(decision(query()))

    model = Model(cancel_then_answer, anthropic_reply(decision(query())))
    assert code_of(inv.turn, model, "anthropic", retries=3).code == "analysis_closed"
    assert len(model.bodies) == 1 and inv.status == "cancelled"


@pytest.mark.parametrize("kw, code", [
    ({"provider": "gemini"}, "unknown_provider"), ({"provider": "openai", "ttl": "1h"}, "usage_error"),
    ({"provider": "anthropic", "retries": -1}, "usage_error"), ({"provider": "anthropic", "retries": 1.5}, "usage_error"),
    ({"provider": "anthropic", "retries": True}, "usage_error"),
])  # fmt: skip
def test_bad_turn_options_are_refused_before_a_request_is_rendered(inv, kw, code):
    model = Model()
    assert code_of(inv.turn, model, **kw).code == code
    assert model.bodies == [] and inv.requests() == []


def test_a_turn_through_the_anthropic_sdk_on_a_mock_transport(inv):
    anthropic = require("anthropic")
    server = Provider()
    client = anthropic.Anthropic(api_key="test-key", http_client=server.client(), max_retries=0)
    server.replies += [
        anthropic_reply({"next": {"kind": "recall"}}),
        anthropic_reply(decision(query("select 3"))),
    ]
    out = inv.turn(
        lambda body: client.messages.create(model="claude-test", max_tokens=1024, **body),
        "anthropic",
    )
    assert out.query == "select 3" and len(server.bodies) == 2
    assert server.bodies[1]["messages"][0] == server.bodies[0]["messages"][0]
    assert server.bodies[1]["messages"][2]["content"][0]["is_error"] is True


# -- open and open_or_create ---------------------------------------------------------------------


def test_open_checks_the_store_and_the_analysis_at_once(tmp_path, inv):
    path = inv.store.path
    err = code_of(Investigation.open, path, "dmeo")
    assert err.code == "unknown_analysis" and "known: demo" in err.message
    missing = str(tmp_path / "typo.sqlite3")
    assert code_of(
        Investigation.open, missing, "demo"
    ).code == "unknown_analysis" and not os.path.exists(missing)
    shared = SqliteStore(path)
    try:
        assert code_of(Investigation.open, shared, "dmeo").code == "unknown_analysis"
    finally:
        shared.close()


def test_open_or_create_creates_once_then_opens_what_is_there(tmp_path):
    path = str(tmp_path / "r.sqlite3")
    with Investigation.open_or_create(path, state_bytes(), encoder="v8", clock=CLOCK) as inv:
        rid = inv.next_request().request_id
    with Investigation.open_or_create(path, state_bytes(), encoder="v8") as again:  # the restart
        assert again.next_request().request_id == rid and again.show().state.iteration == 0
    err = code_of(Investigation.open_or_create, path, state_bytes(), encoder="v10")
    assert err.code == "encoder_mismatch" and err.details["analysis"] == "demo"
    with Investigation.open_or_create(
        path, state_bytes(analysis="other"), encoder="v8", clock=utc_now
    ) as other:
        assert other.analysis_id == "other"


def test_open_or_create_checks_the_state_before_touching_the_store(tmp_path):
    path = str(tmp_path / "never.sqlite3")
    assert (
        code_of(Investigation.open_or_create, path, b'{"analysis_id": "x"}').code == "invalid_file"
    )
    assert (
        code_of(Investigation.open_or_create, path, state_bytes(), encoder="v99").code
        == "unknown_encoder"
    )
    assert not os.path.exists(path)
