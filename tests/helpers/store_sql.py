"""Plain SQL on a store of either backend, beside the library: for tests and benchmarks that inspect or damage one."""

from __future__ import annotations

import sqlite3

from workingset.session.investigation import Investigation
from workingset.store import SqliteStore
from workingset.store.sqltx import SqlTx


def query(store, sql: str) -> list[tuple]:
    """Rows of a query on either backend (its SQL common to both)."""
    if str(store).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store) as conn:
            return conn.execute(sql).fetchall()
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def execute(store, sql: str, args: tuple = ()) -> None:
    """Run and commit one statement on either backend (`?` placeholders)."""
    if str(store).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store) as conn:
            conn.execute(sql.replace("?", "%s"), args)
        return
    conn = sqlite3.connect(store)
    try:
        conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


class Reads:
    """Counts what the store hands out: event rows, payloads, SQL statements."""

    def __init__(self, monkeypatch):
        self.events = self.payloads = 0
        self.statements: list[str] = []
        events, payloads = SqlTx.events, SqlTx.payloads  # both backends' Tx

        def counted_events(tx, *args, **kw):
            rows = events(tx, *args, **kw)
            self.events += len(rows)
            return rows

        def counted_payloads(tx, hashes):
            out = payloads(tx, hashes)
            self.payloads += len(out)
            return out

        monkeypatch.setattr(SqlTx, "events", counted_events)
        monkeypatch.setattr(SqlTx, "payloads", counted_payloads)

    def watch(self, inv: Investigation) -> None:
        """Collect the SQL statements run on this handle's connection (SQLite only)."""
        if isinstance(inv.store, SqliteStore):
            inv.store._conn.set_trace_callback(self.statements.append)

    def reset(self) -> None:
        self.events = self.payloads = 0
        self.statements.clear()
