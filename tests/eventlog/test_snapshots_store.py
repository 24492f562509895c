"""Snapshots: a new process starts from the latest one and reads only the events after it, on both backends."""

from __future__ import annotations

import msgspec
import pytest

import workingset.eventlog.snapshots as snapshots
from tests.helpers.session_helpers import ANALYSIS, assess, decision, query, result, state_bytes
from tests.helpers.store_sql import Reads
from tests.helpers.store_sql import execute as _execute
from tests.helpers.store_sql import query as _query
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
from workingset.store import SCHEMA_VERSION

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def turns(inv: Investigation, n: int) -> None:
    pending = {}
    for i in range(n):
        req = inv.next_request()
        prev = pending.get(req.hypothesis)
        act = inv.submit(
            req.request_id, decision(query(f"q{i}"), assess(prev) if prev else None)
        ).action
        pending[req.hypothesis] = inv.record(act, result(f"result {i}", query=f"q{i}")).evidence


def fresh(store):
    with Investigation.open(store, ANALYSIS, clock=CLOCK) as again:
        return again.show(), again.next_request()


def test_a_new_process_starts_from_the_snapshot_and_reaches_the_same_state(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 4_000)
    inv = Investigation.create(
        store, state_bytes(max_iterations=100, limits=(30, 30, 30)), encoder="v8", clock=CLOCK
    )
    turns(inv, 12)
    ((seq,),) = _query(store, "SELECT seq FROM snapshots")
    events = _query(store, "SELECT count(*) FROM events")[0][0]
    assert 1 < seq <= events
    expected = inv.show()
    reads = Reads(monkeypatch)
    show, req = fresh(store)
    assert reads.events == events - seq  # only the events after the snapshot
    assert show == expected and req == inv.next_request()  # the same request, rendered alike
    # The same as a full replay of the log (the snapshot removed: derived data, the log holds it all).
    replayed = inv.show()
    _execute(store, "DELETE FROM snapshots")
    reads.reset()
    assert fresh(store) == (replayed, req) and reads.events == events + 1


def test_snapshots_cost_at_most_what_the_log_does(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 2_000)
    written = []
    original = snapshots.take_snapshot
    monkeypatch.setattr(
        "workingset.session.investigation.take_snapshot",
        lambda view: written.append(original(view)) or written[-1],
    )
    inv = Investigation.create(
        store, state_bytes(max_iterations=100, limits=(30, 30, 30)), encoder="v8", clock=CLOCK
    )
    turns(inv, 15)
    logged = _query(store, "SELECT sum(length(data)) FROM events WHERE kind != 'created'")[0][0]
    # Each snapshot waits for as many logged bytes as the one before it holds: all but the latest
    # cost at most what the log does.
    assert len(written) >= 2 and sum(map(len, written[:-1])) <= logged


def test_a_damaged_snapshot_is_store_corrupt(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 1_000)
    inv = Investigation.create(store, state_bytes(), encoder="v8", clock=CLOCK)
    turns(inv, 10)
    inv.close()
    assert _query(store, "SELECT count(*) FROM snapshots") == [(1,)]
    good = _query(store, "SELECT data FROM snapshots")[0][0]
    _execute(store, "UPDATE snapshots SET data = ?", (b"\x93\x01\x02",))
    with pytest.raises(WorkingsetError) as info:
        fresh(store)
    assert info.value.code == "store_corrupt"
    _execute(store, "UPDATE snapshots SET data = ?, seq = seq - 1", (bytes(good),))
    with pytest.raises(WorkingsetError) as info:
        fresh(store)
    assert info.value.code == "store_corrupt"


def test_a_version_2_store_gains_the_snapshots_table_on_open(store):
    Investigation.create(store, state_bytes(), encoder="v8", clock=CLOCK).close()
    _execute(store, "DROP TABLE snapshots")
    _execute(store, "UPDATE schema_version SET version = 2")
    show, req = fresh(store)
    assert req.request_id == "demo-r0001" and _query(
        store, "SELECT version FROM schema_version"
    ) == [(SCHEMA_VERSION,)]
    assert _query(store, "SELECT count(*) FROM snapshots") == [(0,)]


def test_a_snapshot_whose_bytes_changed_is_store_corrupt_by_its_checksum(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 1_000)
    inv = Investigation.create(store, state_bytes(), encoder="v8", clock=CLOCK)
    turns(inv, 10)
    inv.close()
    good = bytes(_query(store, "SELECT data FROM snapshots")[0][0])
    assert good.startswith(snapshots.SNAPSHOT_MAGIC)
    # An evidence ID made malformed, which the unchecked decoder would accept: the checksum sees it.
    at = good.index(b"E000003") + 6
    _execute(store, "UPDATE snapshots SET data = ?", (good[:at] + b"X" + good[at + 1 :],))
    with pytest.raises(WorkingsetError, match="checksum") as info:
        fresh(store)
    assert info.value.code == "store_corrupt"


def test_a_version_3_store_and_its_snapshot_are_read_as_they_are_and_upgraded_on_write(
    store, monkeypatch
):
    """A version 3 snapshot (plain MessagePack, no checksum) is still read, checked in full."""
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 1_000)
    inv = Investigation.create(
        store, state_bytes(max_iterations=100, limits=(30, 30, 30)), encoder="v8", clock=CLOCK
    )
    turns(inv, 10)
    expected = inv.show()
    inv.close()
    data = bytes(_query(store, "SELECT data FROM snapshots")[0][0])
    old = msgspec.msgpack.encode(
        snapshots._SNAPSHOT_CODEC.decode(data[snapshots.SNAPSHOT_BODY_AT :])
    )
    _execute(store, "UPDATE snapshots SET data = ?", (old,))
    _execute(store, "UPDATE schema_version SET version = 3")
    with Investigation.open(store, ANALYSIS, clock=CLOCK, read_only=True) as reader:
        assert reader.show() == expected
    assert _query(store, "SELECT version FROM schema_version") == [(3,)]  # a reader changes nothing
    _execute(store, "UPDATE snapshots SET data = ?", (old[:-1] + b"\xff",))
    with pytest.raises(WorkingsetError) as info:  # an old snapshot is still checked value by value
        fresh(store)
    assert info.value.code == "store_corrupt"
    _execute(store, "UPDATE snapshots SET data = ?", (old,))
    show, _ = fresh(
        store
    )  # a writer upgrades the store; the version 3 snapshot stays until the next one
    assert show == expected and _query(store, "SELECT version FROM schema_version") == [
        (SCHEMA_VERSION,)
    ]


def test_an_analysis_created_from_a_large_state_has_a_snapshot_from_the_start(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MIN_BYTES", 2_000)
    small = state_bytes()
    with Investigation.create(store, small, encoder="v8", clock=CLOCK) as inv:
        created = _query(store, "SELECT length(data) FROM events WHERE kind = 'created'")[0][0]
        expected = inv.show()
    assert created >= 2_000 and _query(store, "SELECT seq FROM snapshots") == [(1,)]
    reads = Reads(monkeypatch)
    show, _ = fresh(store)
    assert show == expected and reads.events == 0  # the created event is not replayed
    monkeypatch.setattr(
        snapshots, "SNAPSHOT_MIN_BYTES", created + 100
    )  # a state below the threshold: none
    _execute(store, "DELETE FROM snapshots")
    with Investigation.create(
        store, small.replace(b'"demo"', b'"demo2"', 1), encoder="v8", clock=CLOCK
    ):
        pass
    assert _query(store, "SELECT count(*) FROM snapshots") == [(0,)]
