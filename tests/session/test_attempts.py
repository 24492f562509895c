"""Replies with no answer are kept and do not end the analysis; `send` sees the attempt; tries survive a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.session_helpers import assess, conclude, decision, query, state_bytes
from workingset import Investigation, WorkingsetError, replay_export
from workingset.cli.commands import app
from workingset.testing import (
    FixedClock,
    ScriptedModel,
    anthropic_cut_off,
    anthropic_refusal,
    anthropic_reply,
    chat_cut_off,
    chat_refusal,
    chat_reply,
)

ROWS = {"kind": "rows", "columns": ["n"], "rows": [[1]]}


@pytest.fixture
def inv(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v13", clock=FixedClock(step=1)
    ) as handle:
        yield handle


def code_of(fn, *args, **kw) -> WorkingsetError:
    with pytest.raises(WorkingsetError) as info:
        fn(*args, **kw)
    return info.value


def answers(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]


def test_refusals_leave_the_analysis_active_with_a_retryable_error_and_are_kept(inv, tmp_path):
    model = ScriptedModel(*[anthropic_refusal("I won't.")] * 3)
    err = code_of(inv.turn, model, "anthropic", retries=2)
    assert err.code == "turn_incomplete" and err.details["tries"] == 3
    assert err.details["last"]["code"] == "reply_refused" and err.details["max_tokens"] is None
    summary = inv.show()
    assert summary.status == "active" and summary.open_request == err.details["request_id"]
    # Nothing to show the model: the same body three times; the attempt counts them.
    assert model.bodies[0] == model.bodies[1] == model.bodies[2]
    assert [a.number for a in model.attempts] == [1, 2, 3]
    assert model.attempts[0].last is None and model.attempts[2].last.code == "reply_refused"
    # The next turn continues: the fourth reply is accepted.
    again = ScriptedModel(anthropic_reply(decision(query())))
    assert inv.turn(again, "anthropic").applied == "query" and again.attempts[0].number == 4
    inv.export(tmp_path / "run")
    kept = answers(tmp_path / "run")
    assert [(x["outcome"], x.get("code")) for x in kept] == [("rejected", "reply_refused")] * 3 + [
        ("accepted", None)
    ]
    assert json.loads(kept[0]["answer"]) == anthropic_refusal("I won't.")  # the reply as it came
    assert kept[0]["details"] == {"provider": "anthropic", "stop_reason": "refusal"}


def test_an_explicit_option_fails_the_analysis_instead(inv):
    model = ScriptedModel(*[chat_refusal()] * 2)
    err = code_of(inv.turn, model, "openai", retries=1, fail_on_unusable=True)
    assert err.code == "turn_failed" and inv.status == "failed"


def test_a_rejected_decision_as_the_last_try_still_fails_the_analysis(inv):
    model = ScriptedModel(anthropic_refusal(), anthropic_reply({"next": {"kind": "query"}}))
    assert code_of(inv.turn, model, "anthropic", retries=1).code == "turn_failed"
    assert inv.status == "failed"


def test_a_cut_off_suggests_a_larger_max_tokens_to_send(inv):
    seen = []

    def send(body, attempt):
        seen.append((attempt.number, attempt.max_tokens, attempt.last and attempt.last.code))
        if attempt.number == 1:
            return anthropic_cut_off(max_tokens=1024)
        return anthropic_reply(decision(query()))

    assert inv.turn(send, "anthropic").applied == "query"
    assert seen == [(1, None, None), (2, 2048, "reply_truncated")]
    cut = ScriptedModel(*[chat_cut_off(max_tokens=300)] * 2)
    err = code_of(inv.turn, cut, "openai", retries=1)
    assert err.code == "turn_incomplete" and err.details["max_tokens"] == 600


def test_send_gets_the_request_and_what_it_must_assess(inv):
    first = inv.submit(inv.next_request("H1").request_id, decision(query()))
    inv.record(first.action, payload=ROWS)
    model = ScriptedModel(
        lambda a: anthropic_reply(decision(query("select 2"), assess(a.assess))),
    )
    assert inv.turn(model, "anthropic", hypothesis="H1").applied == "query"
    attempt = model.attempts[0]
    assert (attempt.hypothesis, attempt.assess, attempt.request.hypothesis) == (
        "H1",
        "E000007",
        "H1",
    )
    assert attempt.body == model.bodies[0] and attempt.provider == "anthropic"
    assert attempt.request.request_id == first.request_id.replace("r0001", "r0002")


def test_the_old_one_argument_send_still_works(inv):
    bodies = []

    def send(body):
        bodies.append(body)
        return chat_reply(json.dumps(decision(query())))

    assert inv.turn(send, "openai").applied == "query" and len(bodies) == 1


def test_a_restarted_turn_shows_the_model_its_earlier_rejections(inv):
    wrong = {"next": {"kind": "query"}}

    def network_down(attempt):
        raise ConnectionError("the provider went away")

    model = ScriptedModel(anthropic_reply(wrong), network_down)
    with pytest.raises(ConnectionError):
        inv.turn(model, "anthropic")
    again = ScriptedModel(anthropic_reply(decision(query())))
    assert inv.turn(again, "anthropic").applied == "query"
    assert again.bodies[0] == model.bodies[1]  # the same retry body as before the crash
    assert again.bodies[0]["messages"][1]["content"][0]["input"] == wrong
    assert again.attempts[0].number == 2 and again.attempts[0].last.code == "schema_violation"


def test_replay_and_requests_agree_with_what_the_model_was_sent(tmp_path):
    """Refusals and cut-offs between rejections: replay passes, and `requests` prints each body a turn sent, once."""
    clock = FixedClock(step=1)
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v13", clock=clock
    ) as inv:
        model = ScriptedModel(
            anthropic_reply({"next": {"kind": "query"}}),  # rejected: shown again
            anthropic_refusal(),  # kept, the same body asked again
            anthropic_cut_off(),
            anthropic_reply(decision(query())),
        )
        act = inv.turn(model, "anthropic", retries=3, hypothesis="H1").action
        inv.record(act, payload=ROWS)
        last = ScriptedModel(
            anthropic_refusal(),
            lambda a: anthropic_reply(decision(conclude("supported", a.assess), assess(a.assess))),
        )
        assert inv.turn(last, "anthropic", hypothesis="H1").applied == "conclude"
        inv.export(tmp_path / "run")
    run = tmp_path / "run"
    assert len(answers(run)) == 6  # every reply the model gave
    report = replay_export(run)
    assert report.ok and report.answers == 6, report.divergence
    out = CliRunner().invoke(app, ["requests", str(run), "--strategy", "v13"])
    assert out.exit_code == 0, out.output
    printed = [json.loads(line)["body"] for line in out.stdout.splitlines()]
    sent = [model.bodies[0], model.bodies[1], last.bodies[0]]  # the distinct bodies, in order
    assert [b["messages"] for b in printed] == [b["messages"] for b in sent]
    assert model.bodies[1] == model.bodies[2] == model.bodies[3]  # the re-sends: not billed again


def test_a_reply_with_no_answer_is_no_retry_turn_but_shows_the_body_before_it_was_sent(tmp_path):
    from workingset.eventlog.exports import retry_turns

    def line(seq: int, request: str, answer: str, code: str | None = None) -> str:
        outcome = (
            {"outcome": "rejected", "code": code, "message": "m"}
            if code
            else {"outcome": "accepted"}
        )
        return json.dumps({"seq": seq, "kind": "answer", "at": "2026-06-10T21:00:00Z",
                           "request_id": request, "answer": answer, **outcome})  # fmt: skip

    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join([
        line(3, "r1", "a", "schema_violation"), line(4, "r1", "{}", "reply_refused"), line(5, "r1", "b"),
        line(7, "r2", "{}", "reply_truncated"), line(8, "r2", "c"),  # the same body twice: no turn
        line(10, "r3", "d", "assessment_missing"), line(11, "r3", "{}", "reply_empty"),  # still open
    ]) + "\n")  # fmt: skip
    turns = retry_turns(path)
    assert {rid: [a for a, _ in found] for rid, found in turns.items()} == {
        "r1": [b"a"],
        "r3": [b"d"],
    }
