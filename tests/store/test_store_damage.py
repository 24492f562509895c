"""Damaged stores, made by mutating a real one: every command exits 0 or 2 with a code, never a traceback.

Each damage must be found (`store_corrupt` from `show` or `export`), and a command that
rejects a store leaves it byte-identical. The random-cell mutations at the end run 30
cases here and thousands with `-m soak`.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.os_helpers import cli, snapshot
from tests.helpers.session_helpers import assess, db_dump, decision, query, result, state_bytes
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
from workingset.store.sqltx import TABLE_NAMES

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """demo: events 1 created, 2 request r1, 3 its answer, 4 decision (B000006), 5 record, 6 request r2, 7 its answer,
    8 decision with notes (B000007, pending), 9 request r3 (open), 10 pause, 11 resume; and a cancelled analysis `other`."""
    path = tmp_path_factory.mktemp("pristine") / "store.sqlite3"
    with Investigation.create(str(path), state_bytes(), encoder="v8", clock=CLOCK) as inv:
        req = inv.next_request("H1")
        act = inv.submit(req.request_id, decision(query("select 1"))).action
        inv.record(act, result("first"), captured_at="2026-06-10T20:30:00Z")
        req = inv.next_request("H2")
        notes = [{"kind": "note", "text": "n1"}, {"kind": "question", "text": "q1"}]
        inv.submit(req.request_id, decision(query("select 2"), notes=notes))
        inv.next_request("H1")
        inv.pause()
        inv.resume()
    raw = json.loads(state_bytes())
    raw["analysis_id"] = "other"
    with Investigation.create(str(path), raw, clock=CLOCK) as other:
        other.cancel()
    return path


def _json_set(seq: int, path: str, value: str) -> str:
    return f"UPDATE events SET data = json_set(data, '{path}', {value}) WHERE analysis_id = 'demo' AND seq = {seq}"


def _swap(a: int, b: int) -> list[str]:
    where = "analysis_id = 'demo' AND seq ="
    return [f"UPDATE events SET seq = 1000 WHERE {where} {a}", f"UPDATE events SET seq = {a} WHERE {where} {b}",
            f"UPDATE events SET seq = {b} WHERE {where} 1000"]  # fmt: skip


def _copy(seq: int, to: int = 100) -> str:
    return (f"INSERT INTO events SELECT analysis_id, {to}, kind, at, data FROM events"
            f" WHERE analysis_id = 'demo' AND seq = {seq}")  # fmt: skip


def _event(seq: int, sets: str) -> str:
    return f"UPDATE events SET {sets} WHERE analysis_id = 'demo' AND seq = {seq}"


_RECORDED = "(SELECT json_extract(data, '$.evidence.content_hash') FROM events WHERE analysis_id = 'demo' AND seq = 5)"

DAMAGE: dict[str, list[str]] = {
    "created data is a blob": [_event(1, "data = CAST(data AS BLOB)")],
    "record data is a blob": [_event(5, "data = CAST(data AS BLOB)")],
    "created data is garbage": [_event(1, "data = '{\"state\": '")],
    "request data is garbage": [_event(2, "data = 'garbage'")],
    "request data lacks fields": [_event(9, "data = '{}'")],
    "decision data is null": [_event(4, "data = 'null'")],
    "record data is a list": [_event(5, "data = '[]'")],
    "pause data is garbage": [_event(10, "data = '{\"status\": 7}'")],
    "answer data is garbage": [_event(3, "data = '{\"request_id\": 5}'")],
    "decision iteration is text": [_json_set(4, "$.iteration", "'one'")],
    "decision iteration is wrong": [_json_set(8, "$.iteration", "5")],
    "event status outside the set": [_json_set(4, "$.status", "'zombie'")],
    "unknown event kind": [_event(10, "kind = 'rewind'")],
    "event kind is a number": [_event(4, "kind = 7")],
    "event time is a blob": [_event(6, "at = CAST('x' AS BLOB)")],
    "event seq is text": [_event(6, "seq = 'five'")],
    "decision and record reordered": _swap(4, 5),
    "record and next request reordered": _swap(5, 6),
    "two decisions reordered": _swap(4, 8),
    "created moved later": _swap(1, 2),
    "request event dropped": ["DELETE FROM events WHERE analysis_id = 'demo' AND seq = 6"],
    "decision dropped": ["DELETE FROM events WHERE analysis_id = 'demo' AND seq = 4"],
    "created dropped": ["DELETE FROM events WHERE analysis_id = 'demo' AND seq = 1"],
    "decision duplicated": [_copy(4)],
    "record duplicated": [_copy(5)],
    "created duplicated": [_copy(1)],
    "record of an action no decision reserved": [_json_set(5, "$.action", "'B000099'"),
                                                 _json_set(5, "$.evidence.budget.action", "'B000099'")],
    "record of an older evidence ID": [_json_set(5, "$.evidence.id", "'E000003'")],
    "decision for an unknown hypothesis": [_json_set(4, "$.hypothesis", "'H9'")],
    "decision with too few note IDs": [_json_set(8, "$.notes", "json('[\"N000002\"]')")],
    "pause that sets active": [_json_set(10, "$.status", "'active'")],
    "created state has no hypotheses": [_json_set(1, "$.state.hypotheses", "json('[]')")],
    "created state evidence refers to a missing item": [_json_set(1, "$.state.hypotheses[0].control.previous_result", "'E000099'")],
    "recorded payload missing": [f"DELETE FROM payloads WHERE hash = {_RECORDED}"],
    "every payload missing": ["DELETE FROM payloads"],
    "open request points nowhere": ["UPDATE requests SET state_seq = 999 WHERE analysis_id = 'demo' AND number = 3"],
    "answered request points before the log": ["UPDATE requests SET state_seq = 0 WHERE analysis_id = 'demo' AND number = 1"],
    "request points at another event": ["UPDATE requests SET state_seq = 4 WHERE analysis_id = 'demo' AND number = 1"],
    "request events swapped": _swap(2, 6),
    "request status outside the set": ["UPDATE requests SET status = 'lost' WHERE analysis_id = 'demo' AND number = 1"],
    "open request status outside the set": ["UPDATE requests SET status = 'lost' WHERE analysis_id = 'demo' AND number = 3"],
    "analysis status outside the set": ["UPDATE analyses SET status = 'zombie' WHERE analysis_id = 'demo'"],
    "prior status outside the set": ["UPDATE analyses SET prior_status = 'maybe' WHERE analysis_id = 'demo'"],
    "action status outside the set": ["UPDATE actions SET status = 'maybe' WHERE analysis_id = 'demo'"],
    "two open requests": ["DROP INDEX requests_one_open",
                          "UPDATE requests SET status = 'open' WHERE analysis_id = 'demo' AND number = 1"],
    "request encoder unknown": ["UPDATE requests SET encoder = 'v99' WHERE analysis_id = 'demo'"],
    "analysis encoder unknown": ["UPDATE analyses SET encoder = 'v99' WHERE analysis_id = 'demo'"],
    "request chars are text": ["UPDATE requests SET chars = 'many' WHERE analysis_id = 'demo' AND number = 2"],
    "request manifest is garbage": ["UPDATE requests SET manifest = '{' WHERE analysis_id = 'demo' AND number = 3"],
    "action iteration is a blob": ["UPDATE actions SET iteration = CAST('x' AS BLOB) WHERE analysis_id = 'demo'"],
}  # fmt: skip


def damage(path: Path, statements: list[str]) -> None:
    """Apply raw SQL past the store's guards (append-only triggers, CHECK constraints), then close cleanly."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("DROP TRIGGER events_append_only_update")
        conn.execute("DROP TRIGGER events_append_only_delete")
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def commands(store: Path, out: Path) -> list[list[str]]:
    s = ["--store", str(store)]
    a = ["--analysis", "demo", *s]
    return [
        ["show", *a, "--json"],
        ["export", *a, "--out", str(out)],
        ["next", *a, "--json"],
        [
            "submit",
            *a,
            "--request",
            "demo-r0003",
            json.dumps(decision(query("select 3"), assess("E000007"))),
            "--json",
        ],
        ["record", *a, "--action", "B000007", json.dumps(result("third", query="select 2"))],
        ["pause", *a],
        ["cancel", "--analysis", "other", *s],
    ]


