"""The embedded default store: one SQLite file in WAL mode (stdlib, no server).

Every write happens inside one `BEGIN IMMEDIATE` transaction: the change, its event and its
index rows commit together or not at all, and two writers serialize, so the second one sees
the first one's result (a submission to an answered request is then `stale_request`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from ..errors import StoreCorrupt, WorkingsetError
from ..hashing import canonical_json, hash_bytes
from ..model import Payload
from . import interface as base
from .interface import (
    ACTION_COLUMNS, MANIFEST_DECODER, REQUEST_COLUMNS, SCHEMA_VERSION, UPGRADABLE, ActionRow, AnalysisRow, EventRow,
    RequestRecord, Tx,
)  # fmt: skip

APPLICATION_ID = 0x57534554  # "WSET" in the SQLite header: tells our files from others
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
PAGE_SIZE = 1024

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE analyses (
  analysis_id TEXT PRIMARY KEY,
  encoder TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'completed', 'failed', 'cancelled')),
  prior_status TEXT,
  termination_reason TEXT,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE events (
  analysis_id TEXT NOT NULL REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  at TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (analysis_id, seq)
) WITHOUT ROWID;
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TABLE payloads (hash TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE requests (
  analysis_id TEXT NOT NULL REFERENCES analyses (analysis_id),
  number INTEGER NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  hypothesis TEXT NOT NULL,
  encoder TEXT NOT NULL,
  manifest TEXT NOT NULL,
  chars INTEGER NOT NULL,
  hash TEXT NOT NULL,
  state_seq INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'answered', 'abandoned')),
  PRIMARY KEY (analysis_id, number)
);
CREATE UNIQUE INDEX requests_one_open ON requests (analysis_id) WHERE status = 'open';
CREATE TABLE actions (
  analysis_id TEXT NOT NULL REFERENCES analyses (analysis_id),
  action_id TEXT NOT NULL,
  hypothesis TEXT NOT NULL,
  request_id TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  source TEXT NOT NULL,
  query TEXT NOT NULL,
  purpose TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'recorded')),
  evidence_id TEXT,
  PRIMARY KEY (analysis_id, action_id)
) WITHOUT ROWID;
CREATE INDEX actions_pending ON actions (analysis_id) WHERE status = 'pending';
CREATE TABLE snapshots (
  analysis_id TEXT PRIMARY KEY REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  data BLOB NOT NULL
) WITHOUT ROWID;
"""
# What a version 2 store gains (the last statement of the schema).
SNAPSHOTS_TABLE = "CREATE TABLE snapshots" + _SCHEMA.rsplit("CREATE TABLE snapshots", 1)[1].rstrip().rstrip(";")

# Payloads read per SELECT (bound parameters; SQLite's limit is 32,766 since 3.32, 999 before).
PAYLOAD_BATCH = 500

_PAYLOAD_DECODER = msgspec.json.Decoder(Payload)


def _translate(exc: sqlite3.Error, path: str) -> WorkingsetError:
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return WorkingsetError(f"store {path} is busy ({exc}); retry", code="store_busy", details={"store": path})
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM")):
        return WorkingsetError(f"cannot use store {path}: {exc}", code="store_unavailable", details={"store": path})
    return StoreCorrupt(f"store {path} is damaged or not a workingset store ({exc})", details={"store": path})


class SqliteStore:
    """The embedded default store: one SQLite file in WAL mode."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        # Replayed states by analysis, kept by the session layer (`journal.Replayed`) so that a
        # call reads only the events appended since; they live and die with this connection.
        self.views: dict[str, Any] = {}
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(SQLITE_HEADER))
        except FileNotFoundError:
            head = b""
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise WorkingsetError(
                f"cannot read store {self.path} ({exc.strerror})", code="store_unavailable", details={"store": self.path}
            ) from None
        if head and head != SQLITE_HEADER:
            raise StoreCorrupt(f"{self.path} is not a workingset store (not a SQLite file)", details={"store": self.path})
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from None
        try:
            self._setup()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _translate(exc, self.path) from None
        except WorkingsetError:
            self._conn.close()
            raise

    def _setup(self) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        app_id = c.execute("PRAGMA application_id").fetchone()[0]
        tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == 0 and tables == 0:
            self._create_schema()
        elif app_id != APPLICATION_ID:
            raise StoreCorrupt(f"{self.path} is a SQLite file but not a workingset store", details={"store": self.path})
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA synchronous = FULL")
        row = c.execute("SELECT version FROM schema_version").fetchall()
        if row == [(UPGRADABLE,)]:
            self._upgrade()
            row = c.execute("SELECT version FROM schema_version").fetchall()
        if len(row) != 1 or row[0][0] != SCHEMA_VERSION:
            found = row[0][0] if len(row) == 1 else None
            raise StoreCorrupt(
                f"{self.path}: store schema version {found} is not {SCHEMA_VERSION}",
                details={"store": self.path, "schema_version": found},
            )

    def _create_schema(self) -> None:
        c = self._conn
        # Small pages: a turn touches a few rows in several tables and indexes, and WAL writes
        # whole pages; 1 kB pages write 2.8x fewer bytes per turn than the 4 kB default (see
        # benchmarks/RESULTS.md), at no measured cost to a turn or a replay. Only a new, empty
        # file takes a page size (before WAL mode); older stores keep theirs.
        c.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have created it while we waited for the lock.
            if c.execute("PRAGMA application_id").fetchone()[0] == 0:
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        c.execute(statement)
                c.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def _upgrade(self) -> None:
        """Version 2 to 3: add the (empty) snapshots table; nothing else changes."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            if c.execute("SELECT version FROM schema_version").fetchall() == [(UPGRADABLE,)]:
                c.execute(SNAPSHOTS_TABLE)
                c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.views.clear()
        self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction: one consistent snapshot of the store."""
        with self._transaction("BEGIN") as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction: everything in it commits together, or nothing does."""
        with self._transaction("BEGIN IMMEDIATE") as tx:
            yield tx
            base._checkpoint("commit")
        base._checkpoint("committed")

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Tx]:
        c = self._conn
        try:
            c.execute(begin)
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from None
        try:
            yield _SqliteTx(c, self.path)
        except BaseException as exc:
            if c.in_transaction:
                c.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _translate(exc, self.path) from None
            raise
        try:
            c.execute("COMMIT")
        except sqlite3.Error as exc:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise _translate(exc, self.path) from None


