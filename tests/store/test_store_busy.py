"""A store locked by another process: a call waits the busy timeout (configurable), then `store_busy`; nothing changes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.os_helpers import cli, snapshot
from tests.helpers.session_helpers import state_bytes
from workingset.errors import WorkingsetError
from workingset.session.investigation import Investigation
from workingset.store import SqliteStore

pytestmark = pytest.mark.slow  # cross-process: another process holds the lock

HOLD = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
if sys.argv[2] == "exclusive":  # readers are locked out too
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("UPDATE analyses SET status = status")
else:  # a writer in the middle of a transaction
    conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store.sqlite3"
    Investigation.create(str(path), state_bytes()).close()
    return path


class Holder:
    """Another process holding the store's lock until released."""

    def __init__(self, path, mode: str):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        self.proc.communicate("\n", timeout=60)


def test_a_writer_waits_the_busy_timeout_then_store_busy(store, monkeypatch):
    holder = Holder(store, "immediate")
    try:
        before = snapshot(store)
        monkeypatch.setenv("WORKINGSET_BUSY_TIMEOUT", "0.2")
        res = cli("pause", "--analysis", "demo", "--store", store, "--json").rejected("store_busy")
        assert "WORKINGSET_BUSY_TIMEOUT" in res.error["message"]
        assert (
            cli("show", "--analysis", "demo", "--store", store).code == 0
        )  # WAL: readers do not wait for a writer
        with pytest.raises(WorkingsetError) as info:
            with Investigation.open(SqliteStore(store, busy_timeout=0.1), "demo") as inv:
                inv.pause()
        assert info.value.code == "store_busy"
        assert snapshot(store) == before
    finally:
        holder.release()
    monkeypatch.delenv("WORKINGSET_BUSY_TIMEOUT")
    assert (
        cli("pause", "--analysis", "demo", "--store", store).code == 0
    )  # once free, the same call goes through


def test_an_exclusive_lock_keeps_readers_out_for_the_busy_timeout_only(store, monkeypatch):
    monkeypatch.setenv("WORKINGSET_BUSY_TIMEOUT", "0.2")
    holder = Holder(store, "exclusive")
    try:
        cli("show", "--analysis", "demo", "--store", store).rejected("store_busy")
    finally:
        holder.release()
    assert cli("show", "--analysis", "demo", "--store", store).code == 0


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1", "1e9"])
def test_a_bad_busy_timeout_is_a_usage_error(store, monkeypatch, value):
    monkeypatch.setenv("WORKINGSET_BUSY_TIMEOUT", value)
    cli("show", "--analysis", "demo", "--store", store).rejected("usage_error")
    with pytest.raises(WorkingsetError) as info:
        SqliteStore(store, busy_timeout=float(value) if value != "abc" else -1)
    assert info.value.code == "usage_error"