def run_battery(path: Path, out: Path) -> set[str]:
    """Every command against the store: exit 0, or exit 2 with one line and the store unchanged. Returns the codes."""
    codes = set()
    for args in commands(path, out):
        before, dump = snapshot(path), db_dump(str(path))
        res = cli(*args)
        assert res.code in (0, 2) and "Traceback" not in res.err + res.out, (
            args,
            res.code,
            res.err,
        )
        if res.code == 2:
            assert res.err.count("\n") == 1, res.err
            codes.add(res.err.split(":")[1].strip())
            assert snapshot(path) == before and db_dump(str(path)) == dump, args
        shutil.rmtree(out, ignore_errors=True)
    return codes


def test_the_pristine_store_passes_the_battery(pristine, tmp_path):
    path = tmp_path / "store.sqlite3"
    shutil.copy(pristine, path)
    assert run_battery(path, tmp_path / "out") <= {"analysis_closed"}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damage_is_store_corrupt_and_changes_nothing(pristine, tmp_path, name):
    path = tmp_path / "store.sqlite3"
    shutil.copy(pristine, path)
    damage(path, DAMAGE[name])
    found = {}
    for verb, args in (("show", ["show", "--analysis", "demo"]), ("export", ["export", "--analysis", "demo", "--out",
                       str(tmp_path / "x")])):  # fmt: skip
        before = snapshot(path)
        res = cli(*args, "--store", str(path), "--json")
        found[verb] = res.error["code"] if res.code == 2 else None
        assert snapshot(path) == before
    assert "store_corrupt" in found.values(), found
    run_battery(path, tmp_path / "out")


