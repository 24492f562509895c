"""Persistence behind one small interface (`interface.Store`, `interface.Tx`): SQLite by default, PostgreSQL by URL.

`open_store(target)` opens either: a `postgresql://` (or `postgres://`) URL is a database
(`postgres.PostgresStore`), anything else a SQLite file (`sqlite.SqliteStore`, created on
first use). Both keep the same tables and give the same guarantees (one transaction per call,
an append-only event log, payloads stored once by content hash, writers on one analysis
serialized); see each module for how.
"""

from __future__ import annotations

import os

from .interface import (
    ACTION_COLUMNS,
    REQUEST_COLUMNS,
    SCHEMA_VERSION,
    UPGRADABLE,
    ActionRow,
    AnalysisRow,
    EventRow,
    Manifest,
    RequestRecord,
    RequestRow,
    Status,
    Store,
    Tx,
    _checkpoint,
)  # fmt: skip
from .postgres import PostgresStore, is_url, redact
from .sqlite import APPLICATION_ID, SqliteStore


def open_store(target: str | os.PathLike[str]) -> SqliteStore | PostgresStore:
    """Open a store: a `postgresql://` URL, or else a SQLite file path (created on first use)."""
    path = os.fspath(target)
    return PostgresStore(path) if is_url(path) else SqliteStore(path)


__all__ = [
    "ACTION_COLUMNS",
    "APPLICATION_ID",
    "REQUEST_COLUMNS",
    "SCHEMA_VERSION",
    "UPGRADABLE",
    "ActionRow",
    "AnalysisRow",
    "EventRow",
    "Manifest",
    "PostgresStore",
    "RequestRecord",
    "RequestRow",
    "SqliteStore",
    "Status",
    "Store",
    "Tx",
    "_checkpoint",
    "is_url",
    "open_store",
    "redact",
]
