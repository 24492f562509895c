"""The PostgreSQL store: the same tables, events and transactions as SQLite, for many worker processes.

Chosen by URL (`postgresql://…` or `postgres://…`, as `--store` or `$WORKINGSET_STORE`). One
connection per store object (psycopg 3), each call one transaction, exactly as with SQLite.

How two workers on one analysis serialize: a write transaction runs at READ COMMITTED and its
first read of the analysis's row is `SELECT … FOR UPDATE` (every write call of the session
reads that row before anything else). The second worker waits on that row lock until the
first commits; its next statements then see the first one's events and index rows (READ
COMMITTED takes a fresh snapshot per statement), so a submission to a request the first one
answered is `stale_request`, as on SQLite. Workers on different analyses lock different rows
and never wait on each other. A row lock was chosen over SERIALIZABLE with retries because a
turn is not idempotent from the caller's side (a retried `next` would render again, a retried
`submit` must not apply twice) and because the lock makes the loser wait instead of failing
and redoing its work; read transactions are REPEATABLE READ, READ ONLY: one snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from ..errors import StoreCorrupt, WorkingsetError
from ..hashing import canonical_json, hash_bytes
from ..model import Payload
from . import interface as base
from .interface import MANIFEST_DECODER, ActionRow, AnalysisRow, EventRow, RequestRecord, Tx

SCHEMES = ("postgresql", "postgres")
# Held while the schema is created, so that two first processes do not both create it.
_SCHEMA_LOCK = 0x57534554

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE analyses (
  analysis_id TEXT PRIMARY KEY,
  encoder TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'completed', 'failed', 'cancelled')),
  prior_status TEXT,
  termination_reason TEXT,
  created_at TEXT NOT NULL
);
CREATE TABLE events (
  analysis_id TEXT NOT NULL REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  at TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (analysis_id, seq)
);
CREATE FUNCTION workingset_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN RAISE EXCEPTION 'the event log is append-only'; END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION workingset_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION workingset_append_only();
CREATE TABLE payloads (hash TEXT PRIMARY KEY, data BYTEA NOT NULL);
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
);
CREATE INDEX actions_pending ON actions (analysis_id) WHERE status = 'pending';
CREATE TABLE snapshots (
  analysis_id TEXT PRIMARY KEY REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  data BYTEA NOT NULL
);
"""
_TABLES = {"schema_version", "analyses", "events", "payloads", "requests", "actions", "snapshots"}
_PAYLOAD_DECODER = msgspec.json.Decoder(Payload)


def is_url(store: str) -> bool:
    """Whether `store` names a PostgreSQL database (a URL with one of `SCHEMES`) rather than a file."""
    return store.split("://", 1)[0].lower() in SCHEMES if "://" in store else False


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - a dependency, but say what to do if it is missing
        raise WorkingsetError("the PostgreSQL store needs psycopg 3: pip install 'psycopg[binary]'",
                              code="store_unavailable") from None  # fmt: skip
    return psycopg


def _translate(exc: Exception, where: str) -> WorkingsetError:
    psycopg = _psycopg()
    details = {"store": where}
    if isinstance(exc, (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected,
                        psycopg.errors.LockNotAvailable)):  # fmt: skip
        return WorkingsetError(f"store {where} is busy ({exc}); retry", code="store_busy", details=details)
    if isinstance(exc, (psycopg.OperationalError, psycopg.errors.InsufficientPrivilege, psycopg.InterfaceError)):
        return WorkingsetError(f"cannot use store {where}: {exc}".strip(), code="store_unavailable", details=details)
    return StoreCorrupt(f"store {where} is damaged or not a workingset store ({exc})", details=details)


