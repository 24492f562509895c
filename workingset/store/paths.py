"""Where a store lives: the `--store` scheme check, the file checks before SQLite opens it, read-only opening.

These run before SQLite sees a path, so that a FIFO, socket or device is refused at once
(SQLite would block on a FIFO), a URL of a scheme no backend serves is not taken for a
file name, and commands that only read never write to the store file (nor create it).
"""

from __future__ import annotations

import errno
import math
import os
import re
import sqlite3
from collections.abc import Sequence
from urllib.parse import quote, unquote

from ..errors import SessionError, StoreCorrupt, UsageError, WorkingsetError
from ..io.files import describe, os_code, special_kind

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
BUSY_TIMEOUT = (
    30.0  # seconds a call waits for another process's lock; $WORKINGSET_BUSY_TIMEOUT overrides
)
BUSY_TIMEOUT_MAX = 3600.0
# Schemes of `--store` URLs that a backend serves; anything else that looks like a URL is refused.
SERVED_SCHEMES: tuple[str, ...] = ("postgresql", "postgres")


# libpq's connection keywords (its documentation, "Parameter Key Words"): a `--store` whose first
# `key=value` names one is a PostgreSQL connection string, not a file name.
LIBPQ_KEYWORDS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode", "requiressl",
    "sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode",
    "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version",
    "ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service",
    "target_session_attrs", "load_balance_hosts",
})  # fmt: skip
_CONNINFO_KEY = re.compile(r"^\s*([A-Za-z_]+)\s*=")


def is_conninfo(store: str) -> bool:
    """Whether `store` is a libpq `key=value …` connection string: its first key is a libpq keyword."""
    match = _CONNINFO_KEY.match(store)
    return match is not None and match.group(1) in LIBPQ_KEYWORDS


def store_scheme(url: str, served: tuple[str, ...] | None = None) -> str | None:
    """The scheme of a store URL that a backend serves (`postgresql`), or None for a file path.

    A libpq connection string (`host=… dbname=…`, `is_conninfo`) is `postgresql` when that
    scheme is served. A `scheme://…` of a scheme not in `served` (default `SERVED_SCHEMES`) is
    `usage_error` naming the schemes served; so is an empty path, and a URL whose user or
    password holds a raw `@` (libpq ends the user part at the first `@` and takes the rest for
    the host, so the rest of the password would reach a message as a host name).
    """
    if served is None:
        served = SERVED_SCHEMES
    if not url:
        raise UsageError("the store path is empty; give a file path" + _served(served))
    if is_conninfo(url) and "postgresql" in served:
        return "postgresql"
    match = _URL.match(url)
    if match is None:
        return None
    scheme = match.group(1).lower()
    shown = redact(url)
    if scheme not in served:
        raise UsageError(f"store {shown!r}: the scheme {scheme}:// is not served; give a file path" + _served(served),
                         details={"store": shown, "served": list(served)})  # fmt: skip
    if _AUTHORITY.match(url)[1].count("@") > 1:  # type: ignore[index]
        raise UsageError(f"store {shown!r}: its user or password holds a raw @; write it as %40",
                         details={"store": shown})  # fmt: skip
    return scheme


# A URL's authority (up to the path, query or fragment); its userinfo (everything before the
# authority's last `@`: a raw `@` in a password is refused, but never echoed); the value of every
# query parameter naming a password (libpq's `password=`, `sslpassword=`); in a connection string,
# every `…password=` value, quoted or not.
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)@")
_PASSWORD_PARAM = re.compile(r"([?&][^=&#]*password=)([^&#]*)", re.IGNORECASE)
_CONNINFO_PASSWORD = re.compile(
    r"(\b[a-z]*password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s']*)", re.IGNORECASE
)


def redact(url: str) -> str:
    """The store for messages and details: its userinfo password and every `…password=` value as `***`."""
    if is_conninfo(url):
        return _CONNINFO_PASSWORD.sub(r"\1***", url)

    def userinfo(m: re.Match[str]) -> str:
        user, colon, _password = m.group(2).partition(":")
        return f"{m.group(1)}{user}{':***' if colon else ''}@"

    return _PASSWORD_PARAM.sub(r"\1***", _USERINFO.sub(userinfo, url, count=1))


