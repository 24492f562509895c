"""The stores (SQLite, PostgreSQL): their schema, content-addressed payloads, crash atomicity, the two-writer race, damage."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.common import ROOT
from tests.helpers.session_helpers import (
    ANALYSIS,
    db_dump,
    decision,
    query,
    result,
    state_bytes,
)
from tests.helpers.store_sql import execute as _execute
from tests.helpers.store_sql import query as _query
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
from workingset.store import APPLICATION_ID, SCHEMA_VERSION, PostgresStore, SqliteStore

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def make(path, encoder="v8") -> Investigation:
    return Investigation.create(str(path), state_bytes(), encoder=encoder, clock=CLOCK)


def code_of(fn, *args) -> str:
    with pytest.raises(WorkingsetError) as info:
        fn(*args)
    return info.value.code


def test_a_new_store_has_wal_the_schema_version_and_our_application_id(tmp_path):
    path = tmp_path / "deep" / "dir" / "store.sqlite3"
    make(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 1024
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {
        "schema_version",
        "analyses",
        "events",
        "payloads",
        "requests",
        "actions",
        "snapshots",
    }


def test_a_new_postgresql_store_has_the_schema_version_and_only_our_tables(pg_server):
    url = pg_server.database()
    make(url).close()
    assert _query(url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    tables = {
        r[0] for r in _query(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }
    assert tables == {
        "schema_version",
        "analyses",
        "events",
        "payloads",
        "requests",
        "actions",
        "snapshots",
    }


@pytest.mark.parametrize("version", [2, 3])
def test_a_postgresql_store_of_version_2_or_3_is_upgraded_by_its_first_writer(pg_server, version):
    url = pg_server.database()
    make(url).close()
    if version == 2:
        _execute(url, "DROP TABLE snapshots")
    _execute(url, "UPDATE schema_version SET version = ?", (version,))
    with PostgresStore(url, read_only=True) as reader:  # read as it is, changed in nothing
        assert reader.snapshots is (version == 3)
    assert _query(url, "SELECT version FROM schema_version") == [(version,)]
    with PostgresStore(url):
        pass
    assert _query(url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_the_event_log_is_append_only(store):
    make(store).close()
    for sql in ("UPDATE events SET kind = 'x'", "DELETE FROM events") + (
        ("TRUNCATE events",) if "://" in store else ()
    ):
        with pytest.raises(Exception, match="append-only"):
            _execute(store, sql)
    assert _counts(store)["events"] == 1


def test_a_postgresql_database_with_other_tables_is_store_corrupt(pg_server):
    url = pg_server.database()
    _execute(url, "CREATE TABLE t (x int)")
    assert code_of(make, url) == "store_corrupt"
    assert code_of(_show, url) == "store_corrupt"


def test_an_unreachable_postgresql_server_is_store_unavailable(tmp_path):
    pytest.importorskip("psycopg")
    url = f"postgresql://nobody@/nothing?host={tmp_path}&connect_timeout=2"
    with pytest.raises(WorkingsetError) as info:
        make(url)
    assert info.value.code == "store_unavailable" and "nobody" in info.value.message


def _counts(path) -> dict[str, int]:
    return {
        t: _query(path, f"SELECT count(*) FROM {t}")[0][0]
        for t in ("events", "payloads", "requests", "actions")
    }


def test_payloads_are_stored_once_and_a_turn_writes_only_what_is_new(store):
    path = store
    inv = make(path)
    assert _counts(path) == {"events": 1, "payloads": 5, "requests": 0, "actions": 0}
    # A second analysis with the same evidence adds no payload rows.
    raw = json.loads(state_bytes())
    raw["analysis_id"] = "twin"
    Investigation.create(str(path), raw).close()
    assert _counts(path)["payloads"] == 5
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    # twin's created; demo's created, request, answer (kept verbatim) and decision.
    assert _counts(path) == {"events": 5, "payloads": 5, "requests": 1, "actions": 1}
    inv.record(act, result("a payload seen before? no"))
    assert _counts(path)["payloads"] == 6
    req = inv.next_request("H2")
    act = inv.submit(req.request_id, decision(query())).action
    inv.record(act, result("a payload seen before? no"))  # same content: stored once
    assert _counts(path)["payloads"] == 6
    sizes = dict(
        _query(
            path,
            "SELECT kind, max(length(data)) FROM events WHERE analysis_id = 'demo' GROUP BY kind",
        )
    )
    assert (
        sizes["decision"] < 600 and sizes["record"] < 800 and sizes["created"] > 2 * sizes["record"]
    )
    assert not any(
        "retry budget exceeded" in data for (data,) in _query(path, "SELECT data FROM events")
    )


# -- not ours, or damaged ------------------------------------------------------------------------


def _show(path):
    with Investigation.open(str(path), ANALYSIS) as inv:
        return inv.show()


def test_a_file_that_is_not_a_store_is_store_corrupt(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 50)
    assert code_of(_show, text) == "store_corrupt"
    assert code_of(make, text) == "store_corrupt"
    other = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    assert code_of(_show, other) == "store_corrupt"
    assert code_of(make, other) == "store_corrupt"


@pytest.mark.parametrize("version", [1, 99], ids=["previous", "unknown"])
def test_a_store_of_another_schema_version_is_store_corrupt(store, version):
    path = store
    make(path).close()
    _execute(path, "UPDATE schema_version SET version = ?", (version,))
    with pytest.raises(WorkingsetError) as info:
        _show(path)
    assert info.value.code == "store_corrupt" and info.value.details["schema_version"] == version


def test_damaged_rows_are_store_corrupt(store):
    path = store
    make(path).close()
    _execute(path, "UPDATE payloads SET data = ? WHERE hash = (SELECT min(hash) FROM payloads)",
             (b'{"kind":"text","language":null,"text":"forged"}',))  # fmt: skip
    assert code_of(_show, path) == "store_corrupt"


@pytest.mark.parametrize("damage", ["truncate", "garbage_page2", "garbage_tail", "zero_header"])
def test_a_damaged_file_is_store_corrupt_never_a_traceback(tmp_path, damage):
    path = tmp_path / "s.sqlite3"
    inv = make(path)
    for hid in ("H1", "H2", "H3"):
        req = inv.next_request(hid)
        act = inv.submit(req.request_id, decision(query())).action
        inv.record(act, result("x" * 5000 + hid))
    inv.close()
    data = bytearray(path.read_bytes())
    page = 4096
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage_page2":
        data[page : 3 * page] = os.urandom(2 * page)
    elif damage == "garbage_tail":
        data[-2 * page :] = b"\xa5" * (2 * page)
    else:
        data[:100] = bytes(100)
    path.write_bytes(bytes(data))
    try:
        with Investigation.open(str(path), ANALYSIS) as again:
            again.show()
            again.export(tmp_path / "out")
    except WorkingsetError as err:
        assert err.code in ("store_corrupt", "unknown_analysis")
    else:  # pragma: no cover - only if the damage missed everything that is read
        pytest.fail("damage went unnoticed")


# -- crash atomicity: kill the process at every write step ------------------------------------------

FAULT_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, {root!r})
import workingset.store.interface as st
import workingset.store.sqlite as sq
store, op, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = []
def hook(step):
    steps.append(step)
    if len(steps) == target:
        os._exit(17)
st._checkpoint = hook
setup = sq.SqliteStore._setup
def small_cache(self):
    setup(self)
    self._conn.execute("PRAGMA cache_size = 1")  # spill uncommitted pages into the WAL before COMMIT
sq.SqliteStore._setup = small_cache
from tests.helpers.session_helpers import assess, conclude, decision, query, result, state_bytes
from workingset.session.investigation import Investigation
clock = lambda: "2026-06-10T21:00:00Z"
if op == "create":
    Investigation.create(store, state_bytes(), encoder="v8", clock=clock)
else:
    inv = Investigation.open(store, "demo", clock=clock)
    if op == "next":
        inv.next_request("H2")
    elif op == "submit":
        notes = [{{"kind": "note", "text": "n1"}}, {{"kind": "question", "text": "q1"}}]
        inv.submit("demo-r0002", decision(query("select 2"), assess("E000007"), notes))
    elif op == "conclude":
        inv.submit("demo-r0002", decision(conclude("supported", "E000007"), assess("E000007")))
    elif op == "record":
        inv.record("B000006", result("a brand-new payload " * 20000))
    elif op == "cancel":
        inv.cancel()
print(json.dumps(steps))
"""


