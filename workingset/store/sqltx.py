"""The statements both backends run: the schema's tables, and `SqlTx`, the `Tx` over a DB-API connection.

They are written once, in SQL that SQLite (3.24+) and PostgreSQL both accept, with `?`
placeholders; a backend's subclass adapts the little that differs (PostgreSQL's `%s`
placeholders, its row lock, the collation of ID order).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from ..errors import StoreCorrupt
from ..model.hashing import canonical_json, hash_bytes
from ..model.state import Payload
from . import interface as base
from .interface import (
    ACTION_COLUMNS,
    FIELDS,
    MANIFEST_DECODER,
    REQUEST_COLUMNS,
    ActionRow,
    AnalysisRow,
    EventRow,
    RequestRecord,
)  # fmt: skip

# The tables and indexes, the same on both backends but for the binary type and SQLite's
# `WITHOUT ROWID` (tables keyed by text, never by a rowid). Triggers are the backend's own.
TABLES = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE analyses (
  analysis_id TEXT PRIMARY KEY,
  encoder TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'completed', 'failed', 'cancelled')),
  prior_status TEXT,
  termination_reason TEXT,
  created_at TEXT NOT NULL
){without_rowid};
CREATE TABLE events (
  analysis_id TEXT NOT NULL REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  at TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (analysis_id, seq)
){without_rowid};
CREATE TABLE payloads (hash TEXT PRIMARY KEY, data {blob} NOT NULL){without_rowid};
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
){without_rowid};
CREATE INDEX actions_pending ON actions (analysis_id) WHERE status = 'pending';
"""
# Added by schema version 3 (a version 2 store gains it on open).
SNAPSHOTS_TABLE = """
CREATE TABLE snapshots (
  analysis_id TEXT PRIMARY KEY REFERENCES analyses (analysis_id),
  seq INTEGER NOT NULL,
  data {blob} NOT NULL
){without_rowid};
"""
TABLE_NAMES = frozenset(
    {"schema_version", "analyses", "events", "payloads", "requests", "actions", "snapshots"}
)


def statements(sql: str) -> list[str]:
    """The statements of a script (split at `;` line ends), for drivers that run one at a time."""
    return [part.strip() for part in sql.split(";\n") if part.strip()]


# `events(upto=None)` reads to the end of the log: an upper bound above any sequence number
# (they count from 1) that fits SQLite's signed 64-bit integers and PostgreSQL's bigint.
_NO_LIMIT_SEQ = 2**62

# Payloads read per SELECT (bound parameters; SQLite's limit is 32,766 since 3.32, 999 before).
PAYLOAD_BATCH = 500
_PAYLOAD_DECODER = msgspec.json.Decoder(Payload)


def _dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


