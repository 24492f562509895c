"""A throwaway PostgreSQL server for the test session: initdb in a temp dir, a private unix socket.

The server refuses to run as root, so under root it runs as the `postgres` user (Debian's
package creates it) through `runuser`. It listens on no TCP port, only on a socket in its own
directory, and is stopped when the session ends. Every test gets a fresh database.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile

HOW_TO_GET_IT = ("PostgreSQL is not available: install it (Debian/Ubuntu: apt-get install postgresql; "
                 "initdb and pg_ctl must be on PATH or in /usr/lib/postgresql/*/bin) and psycopg 3 "
                 "(pip install -e '.[test]')")  # fmt: skip


def find_bin(name: str) -> str | None:
    """`name` on PATH, else in the newest Debian PostgreSQL directory."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def missing() -> str | None:
    """Why a server cannot be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return HOW_TO_GET_IT + " (psycopg is not installed)"
    if not (find_bin("initdb") and find_bin("pg_ctl")):
        return HOW_TO_GET_IT + " (no initdb/pg_ctl)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return HOW_TO_GET_IT + " (running as root without runuser)"
    return None


class Server:
    """One running PostgreSQL server; `database()` hands out fresh databases by URL."""

    def __init__(self, durable: bool = False) -> None:
        self.dir = tempfile.mkdtemp(prefix="ws-pg-")
        self._as = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.dir, "data")
        self._run(
            find_bin("initdb"),
            "-D",
            self.data,
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )
        # fsync off for the tests: a throwaway server; durability is the engine's, not what they check.
        # The workers benchmark asks for a durable one (PostgreSQL's defaults: fsync, synchronous_commit).
        options = f"-k {self.dir} -c listen_addresses='' -c max_connections=200" + (
            "" if durable else " -c fsync=off"
        )
        self.options = options
        self.start()
        self._names = itertools.count(1)
        self.admin = self.url("postgres")

    def _run(self, *cmd: str) -> None:
        subprocess.run(
            [*self._as, *cmd], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.dir}"

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def copy(self, url: str) -> str:
        """A new database holding what the database at `url` holds (no one may be connected to it)."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {url.split('/')[3].split('?')[0]}")
        return self.url(name)

    def drop(self, url: str) -> None:
        import psycopg

        name = url.split("/")[3].split("?")[0]
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def start(self) -> None:
        """Start the server (again, after `halt`) with its options."""
        log = os.path.join(self.dir, "log")
        self._run(find_bin("pg_ctl"), "-D", self.data, "-o", self.options, "-l", log, "-w", "start")

    def halt(self) -> None:
        """Stop the server at once (every connection dropped), keeping its data for `start`."""
        self._run(find_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop")

    def restart(self) -> None:
        """Stop the server at once (every connection dropped) and start it again with the same options."""
        self._run(find_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "restart")

    def stop(self) -> None:
        try:
            self._run(find_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def dump(url: str, answers: bool = True) -> str:
    """Every row of every workingset table, in key order: equal dumps mean nothing was written.

    `answers=False` leaves out the `answer` events (kept for every submission, rejected ones too).
    """
    import psycopg

    keys = {"schema_version": "version", "analyses": "analysis_id", "events": "analysis_id, seq",
            "payloads": "hash", "requests": "analysis_id, number", "actions": "analysis_id, action_id",
            "snapshots": "analysis_id"}  # fmt: skip
    out = []
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('schema_version')").fetchone()[0] is None:
            return ""  # no store created yet
        for table, key in keys.items():
            out.append(f"-- {table}")
            rows = conn.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
            out += [repr(r) for r in rows if answers or table != "events" or r[2] != "answer"]
    return "\n".join(out)
