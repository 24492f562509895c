"""Retry turns billed: an exported analysis's rejected answers are further requests, printed and billed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.independent_billing import MODELS, Tokenizer, bill_run
from tests.helpers.session_helpers import assess, conclude, decision, query, result, state_bytes
from workingset.cli.commands import app
from workingset.session.investigation import Investigation

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731
BAD_OBJECT = {
    "next": {"kind": "wander"}
}  # a JSON object: Anthropic's tool input, refused by the schema
BAD_TEXT = b'{"next": '  # not JSON: malformed_json


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    """A v13 analysis whose first request was answered three times (two rejections) and whose last is refused once."""
    root = tmp_path_factory.mktemp("retry")
    with Investigation.create(
        str(root / "s.sqlite3"), state_bytes(), encoder="v13", clock=CLOCK
    ) as inv:
        r1 = inv.next_request("H1")
        for bad in (BAD_OBJECT, BAD_TEXT):
            with pytest.raises(Exception):
                inv.submit(r1.request_id, bad)
        act = inv.submit(r1.request_id, decision(query("select count(*) from retries"))).action
        inv.record(act, result("retries: 9000", query="select count(*) from retries"),
                   captured_at="2026-06-10T21:05:00Z")  # fmt: skip
        r2 = inv.next_request("H1")
        with pytest.raises(Exception):
            inv.submit(r2.request_id, decision(query()))  # assessment_missing
        inv.submit(
            r2.request_id,
            decision(conclude("supported", "E000007"), assess(inv.state.pending_result("H1"))),
        )
        inv.export(root / "run")
    return root / "run"


def without_answers(export: Path, into: Path) -> Path:
    """The same run with no answers kept: what a run imported from a trajectory is."""
    plain = into / "plain"
    shutil.copytree(export, plain)
    (plain / "answers.jsonl").unlink()
    return plain


def invoke(*args: str) -> str:
    out = CliRunner().invoke(app, list(args))
    assert out.exit_code == 0, out.output
    return out.stdout


def requests(run: Path, *args: str) -> list[dict]:
    return [json.loads(line) for line in invoke("requests", str(run), *args).splitlines()]


def test_requests_prints_each_retry_after_its_request(export, tmp_path):
    lines = requests(export, "--strategy", "v13")
    ids = [(x["request_id"], x.get("retry")) for x in lines]
    assert ids == [
        ("demo-r0001", None),
        ("demo-r0001", 1),
        ("demo-r0001", 2),
        ("demo-r0002", None),
        ("demo-r0002", 1),
    ]
    base, first, second = (x["body"] for x in lines[:3])
    assert first["messages"][0] == base["messages"][0] and first["tools"] == base["tools"]
    use, outcome = first["messages"][1]["content"][0], first["messages"][2]["content"][0]
    assert use["type"] == "tool_use" and use["input"] == BAD_OBJECT
    assert (
        outcome["type"] == "tool_result"
        and outcome["is_error"]
        and "schema_violation" in outcome["content"]
    )
    assert "request demo-r0001 is still open" in outcome["content"]
    assert (
        second["messages"][:3] == first["messages"]
    )  # the second retry carries both turns, oldest first
    assert second["messages"][3]["content"] == [{"type": "text", "text": BAD_TEXT.decode()}]
    assert "malformed_json" in second["messages"][4]["content"][0]["text"]
    assert lines[1]["sent_at"] == lines[0]["sent_at"]  # billed at its request's time
    # OpenAI: the answers go back as the text received.
    openai = requests(export, "--strategy", "v13", "--provider", "openai")
    assert openai[1]["body"]["messages"][1] == {
        "role": "assistant",
        "content": json.dumps(BAD_OBJECT, separators=(",", ":")),
    }
    # A baseline asks no decision: no retries; a run without answers kept: none either.
    assert [x.get("retry") for x in requests(export, "--strategy", "full-transcript")] == [
        None,
        None,
    ]
    assert [
        x.get("retry") for x in requests(without_answers(export, tmp_path), "--strategy", "v13")
    ] == [None, None]


def test_compare_bills_the_retries_as_an_independent_billing_of_requests_does(export, tmp_path):
    plain = without_answers(export, tmp_path)
    args = ("--all", "--baselines", "--cache", ",".join(MODELS), "--json", "--summary")
    with_retries = json.loads(invoke("compare", str(export), *args))["cache"]
    without = json.loads(invoke("compare", str(plain), *args))["cache"]
    for strategy in ("v13", "v8", "full-transcript"):
        tokenize = Tokenizer()
        for model in MODELS:
            got, base = with_retries[model]["total"][strategy], without[model]["total"][strategy]
            ours, ours_plain = (
                bill_run(export, strategy, model, tokenize),
                bill_run(plain, strategy, model, tokenize),
            )
            assert got["effective_cost"] == pytest.approx(ours.cost, abs=0.1)
            assert base["effective_cost"] == pytest.approx(ours_plain.cost, abs=0.1)
            if strategy == "full-transcript":
                # A baseline is never retried (its change against the base, v7, does change).
                assert {k: v for k, v in got.items() if k != "change_percent"} == {
                    k: v for k, v in base.items() if k != "change_percent"
                }
                continue
            # What the retries add is exactly the three retry requests' billing, token for token.
            retry_tokens = (ours.uncached + ours.written + ours.read) - (
                ours_plain.uncached + ours_plain.written + ours_plain.read
            )
            assert retry_tokens > 0
            assert got["tokens"] - base["tokens"] == retry_tokens
            assert (got["uncached_tokens"], got["written_tokens"], got["read_tokens"]) == (
                ours.uncached,
                ours.written,
                ours.read,
            )


def test_a_damaged_answers_file_is_invalid_file(export, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(export, run)
    (run / "answers.jsonl").write_text('{"seq": 3, "kind": "answer", "at": "x"}\n')
    for command in (["requests", str(run)], ["compare", str(run)]):
        out = CliRunner().invoke(app, command)
        assert out.exit_code == 2 and "invalid_file" in out.output, out.output[-500:]
    lines = [json.loads(x) for x in (export / "answers.jsonl").read_text().splitlines()]
    lines[0]["request_id"] = lines[1]["request_id"] = (
        "demo-r0099"  # a retry turn of a request the run lacks
    )
    (run / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = CliRunner().invoke(app, ["requests", str(run)])
    assert out.exit_code == 2 and "demo-r0099" in out.output, out.output[-500:]


def test_only_a_rejection_another_answer_followed_is_a_retry_turn(tmp_path):
    from workingset.eventlog.exports import retry_turns

    def line(seq: int, request: str, answer: str, code: str | None = None) -> str:
        rejected = (
            {"outcome": "rejected", "code": code, "message": f"{code} said"}
            if code
            else {"outcome": "accepted"}
        )
        return json.dumps({"seq": seq, "kind": "answer", "at": "2026-06-10T21:00:00Z", "request_id": request,
                           "answer": answer, **rejected})  # fmt: skip

    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join([
        line(3, "r1", "a", "malformed_json"), line(4, "r1", "b", "schema_violation"), line(5, "r1", "c"),
        line(6, "r1", "late", "stale_request"),  # answered after r1 closed: no request carried it
        line(8, "r2", "d", "schema_violation"), line(9, "r2", "e", "analysis_closed"),  # the turn gave up: no retry
        line(11, "r3", "f", "assessment_missing"), line(12, "r3", "g", "assessment_missing"),  # the last try failed
    ]) + "\n")  # fmt: skip
    turns = retry_turns(path)
    assert sorted(turns) == ["r1", "r3"]
    assert [(a, e.code, e.message) for a, e in turns["r1"]] == [
        (b"a", "malformed_json", "malformed_json said"), (b"b", "schema_violation", "schema_violation said")
    ]  # fmt: skip
    assert [a for a, _ in turns["r3"]] == [b"f"]