class _Stores:
    """Make, copy and dump stores of one backend for the crash test (files, or template databases)."""

    def __init__(self, store: str, tmp_path: Path, request):
        self.url = store if "://" in store else None
        self.tmp = tmp_path
        self.server = request.getfixturevalue("pg_server") if self.url else None
        self.made: list[str] = []

    def new(self, name: str) -> str:
        if self.server is None:
            return str(self.tmp / f"{name}.sqlite3")
        self.made.append(self.server.database())
        return self.made[-1]

    def copy(self, base: str, name: str) -> str:
        if self.server is None:
            dest = self.tmp / f"{name}.sqlite3"
            for suffix in ("", "-wal"):
                if Path(base + suffix).exists():
                    shutil.copy(base + suffix, str(dest) + suffix)
            return str(dest)
        self.made.append(self.server.copy(base))
        return self.made[-1]

    def logical(self, store: str) -> str:
        return db_dump(store) if self.server is not None or Path(store).exists() else ""

    def drop(self) -> None:
        for url in self.made:
            self.server.drop(url)


def _base(stores: _Stores, op) -> str:
    """The store each operation starts from: H1 has an unsettled result E000007 and, but for `next`
    and `record`, the open request demo-r0002 for H1."""
    path = stores.new(f"base-{op}")
    if op == "create":
        return path
    inv = make(path)
    r = inv.next_request("H1")
    act = inv.submit(r.request_id, decision(query()))
    if op != "record":
        inv.record(act.action, result("first"))
        if op != "next":
            inv.next_request("H1")
    inv.close()
    return path