class PostgresStore:
    """A workingset store in a PostgreSQL database (the tables in its default schema)."""

    def __init__(self, url: str):
        psycopg = _psycopg()
        self.url = url
        self.path = redact(url)  # what messages name; never the password
        self.views: dict[str, Any] = {}
        try:
            self._conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None
        try:
            self._setup()
        except psycopg.Error as exc:
            self._conn.close()
            raise _translate(exc, self.path) from None
        except BaseException:
            self._conn.close()
            raise

    def _setup(self) -> None:
        c = self._conn
        c.execute("BEGIN")
        try:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            tables = {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
            if not tables:
                c.execute(_SCHEMA)
                c.execute("INSERT INTO schema_version (version) VALUES (%s)", (base.SCHEMA_VERSION,))
            elif tables == _TABLES - {"snapshots"} and c.execute("SELECT version FROM schema_version").fetchall() == [
                (base.UPGRADABLE,)
            ]:  # a version 2 store gains the (empty) snapshots table
                c.execute(_SCHEMA[_SCHEMA.index("CREATE TABLE snapshots") :])
                c.execute("UPDATE schema_version SET version = %s", (base.SCHEMA_VERSION,))
            elif not _TABLES <= tables:
                raise StoreCorrupt(f"{self.path} is a PostgreSQL database but not a workingset store "
                                   f"(it has other tables)", details={"store": self.path})  # fmt: skip
            rows = c.execute("SELECT version FROM schema_version").fetchall()
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        if len(rows) != 1 or rows[0][0] != base.SCHEMA_VERSION:
            found = rows[0][0] if len(rows) == 1 else None
            raise StoreCorrupt(f"{self.path}: store schema version {found} is not {base.SCHEMA_VERSION}",
                               details={"store": self.path, "schema_version": found})  # fmt: skip

    def close(self) -> None:
        self.views.clear()
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction: one consistent snapshot of the store."""
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", lock=False) as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction: everything in it commits together, or nothing does."""
        with self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED", lock=True) as tx:
            yield tx
            base._checkpoint("commit")
        base._checkpoint("committed")

    @contextmanager
    def _transaction(self, begin: str, lock: bool) -> Iterator[Tx]:
        psycopg = _psycopg()
        c = self._conn
        try:
            c.execute(begin)
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None
        try:
            yield _PgTx(c, self.path, lock)
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, psycopg.errors.UniqueViolation) and "analyses_pkey" in str(exc):
                raise WorkingsetError(f"an analysis of that ID was created meanwhile in {self.path}",
                                      code="analysis_exists", details={"store": self.path}) from None  # fmt: skip
            if isinstance(exc, psycopg.Error):
                raise _translate(exc, self.path) from None
            raise
        try:
            c.execute("COMMIT")
        except psycopg.Error as exc:
            self._rollback()
            raise _translate(exc, self.path) from None

    def _rollback(self) -> None:
        psycopg = _psycopg()
        try:
            self._conn.execute("ROLLBACK")
        except psycopg.Error:
            pass  # the connection is gone: nothing was committed