# -- random cells: any value in any column of any row --------------------------------------------------

_VALUES = [None, 0, -1, 2**62, 1.5, "", "x", "{}", "[]", "null", '{"a": 1}', b"\x00\xff", b"{}", "active", "open",
           "pending", "H9", "E000001", "B000001", "v99", "investigation_project_v8"]  # fmt: skip


def _mutate(path: Path, rng: random.Random) -> str:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        table = rng.choice(
            ["events", "events", "events", "requests", "actions", "analyses", "payloads"]
        )
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        rows = conn.execute(
            f"SELECT rowid, * FROM {table}" if table == "requests" else f"SELECT * FROM {table}"
        ).fetchall()
        row = rng.choice(rows)
        column = rng.choice(columns)
        if (
            table == "events" and column == "data" and rng.random() < 0.6
        ):  # a plausible but wrong field inside the JSON
            doc = json.loads(row[columns.index("data")])
            key = rng.choice(sorted(doc)) if isinstance(doc, dict) and doc else None
            if key is not None:
                doc[key] = rng.choice(_VALUES[:11] + [[], {}, "zombie"])
            value: object = json.dumps(doc)
        else:
            value = rng.choice(_VALUES)
        keys = {"events": ("analysis_id", "seq"), "payloads": ("hash",), "analyses": ("analysis_id",),
                "actions": ("analysis_id", "action_id")}.get(table)  # fmt: skip
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("DROP TRIGGER IF EXISTS events_append_only_update")
        if keys is None:
            conn.execute(f"UPDATE requests SET {column} = ? WHERE rowid = ?", (value, row[0]))
        else:
            where = " AND ".join(f"{k} = ?" for k in keys)
            conn.execute(
                f"UPDATE {table} SET {column} = ? WHERE {where}",
                (value, *(row[columns.index(k)] for k in keys)),
            )
        return f"{table}.{column} = {value!r}"
    except (
        sqlite3.IntegrityError
    ) as exc:  # a unique or primary key clash: a damage SQLite itself refuses
        return f"refused by SQLite ({exc})"
    finally:
        conn.close()


def _api_battery(path: Path, out: Path) -> None:
    """The read and write calls through the API: each succeeds or raises a WorkingsetError."""
    calls = [
        lambda inv: inv.show(), lambda inv: inv.requests(), lambda inv: inv.export(out),
        lambda inv: inv.next_request(), lambda inv: inv.submit("demo-r0003", decision(query("q"), assess("E000007"))),
        lambda inv: inv.record("B000007", result("r")), lambda inv: inv.pause(),
    ]  # fmt: skip
    for call in calls:
        try:
            with Investigation.open(str(path), "demo", clock=CLOCK) as inv:
                call(inv)
        except WorkingsetError:
            pass
        shutil.rmtree(out, ignore_errors=True)