@pytest.mark.slow  # crash: a writer killed at each step
@pytest.mark.parametrize("op", ["create", "next", "submit", "conclude", "record", "cancel"])
def test_a_crash_at_any_write_step_leaves_the_state_before_or_after(tmp_path, store, request, op):
    stores = _Stores(store, tmp_path, request)
    request.addfinalizer(stores.drop)
    script = FAULT_SCRIPT.format(root=str(ROOT))
    base = _base(stores, op)
    before = stores.logical(base)
    dry = stores.copy(base, "dry")
    out = subprocess.run(
        [sys.executable, "-c", script, dry, op, "0"], capture_output=True, text=True, check=True
    )
    steps = json.loads(out.stdout)
    after = stores.logical(dry)
    assert after != before and steps[-2:] == ["commit", "committed"] and len(steps) >= 4

    procs = []
    for k in range(1, len(steps) + 1):
        dest = stores.copy(base, f"crash-{k}")
        procs.append((k, dest, subprocess.Popen([sys.executable, "-c", script, dest, op, str(k)],
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)))  # fmt: skip
    for k, dest, proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 17, err.decode()
        state = stores.logical(dest)
        expected = after if steps[k - 1] == "committed" else before
        if op == "create" and expected == before:
            # Before the analysis exists the store may or may not hold its empty schema.
            assert 'INSERT INTO "analyses"' not in state and "'demo'" not in state
            continue
        assert state == expected, (
            f"crash at step {k} ({steps[k - 1]}) left the store between states"
        )


# -- two processes, one open request -----------------------------------------------------------------

RACE_SCRIPT = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
import workingset.store.interface as st
store, gate, mode = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "slow":
    def hook(step):
        if step == "append_event":
            open(gate + ".inside", "w").close()
            time.sleep(0.8)
    st._checkpoint = hook
from tests.helpers.session_helpers import decision, query
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
inv = Investigation.open(store, "demo")
if sys.argv[4:] == ["warm"]:
    inv.show()  # the handle keeps the replayed state; the submit then only catches up
wait_for = gate + (".inside" if mode == "follow" else "")
while not os.path.exists(wait_for):
    time.sleep(0.005)
try:
    out = inv.submit("demo-r0001", decision(query("select " + mode)))
    print(json.dumps({{"applied": out.applied, "action": out.action}}))
except WorkingsetError as err:
    print(json.dumps({{"error": err.code}}))
"""


def _race(tmp_path, store, modes, warm=False) -> list[dict]:
    path = store
    inv = make(path)
    inv.next_request("H1")
    inv.close()
    gate = str(tmp_path / "gate")
    script = RACE_SCRIPT.format(root=str(ROOT))
    extra = ["warm"] if warm else []
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), gate, m, *extra], stdout=subprocess.PIPE)
             for m in modes]  # fmt: skip
    time.sleep(0.4)  # let both import and open the store
    Path(gate).touch()
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    with Investigation.open(str(path), ANALYSIS) as again:
        show = again.show()
        assert show.state.iteration == 1 and len(show.pending_actions) == 1
        assert [r.status for r in again.requests()] == ["answered"]
    return outs


@pytest.mark.slow  # cross-process
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_two_processes_submitting_to_one_open_request_overlapping(tmp_path, store, warm):
    slow, follow = _race(tmp_path, store, ["slow", "follow"], warm)
    assert slow == {"applied": "query", "action": "B000006"}
    assert follow == {"error": "stale_request"}


@pytest.mark.slow  # cross-process
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_two_processes_submitting_to_one_open_request_at_once(tmp_path, store, warm):
    outs = _race(tmp_path, store, ["a", "b"], warm)
    assert sorted("error" in o for o in outs) == [False, True]
    assert [o["error"] for o in outs if "error" in o] == ["stale_request"]


def test_store_handle_is_reusable_across_investigations(tmp_path):
    with SqliteStore(tmp_path / "s.sqlite3") as db:
        inv = Investigation.create(db, state_bytes())
        same = Investigation.open(db, ANALYSIS)
        req = inv.next_request()
        assert same.next_request() == req
