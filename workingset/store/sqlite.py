"""The embedded default store: one SQLite file in WAL mode (stdlib, no server).

Every write happens inside one `BEGIN IMMEDIATE` transaction: the change, its event and its
index rows commit together or not at all, and two writers serialize, so the second one sees
the first one's result (a submission to an answered request is then `stale_request`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import StoreCorrupt, WorkingsetError
from . import interface as base
from .interface import SCHEMA_VERSION, StoreBase, Tx, older_version
from .paths import (
    busy_timeout_seconds,
    check_busy_timeout,
    check_store_file,
    connect_read_only,
    on_read_only_medium,
    store_scheme,
)  # fmt: skip
from .sqltx import SNAPSHOTS_TABLE, TABLES, SqlTx, statements

APPLICATION_ID = 0x57534554  # "WSET" in the SQLite header: tells our files from others
PAGE_SIZE = 1024

_TRIGGERS = """
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"""
_DIALECT = {"blob": "BLOB", "without_rowid": " WITHOUT ROWID"}
_SCHEMA = TABLES.format(**_DIALECT) + SNAPSHOTS_TABLE.format(**_DIALECT) + _TRIGGERS


def _translate(exc: sqlite3.Error, path: str) -> WorkingsetError:
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB":  # SQLite read the header (`check_store_file` never opens the file)
        return StoreCorrupt(
            f"{path} is not a workingset store (not a SQLite file)", details={"store": path}
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return WorkingsetError(f"store {path} stayed locked by another process for the whole busy timeout ({exc}); "
                               "retry, or set $WORKINGSET_BUSY_TIMEOUT", code="store_busy", details={"store": path})  # fmt: skip
    if name.startswith(
        ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM")
    ):
        hint = (
            "; it is on a read-only file system, where only show and export work"
            if on_read_only_medium(path)
            else ""
        )
        return WorkingsetError(
            f"cannot use store {path}: {exc}{hint}",
            code="store_unavailable",
            details={"store": path},
        )
    return StoreCorrupt(
        f"store {path} is damaged or not a workingset store ({exc})", details={"store": path}
    )


class SqliteStore(StoreBase):
    """The embedded default store: one SQLite file in WAL mode.

    `create=False` never creates the file or the schema (an empty file then holds no
    analyses: `self.empty`); `read_only=True` also opens the file read-only (see
    `connect_read_only`). `busy_timeout` is how long, in seconds, a call waits for another
    process's lock before `store_busy` (default `busy_timeout()`).
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, read_only: bool = False,
                 busy_timeout: float | None = None):  # fmt: skip
        super().__init__(os.fspath(path), read_only)
        store_scheme(self.path)
        timeout = (
            busy_timeout_seconds()
            if busy_timeout is None
            else check_busy_timeout(busy_timeout, "busy_timeout")
        )
        self.busy_timeout = timeout
        self._create = create and not read_only
        check_store_file(self.path, create=self._create)  # never opened but by SQLite

        def connect() -> sqlite3.Connection:
            if read_only:
                return connect_read_only(self.path, timeout)
            return sqlite3.connect(self.path, isolation_level=None, timeout=timeout)

        self._open(connect, sqlite3.Error, _translate)

    def _setup(self) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        app_id = c.execute("PRAGMA application_id").fetchone()[0]
        tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == 0 and tables == 0:
            if not self._create:
                self.empty = True
                return
            self._create_schema()
        elif app_id != APPLICATION_ID:
            raise StoreCorrupt(
                f"{self.path} is a SQLite file but not a workingset store",
                details={"store": self.path},
            )
        if not self.read_only:
            c.execute("PRAGMA foreign_keys = ON")
            c.execute("PRAGMA synchronous = FULL")
        row = c.execute("SELECT version FROM schema_version").fetchall()
        old = older_version(row)
        if old is not None:
            if self.read_only:  # readable as it is; the first writer upgrades it
                self.snapshots = old >= 3
                return
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
                for statement in statements(_SCHEMA):
                    c.execute(statement)
                c.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def _upgrade(self) -> None:
        """To the current version: a version 2 store gains the (empty) snapshots table; nothing else changes."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            old = older_version(c.execute("SELECT version FROM schema_version").fetchall())
            if old is not None:  # not upgraded meanwhile by another process
                if old == 2:
                    c.execute(statements(SNAPSHOTS_TABLE.format(**_DIALECT))[0])
                c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction: one consistent snapshot of the store."""
        with self._transaction("BEGIN") as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction: everything in it commits together, or nothing does."""
        self._refuse_write()
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
            tx = SqlTx(c, self.path, snapshots=self.snapshots)
            if not self.empty:
                tx.check_tables()
            yield tx
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