class _PgTx:
    def __init__(self, conn: Any, path: str, lock: bool):
        self._c = conn
        self._path = path
        self._lock = lock

    def _write(self, step: str, sql: str, args: tuple = ()) -> Any:
        cur = self._c.execute(sql, args)
        base._checkpoint(step)
        return cur

    def _corrupt(self, what: str, exc: Exception) -> StoreCorrupt:
        return StoreCorrupt(f"store {self._path}: damaged {what} ({exc})", details={"store": self._path})

    def analysis(self, analysis_id: str) -> AnalysisRow | None:
        """The analysis's row; in a write transaction it is locked until the commit (see the module)."""
        row = self._c.execute(
            "SELECT analysis_id, encoder, status, prior_status, termination_reason, created_at"
            " FROM analyses WHERE analysis_id = %s" + (" FOR UPDATE" if self._lock else ""),
            (analysis_id,),
        ).fetchone()
        return AnalysisRow(*row) if row else None

    def analysis_ids(self) -> list[str]:
        return [r[0] for r in self._c.execute('SELECT analysis_id FROM analyses ORDER BY analysis_id COLLATE "C"')]

    def insert_analysis(self, row: AnalysisRow) -> None:
        self._write("insert_analysis", "INSERT INTO analyses VALUES (%s, %s, %s, %s, %s, %s)",
                    (row.analysis_id, row.encoder, row.status, row.prior_status, row.termination_reason,
                     row.created_at))  # fmt: skip

    def set_status(self, analysis_id: str, status: str, prior_status: str | None, reason: str | None) -> None:
        self._write("set_status",
                    "UPDATE analyses SET status = %s, prior_status = %s, termination_reason = %s WHERE analysis_id = %s",
                    (status, prior_status, reason, analysis_id))  # fmt: skip

    def append_event(self, analysis_id: str, kind: str, at: str, data: bytes) -> int:
        last = self._c.execute("SELECT max(seq) FROM events WHERE analysis_id = %s", (analysis_id,)).fetchone()[0]
        seq = (last or 0) + 1
        self._write("append_event", "INSERT INTO events (analysis_id, seq, kind, at, data) VALUES (%s, %s, %s, %s, %s)",
                    (analysis_id, seq, kind, at, data.decode()))  # fmt: skip
        return seq

    def events(self, analysis_id: str, upto: int | None = None, after: int = 0) -> list[EventRow]:
        """The events with `after` < seq <= `upto`, in order; a gap in their numbering is `store_corrupt`."""
        rows = self._c.execute(
            "SELECT seq, kind, at, data FROM events WHERE analysis_id = %s AND seq > %s AND seq <= %s ORDER BY seq",
            (analysis_id, after, upto if upto is not None else 2**31 - 1),
        ).fetchall()
        if any(r[0] != i for i, r in enumerate(rows, after + 1)):
            raise StoreCorrupt(f"store {self._path}: the event log of {analysis_id} has a gap", details={"store": self._path})
        return [EventRow(seq, kind, at, data.encode()) for seq, kind, at, data in rows]

    def snapshot(self, analysis_id: str) -> tuple[int, bytes] | None:
        """The analysis's latest snapshot: (the last event it reflects, its data)."""
        row = self._c.execute("SELECT seq, data FROM snapshots WHERE analysis_id = %s", (analysis_id,)).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def put_snapshot(self, analysis_id: str, seq: int, data: bytes) -> None:
        """Replace the analysis's snapshot (only the latest is kept: the log holds the rest)."""
        self._write("put_snapshot", "INSERT INTO snapshots (analysis_id, seq, data) VALUES (%s, %s, %s)"
                    " ON CONFLICT (analysis_id) DO UPDATE SET seq = EXCLUDED.seq, data = EXCLUDED.data",
                    (analysis_id, seq, data))  # fmt: skip

    def put_payload(self, payload: Payload) -> str:
        data = canonical_json(payload)
        digest = hash_bytes(data)
        self._write("put_payload", "INSERT INTO payloads (hash, data) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (digest, data))  # fmt: skip
        return digest

    def payloads(self, hashes: Iterable[str]) -> dict[str, Payload]:
        """The payloads with these content hashes (one query); a missing or altered one is `store_corrupt`."""
        wanted = list(dict.fromkeys(hashes))
        out: dict[str, Payload] = {}
        for digest, data in self._c.execute("SELECT hash, data FROM payloads WHERE hash = ANY(%s)", (wanted,)):
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

    def insert_request(self, row: RequestRecord) -> None:
        self._write("insert_request", "INSERT INTO requests VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (row.analysis_id, row.number, row.request_id, row.hypothesis, row.encoder,
                     msgspec.json.encode(row.manifest).decode(), row.chars, row.hash, row.state_seq,
                     row.status))  # fmt: skip

    def set_request_status(self, analysis_id: str, request_id: str, status: str) -> None:
        self._write("set_request_status", "UPDATE requests SET status = %s WHERE analysis_id = %s AND request_id = %s",
                    (status, analysis_id, request_id))  # fmt: skip

    def _requests(self, where: str, args: tuple) -> list[RequestRecord]:
        rows = self._c.execute(f"SELECT {base.REQUEST_COLUMNS} FROM requests WHERE {where}", args).fetchall()
        try:
            return [RequestRecord(*r[:5], MANIFEST_DECODER.decode(r[5]), *r[6:]) for r in rows]
        except (msgspec.DecodeError, TypeError) as exc:
            raise self._corrupt("request manifest", exc) from None

    def open_request(self, analysis_id: str) -> RequestRecord | None:
        rows = self._requests("analysis_id = %s AND status = 'open'", (analysis_id,))
        return rows[0] if rows else None

    def request(self, analysis_id: str, request_id: str) -> RequestRecord | None:
        rows = self._requests("analysis_id = %s AND request_id = %s", (analysis_id, request_id))
        return rows[0] if rows else None

    def request_count(self, analysis_id: str) -> int:
        """The highest request number the analysis has had (0 for none)."""
        return self._c.execute("SELECT max(number) FROM requests WHERE analysis_id = %s", (analysis_id,)).fetchone()[0] or 0

    def requests(self, analysis_id: str) -> list[RequestRecord]:
        return self._requests("analysis_id = %s ORDER BY number", (analysis_id,))

    def insert_action(self, row: ActionRow) -> None:
        self._write("insert_action", "INSERT INTO actions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (row.analysis_id, row.action_id, row.hypothesis, row.request_id, row.iteration, row.source,
                     row.query, row.purpose, row.status, row.evidence_id))  # fmt: skip

    def set_action_recorded(self, analysis_id: str, action_id: str, evidence_id: str) -> None:
        self._write("set_action_recorded",
                    "UPDATE actions SET status = 'recorded', evidence_id = %s WHERE analysis_id = %s AND action_id = %s",
                    (evidence_id, analysis_id, action_id))  # fmt: skip

    def action(self, analysis_id: str, action_id: str) -> ActionRow | None:
        row = self._c.execute(f"SELECT {base.ACTION_COLUMNS} FROM actions WHERE analysis_id = %s AND action_id = %s",
                              (analysis_id, action_id)).fetchone()  # fmt: skip
        return ActionRow(*row) if row else None

    def pending_actions(self, analysis_id: str) -> list[ActionRow]:
        rows = self._c.execute(f"SELECT {base.ACTION_COLUMNS} FROM actions WHERE analysis_id = %s"
                               " AND status = 'pending' ORDER BY action_id COLLATE \"C\"", (analysis_id,)).fetchall()  # fmt: skip
        return [ActionRow(*r) for r in rows]

    def actions(self, analysis_id: str) -> list[ActionRow]:
        rows = self._c.execute(f"SELECT {base.ACTION_COLUMNS} FROM actions WHERE analysis_id = %s ORDER BY action_id COLLATE \"C\"",
                               (analysis_id,)).fetchall()  # fmt: skip
        return [ActionRow(*r) for r in rows]