def _dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection, path: str):
        self._c = conn
        self._path = path

    def _write(self, step: str, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        cur = self._c.execute(sql, args)
        base._checkpoint(step)
        return cur

    def _corrupt(self, what: str, exc: Exception) -> StoreCorrupt:
        return StoreCorrupt(f"store {self._path}: damaged {what} ({exc})", details={"store": self._path})

    def analysis(self, analysis_id: str) -> AnalysisRow | None:
        row = self._c.execute(
            "SELECT analysis_id, encoder, status, prior_status, termination_reason, created_at"
            " FROM analyses WHERE analysis_id = ?",
            (analysis_id,),
        ).fetchone()
        return AnalysisRow(*row) if row else None

    def analysis_ids(self) -> list[str]:
        return [r[0] for r in self._c.execute("SELECT analysis_id FROM analyses ORDER BY analysis_id")]

    def insert_analysis(self, row: AnalysisRow) -> None:
        self._write(
            "insert_analysis",
            "INSERT INTO analyses VALUES (?, ?, ?, ?, ?, ?)",
            (row.analysis_id, row.encoder, row.status, row.prior_status, row.termination_reason, row.created_at),
        )

    def set_status(self, analysis_id: str, status: str, prior_status: str | None, reason: str | None) -> None:
        self._write(
            "set_status",
            "UPDATE analyses SET status = ?, prior_status = ?, termination_reason = ? WHERE analysis_id = ?",
            (status, prior_status, reason, analysis_id),
        )

    def append_event(self, analysis_id: str, kind: str, at: str, data: bytes) -> int:
        last = self._c.execute("SELECT max(seq) FROM events WHERE analysis_id = ?", (analysis_id,)).fetchone()[0]
        seq = (last or 0) + 1
        self._write(
            "append_event",
            "INSERT INTO events (analysis_id, seq, kind, at, data) VALUES (?, ?, ?, ?, ?)",
            (analysis_id, seq, kind, at, data.decode()),
        )
        return seq

    def events(self, analysis_id: str, upto: int | None = None, after: int = 0) -> list[EventRow]:
        """The events with `after` < seq <= `upto`, in order; a gap in their numbering is `store_corrupt`."""
        rows = self._c.execute(
            "SELECT seq, kind, at, data FROM events WHERE analysis_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (analysis_id, after, upto if upto is not None else 2**62),
        ).fetchall()
        if any(r[0] != i for i, r in enumerate(rows, after + 1)):
            raise StoreCorrupt(f"store {self._path}: the event log of {analysis_id} has a gap", details={"store": self._path})
        return [EventRow(seq, kind, at, data.encode()) for seq, kind, at, data in rows]

    def snapshot(self, analysis_id: str) -> tuple[int, bytes] | None:
        """The analysis's latest snapshot: (the last event it reflects, its data)."""
        row = self._c.execute("SELECT seq, data FROM snapshots WHERE analysis_id = ?", (analysis_id,)).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def put_snapshot(self, analysis_id: str, seq: int, data: bytes) -> None:
        """Replace the analysis's snapshot (only the latest is kept: the log holds the rest)."""
        self._write("put_snapshot", "INSERT OR REPLACE INTO snapshots (analysis_id, seq, data) VALUES (?, ?, ?)",
                    (analysis_id, seq, data))  # fmt: skip

    def put_payload(self, payload: Payload) -> str:
        data = canonical_json(payload)
        digest = hash_bytes(data)
        self._write("put_payload", "INSERT OR IGNORE INTO payloads (hash, data) VALUES (?, ?)", (digest, data))
        return digest

    def payloads(self, hashes: Iterable[str]) -> dict[str, Payload]:
        """The payloads with these content hashes, read in batches; a missing or altered one is `store_corrupt`."""
        wanted = list(dict.fromkeys(hashes))
        out: dict[str, Payload] = {}
        for start in range(0, len(wanted), PAYLOAD_BATCH):
            batch = wanted[start : start + PAYLOAD_BATCH]
            marks = ", ".join("?" * len(batch))
            for digest, data in self._c.execute(f"SELECT hash, data FROM payloads WHERE hash IN ({marks})", batch):
                data = bytes(data)
                if hash_bytes(data) != digest:
                    raise StoreCorrupt(f"store {self._path}: payload {digest} does not match its hash",
                                       details={"store": self._path})  # fmt: skip
                try:
                    out[digest] = _PAYLOAD_DECODER.decode(data)
                except msgspec.DecodeError as exc:
                    raise self._corrupt(f"payload {digest}", exc) from None
        missing = [h for h in wanted if h not in out]
        if missing:
            raise StoreCorrupt(f"store {self._path}: payload {missing[0]} is missing", details={"store": self._path})
        return out

    def payload(self, content_hash: str) -> Payload:
        return self.payloads([content_hash])[content_hash]

    def insert_request(self, row: RequestRecord) -> None:
        self._write(
            "insert_request",
            "INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.analysis_id, row.number, row.request_id, row.hypothesis, row.encoder,
                _dumps(row.manifest), row.chars, row.hash, row.state_seq, row.status,
            ),
        )  # fmt: skip

    def set_request_status(self, analysis_id: str, request_id: str, status: str) -> None:
        self._write(
            "set_request_status",
            "UPDATE requests SET status = ? WHERE analysis_id = ? AND request_id = ?",
            (status, analysis_id, request_id),
        )

    _REQUEST_COLUMNS = REQUEST_COLUMNS

    def _requests(self, where: str, args: tuple) -> list[RequestRecord]:
        rows = self._c.execute(f"SELECT {self._REQUEST_COLUMNS} FROM requests WHERE {where}", args).fetchall()
        try:
            return [RequestRecord(*r[:5], MANIFEST_DECODER.decode(r[5]), *r[6:]) for r in rows]
        except (msgspec.DecodeError, TypeError) as exc:
            raise self._corrupt("request manifest", exc) from None

    def open_request(self, analysis_id: str) -> RequestRecord | None:
        """The analysis's open request (at most one, by a unique partial index)."""
        rows = self._requests("analysis_id = ? AND status = 'open'", (analysis_id,))
        return rows[0] if rows else None

    def request(self, analysis_id: str, request_id: str) -> RequestRecord | None:
        rows = self._requests("analysis_id = ? AND request_id = ?", (analysis_id, request_id))
        return rows[0] if rows else None

    def request_count(self, analysis_id: str) -> int:
        """How many requests the analysis has had (they are numbered from 1 without gaps)."""
        return self._c.execute("SELECT max(number) FROM requests WHERE analysis_id = ?", (analysis_id,)).fetchone()[0] or 0

    def requests(self, analysis_id: str) -> list[RequestRecord]:
        return self._requests("analysis_id = ? ORDER BY number", (analysis_id,))

    def insert_action(self, row: ActionRow) -> None:
        self._write(
            "insert_action",
            "INSERT INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.analysis_id, row.action_id, row.hypothesis, row.request_id, row.iteration,
                row.source, row.query, row.purpose, row.status, row.evidence_id,
            ),
        )

    def set_action_recorded(self, analysis_id: str, action_id: str, evidence_id: str) -> None:
        self._write(
            "set_action_recorded",
            "UPDATE actions SET status = 'recorded', evidence_id = ? WHERE analysis_id = ? AND action_id = ?",
            (evidence_id, analysis_id, action_id),
        )

    _ACTION_COLUMNS = ACTION_COLUMNS

    def action(self, analysis_id: str, action_id: str) -> ActionRow | None:
        row = self._c.execute(f"SELECT {self._ACTION_COLUMNS} FROM actions WHERE analysis_id = ? AND action_id = ?",
                              (analysis_id, action_id)).fetchone()  # fmt: skip
        return ActionRow(*row) if row else None

    def pending_actions(self, analysis_id: str) -> list[ActionRow]:
        """The analysis's pending actions in ID order (by the partial index `actions_pending`)."""
        rows = self._c.execute(
            f"SELECT {self._ACTION_COLUMNS} FROM actions WHERE analysis_id = ? AND status = 'pending' ORDER BY action_id",
            (analysis_id,),
        ).fetchall()
        return [ActionRow(*r) for r in rows]

    def actions(self, analysis_id: str) -> list[ActionRow]:
        rows = self._c.execute(
            f"SELECT {self._ACTION_COLUMNS} FROM actions WHERE analysis_id = ? ORDER BY action_id", (analysis_id,)
        ).fetchall()
        return [ActionRow(*r) for r in rows]
