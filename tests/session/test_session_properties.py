"""Property: random decisions against a live store; a rejected one changes nothing, an accepted one exactly one turn."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.session_helpers import (
    ANALYSIS,
    answer_bytes,
    answer_events,
    db_dump,
    result,
    state_bytes,
)
from workingset.errors import DecisionRejected, SessionError
from workingset.model.state import validate_state
from workingset.session.investigation import Investigation

pytestmark = pytest.mark.slow  # fuzz: random decisions against a live store

# Placeholders resolved against the open request: its pending result, a shown ID, an indexed one.
IDS = ["PENDING"] * 6 + ["SHOWN"] * 4 + ["INDEXED"] * 2 + ["E000001", "E000004", "E000099", "E12"]

ident = st.sampled_from(IDS)
assessment = st.fixed_dictionaries({
    "evidence_ref": ident,
    "verdict": st.sampled_from(["supports", "refutes", "neutral", "inconclusive"] * 2 + ["maybe"]),
    "confidence": st.sampled_from([0, 0.4, 1] * 3 + [1.5, -0.1]),
    "rationale": st.text(max_size=5),
})  # fmt: skip
nxt = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("query"),
            "source": st.just("pg"),
            "query": st.text(max_size=10),
            "purpose": st.just("p"),
        }
    ),  # fmt: skip
    st.fixed_dictionaries(
        {"kind": st.just("recall"), "evidence_refs": st.lists(ident, max_size=6)}
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("conclude"),
            "disposition": st.sampled_from(["supported", "refuted", "inconclusive", "open"]),
            "diagnosis": st.just("d"),
            "evidence_refs": st.lists(ident, max_size=3),
        }
    ),  # fmt: skip
)
nxt = st.one_of(nxt, nxt, nxt, st.fixed_dictionaries({"kind": st.sampled_from(["query", "guess"])}))
notes = st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["note", "question"] * 4 + ["todo"]),
                                         "text": st.text(max_size=5)}), max_size=3)  # fmt: skip
plain = st.fixed_dictionaries({"next": nxt}, optional={"assessment": assessment, "notes": notes})


@st.composite
def decision(draw):
    """Mostly well-formed decisions (so that rule A, rule G and acceptance are reached), some broken ones."""
    variant = draw(st.integers(0, 9))
    if variant == 0:
        return draw(st.sampled_from([b"{", b"[]", b"null", b'"next"']))
    if variant == 1:
        return {**draw(plain), "extra": 1}
    return draw(plain)


def _resolve(value, pending: str | None, shown: list[str], indexed: list[str]):
    if isinstance(value, dict):
        return {k: _resolve(v, pending, shown, indexed) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, pending, shown, indexed) for v in value]
    return {"PENDING": pending or "E000002", "SHOWN": (shown or ["E000003"])[0],
            "INDEXED": (indexed or ["E000005"])[0]}.get(value, value) if isinstance(value, str) else value  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(encoder=st.sampled_from(["v7", "v8", "v9", "v10"]), decisions=st.lists(decision(), min_size=1, max_size=6),
       hypothesis=st.sampled_from([None, "H1", "H2"]))  # fmt: skip
def test_random_decisions_rejected_change_nothing_accepted_take_one_turn(
    encoder, decisions, hypothesis
):
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "store.sqlite3")
        inv = Investigation.create(
            store, state_bytes(), encoder=encoder, clock=lambda: "2026-06-10T21:00:00Z"
        )
        for d in decisions:
            try:
                req = inv.next_request(hypothesis)
            except SessionError:  # closed, or the chosen hypothesis can take no turn
                break
            before = inv.show()
            data = d if isinstance(d, bytes) else json.dumps(
                _resolve(d, before.state.pending_result(req.hypothesis), req.shown, req.indexed)).encode()  # fmt: skip
            dump, kept = db_dump(store, answers=False), len(answer_events(store))
            try:
                applied = inv.submit(req.request_id, data)
            except DecisionRejected as err:
                assert db_dump(store, answers=False) == dump  # only the answer is kept, verbatim
                assert [(answer_bytes(a), a["code"]) for a in answer_events(store)[kept:]] == [
                    (data, err.code)
                ]
                assert inv.show() == before and before.open_request == req.request_id
                continue
            after = inv.show()
            assert after.state.iteration == before.state.iteration + 1 == applied.iteration
            assert after.open_request is None
            validate_state(after.state)
            if applied.action:
                (act,) = [p for p in inv.show().pending_actions if p.action == applied.action]
                inv.record(applied.action, result("r", query=act.query, origin=act.source))
        kept = inv.show()  # from the state this handle kept and updated turn by turn
        inv.close()
        with Investigation.open(store, ANALYSIS) as again:  # the replayed store agrees with itself
            validate_state(again.state)
            assert again.show() == kept
