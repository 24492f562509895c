"""Turn application, scheduling and termination as pure functions over a state (docs/protocol.md)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.session_helpers import assess, conclude, decision, make_state, query, recall
from workingset import controller as ctl
from workingset.decisions import parse_decision
from workingset.errors import SessionError
from workingset.model.hashing import content_hash
from workingset.model.state import (
    Capture,
    Evidence,
    EvidenceBudget,
    RecallSelection,
    TextPayload,
    copy_state,
    load_state,
    validate_state,
)


def _state(**kw):
    return load_state(json.dumps(make_state(**kw)).encode())


def _apply(state, d, hid="H1", actions=()):
    parsed = parse_decision(json.dumps(d).encode(), supports_recall=True)
    ids = ctl.allocate(state, parsed, actions)
    return ctl.apply_decision(state, hid, parsed, ids), ids


def _result(eid: str, hid: str, action: str, cost: float = 0.0, iteration: int = 1) -> Evidence:
    payload = TextPayload(language=None, text=f"result {eid}")
    return Evidence(id=eid, collector=hid, scope="query_result", capture=Capture(origin="pg", query="q"), payload=payload,
                    content_hash=content_hash(payload), budget=EvidenceBudget(action=action, status="unsettled", cost=cost),
                    iteration=iteration, captured_at="2026-06-10T20:20:00Z")  # fmt: skip


def test_query_consumes_one_iteration_allocates_an_action_and_clears_the_selection():
    s = _state()
    s.recall["H1"] = RecallSelection(evidence_refs=["E000003"], iteration=0)
    it, ids = _apply(
        s, decision(query("select 9"), notes=[{"kind": "question", "text": "which shard?"}])
    )
    assert it == 1 and s.iteration == 1 and s.hypothesis("H1").control.iterations_used == 1
    assert ids.action == "B000006" and ids.notes == ("N000002",)
    assert "H1" not in s.recall
    assert (
        s.notes[-1].status == "open"
        and s.notes[-1].hypothesis == "H1"
        and s.notes[-1].iteration == 1
    )
    assert (
        s.hypothesis("H1").history[-1].kind == "query"
        and "select 9" in s.hypothesis("H1").history[-1].text
    )
    validate_state(s)


def test_action_ids_skip_those_already_reserved_in_the_store():
    s = _state()
    _, ids = _apply(s, decision(query()), actions=["B000006", "B000007"])
    assert ids.action == "B000008"


def test_recall_replaces_the_selection_and_creates_nothing_else():
    s = _state()
    _apply(s, decision(recall("E000003", "E000004")))
    before = copy_state(s)
    _apply(s, decision(recall("E000001")))
    assert s.recall["H1"].evidence_refs == ["E000001"] and s.recall["H1"].iteration == 2
    assert s.evidence == before.evidence and s.budget == before.budget and s.notes == before.notes
    assert s.iteration == 2


def test_assessment_settles_once_sets_confidence_then_notes_then_next():
    s = _state()
    ctl.apply_record(s, _result("E000007", "H1", "B000006", cost=1.5))
    assert s.hypothesis("H1").control.previous_result == "E000007" and s.budget.cost_used == 1.5
    _apply(
        s,
        decision(
            conclude("refuted", "E000007"),
            assess("E000007", "refutes", 0.1),
            [{"kind": "note", "text": "n"}],
        ),
    )
    h = s.hypothesis("H1")
    assert (
        s.evidence[-1].budget.status == "settled"
        and h.confidence == 0.1
        and h.disposition == "refuted"
    )
    assert [e.kind for e in h.history] == ["assessment", "conclude"]
    assert s.notes[-1].status is None
    validate_state(s)


def test_scheduler_least_recently_served_then_numeric_id():
    raw = make_state()
    raw["hypotheses"][2]["id"] = "H10"
    for e in raw["evidence"]:
        if e["collector"] == "H3":
            e["collector"] = "H10"
    s = load_state(json.dumps(raw).encode())
    assert ctl.schedule(s, busy=set()) == "H1"
    _apply(s, decision(query()), "H1")
    assert ctl.schedule(s, busy=set()) == "H2"
    _apply(s, decision(recall("E000001")), "H2")
    assert ctl.schedule(s, busy={"H1"}) == "H10"
    _apply(s, decision(recall("E000001")), "H10")
    assert ctl.schedule(s, busy={"H1"}) == "H2"


def test_scheduler_skips_unavailable_and_busy():
    s = _state(limits=(0, 6, 6))
    s.hypotheses[2].disposition = "parked"
    assert ctl.schedule(s, busy=set()) == "H2"
    with pytest.raises(SessionError) as info:
        ctl.schedule(s, busy={"H2"})
    assert info.value.code == "hypothesis_busy"


@pytest.mark.parametrize(
    ("mutate", "hid", "busy", "code"),
    [
        (lambda s: None, "H9", set(), "unknown_hypothesis"),
        (
            lambda s: setattr(s.hypotheses[0], "disposition", "parked"),
            "H1",
            set(),
            "hypothesis_unavailable",
        ),
        (
            lambda s: setattr(s.hypotheses[0], "disposition", "refuted"),
            "H1",
            set(),
            "hypothesis_unavailable",
        ),
        (
            lambda s: setattr(s.hypotheses[0].control, "iterations_used", 6),
            "H1",
            set(),
            "hypothesis_unavailable",
        ),
        (lambda s: None, "H1", {"H1"}, "hypothesis_busy"),
    ],
)
def test_caller_choice_errors(mutate, hid, busy, code):
    s = _state()
    mutate(s)
    with pytest.raises(SessionError) as info:
        ctl.check_choice(s, hid, busy)
    assert info.value.code == code


def test_termination_policy_first_match_wins():
    s = _state(max_iterations=2)
    assert ctl.termination(s, ctl.ACTIVE, set()) == (ctl.ACTIVE, None)
    s.iteration = 2
    s.hypotheses[1].disposition = "supported"
    assert ctl.termination(s, ctl.ACTIVE, set()) == (ctl.COMPLETED, ctl.ROOT_CAUSE_FOUND)
    s.hypotheses[1].disposition = "open"
    assert ctl.termination(s, ctl.ACTIVE, set()) == (ctl.COMPLETED, ctl.BUDGET_EXHAUSTED)
    assert ctl.termination(s, ctl.PAUSED, set()) == (ctl.PAUSED, None)


def test_termination_by_cost():
    s = _state(max_cost=2.0)
    s.budget.cost_used = 2.0
    assert ctl.termination(s, ctl.ACTIVE, set()) == (ctl.COMPLETED, ctl.BUDGET_EXHAUSTED)


def test_inconclusive_human_review_waits_for_pending_queries():
    s = _state()
    s.hypotheses[0].disposition = "inconclusive"
    s.hypotheses[1].disposition = "parked"
    s.hypotheses[2].control.iterations_used = 6
    assert ctl.termination(s, ctl.ACTIVE, {"H3"}) == (ctl.ACTIVE, None)
    assert ctl.termination(s, ctl.ACTIVE, set()) == (ctl.COMPLETED, ctl.INCONCLUSIVE_HUMAN_REVIEW)