def url_secrets(url: str) -> list[str]:
    """The passwords a store URL or connection string holds, as written and decoded, longest first: what a message must not echo."""
    if is_conninfo(url):
        found = [m.group(2) for m in _CONNINFO_PASSWORD.finditer(url)]
        found += [f.strip("'").replace("\\'", "'").replace("\\\\", "\\") for f in found]
    else:
        found = [m.group(2) for m in _PASSWORD_PARAM.finditer(url)]
        if (m := _USERINFO.match(url)) and ":" in m.group(2):
            found.append(m.group(2).partition(":")[2])
        found += [unquote(secret) for secret in found]
    return sorted({secret for secret in found if secret}, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` as one clean line (a driver's tabs and newlines folded to spaces), each secret in it as `***`.

    A secret is replaced where it stands as a whole word (not between two letters or digits), so
    that a short password hides itself without turning every such letter of the message to
    `***`; a driver that echoes a password echoes it whole, after `=`, `:` or a quote.
    """
    for secret in secrets:
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    return " ".join(text.split())


def _served(served: tuple[str, ...]) -> str:
    return (
        f" or a URL of {', '.join(s + '://' for s in served)}"
        if served
        else " (no URL schemes are served)"
    )


def check_busy_timeout(value: float, name: str) -> float:
    """A busy timeout in seconds: finite, from 0 to `BUSY_TIMEOUT_MAX`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= BUSY_TIMEOUT_MAX
    ):
        raise UsageError(
            f"{name} must be a number of seconds from 0 to {BUSY_TIMEOUT_MAX:g}, not {value!r}"
        )
    return float(value)


def busy_timeout_seconds() -> float:
    """How long a call waits for another process's lock: `$WORKINGSET_BUSY_TIMEOUT` seconds, else `BUSY_TIMEOUT`."""
    raw = os.environ.get("WORKINGSET_BUSY_TIMEOUT")
    if raw is None or not raw.strip():
        return BUSY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(
            f"WORKINGSET_BUSY_TIMEOUT must be a number of seconds, not {raw!r}"
        ) from None
    return check_busy_timeout(value, "WORKINGSET_BUSY_TIMEOUT")


def _unavailable(path: str, exc: OSError) -> WorkingsetError:
    return WorkingsetError(f"cannot read store {path} ({describe(exc)})", code="store_unavailable",
                           details={"store": path, "reason": os_code(exc)})  # fmt: skip


def check_store_file(path: str, create: bool) -> bool:
    """Whether the store file exists, refusing what is not a regular file, without ever opening it.

    Only SQLite opens the store file. SQLite's locks are POSIX advisory locks, which a process
    holds per file, not per descriptor: closing any other descriptor of the file releases every
    lock the process holds on it, so a plain open and close here, beside a store the process
    already has open, would let another process delete the write-ahead log under it (SQLite's
    "How To Corrupt Your Database Files", 2.2). So the checks use `stat` alone, and SQLite reads
    the header (`SQLITE_NOTADB`: not a SQLite file). A FIFO, socket, device or directory is
    `store_corrupt` at once (SQLite would block on a FIFO). A missing file is created later by
    SQLite when `create` (its directory is made here), else `unknown_analysis`.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as exc:
        if not create:
            raise SessionError(
                f"no store at {path}", code="unknown_analysis", details={"store": path}
            ) from None
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as mk:
            raise _unavailable(path, mk) from None
        if os.path.islink(path):  # a dangling link: SQLite would create its target somewhere else
            raise _unavailable(path, exc) from None
        return False
    except ValueError:  # a NUL byte in the path: the same failure as any other bad path
        raise _unavailable(
            path, OSError(errno.EINVAL, "a path cannot hold a NUL byte", path)
        ) from None
    except OSError as exc:
        raise _unavailable(path, exc) from None
    kind = special_kind(mode)
    if kind is not None:
        raise StoreCorrupt(
            f"{path} is not a workingset store: it is {kind}, not a regular file",
            details={"store": path},
        )
    return True


def on_read_only_medium(path: str) -> bool:
    """Whether the file system holding `path` is mounted read-only."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def connect_read_only(path: str, timeout: float) -> sqlite3.Connection:
    """Open the store for reading only (`mode=ro`); on read-only media where that fails, `immutable=1`.

    SQLite never writes the store file through such a connection. Reading a WAL database
    needs its `-shm` index, which on a writable medium SQLite creates beside the file (as
    for any reader). On a read-only medium without one, the file is read as immutable,
    which is exact only when no write-ahead log holds changes not yet in the file: a
    non-empty `-wal` there is `store_unavailable` rather than a silently older state.
    """
    uri = "file:" + quote(os.fsencode(os.path.abspath(path)))
    try:
        conn = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None, timeout=timeout)
        conn.execute(
            "SELECT count(*) FROM sqlite_master"
        ).fetchone()  # the open is lazy: fail here, not later
        return conn
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorname", "") != "SQLITE_CANTOPEN" or not on_read_only_medium(
            path
        ):
            raise
    try:
        wal = os.stat(path + "-wal").st_size
    except FileNotFoundError:
        wal = 0
    if wal:
        raise WorkingsetError(
            f"cannot read store {path} on a read-only medium: its write-ahead log {path}-wal holds changes that "
            "need the log's index (-shm) to read; copy the store with its -wal file to writable storage",
            code="store_unavailable", details={"store": path, "reason": "permission_denied", "errno": errno.errorcode[errno.EROFS]},
        )  # fmt: skip
    return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None, timeout=timeout)
