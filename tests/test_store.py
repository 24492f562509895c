"""The SQLite store: its schema, content-addressed payloads, crash atomicity, the two-writer race, damage."""

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

from session_helpers import ANALYSIS, assess, conclude, db_dump, decision, query, result, state_bytes
from workingset.errors import WorkingsetError
from workingset.session import Investigation
from workingset.store import APPLICATION_ID, SCHEMA_VERSION, SqliteStore

TESTS = str(Path(__file__).parent)
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
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"schema_version", "analyses", "events", "payloads", "requests", "actions"}


def test_the_event_log_is_append_only(tmp_path):
    path = tmp_path / "s.sqlite3"
    make(path).close()
    conn = sqlite3.connect(path)
    for sql in ("UPDATE events SET kind = 'x'", "DELETE FROM events"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)


def _counts(path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("events", "payloads", "requests", "actions")}
    finally:
        conn.close()


def test_payloads_are_stored_once_and_a_turn_writes_only_what_is_new(tmp_path):
    path = tmp_path / "s.sqlite3"
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
    conn = sqlite3.connect(path)
    sizes = dict(conn.execute("SELECT kind, max(length(data)) FROM events WHERE analysis_id = 'demo' GROUP BY kind"))
    assert sizes["decision"] < 600 and sizes["record"] < 800 and sizes["created"] > 2 * sizes["record"]
    assert "retry budget exceeded" not in conn.execute("SELECT group_concat(data) FROM events").fetchone()[0]


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
def test_a_store_of_another_schema_version_is_store_corrupt(tmp_path, version):
    path = tmp_path / "s.sqlite3"
    make(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (version,))
    conn.commit()
    conn.close()
    with pytest.raises(WorkingsetError) as info:
        _show(path)
    assert info.value.code == "store_corrupt" and info.value.details["schema_version"] == version


def test_damaged_rows_are_store_corrupt(tmp_path):
    path = tmp_path / "s.sqlite3"
    make(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE payloads SET data = CAST('{\"kind\":\"text\",\"language\":null,\"text\":\"forged\"}' AS BLOB)"
                 " WHERE hash = (SELECT min(hash) FROM payloads)")  # fmt: skip
    conn.commit()
    conn.close()
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
sys.path.insert(0, {tests!r})
import workingset.store as st
store, op, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = []
def hook(step):
    steps.append(step)
    if len(steps) == target:
        os._exit(17)
st._checkpoint = hook
setup = st.SqliteStore._setup
def small_cache(self):
    setup(self)
    self._conn.execute("PRAGMA cache_size = 1")  # spill uncommitted pages into the WAL before COMMIT
st.SqliteStore._setup = small_cache
from session_helpers import assess, conclude, decision, query, result, state_bytes
from workingset.session import Investigation
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


def _base(tmp_path, op) -> Path:
    """The store each operation starts from: H1 has an unsettled result E000007 and, but for `next`
    and `record`, the open request demo-r0002 for H1."""
    path = tmp_path / f"base-{op}.sqlite3"
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


def _copy(base: Path, dest: Path) -> Path:
    for suffix in ("", "-wal"):
        if Path(str(base) + suffix).exists():
            shutil.copy(str(base) + suffix, str(dest) + suffix)
    return dest


def _logical(path: Path) -> str:
    return db_dump(str(path)) if path.exists() else ""


@pytest.mark.parametrize("op", ["create", "next", "submit", "conclude", "record", "cancel"])
def test_a_crash_at_any_write_step_leaves_the_state_before_or_after(tmp_path, op):
    script = FAULT_SCRIPT.format(tests=TESTS)
    base = _base(tmp_path, op)
    before = _logical(base)
    dry = _copy(base, tmp_path / "dry.sqlite3") if base.exists() else tmp_path / "dry.sqlite3"
    out = subprocess.run([sys.executable, "-c", script, str(dry), op, "0"], capture_output=True, text=True, check=True)
    steps = json.loads(out.stdout)
    after = _logical(dry)
    assert after != before and steps[-2:] == ["commit", "committed"] and len(steps) >= 4

    procs = []
    for k in range(1, len(steps) + 1):
        dest = tmp_path / f"crash-{k}.sqlite3"
        if base.exists():
            _copy(base, dest)
        procs.append((k, dest, subprocess.Popen([sys.executable, "-c", script, str(dest), op, str(k)],
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)))  # fmt: skip
    for k, dest, proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 17, err.decode()
        state = _logical(dest)
        expected = after if steps[k - 1] == "committed" else before
        if op == "create" and expected == before:
            # Before the analysis exists the store may or may not hold its empty schema.
            assert "INSERT INTO \"analyses\"" not in state
            continue
        assert state == expected, f"crash at step {k} ({steps[k - 1]}) left the store between states"


# -- two processes, one open request -----------------------------------------------------------------

RACE_SCRIPT = r"""
import json, os, sys, time
sys.path.insert(0, {tests!r})
import workingset.store as st
store, gate, mode = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "slow":
    def hook(step):
        if step == "append_event":
            open(gate + ".inside", "w").close()
            time.sleep(0.8)
    st._checkpoint = hook
from session_helpers import decision, query
from workingset.errors import WorkingsetError
from workingset.session import Investigation
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


def _race(tmp_path, modes, warm=False) -> list[dict]:
    path = tmp_path / "race.sqlite3"
    inv = make(path)
    inv.next_request("H1")
    inv.close()
    gate = str(tmp_path / "gate")
    script = RACE_SCRIPT.format(tests=TESTS)
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


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_two_processes_submitting_to_one_open_request_overlapping(tmp_path, warm):
    slow, follow = _race(tmp_path, ["slow", "follow"], warm)
    assert slow == {"applied": "query", "action": "B000006"}
    assert follow == {"error": "stale_request"}


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_two_processes_submitting_to_one_open_request_at_once(tmp_path, warm):
    outs = _race(tmp_path, ["a", "b"], warm)
    assert sorted("error" in o for o in outs) == [False, True]
    assert [o["error"] for o in outs if "error" in o] == ["stale_request"]


def test_store_handle_is_reusable_across_investigations(tmp_path):
    with SqliteStore(tmp_path / "s.sqlite3") as db:
        inv = Investigation.create(db, state_bytes())
        same = Investigation.open(db, ANALYSIS)
        req = inv.next_request()
        assert same.next_request() == req
