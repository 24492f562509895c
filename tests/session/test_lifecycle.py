"""The lifecycle (#34): five bounds, the stop policy's rules in order, stages and partial outcomes.

Each is checked live, after a restart (a new handle on the store) and through an export and its replay.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from tests.helpers.session_helpers import (
    assess,
    conclude,
    decision,
    make_state,
    query,
    recall,
    result,
)
from workingset.errors import WorkingsetError
from workingset.eventlog.snapshots import _SNAPSHOT_CODEC, Snapshot
from workingset.model.state import load_state
from workingset.session.frozen_replay import replay_export
from workingset.session.investigation import Investigation

T0 = datetime(2026, 6, 10, 20, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves: `at(seconds)` sets it that many seconds after T0."""

    def __init__(self) -> None:
        self.now = T0

    def at(self, seconds: float) -> None:
        self.now = T0 + timedelta(seconds=seconds)

    def __call__(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")


def state(
    budget: dict[str, Any] | None = None, rules: dict[str, Any] | None = None, **kw: Any
) -> bytes:
    raw = make_state(**kw)
    raw["budget"].update(budget or {})
    if rules is not None:
        raw["stop_rules"] = rules
    return json.dumps(raw).encode()


def create(store: str, data: bytes, clock: Clock | None = None) -> Investigation:
    return Investigation.create(store, data, encoder="v8", clock=clock or Clock())


def replays(inv: Investigation, tmp_path, name: str = "export") -> dict[str, Any]:
    """Export the analysis, replay it (it must match step for step) and return the end line."""
    out = tmp_path / name
    inv.export(out)
    report = replay_export(out)
    assert report.ok, report.lines()
    lines = (out / "journal.jsonl").read_text().splitlines()
    return json.loads(lines[-1])


def reopened(store: str, clock: Clock | None = None) -> Investigation:
    return Investigation.open(store, "demo", clock=clock or Clock())


def query_turn(inv: Investigation, hid: str = "H1", assessment: dict | None = None) -> str:
    req = inv.next_request(hid)
    applied = inv.submit(req.request_id, decision(query(), assessment))
    return applied.action


# -- the state's new fields -------------------------------------------------------------


def test_a_state_without_the_new_fields_is_written_byte_for_byte_as_before():
    raw = make_state()
    s = load_state(json.dumps(raw).encode())
    assert (
        msgspec.json.decode(msgspec.json.encode(s)) == raw
    )  # no new key, not even a null or a zero
    with_them = load_state(state({"max_queries": 3, "max_model_calls": 4, "max_seconds": 5},
                                 {"success_confidence": 0.9}))  # fmt: skip
    back = msgspec.json.decode(msgspec.json.encode(with_them))
    assert back["budget"]["max_queries"] == 3 and back["stop_rules"] == {"success_confidence": 0.9}


@pytest.mark.parametrize(
    "bad", [{"max_queries": 0}, {"max_seconds": -1}, {"max_model_calls": None}]
)
def test_a_bound_must_be_a_positive_count(bad):
    with pytest.raises(WorkingsetError) as info:
        load_state(state(bad))
    assert info.value.code == "invalid_file"


def test_a_snapshot_keeps_unset_fields_unset_and_set_ones_set():
    for data in (state(), state({"max_seconds": 9}, {"min_confidence": 0.1})):
        s = load_state(data)
        snap = Snapshot(
            seq=1,
            changed=1,
            numbers=(0, 0, 0),
            requests_before=0,
            state=s,
            usage=(0, None, 0.0, None, None, None),
        )
        back = _SNAPSHOT_CODEC.decode(_SNAPSHOT_CODEC.encode(snap))
        assert back == snap and msgspec.json.encode(back.state) == msgspec.json.encode(s)


# -- the five bounds --------------------------------------------------------------------


def test_max_queries_counts_the_results_recorded(store, tmp_path):
    inv = create(store, state({"max_queries": 6}))  # the state holds five query results already
    assert inv.usage().queries == 5
    action = query_turn(inv)
    rec = inv.record(action, result())
    assert (rec.status, rec.termination_reason) == ("completed", "budget_exhausted")
    out, usage = inv.show(), inv.usage()
    assert usage.queries == 6
    assert out.stop.explanation == "The budget is exhausted: It used 6 of its 6 queries run."
    again = reopened(store)
    assert again.show() == out and again.usage() == usage  # restart: counted again from the log
    end = replays(inv, tmp_path)
    assert end["stop"]["reason"] == "budget_exhausted" and end["usage"]["queries"] == 6


def test_max_model_calls_counts_every_answer_kept_retries_too(store, tmp_path):
    inv = create(store, state({"max_model_calls": 2}))
    req = inv.next_request("H1")
    with pytest.raises(WorkingsetError):
        inv.submit(req.request_id, b"{not json")  # a retry: one model call
    assert inv.usage().model_calls == 1 and inv.status == "active"
    applied = inv.submit(req.request_id, decision(query()))
    assert (applied.status, inv.show().termination_reason) == ("completed", "budget_exhausted")
    out, usage = reopened(store).show(), reopened(store).usage()
    assert usage.model_calls == 2 and "2 of its 2 model calls" in out.stop.explanation
    assert [p.action for p in out.pending_actions] == [applied.action]  # still listed as pending
    replays(inv, tmp_path)


def test_a_reply_with_no_answer_is_a_model_call_too(store):
    inv = create(store, state({"max_model_calls": 5}))
    req = inv.next_request("H1")
    reply = {"choices": [{"finish_reason": "length", "message": {"content": '{"next"'}}]}
    with pytest.raises(WorkingsetError):
        inv.submit_reply(req.request_id, reply)
    assert inv.usage().model_calls == 1


def test_max_seconds_leaves_paused_time_out_and_stops_at_the_next_call(store, tmp_path):
    clock = Clock()
    inv = create(store, state({"max_seconds": 150}), clock)
    clock.at(10)
    req = inv.next_request("H1")
    clock.at(20)
    inv.pause()
    clock.at(100)
    inv.resume()  # 80 s paused: not execution time
    clock.at(200)
    assert inv.next_request("H1").request_id == req.request_id  # 120 s used of 150: still active
    assert inv.usage().seconds == 20  # as of the last event (the resume): 100 s less 80 paused
    clock.at(240)  # 160 s used
    with pytest.raises(WorkingsetError) as info:
        inv.next_request("H1")
    assert info.value.code == "analysis_closed"
    out, usage = inv.show(), inv.usage()
    assert (out.status, out.termination_reason, out.stage) == (
        "completed",
        "budget_exhausted",
        "completed",
    )
    assert usage.seconds == 160 and out.stop.explanation.endswith(
        "160 of its 150 seconds of execution time."
    )
    assert out.open_request is None  # abandoned by the stop
    clock.at(999)  # the clock of an ended analysis stands still
    assert reopened(store, clock).show() == out and reopened(store, clock).usage() == usage
    end = replays(inv, tmp_path)
    assert end["usage"]["seconds"] == 160


def test_iterations_and_cost_still_end_the_analysis_as_before(store, tmp_path):
    inv = create(store, state(max_cost=1.0))
    action = query_turn(inv)
    rec = inv.record(action, result(cost=1.0))
    assert rec.termination_reason == "budget_exhausted"
    assert inv.show().stop.explanation == "The budget is exhausted: It spent 1 of its cost limit 1."
    inv2 = create(str(tmp_path / "other.sqlite3"), state(max_iterations=1))
    query_turn(inv2)
    assert inv2.show().stop.explanation == "The budget is exhausted: It used 1 of its 1 iterations."
    replays(inv, tmp_path)
    replays(inv2, tmp_path, "other")


# -- the stop rules ---------------------------------------------------------------------


def test_a_confidence_at_the_success_threshold_completes_the_analysis(store, tmp_path):
    inv = create(store, state(rules={"success_confidence": 0.8}))
    action = query_turn(inv)
    inv.record(action, result())
    req = inv.next_request("H1")
    applied = inv.submit(
        req.request_id, decision(recall("E000001"), assess("E000007", confidence=0.8))
    )
    assert applied.status == "completed"
    out = reopened(store).show()
    assert out.termination_reason == "confidence_reached"
    assert (
        out.stop.explanation
        == "Hypothesis H1 reached confidence 0.8, at least the success threshold 0.8."
    )
    assert replays(inv, tmp_path)["stop"]["reason"] == "confidence_reached"


def test_a_supported_conclusion_comes_before_a_used_up_budget(store):
    inv = create(store, state(max_iterations=2, rules={"success_confidence": 0.9}))
    inv.record(query_turn(inv), result())
    req = inv.next_request("H1")
    inv.submit(
        req.request_id,
        decision(conclude("supported", "E000007"), assess("E000007", confidence=0.95)),
    )
    assert (
        inv.show().termination_reason == "root_cause_found"
    )  # rule 2 (its first part) before its threshold and rule 3


def _two_assessments(inv: Investigation, second: float) -> Any:
    inv.record(query_turn(inv), result())
    inv.record(query_turn(inv, assessment=assess("E000007", "supports", 0.9)), result())
    req = inv.next_request("H1")
    return inv.submit(
        req.request_id, decision(recall("E000001"), assess("E000008", "refutes", second))
    )


def test_assessments_that_support_and_refute_one_hypothesis_are_an_unresolvable_contradiction(
    store, tmp_path
):
    inv = create(store, state(rules={"contradiction_confidence": 0.8}))
    applied = _two_assessments(inv, second=0.1)  # refutes, 0.9 sure; it supported at 0.9 before
    assert applied.status == "completed"
    out = reopened(store).show()
    assert out.termination_reason == "unresolvable_contradiction"
    assert out.stop.explanation.startswith(
        "Hypothesis H1 has accepted assessments that both support and refute it"
    )
    assert replays(inv, tmp_path)["stop"]["reason"] == "unresolvable_contradiction"


def test_a_weak_refutation_is_no_contradiction(store):
    inv = create(store, state(rules={"contradiction_confidence": 0.8}))
    assert _two_assessments(inv, second=0.3).status == "active"  # 0.7 sure it is wrong: below 0.8


def test_a_budget_used_up_comes_before_a_contradiction(store):
    inv = create(store, state(max_iterations=3, rules={"contradiction_confidence": 0.8}))
    assert _two_assessments(inv, second=0.1).status == "completed"
    assert inv.show().termination_reason == "budget_exhausted"  # rule 3 before rule 4


def test_no_candidate_above_the_minimum_confidence(store, tmp_path):
    inv = create(store, state(rules={"min_confidence": 0.5}))  # every hypothesis is at 0.3
    out = inv.show()
    assert (out.status, out.termination_reason) == ("completed", "no_candidate_above_minimum")
    raw = make_state()
    raw["stop_rules"] = {"min_confidence": 0.5}
    raw["hypotheses"][1]["confidence"] = 0.6
    inv2 = create(str(tmp_path / "b.sqlite3"), json.dumps(raw).encode())
    assert (
        inv2.status == "active" and inv2.next_request().hypothesis == "H2"
    )  # only H2 can be scheduled
    with pytest.raises(WorkingsetError) as info:
        inv2.next_request("H1")
    assert info.value.code in ("request_open", "hypothesis_unavailable")
    replays(inv, tmp_path)


def test_without_thresholds_the_end_is_inconclusive_as_before(store):
    inv = create(store, state(limits=(1, 1, 1)))
    for hid in ("H1", "H2", "H3"):
        req = inv.next_request(hid)
        inv.submit(req.request_id, decision(recall("E000001")))
    assert inv.show().termination_reason == "inconclusive_human_review"


def test_cancel_and_fail_name_their_reason(store, tmp_path):
    inv = create(store, state())
    inv.cancel()
    assert inv.show().stop.explanation == "The analysis was cancelled."
    inv2 = create(str(tmp_path / "b.sqlite3"), state())
    inv2.fail("the database is gone")
    assert inv2.show().stop.reason == "failed"
    assert replays(inv2, tmp_path)["stop"]["status"] == "failed"


# -- stages -----------------------------------------------------------------------------


def test_the_stage_follows_the_turn_and_pause_resume_keeps_it(store, tmp_path):
    clock = Clock()
    inv = create(store, state(), clock)
    assert inv.stage == "planning"
    req = inv.next_request("H1")
    assert inv.stage == "planning"  # a request is open
    action = inv.submit(req.request_id, decision(query())).action
    assert inv.stage == "executing"
    inv.record(action, result())
    assert inv.stage == "evaluating"
    req = inv.next_request("H1")
    assert inv.stage == "evaluating"  # the open request asks for the assessment
    inv.submit(req.request_id, decision(recall("E000001"), assess("E000007")))
    assert inv.stage == "updating"
    inv.pause()
    assert inv.stage == "paused"
    assert reopened(store).stage == "paused"
    assert replays(inv, tmp_path, "paused")["stage"] == "paused"
    inv.resume()
    assert inv.stage == "updating" and reopened(store).stage == "updating"
    assert replays(inv, tmp_path, "resumed")["stage"] == "updating"
    inv.cancel()
    assert inv.stage == "cancelled"


# -- partial outcomes -------------------------------------------------------------------


def test_a_completed_analysis_with_limited_evidence_is_partial(store, tmp_path):
    inv = create(store, state())
    action = query_turn(inv)
    capture = {"query": "select 1", "origin": "pg:orders", "truncated": True, "next_cursor": "p2",
               "coverage": "partial: eu only"}  # fmt: skip
    inv.record(action, {"scope": "query_result", "capture": capture,
                        "payload": {"kind": "text", "language": None, "text": "x"}})  # fmt: skip
    assert inv.show().partial is False  # not completed yet: the limitations are listed, so far
    req = inv.next_request("H1")
    inv.submit(req.request_id, decision(conclude("supported", "E000007"), assess("E000007")))
    out = reopened(store).show()
    assert out.partial is True
    assert [(item.evidence, item.why) for item in out.limitations] == [
        ("E000004", ["not_retained"]),
        ("E000007", ["truncated", "paged", "incomplete_coverage"]),
    ]
    end = replays(inv, tmp_path)
    assert end["partial"] is True and end["limitations"][1]["evidence"] == "E000007"


def test_an_old_export_without_the_lifecycle_keys_still_replays(store, tmp_path):
    inv = create(store, state())
    inv.record(query_turn(inv), result())
    out = tmp_path / "old"
    inv.export(out)
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines()
    end = json.loads(lines[-1])
    for key in ("stage", "stop", "usage", "partial", "limitations"):
        del end[key]
    journal.write_text("\n".join([*lines[:-1], json.dumps(end)]) + "\n")
    assert replay_export(out).ok


# -- the controller's loop --------------------------------------------------------------


def test_run_ends_when_the_execution_time_runs_out_between_changes(store, tmp_path):
    from tests.helpers.scripted_run import scripted_send

    ticks = iter(range(0, 10_000, 30))  # every clock read is 30 s later

    class Ticking(Clock):
        def __call__(self) -> str:
            self.at(next(ticks))
            return super().__call__()

    inv = create(store, state({"max_seconds": 100}), Ticking())
    summary = inv.run(scripted_send, lambda s, q: {"kind": "rows", "columns": ["q"], "rows": [[q]]})
    assert (summary.status, summary.termination_reason) == ("completed", "budget_exhausted")
    assert "seconds of execution time" in summary.stop.explanation
    assert replays(inv, tmp_path)["stop"]["reason"] == "budget_exhausted"


def test_run_ends_when_the_model_calls_run_out(store, tmp_path):
    from tests.helpers.scripted_run import scripted_send

    inv = create(store, state({"max_model_calls": 3}))
    summary = inv.run(scripted_send, lambda s, q: {"kind": "rows", "columns": ["q"], "rows": [[q]]})
    assert (summary.status, summary.termination_reason) == ("completed", "budget_exhausted")
    assert inv.usage().model_calls == 3
    replays(inv, tmp_path)


def test_a_new_process_starting_from_a_snapshot_counts_the_same(store):
    from workingset.eventlog.snapshots import from_snapshot, take_snapshot

    clock = Clock()
    inv = create(store, state({"max_model_calls": 50}, {"min_confidence": 0.1}), clock)
    req = inv.next_request("H1")
    with pytest.raises(WorkingsetError):
        inv.submit(req.request_id, b"nope")
    clock.at(30)
    inv.pause()
    view = inv.store.views["demo"]
    data = take_snapshot(view)

    class Tx:
        def snapshot(self, analysis_id):
            return view.seq, data

    back = from_snapshot(Tx(), "demo")
    assert back is not None and back.usage() == view.usage() and back.usage().model_calls == 1
    # Unset stays unset (no key), set stays set (the payloads stay in the store: not compared).
    for part in ("budget", "stop_rules"):
        assert msgspec.json.encode(getattr(back.state, part)) == msgspec.json.encode(
            getattr(view.state, part)
        )
    assert b"max_queries" not in msgspec.json.encode(back.state.budget)
    assert (back.created_at, back.paused_since, back.last_at) == (
        view.created_at,
        view.paused_since,
        view.last_at,
    )


def test_an_export_made_before_the_lifecycle_replays_unchanged(tmp_path):
    """tests/data/pre_lifecycle_export was written by the release before #34 (a rejection, a pause, a result, the end)."""
    import shutil
    from pathlib import Path

    src = Path(__file__).parents[1] / "data" / "pre_lifecycle_export"
    run = tmp_path / "run"
    shutil.copytree(src, run)
    end = json.loads((run / "journal.jsonl").read_text().splitlines()[-1])
    assert "stage" not in end  # written before the lifecycle keys
    report = replay_export(run)
    assert report.ok, report.lines()


def test_show_prints_the_stage_the_usage_and_the_stop(store):
    from workingset.session.replies import describe

    clock = Clock()
    inv = create(store, state({"max_model_calls": 10, "max_seconds": 600}), clock)
    clock.at(42)
    inv.next_request("H1")
    text = describe(inv.show(), inv.usage())
    assert "stage: planning\n" in text
    assert "queries run: 5 · model calls: 0 of 10 · execution time: 42 s of 600 s\n" in text
    assert "limitations (so far):\n  E000004: not_retained\n" in text
    inv.cancel()
    assert "\nstopped: The analysis was cancelled.\nstage: cancelled\n" in describe(
        inv.show(), inv.usage()
    )
