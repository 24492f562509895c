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

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import StoreCorrupt, UsageError, WorkingsetError
from . import interface as base
from .interface import StoreBase, Tx
from .paths import SERVED_SCHEMES, redact, scrub, store_scheme, url_secrets
from .sqltx import SNAPSHOTS_TABLE, TABLE_NAMES, TABLES, SqlTx

SCHEMES = SERVED_SCHEMES  # the URL schemes this backend serves
# Held while the schema is created, so that two first processes do not both create it.
_SCHEMA_LOCK = 0x57534554

_TRIGGERS = """
CREATE FUNCTION workingset_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN RAISE EXCEPTION 'the event log is append-only'; END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION workingset_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION workingset_append_only();
"""
_DIALECT = {"blob": "BYTEA", "without_rowid": ""}
_SCHEMA = TABLES.format(**_DIALECT) + SNAPSHOTS_TABLE.format(**_DIALECT) + _TRIGGERS


def is_url(store: str) -> bool:
    """Whether `store` names a PostgreSQL database (a URL with one of `SCHEMES`) rather than a file."""
    return store_scheme(store) in SCHEMES if store else False


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - a dependency, but say what to do if it is missing
        raise WorkingsetError("the PostgreSQL store needs psycopg 3: pip install 'psycopg[binary]'",
                              code="store_unavailable") from None  # fmt: skip
    return psycopg


def _translate(exc: Exception, where: str, secrets: Sequence[str] = ()) -> WorkingsetError:
    """The driver's error as ours, its message one line (libpq writes tabs and newlines) that echoes no password."""
    psycopg = _psycopg()
    details = {"store": where}
    said = scrub(str(exc), secrets)
    if isinstance(exc, (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected,
                        psycopg.errors.LockNotAvailable)):  # fmt: skip
        return WorkingsetError(
            f"store {where} is busy ({said}); retry", code="store_busy", details=details
        )
    if isinstance(
        exc,
        (psycopg.OperationalError, psycopg.errors.InsufficientPrivilege, psycopg.InterfaceError),
    ):
        return WorkingsetError(
            f"cannot use store {where}: {said}".strip(), code="store_unavailable", details=details
        )
    return StoreCorrupt(
        f"store {where} is damaged or not a workingset store ({said})", details=details
    )


def _url_secrets(url: str, where: str) -> list[str]:
    """The passwords of a URL, as written and as libpq reads them; a URL libpq cannot parse (`?bogus=1`, `%zz`)
    is the caller's mistake: `usage_error`, before any connection."""
    psycopg = _psycopg()
    secrets = url_secrets(url)
    try:
        parsed = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise UsageError(f"store {where} is not a valid PostgreSQL URL: {scrub(str(exc), secrets)}",
                         details={"store": where}) from None  # fmt: skip
    read = [str(value) for key, value in parsed.items() if "password" in key and value]
    return sorted(set(secrets + read), key=len, reverse=True)


def _upgradable(c: Any, tables: set[str]) -> int | None:
    """The version of an older store this one upgrades on open (`interface.UPGRADABLE`), else None."""
    if tables not in (TABLE_NAMES - {"snapshots"}, TABLE_NAMES):
        return None
    old = base.older_version(c.execute("SELECT version FROM schema_version").fetchall())
    return old if old is not None and ("snapshots" in tables) == (old >= 3) else None