def _random_cells(pristine: Path, tmp_path: Path, cases: int, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "store.sqlite3"
    for case in range(cases):
        shutil.copy(pristine, path)
        what = [_mutate(path, rng) for _ in range(rng.choice((1, 1, 2)))]
        try:
            _api_battery(path, tmp_path / "out")
        except Exception as exc:  # pragma: no cover - the failure report
            raise AssertionError(
                f"case {case} (seed {seed}): {what} -> {type(exc).__name__}: {exc}"
            ) from exc


@pytest.mark.slow  # fuzz
def test_random_cell_damage_is_a_code_never_a_crash(pristine, tmp_path):
    _random_cells(pristine, tmp_path, cases=30, seed=10)


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(20))
def test_soak_random_cell_damage(pristine, tmp_path, seed):
    _random_cells(pristine, tmp_path, cases=150, seed=1000 + seed)


# -- the same damage on either backend: every command refuses it alike, nothing is appended (issue 23.4) -------

_FORGED = b'{"kind": "text", "language": null, "text": "forged"}'  # a valid payload, not the one its hash names


def _drop(table: str):
    return lambda pg: [
        (f"DROP TABLE {table}" + (" CASCADE" if pg else ""), ())
    ]  # CASCADE: only the foreign keys


# Damage to the store itself (a table gone): every command refuses it, cancel and `export --as-stored` too.
STORE_DAMAGE = {f"{table} table dropped": _drop(table) for table in sorted(TABLE_NAMES)}
# Damage to one analysis's log or rows: every command that reads its state refuses it; cancel, which reads
# only its row, still closes it, and `export --as-stored` still reads it out (see docs/protocol.md).
ANALYSIS_DAMAGE = {
    "last event deleted": lambda pg: [("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)", ())],
    "request row past the log": lambda pg: [("UPDATE requests SET state_seq = 999", ())],
    "payload row corrupted": lambda pg: [("UPDATE payloads SET data = ? WHERE hash = (SELECT min(hash) FROM payloads)",
                                          (_FORGED,))],
    "payload row deleted": lambda pg: [("DELETE FROM payloads WHERE hash = (SELECT max(hash) FROM payloads)", ())],
}  # fmt: skip
BACKEND_DAMAGE = {**STORE_DAMAGE, **ANALYSIS_DAMAGE}


def _damaged_analysis(store: str, name: str, *, paused: bool = False) -> str:
    """demo: request r1 (H1) answered by a query (its action pending), then request r2 (H2) open, the last event
    (then paused, if `paused`); then the damage `name`. Returns the pending action."""
    from tests.helpers.store_sql import execute

    with Investigation.create(store, state_bytes(), clock=CLOCK) as inv:
        req = inv.next_request("H1")
        action = inv.submit(req.request_id, decision(query("select 1"))).action
        inv.next_request("H2")
        if paused:
            inv.pause()
    pg = store.startswith("postgresql://")
    execute(
        store,
        "ALTER TABLE events DISABLE TRIGGER USER"
        if pg
        else "DROP TRIGGER events_append_only_delete",
    )
    for statement, args in BACKEND_DAMAGE[name](pg):
        execute(store, statement, args)
    return action


def _events(store: str) -> list[tuple]:
    from tests.helpers.store_sql import query as sql

    return sql(store, "SELECT seq, kind, at, data FROM events ORDER BY seq")


@pytest.mark.parametrize("name", list(BACKEND_DAMAGE))
def test_damage_is_refused_by_every_command_alike(store, tmp_path, name):
    action = _damaged_analysis(store, name)
    rows = _events(store) if name != "events table dropped" else None
    a = ["--analysis", "demo", "--store", store, "--json"]
    refused = [
        ["show", *a],
        [
            "submit",
            *a,
            "--request",
            "demo-r0002",
            json.dumps(decision(query("select 2"))),
        ],  # reads no payload
        [
            "submit",
            *a,
            "--request",
            "demo-r0002",
            "{",
        ],  # a rejected answer is kept only in a sound store
        ["next", *a],
        ["export", *a, "--out", str(tmp_path / "x")],
        ["record", *a, "--action", action, json.dumps(result("first"))],
        [
            "pause",
            *a,
        ],  # a pause would fill the gap a deleted last event left, hiding it from the next call
    ]
    for args in refused:
        cli(*args).rejected("store_corrupt")
        if rows is not None:
            assert _events(store) == rows, args  # nothing appended, not even an answer
    cancel, as_stored = (
        ["cancel", *a],
        ["export", *a, "--as-stored", "--out", str(tmp_path / "stored")],
    )
    if name in STORE_DAMAGE:
        cli(*cancel).rejected("store_corrupt")
        cli(*as_stored).rejected("store_corrupt")
        assert rows is None or _events(store) == rows
        return
    res = cli(*cancel)
    assert res.code == 0, res.err
    after = _events(store)
    assert after[:-1] == rows and after[-1][1] == "cancel"  # the cancel event alone
    res = cli(*as_stored)
    assert res.code == 0, res.err
    lines = (tmp_path / "stored" / "journal.jsonl").read_text().splitlines()
    assert json.loads(lines[-2])["kind"] == "cancel"