class SqlTx:
    """The store's `Tx` inside one open transaction of a DB-API connection."""

    # Appended to ORDER BY an ID column: IDs sort by their bytes on both backends.
    id_order = ""
    # Appended to the SELECT of the analysis's row in a write transaction (a row lock, where there is one).
    lock_clause = ""

    def __init__(self, conn: Any, path: str, write: bool = False, snapshots: bool = True):
        self._c = conn
        self._path = path
        self._locking = write
        self._snapshots = (
            snapshots  # False: a version 2 store opened read-only (no snapshots table)
        )

    # The names of the tables in the store's schema (the backend's catalog).
    tables_sql = "SELECT name FROM sqlite_master WHERE type = 'table'"

    def _q(self, sql: str, args: tuple | list = ()) -> Any:
        """Run one statement (SQLite's `?` placeholders)."""
        return self._c.execute(sql, args)

    def _write(self, step: str, sql: str, args: tuple = ()) -> Any:
        cur = self._q(sql, args)
        base._checkpoint(step)
        return cur

    def check_tables(self) -> None:
        """Every table of the schema must be there: one catalog read at the start of each transaction.

        A call touches only the tables it needs (a query decision never reads the payloads),
        so without this a dropped table would be found by some commands and written past by
        others; with it every command refuses such a store alike, before it reads or writes.
        """
        wanted = TABLE_NAMES if self._snapshots else TABLE_NAMES - {"snapshots"}
        missing = sorted(wanted - {r[0] for r in self._q(self.tables_sql)})
        if missing:
            raise StoreCorrupt(f"store {self._path} is damaged: its table{'s' * (len(missing) > 1)} "
                               f"{', '.join(missing)} {'are' if len(missing) > 1 else 'is'} missing",
                               details={"store": self._path, "missing": missing})  # fmt: skip

    def _corrupt(self, what: str, exc: Exception, **where: Any) -> StoreCorrupt:
        return StoreCorrupt(
            f"store {self._path}: damaged {what} ({exc})", details={"store": self._path, **where}
        )

    def _checked(self, kind: type, row: tuple, what: str, **where: Any) -> Any:
        """A row read back as `kind`, its types and statuses checked: a damaged one is `store_corrupt` naming it."""
        try:
            return msgspec.convert(dict(zip(FIELDS[kind], row)), kind)
        except msgspec.ValidationError as exc:
            raise self._corrupt(what, exc, **where) from None

    def _analysis_row(self, analysis_id: str) -> tuple | None:
        """The analysis's row as read; in a write transaction it is locked until the commit where the backend locks rows."""
        return self._q(
            "SELECT analysis_id, encoder, status, prior_status, termination_reason, created_at"
            " FROM analyses WHERE analysis_id = ?" + (self.lock_clause if self._locking else ""),
            (analysis_id,),
        ).fetchone()

    def analysis(self, analysis_id: str) -> AnalysisRow | None:
        """The analysis's row, checked (see `_analysis_row`)."""
        row = self._analysis_row(analysis_id)
        return (
            self._checked(AnalysisRow, row, f"analysis row {analysis_id}", analysis=analysis_id)
            if row
            else None
        )

    def analysis_as_stored(self, analysis_id: str) -> AnalysisRow | None:
        """The analysis's row with only its types and statuses checked, not the form of its ID.

        For the calls that need no state (cancel, fail, export as stored): an analysis written by
        an older version whose ID no longer validates (`"demo\\n"`) must still be closed and read out.
        """
        row = self._analysis_row(analysis_id)
        if row is None:
            return None
        statuses = base.STATUSES
        if not (all(type(v) is str for v in (*row[:3], row[5])) and row[2] in statuses and row[3] in (None, *statuses)
                and (row[4] is None or type(row[4]) is str)):  # fmt: skip
            raise StoreCorrupt(f"store {self._path}: damaged analysis row {analysis_id!r}",
                               details={"store": self._path, "analysis": analysis_id})  # fmt: skip
        return AnalysisRow(*row)

    def analysis_ids(self) -> list[str]:
        ids = [
            r[0]
            for r in self._q(
                "SELECT analysis_id FROM analyses ORDER BY analysis_id" + self.id_order
            )
        ]
        damaged = [i for i in ids if type(i) is not str]
        if damaged:
            raise StoreCorrupt(f"store {self._path}: damaged analysis row (ID {damaged[0]!r} is not text)",
                               details={"store": self._path})  # fmt: skip
        return ids

    def insert_analysis(self, row: AnalysisRow) -> None:
        self._write(
            "insert_analysis",
            "INSERT INTO analyses VALUES (?, ?, ?, ?, ?, ?)",
            (
                row.analysis_id,
                row.encoder,
                row.status,
                row.prior_status,
                row.termination_reason,
                row.created_at,
            ),
        )

    def set_status(
        self, analysis_id: str, status: str, prior_status: str | None, reason: str | None
    ) -> None:
        self._write(
            "set_status",
            "UPDATE analyses SET status = ?, prior_status = ?, termination_reason = ? WHERE analysis_id = ?",
            (status, prior_status, reason, analysis_id),
        )

    def set_encoder(self, analysis_id: str, encoder: str) -> None:
        """The encoder of the analysis's next requests (a `budget` event moves it to a larger budget)."""
        self._write(
            "set_encoder",
            "UPDATE analyses SET encoder = ? WHERE analysis_id = ?",
            (encoder, analysis_id),
        )

    def append_event(self, analysis_id: str, kind: str, at: str, data: bytes) -> int:
        last = self._q(
            "SELECT max(seq) FROM events WHERE analysis_id = ?", (analysis_id,)
        ).fetchone()[0]
        if last is not None and type(last) is not int:
            raise StoreCorrupt(f"store {self._path}: the event log of {analysis_id} has a misnumbered event ({last!r})",
                               details={"store": self._path, "analysis": analysis_id, "seq": last})  # fmt: skip
        seq = (last or 0) + 1
        self._write(
            "append_event",
            "INSERT INTO events (analysis_id, seq, kind, at, data) VALUES (?, ?, ?, ?, ?)",
            (analysis_id, seq, kind, at, data.decode()),
        )
        return seq

    def events(self, analysis_id: str, upto: int | None = None, after: int = 0) -> list[EventRow]:
        """The events with `after` < seq <= `upto`, in order; a gap in their numbering is `store_corrupt`."""
        rows = self._q(
            "SELECT seq, kind, at, data FROM events WHERE analysis_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (analysis_id, after, upto if upto is not None else _NO_LIMIT_SEQ),
        ).fetchall()
        out = []
        for i, (seq, kind, at, data) in enumerate(rows, after + 1):
            where = {"store": self._path, "analysis": analysis_id, "seq": seq}
            if seq != i or type(seq) is not int:
                raise StoreCorrupt(f"store {self._path}: the event log of {analysis_id} has a gap or a misnumbered "
                                   f"event at {i} (found {seq!r})", details=where)  # fmt: skip
            if not (type(kind) is str and type(at) is str and type(data) is str):
                found = ", ".join(
                    f"{n} {type(v).__name__}"
                    for n, v in (("kind", kind), ("at", at), ("data", data))
                )
                raise StoreCorrupt(f"store {self._path}: event {seq} of {analysis_id} is damaged (not text: {found})",
                                   details=where)  # fmt: skip
            out.append(EventRow(seq, kind, at, data.encode()))
        return out

    def snapshot(self, analysis_id: str) -> tuple[int, bytes] | None:
        """The analysis's latest snapshot: (the last event it reflects, its data)."""
        if not self._snapshots:
            return None
        row = self._q(
            "SELECT seq, data FROM snapshots WHERE analysis_id = ?", (analysis_id,)
        ).fetchone()
        if row is None:
            return None
        if type(row[0]) is not int or not isinstance(row[1], bytes):
            raise StoreCorrupt(f"store {self._path}: the snapshot row of {analysis_id} is damaged",
                               details={"store": self._path, "analysis": analysis_id})  # fmt: skip
        return row[0], row[1]

    def put_snapshot(self, analysis_id: str, seq: int, data: bytes) -> None:
        """Replace the analysis's snapshot (only the latest is kept: the log holds the rest)."""
        self._write("put_snapshot", "INSERT INTO snapshots (analysis_id, seq, data) VALUES (?, ?, ?)"
                    " ON CONFLICT (analysis_id) DO UPDATE SET seq = excluded.seq, data = excluded.data",
                    (analysis_id, seq, data))  # fmt: skip

    def put_payload(self, payload: Payload) -> str:
        data = canonical_json(payload)
        digest = hash_bytes(data)
        self._write(
            "put_payload",
            "INSERT INTO payloads (hash, data) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (digest, data),
        )
        return digest

    def _payload_rows(self, hashes: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """(hash, bytes) of the payloads with these content hashes, read in batches, each checked against its hash.

        A payload not stored as bytes, altered, or missing is `store_corrupt`.
        """
        # In key order: each batch is then one range of the payload index, read much faster than
        # hashes in the state's order, which land all over it.
        wanted = sorted(set(hashes))
        found: set[str] = set()
        for start in range(0, len(wanted), PAYLOAD_BATCH):
            batch = wanted[start : start + PAYLOAD_BATCH]
            marks = ", ".join("?" * len(batch))
            for digest, data in self._q(
                f"SELECT hash, data FROM payloads WHERE hash IN ({marks})", batch
            ):
                if not isinstance(data, bytes):
                    raise StoreCorrupt(f"store {self._path}: payload {digest} is not stored as bytes ({type(data).__name__})",
                                       details={"store": self._path, "payload": digest})  # fmt: skip
                if hash_bytes(data) != digest:
                    raise StoreCorrupt(f"store {self._path}: payload {digest} does not match its hash",
                                       details={"store": self._path})  # fmt: skip
                found.add(digest)
                yield digest, data
        missing = [h for h in wanted if h not in found]
        if missing:
            raise StoreCorrupt(
                f"store {self._path}: payload {missing[0]} is missing",
                details={"store": self._path},
            )

    def payloads(self, hashes: Iterable[str]) -> dict[str, Payload]:
        """The payloads with these content hashes, read in batches; a missing or altered one is `store_corrupt`."""
        out: dict[str, Payload] = {}
        for digest, data in self._payload_rows(hashes):
            try:
                out[digest] = _PAYLOAD_DECODER.decode(data)
            except msgspec.DecodeError as exc:
                raise self._corrupt(f"payload {digest}", exc) from None
        return out

    def check_payloads(self, hashes: Iterable[str]) -> None:
        """Check that the payloads with these hashes are stored and hash right, without decoding them.

        What a call that needs the state but not its payloads (`submit`, `record`) pays so
        that a damaged payload row is refused by it as by `show` or `next`: reading the bytes
        and an xxh3 hash of them, several times cheaper than decoding them.
        """
        for _ in self._payload_rows(hashes):
            pass

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

    def abandon_open_requests(self, analysis_id: str) -> None:
        """Mark the analysis's open request abandoned without reading its row (which may no longer validate)."""
        self._write(
            "set_request_status",
            "UPDATE requests SET status = 'abandoned' WHERE analysis_id = ? AND status = 'open'",
            (analysis_id,),
        )

    def _requests(self, where: str, args: tuple) -> list[RequestRecord]:
        rows = self._q(f"SELECT {REQUEST_COLUMNS} FROM requests WHERE {where}", args).fetchall()
        out = []
        for r in rows:
            at = {"analysis": r[0], "request_id": r[2]}
            try:
                manifest = MANIFEST_DECODER.decode(r[5])
            except (msgspec.DecodeError, TypeError) as exc:
                raise self._corrupt(f"manifest of request {r[2]!r}", exc, **at) from None
            out.append(
                self._checked(
                    RequestRecord, (*r[:5], manifest, *r[6:]), f"request row {r[2]!r}", **at
                )
            )
        return out

    def open_request(self, analysis_id: str) -> RequestRecord | None:
        """The analysis's open request (at most one, by a unique partial index)."""
        rows = self._requests("analysis_id = ? AND status = 'open'", (analysis_id,))
        if len(rows) > 1:
            ids = [r.request_id for r in rows]
            raise StoreCorrupt(f"store {self._path}: analysis {analysis_id} has {len(rows)} open requests ({', '.join(ids)})",
                               details={"store": self._path, "analysis": analysis_id, "open_requests": ids})  # fmt: skip
        return rows[0] if rows else None

    def request(self, analysis_id: str, request_id: str) -> RequestRecord | None:
        rows = self._requests("analysis_id = ? AND request_id = ?", (analysis_id, request_id))
        return rows[0] if rows else None

    def request_count(self, analysis_id: str) -> int:
        """How many requests the analysis has had (they are numbered from 1 without gaps)."""
        return (
            self._q(
                "SELECT max(number) FROM requests WHERE analysis_id = ?", (analysis_id,)
            ).fetchone()[0]
            or 0
        )

    def requests(self, analysis_id: str) -> list[RequestRecord]:
        return self._requests("analysis_id = ? ORDER BY number", (analysis_id,))

    def insert_action(self, row: ActionRow) -> None:
        self._write(
            "insert_action",
            "INSERT INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.analysis_id,
                row.action_id,
                row.hypothesis,
                row.request_id,
                row.iteration,
                row.source,
                row.query,
                row.purpose,
                row.status,
                row.evidence_id,
            ),
        )

    def set_action_recorded(self, analysis_id: str, action_id: str, evidence_id: str) -> None:
        self._write(
            "set_action_recorded",
            "UPDATE actions SET status = 'recorded', evidence_id = ? WHERE analysis_id = ? AND action_id = ?",
            (evidence_id, analysis_id, action_id),
        )

    def action(self, analysis_id: str, action_id: str) -> ActionRow | None:
        row = self._q(f"SELECT {ACTION_COLUMNS} FROM actions WHERE analysis_id = ? AND action_id = ?",
                              (analysis_id, action_id)).fetchone()  # fmt: skip
        return self._action(row) if row else None

    def _action(self, row: tuple) -> ActionRow:
        return self._checked(
            ActionRow, row, f"action row {row[1]!r}", analysis=row[0], action=row[1]
        )

    def pending_actions(self, analysis_id: str) -> list[ActionRow]:
        """The analysis's pending actions in ID order (by the partial index `actions_pending`)."""
        rows = self._q(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE analysis_id = ? AND status = 'pending' ORDER BY action_id"
            + self.id_order,
            (analysis_id,),
        ).fetchall()
        return [self._action(r) for r in rows]

    def actions(self, analysis_id: str) -> list[ActionRow]:
        rows = self._q(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE analysis_id = ? ORDER BY action_id"
            + self.id_order,
            (analysis_id,),
        ).fetchall()
        return [self._action(r) for r in rows]