class PostgresStore(StoreBase):
    """A workingset store in a PostgreSQL database (the tables in its default schema)."""

    def __init__(self, url: str, *, read_only: bool = False):
        psycopg = _psycopg()
        super().__init__(redact(url), read_only)  # messages name the URL, never its password
        self.url = url
        self._secrets = _url_secrets(url, self.path)
        self._open(lambda: psycopg.connect(url, autocommit=True), psycopg.Error, self._translate)

    def _translate(self, exc: Exception, where: str) -> WorkingsetError:
        return _translate(exc, where, self._secrets)

    def _setup(self) -> None:
        c = self._conn
        if self._current(c):
            return
        c.execute("BEGIN")
        try:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            tables = {
                r[0]
                for r in c.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                )
            }
            old = _upgradable(c, tables)
            if self.read_only and (not tables or old):
                self.empty, self.snapshots = not tables, old is not None and old >= 3
                c.execute("COMMIT")
                return
            if not tables:
                c.execute(_SCHEMA)
                c.execute(
                    "INSERT INTO schema_version (version) VALUES (%s)", (base.SCHEMA_VERSION,)
                )
            elif old:  # a version 2 store gains the (empty) snapshots table; nothing else changes
                if old == 2:
                    c.execute(SNAPSHOTS_TABLE.format(**_DIALECT))
                c.execute("UPDATE schema_version SET version = %s", (base.SCHEMA_VERSION,))
            elif tables != TABLE_NAMES:
                missing, other = sorted(TABLE_NAMES - tables), sorted(tables - TABLE_NAMES)
                # Most of the schema there but a table gone is a damaged store, not someone else's database.
                what = (
                    f"a damaged workingset store (its tables {', '.join(missing)} are missing)"
                    if missing and len(missing) < len(TABLE_NAMES) - 1
                    else f"not a workingset store (it has other tables: {', '.join(other[:5])})"
                )
                raise StoreCorrupt(
                    f"{self.path} is a PostgreSQL database but {what}", details={"store": self.path}
                )
            rows = c.execute("SELECT version FROM schema_version").fetchall()
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        if len(rows) != 1 or rows[0][0] != base.SCHEMA_VERSION:
            found = rows[0][0] if len(rows) == 1 else None
            raise StoreCorrupt(f"{self.path}: store schema version {found} is not {base.SCHEMA_VERSION}",
                               details={"store": self.path, "schema_version": found})  # fmt: skip

    @staticmethod
    def _current(c: Any) -> bool:
        """Whether the database holds a store of the current version and nothing else (one round trip, where it does)."""
        psycopg = _psycopg()
        try:
            rows = c.execute(
                "SELECT version, (SELECT array_agg(tablename::text) FROM pg_tables"
                " WHERE schemaname = current_schema()) FROM schema_version"
            ).fetchall()
        except psycopg.Error:  # no such table (yet): the full check below says what the database is
            return False
        return (
            len(rows) == 1 and rows[0][0] == base.SCHEMA_VERSION and set(rows[0][1]) == TABLE_NAMES
        )

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction: one consistent snapshot of the store."""
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", lock=False) as tx:
            yield tx

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction: everything in it commits together, or nothing does."""
        self._refuse_write()
        with self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED", lock=True) as tx:
            yield tx
            base._checkpoint("commit")
        base._checkpoint("committed")

    def _begin(self, begin: str) -> Any:
        """Begin a transaction; a connection lost since the last call (a server restart) is opened again, once.

        Nothing of this transaction has run before its BEGIN, so connecting again and beginning
        anew cannot apply anything twice. The kept states are dropped with the old connection:
        the next call replays from the store as it is now. A connection lost inside a
        transaction is not retried here: the call fails with `store_unavailable`, and the
        next call reconnects (docs/operations.md, "A long-running worker").
        """
        psycopg = _psycopg()
        try:
            self._conn.execute(begin)
            return self._conn
        except psycopg.Error as exc:
            if not (self._conn.broken or self._conn.closed):
                raise self._translate(exc, self.path) from None
        self.views.clear()
        try:
            self._conn.close()
        except psycopg.Error:  # pragma: no cover - closing a broken connection does not fail
            pass
        self._open(
            lambda: psycopg.connect(self.url, autocommit=True), psycopg.Error, self._translate
        )
        try:
            self._conn.execute(begin)
        except psycopg.Error as exc:
            raise self._translate(exc, self.path) from None
        return self._conn

    @contextmanager
    def _transaction(self, begin: str, lock: bool) -> Iterator[Tx]:
        psycopg = _psycopg()
        c = self._begin(begin)
        try:
            tx = _PgTx(c, self.path, lock, snapshots=self.snapshots)
            if not self.empty:
                tx.check_tables()
            yield tx
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, psycopg.errors.UniqueViolation) and "analyses_pkey" in str(exc):
                raise WorkingsetError(f"an analysis of that ID was created meanwhile in {self.path}",
                                      code="analysis_exists", details={"store": self.path}) from None  # fmt: skip
            if isinstance(exc, psycopg.Error):
                raise self._translate(exc, self.path) from None
            raise
        try:
            c.execute("COMMIT")
        except psycopg.Error as exc:
            self._rollback()
            raise self._translate(exc, self.path) from None

    def _rollback(self) -> None:
        psycopg = _psycopg()
        try:
            self._conn.execute("ROLLBACK")
        except psycopg.Error:
            pass  # the connection is gone: nothing was committed


class _PgTx(SqlTx):
    """The shared statements with psycopg's `%s` placeholders, a row lock and byte-order IDs."""

    id_order = ' COLLATE "C"'
    lock_clause = " FOR UPDATE"
    tables_sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    _converted: dict[str, str] = {}

    def _q(self, sql: str, args: tuple | list = ()) -> Any:
        pg = self._converted.get(sql)
        if pg is None:
            # No statement of ours has a literal `?` or `%`: the placeholders are all there is to change.
            pg = self._converted[sql] = sql.replace("?", "%s")
        # Binary results: a bytea (a payload, a snapshot) arrives as its bytes rather than as hex
        # text twice its size to parse; every other column type reads back the same.
        return self._c.execute(pg, args, binary=True)