@pytest.mark.parametrize("name", list(ANALYSIS_DAMAGE))
def test_a_damaged_payload_or_log_is_refused_by_a_process_s_first_write(store, name):
    """Through the API too: a fresh handle's submit and record check the log and the payloads before they write."""
    action = _damaged_analysis(store, name)
    rows = _events(store)
    with Investigation.open(store, "demo", clock=CLOCK) as inv:
        with pytest.raises(WorkingsetError) as err:
            inv.submit("demo-r0002", decision(query("select 2")))
        assert err.value.code == "store_corrupt"
        with pytest.raises(WorkingsetError) as err:
            inv.record(action, result("first"))
        assert err.value.code == "store_corrupt"
    assert _events(store) == rows


@pytest.mark.parametrize(
    "name", ["request row past the log", "payload row corrupted", "payload row deleted"]
)
def test_resume_refuses_a_damaged_analysis(store, name):
    """Resume reads the state (to evaluate the termination policy), so it checks it as submit does."""
    _damaged_analysis(store, name, paused=True)
    rows = _events(store)
    with Investigation.open(store, "demo", clock=CLOCK) as inv:
        with pytest.raises(WorkingsetError) as err:
            inv.resume()
        assert err.value.code == "store_corrupt"
    assert _events(store) == rows


def test_a_sound_store_checks_each_payload_once_per_kept_state(store, monkeypatch):
    """The payload check costs a handle's later writes nothing: a kept state's payloads are not read again."""
    from workingset.store.sqltx import SqlTx

    with Investigation.create(store, state_bytes(), clock=CLOCK) as inv:
        inv.next_request("H1")
    read: list[str] = []
    rows = SqlTx._payload_rows

    def counted(self, hashes):
        hashes = list(hashes)
        read.extend(hashes)
        return rows(self, hashes)

    monkeypatch.setattr(SqlTx, "_payload_rows", counted)
    stored = {
        ev["content_hash"] for ev in json.loads(state_bytes())["evidence"] if ev["content_hash"]
    }
    with Investigation.open(store, "demo", clock=CLOCK) as inv:
        act = inv.submit("demo-r0001", decision(query("select 1"))).action
        assert set(read) == stored and len(read) == len(stored)  # checked, each once
        inv.record(act, result("first"))
        assert len(read) == len(stored)  # the kept state's payloads were checked already
        inv.next_request("H2")  # the render reads them into the state (decoded), once
        filled = len(read)
        inv.submit("demo-r0002", decision(query("select 2")))
        assert len(read) == filled


def test_a_postgresql_store_with_another_table_is_store_corrupt(pg_server):
    """docs/operations.md: a database with other tables is `store_corrupt`, on the first open and on every later one."""
    from tests.helpers.store_sql import execute

    url = pg_server.database()
    Investigation.create(url, state_bytes(), clock=CLOCK).close()
    execute(url, "CREATE TABLE someone_elses (id int)")
    for read_only in (False, True):
        with pytest.raises(WorkingsetError) as refused:
            Investigation.open(url, "demo", read_only=read_only)
        assert refused.value.code == "store_corrupt"
        assert "other tables: someone_elses" in str(refused.value)
    execute(url, "CREATE SCHEMA workingset")  # the way docs/operations.md gives to share a database
    own = url + "&options=-csearch_path%3Dworkingset"
    Investigation.create(own, state_bytes(), clock=CLOCK).close()
    with Investigation.open(own, "demo", read_only=True) as inv:
        assert inv.show().status == "active"
    pg_server.drop(url)
