"""Token counts (and parsed vocabularies) kept on disk across processes, keyed by content.

`compare` tokenizes every rendered text of a run to count its tokens and the tokens it
shares with the previous text of the same strategy. Both numbers depend only on the
encoding and the texts, so they are kept in a small SQLite file under the user's cache
directory and a later `compare` (of the same run, or of another run sharing texts) reads
them instead of tokenizing:

- `counts(encoding, hash) -> tokens` for a text,
- `prefixes(encoding, previous hash, hash) -> shared leading tokens` for a pair of texts,

where `hash` is the text's xxh3-128 content hash (the one its render already computed).
`compare` keeps a third table there, `billings(key) -> value`, each strategy's bills of a run
under one cache model (`workingset.compare.billed` says what the key holds and checks a value).

Where: `$WORKINGSET_CACHE_DIR`, else `$XDG_CACHE_HOME/workingset`, else
`~/.cache/workingset`; the file is `tokens.sqlite3`. Off: `WORKINGSET_CACHE=off` (or
`compare --no-token-cache`). Safe for concurrent processes (SQLite locking, WAL journal,
writes batched in one short transaction, `INSERT OR IGNORE`: two processes that computed
the same entry wrote the same value). A damaged entry (not a non-negative integer, or a
prefix longer than its text) is ignored and recomputed; a file that is not a readable
SQLite database is moved aside and started afresh; any other failure of the cache turns it
off for the process. The cache never changes a result, only how fast it comes.

The parsed vocabulary of each offline encoding is kept there too (`vocabulary`).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

FILE = "tokens.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS counts (encoding TEXT NOT NULL, hash TEXT NOT NULL, tokens INTEGER NOT NULL,"
    " PRIMARY KEY (encoding, hash)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS prefixes (encoding TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL,"
    " tokens INTEGER NOT NULL, PRIMARY KEY (encoding, prev, hash)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS billings (key TEXT NOT NULL PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID",
)


def cache_dir() -> Path:
    """The user cache directory of workingset (see the module docstring)."""
    explicit = os.environ.get("WORKINGSET_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "workingset"


def enabled() -> bool:
    """Whether the on-disk cache is on (`WORKINGSET_CACHE=off` turns it off)."""
    return os.environ.get("WORKINGSET_CACHE", "").strip().lower() not in ("off", "0", "no", "false")


def _valid(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class TokenCache:
    """Token counts and shared prefixes by content hash, read from and written to one file."""

    def __init__(self, path: Path | None):
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._counts: dict[tuple[str, str], int] = {}
        self._prefixes: dict[tuple[str, str, str], int] = {}
        self._billings: dict[str, bytes] = {}
        if path is not None:
            self._open(path)

    @classmethod
    def default(cls, use: bool = True) -> TokenCache:
        """The cache in the user cache directory, or a cache that keeps nothing when off."""
        return cls(cache_dir() / FILE if use and enabled() else None)

    def _open(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(path)
        except sqlite3.DatabaseError:
            try:  # not a database (or damaged beyond reading): keep it aside, start afresh
                os.replace(path, path.with_name(path.name + ".damaged"))
                self._db = self._connect(path)
            except (OSError, sqlite3.Error):
                self._db = None
        except (OSError, sqlite3.Error):
            self._db = None

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("SELECT count(*) FROM counts LIMIT 1").fetchone()
        except sqlite3.Error:
            db.close()
            raise
        return db

    @property
    def active(self) -> bool:
        """Whether entries are read from and written to disk."""
        return self._db is not None

    def _query(self, sql: str, args: tuple) -> object:
        if self._db is None:
            return None
        try:
            row = self._db.execute(sql, args).fetchone()
        except sqlite3.Error:
            self._db = None  # a cache that fails is no cache; results are computed instead
            return None
        return row[0] if row else None

    def count(self, encoding: str, digest: str) -> int | None:
        """The stored token count of a text, or None."""
        value = self._query(
            "SELECT tokens FROM counts WHERE encoding = ? AND hash = ?", (encoding, digest)
        )
        return value if _valid(value) else None  # type: ignore[return-value]

    def prefix(self, encoding: str, prev: str, digest: str, limit: int) -> int | None:
        """The stored shared prefix of two texts, or None; never more than `limit` tokens."""
        value = self._query(
            "SELECT tokens FROM prefixes WHERE encoding = ? AND prev = ? AND hash = ?",
            (encoding, prev, digest),
        )
        return value if _valid(value) and value <= limit else None  # type: ignore[operator,return-value]

    def billing(self, key: str) -> bytes | None:
        """The stored value of a billing key, or None (its caller checks it)."""
        value = self._query("SELECT value FROM billings WHERE key = ?", (key,))
        return value if isinstance(value, bytes) else None

    def put_billing(self, key: str, value: bytes) -> None:
        """Remember a billing (written at `flush`, replacing a damaged one)."""
        if self._db is not None:
            self._billings[key] = value

    def put_count(self, encoding: str, digest: str, tokens: int) -> None:
        """Remember a count (written at `flush`)."""
        if self._db is not None:
            self._counts[(encoding, digest)] = tokens

    def put_prefix(self, encoding: str, prev: str, digest: str, tokens: int) -> None:
        """Remember a shared prefix (written at `flush`)."""
        if self._db is not None:
            self._prefixes[(encoding, prev, digest)] = tokens

    def flush(self) -> None:
        """Write what was remembered in one transaction (other processes wait at most seconds)."""
        if self._db is None or not (self._counts or self._prefixes or self._billings):
            return
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT OR IGNORE INTO counts VALUES (?, ?, ?)",
                    [(*k, v) for k, v in self._counts.items()],
                )
                self._db.executemany(
                    "INSERT OR IGNORE INTO prefixes VALUES (?, ?, ?, ?)",
                    [(*k, v) for k, v in self._prefixes.items()],
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO billings VALUES (?, ?)", list(self._billings.items())
                )
        except sqlite3.Error:
            self._db = None
        self._counts.clear()
        self._prefixes.clear()
        self._billings.clear()

    def close(self) -> None:
        """Flush and close the file."""
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None


class _Vocabulary(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    pat_str: str
    special_tokens: dict[str, int]
    mergeable_ranks: list[tuple[bytes, int]]


def vocabulary(key: str, build: Callable[[], dict[str, Any]], use: bool = True) -> dict[str, Any]:
    """An encoding's parsed vocabulary (tiktoken `Encoding` arguments), kept on disk as msgpack.

    Parsing a bundled vocabulary (reading, checking its SHA-256 and decoding 100k base64
    lines) takes a few tenths of a second in every process; reading the parsed form back
    takes about a third of that. `key` names the encoding and the package version that
    bundles it; a missing or damaged file is rebuilt, written atomically (a temporary file
    renamed into place), so concurrent processes never read a half-written one.
    """
    path = cache_dir() / f"vocabulary-{key}.msgpack"
    if use and enabled():
        try:
            parsed = msgspec.msgpack.decode(path.read_bytes(), type=_Vocabulary)
            return {
                "name": parsed.name, "pat_str": parsed.pat_str, "special_tokens": parsed.special_tokens,
                "mergeable_ranks": dict(parsed.mergeable_ranks),
            }  # fmt: skip
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            pass  # absent or damaged: parse it again below
    built = build()
    if use and enabled():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = msgspec.msgpack.encode(_Vocabulary(
                name=built["name"], pat_str=built["pat_str"], special_tokens=dict(built["special_tokens"]),
                mergeable_ranks=list(built["mergeable_ranks"].items()),
            ))  # fmt: skip
            with tempfile.NamedTemporaryFile(
                dir=path.parent, prefix=path.name, suffix=".tmp", delete=False
            ) as tmp:
                tmp.write(data)
            os.replace(tmp.name, path)
        except (OSError, KeyError, TypeError):
            pass  # an unwritable cache costs speed only
    return built
