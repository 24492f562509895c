"""The kept state: a turn reads only what is new, yet sees every other process's change; compact manifests.

Costs are counted (event rows and payloads read, SQL statements run), never timed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import workingset.store.interface as st
from tests.helpers.common import ROOT
from tests.helpers.session_helpers import (
    ANALYSIS,
    assess,
    conclude,
    db_dump,
    decision,
    query,
    recall,
    result,
    state_bytes,
)
from tests.helpers.store_sql import Reads
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
from workingset.store import Manifest, open_store

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def make(path, encoder="v8", **kw) -> Investigation:
    return Investigation.create(str(path), state_bytes(**kw), encoder=encoder, clock=CLOCK)


def fresh_show(path):
    with Investigation.open(str(path), ANALYSIS) as again:
        return again.show()


def turn(inv: Investigation, req, pending: str | None, text: str):
    applied = inv.submit(
        req.request_id, decision(query(text), assess(pending) if pending else None)
    )
    recorded = inv.record(applied.action, result(text, query=text))
    return inv.next_request(req.hypothesis), recorded.evidence


def test_a_turn_reads_no_history_however_long_the_log(store, monkeypatch):
    reads = Reads(monkeypatch)
    inv = make(store, max_iterations=200, limits=(100, 6, 6))
    reads.watch(inv)
    req = inv.next_request("H1")
    assert reads.events == 0 and reads.payloads == 0  # created in this handle: nothing to replay
    pending = None
    per_turn = []
    for i in range(12):
        reads.reset()
        req, pending = turn(inv, req, pending, f"result {i}")
        assert (reads.events, reads.payloads) == (0, 0), f"turn {i} re-read the log"
        per_turn.append(len(reads.statements))
    # The same statements every turn: nothing scales with the number of events, requests or actions.
    assert len(set(per_turn)) == 1, per_turn
    assert not any("FROM payloads" in s for s in reads.statements)
    # A fresh handle (a new process) replays everything once: every event, every payload.
    reads.reset()
    show = fresh_show(store)
    # created, then per turn: answer, decision, record, request; then the last request.
    assert reads.events == 1 + 12 * 4 + 1 and reads.payloads == 5 + 12
    assert show == inv.show()


@pytest.mark.slow  # cross-process
def test_a_cached_handle_sees_a_second_process_change(store, monkeypatch):
    reads = Reads(monkeypatch)
    path = store
    inv = make(path)
    req = inv.next_request("H1")
    before = inv.show()
    # Another process answers the open request and records the query's result.
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.helpers.session_helpers import decision, query, result\n"
        "from workingset.session.investigation import Investigation\n"
        f"with Investigation.open({str(path)!r}, 'demo') as other:\n"
        f"    act = other.submit({req.request_id!r}, decision(query('select 2'))).action\n"
        "    other.record(act, result('from the other process', query='select 2'))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    reads.reset()
    # The same handle, its kept state now behind: it applies exactly the new events (the other
    # process's answer, decision and record, and its own rejected answer, kept before it synced).
    err = pytest.raises(WorkingsetError, inv.submit, req.request_id, decision(query())).value
    assert err.code == "stale_request"
    nxt = inv.next_request("H1")
    assert (reads.events, reads.payloads) == (4, 1)
    assert nxt.request_id == "demo-r0002" and nxt.shown == ["E000007"]
    show = inv.show()
    assert (
        show.state.iteration == before.state.iteration + 1
        and show.state.evidence[-1].id == "E000007"
    )
    assert show == fresh_show(path)
    assert inv.submit(nxt.request_id, decision(query(), assess("E000007"))).action == "B000007"


def test_a_rejection_keeps_the_kept_state_a_failed_change_drops_it(store, monkeypatch):
    reads = Reads(monkeypatch)
    path = store
    inv = make(path)
    req = inv.next_request("H1")
    reads.reset()
    with pytest.raises(WorkingsetError):
        inv.submit(
            req.request_id, decision(conclude("supported", "E000001"))
        )  # ungrounded under v8
    before = inv.show()
    assert reads.events == 0  # no replay after a rejection

    # A failure after the change was applied in memory (here: the event insert fails) rolls the
    # transaction back and drops the kept state; the next call replays the log.
    def boom(step):
        if step == "append_event":
            raise RuntimeError("disk gone")

    monkeypatch.setattr(st, "_checkpoint", boom)
    with pytest.raises(RuntimeError):
        inv.submit(req.request_id, decision(query()))
    monkeypatch.setattr(st, "_checkpoint", lambda step: None)
    reads.reset()
    after = inv.show()
    assert reads.events == 3  # created, request and the kept rejected answer: a full replay
    assert after == before and after.state.iteration == 0 and after.open_request == req.request_id
    assert inv.submit(req.request_id, decision(query())).action == "B000006"


@pytest.mark.parametrize("op", ["next", "submit", "record", "resume", "cancel"])
def test_a_warm_handle_writes_exactly_what_a_cold_one_writes(tmp_path, op):
    base = tmp_path / "base.sqlite3"
    inv = make(base)
    r = inv.next_request("H1")
    act = inv.submit(r.request_id, decision(query(), notes=[{"kind": "note", "text": "n"}])).action
    if op != "record":
        inv.record(act, result("first"))
        if op in ("submit", "cancel"):
            inv.next_request("H1")
    if op == "resume":
        inv.pause()
    inv.close()
    dumps = []
    for mode in ("cold", "warm"):
        path = tmp_path / f"{mode}.sqlite3"
        for suffix in ("", "-wal"):
            if Path(str(base) + suffix).exists():
                shutil.copy(str(base) + suffix, str(path) + suffix)
        with Investigation.open(str(path), ANALYSIS, clock=CLOCK) as h:
            if mode == "warm":
                h.show()
            if op == "next":
                h.next_request("H2")
            elif op == "submit":
                h.submit(
                    "demo-r0002",
                    decision(
                        recall("E000001"), assess("E000007"), [{"kind": "question", "text": "q"}]
                    ),
                )
            elif op == "record":
                h.record(act, result("second"))
            elif op == "resume":
                h.resume()
            else:
                h.cancel()
            state = h.show()
        dumps.append((db_dump(str(path)), state, fresh_show(path)))
    (cold, cold_state, cold_fresh), (warm, warm_state, warm_fresh) = dumps
    assert warm == cold and warm_state == cold_state == cold_fresh == warm_fresh


def test_two_handles_on_one_connection_and_interleaved_lifecycle(store):
    with open_store(store) as db:
        a = Investigation.create(db, state_bytes(), clock=CLOCK)
        b = Investigation.open(db, ANALYSIS, clock=CLOCK)
        other = Investigation.open(store, ANALYSIS, clock=CLOCK)  # its own connection
        req = a.next_request("H2")
        assert b.next_request() == req
        act = b.submit(req.request_id, decision(query())).action
        other.pause()
        assert a.record(act, result("while paused")).status == "paused"
        assert b.resume().status == "active"
        nxt = other.next_request("H2")
        assert a.next_request() == nxt and a.show() == b.show() == other.show() == fresh_show(store)
        other.close()


# -- compact manifests --------------------------------------------------------------------------------


def _manifests(path) -> list[dict]:
    conn = sqlite3.connect(path)
    try:
        table = [
            json.loads(r[0]) for r in conn.execute("SELECT manifest FROM requests ORDER BY number")
        ]
        events = [
            json.loads(r[0])["manifest"]
            for r in conn.execute("SELECT data FROM events WHERE kind = 'request' ORDER BY seq")
        ]
    finally:
        conn.close()
    assert table == events
    return table


@pytest.mark.parametrize(("encoder", "expected"), [
    ("v1", {"evidence": 6, "order": "id", "indexed": []}),  # state order is ID order here
    ("v10", {"evidence": 6, "order": "id", "indexed": []}),
    ("v8", {"evidence": 6, "order": "id", "shown": []}),
])  # fmt: skip
def test_a_request_stores_only_the_shorter_id_list(tmp_path, encoder, expected):
    path = tmp_path / "s.sqlite3"
    inv = make(path, encoder)
    req = inv.next_request("H1")
    assert _manifests(path) == [expected]
    (row,) = inv.requests()
    assert (list(row.shown), list(row.indexed)) == (req.shown, req.indexed)
    with Investigation.open(str(path), ANALYSIS) as again:  # resolved the same way in a new process
        assert again.next_request() == req


def test_rule_g_checks_the_ids_shown_in_that_request_not_evidence_recorded_since(tmp_path):
    path = tmp_path / "s.sqlite3"
    inv = make(path, "v10")
    act = inv.submit(inv.next_request("H2").request_id, decision(query())).action
    req = inv.next_request("H1")  # shows all six items
    inv.record(act, result("arrived after H1's request"))  # E000007, not in that request
    err = pytest.raises(
        WorkingsetError, inv.submit, req.request_id, decision(conclude("refuted", "E000007"))
    ).value
    assert (err.code, err.details["ids"]) == ("ungrounded_reference", ["E000007"])
    assert inv.requests()[-1].shown == tuple(f"E00000{i}" for i in range(1, 7))
    assert (
        inv.submit(req.request_id, decision(conclude("refuted", "E000006"))).applied == "conclude"
    )


def test_manifest_round_trips_and_falls_back_to_both_lists():
    ids = ["E000003", "E000001", "E000002", "E000004"]
    cases = [
        (("E000001", "E000002", "E000003", "E000004"), ()),  # v10: everything, by ID
        (tuple(ids), ()),  # v1: everything, in state order
        (
            ("E000002",),
            ("E000001", "E000003", "E000004"),
        ),  # v8: a few shown, the rest indexed by ID
        (
            ("E000004", "E000001"),
            ("E000002", "E000003"),
        ),  # the stored list keeps any order of its own
        (
            ("E000001",),
            ("E000004", "E000002", "E000003"),
        ),  # an order neither rule gives: both stored
    ]
    for shown, indexed in cases:
        m = Manifest.of(shown, indexed, ids)
        assert m.resolve(ids + ["E000009"]) == (shown, indexed), m
    assert Manifest.of(("E000001",), ("E000004", "E000002", "E000003"), ids).order is None
    with pytest.raises(ValueError):
        Manifest(evidence=5, order="id", indexed=[]).resolve(ids)


def test_a_damaged_manifest_is_store_corrupt(tmp_path):
    path = tmp_path / "s.sqlite3"
    with make(path) as inv:
        inv.next_request("H1")
    for damaged in (
        '{"evidence": 6, "order": "id"}',
        '{"evidence": 60, "order": "id", "shown": []}',
        "[1",
    ):
        conn = sqlite3.connect(path)
        conn.execute("UPDATE requests SET manifest = ?", (damaged,))
        conn.commit()
        conn.close()
        with Investigation.open(str(path), ANALYSIS) as again:
            with pytest.raises(WorkingsetError) as info:
                again.requests()
            assert info.value.code == "store_corrupt"
