"""Plain SQL on a store of either backend, beside the library: for tests and benchmarks that inspect or damage one."""

from __future__ import annotations

import sqlite3


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
