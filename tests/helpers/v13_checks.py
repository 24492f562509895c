"""v13's read-back checks: every index row, the tail and the journal entries of a context against its state."""

from __future__ import annotations

import msgspec

from tests.helpers.journal_checks import check_entries
from tests.helpers.recover import v13_evidence, v13_index, v13_tail
from workingset.encoders import get_encoder
from workingset.model.harvest import harvest
from workingset.model.state import Evidence, State

# The documented cut: a query longer than WHOLE characters shows its first EXCERPT.
WHOLE, EXCERPT = 200, 160
# A query line at most: `query~N: ` and a JSON string of 160 characters, each escaped in 6 at most.
QUERY_LINE_MAX = len("query~100000000: ") + 2 + 6 * EXCERPT
# A `key=value` pair of a row at most, the identifiers aside: a cut text, as the query line.
PAIR_MAX = len("next_cursor~100000000=") + 2 + 6 * EXCERPT
# An index row of a cut text is at most ROW_MAX characters beyond its identifiers (bounded by harvest's caps).
ROW_MAX = 1_500


def check_index_row(row: dict, ev: Evidence) -> None:
    """Every field of an archived item reads back from its row; its query whole, or its first 160 characters."""
    eid = ev.id
    assert (row["collector"], row["iteration"], row["scope"], row["captured_at"]) == (
        ev.collector, ev.iteration, ev.scope, ev.captured_at), eid  # fmt: skip
    fields, cut = dict(row["fields"]), dict(row["cut_fields"])
    capture = {k: v for k, v in msgspec.to_builtins(ev.capture).items() if k != "query"}
    for k, v in capture.items():
        if isinstance(v, str) and len(v) > WHOLE:
            assert (fields.pop(k), cut.pop(k)) == (v[:EXCERPT], len(v)), (eid, k)
        else:
            assert fields.pop(k, None) == v, (eid, k)
    assert cut == {}, eid  # only a long text is cut
    assert (fields.pop("action", None), fields.pop("cost", 0)) == (
        ev.budget.action,
        ev.budget.cost,
    ), eid
    assert fields.pop("payload") == ("unknown" if ev.payload is None else "archived"), eid
    assert fields.pop("ids", []) == harvest(ev.payload), eid
    assert fields == {}, eid  # nothing else, and nothing read twice
    query = ev.capture.query
    if query is None:
        assert row["query"] is None, eid
    elif len(query) <= WHOLE:
        assert (row["query"], row["query_chars"], row["cut"]) == (query, len(query), False), eid
    else:
        assert (row["query"], row["query_chars"], row["cut"]) == (
            query[:EXCERPT],
            len(query),
            True,
        ), eid
        assert len(row["text"].split("\n")[1]) <= QUERY_LINE_MAX, eid


def check_tail(state: State, hypothesis: str, out, index: dict[str, dict]) -> dict:
    """Every field "This turn" states reads back: budgets, each hypothesis's control, statuses, recalled items, the task."""
    tail = v13_tail(out.text)
    b = state.budget
    assert (tail["iteration"], tail["max_iterations"], tail["cost_used"], tail["max_cost"]) == (
        state.iteration, b.max_iterations, b.cost_used, b.max_cost)  # fmt: skip
    assert tail["selected"] == hypothesis
    assert tail["hypotheses"] == [{
        "id": x.id, "confidence": x.confidence, "disposition": x.disposition,
        "iterations_used": x.control.iterations_used, "iteration_limit": x.control.iteration_limit,
        "previous_result": x.control.previous_result,
        "recalled": state.recall[x.id].evidence_refs if x.id in state.recall else None,
    } for x in state.hypotheses]  # fmt: skip
    h = state.hypothesis(hypothesis)
    assert (tail["plan"], tail["next_checks"]) == (h.control.plan, h.control.next_checks)
    assert sorted(tail["budget_status"].items()) == sorted(  # the result to assess read back from `assess:`
        (ev.id, ev.budget.status) for ev in state.evidence
        if ev.budget.status != ("settled" if ev.budget.action is not None else "none"))  # fmt: skip
    by_status: dict[str, list[str]] = {}
    for note in state.notes:
        if note.status is not None:
            by_status.setdefault(note.status, []).append(note.id)
    assert list(tail["note_status"].items()) == sorted(
        by_status.items()
    )  # statuses in order, IDs in note order
    assert tail["assess"] == state.pending_result(hypothesis)
    # The tail shows archived items only, each in full; every other item shown is in the journal.
    assert set(tail["shown"]) <= set(index) and sorted(tail["shown"]) == tail["shown"]
    return tail


def check_lossless(state: State, hypothesis: str, name: str = "v13") -> dict[str, dict]:
    """Every journal entry, index row and tail field of `state` reads back from the v13 text; the index rows."""
    out = get_encoder(name).render(state, hypothesis)
    by_id = {ev.id: ev for ev in state.evidence}
    check_entries(state, out, v13_evidence(out.text))
    index = v13_index(out.text)
    tail = check_tail(state, hypothesis, out, index)
    # The index holds every archived item: those not shown, and those the tail shows in full this turn.
    assert set(index) == set(out.indexed) | set(tail["shown"])
    assert not set(out.indexed) & set(out.shown) and sorted(out.shown + out.indexed) == sorted(
        by_id
    )
    for eid, row in index.items():
        check_index_row(row, by_id[eid])
    return index
