"""The `Store` protocol: both backends satisfy it, and the session takes any store that does."""

from __future__ import annotations

import inspect
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.session_helpers import state_bytes
from workingset.session.investigation import Investigation
from workingset.store import PostgresStore, SqliteStore, Store, Tx, open_store

# Each member the protocol declares: its attributes (annotations) and its methods.
ATTRIBUTES = sorted(Store.__annotations__)
METHODS = sorted(
    name for name, value in vars(Store).items() if callable(value) and not name.startswith("_")
)


def test_the_protocol_declares_what_the_session_uses() -> None:
    # Guards the member lists below from going empty (every check would then pass).
    assert ATTRIBUTES == ["empty", "path", "views"]
    assert METHODS == ["close", "read", "write"]


def test_each_backend_is_a_store(store: str) -> None:
    opened: Store = open_store(store)  # a typed assignment: mypy checks the backend against Store
    try:
        assert isinstance(opened, (SqliteStore, PostgresStore))
        assert isinstance(opened, Store)
        for name in ATTRIBUTES:
            assert hasattr(opened, name), name
        assert isinstance(opened.path, str) and isinstance(opened.empty, bool)
        assert isinstance(opened.views, dict)
        for name in METHODS:
            ours = inspect.signature(getattr(Store, name))
            theirs = inspect.signature(getattr(opened, name))
            assert list(theirs.parameters) == list(ours.parameters)[1:], name  # less `self`
        with opened.read() as tx:
            assert tx.analysis_ids() == []
    finally:
        opened.close()


def test_a_path_or_a_url_is_not_a_store(tmp_path: Path) -> None:
    assert not isinstance(str(tmp_path / "s.sqlite3"), Store)
    assert not isinstance(tmp_path / "s.sqlite3", Store)


class Wrapped:
    """A third backend: no subclass of either, only what `Store` asks for (here over a SQLite file)."""

    def __init__(self, path: str):
        self._inner = SqliteStore(path)
        self.path = f"wrapped:{path}"
        self.empty = False
        self.views: dict[str, Any] = {}
        self.transactions: list[str] = []

    def read(self) -> AbstractContextManager[Tx]:
        self.transactions.append("read")
        return self._inner.read()

    def write(self) -> AbstractContextManager[Tx]:
        self.transactions.append("write")
        return self._inner.write()

    def close(self) -> None:
        self.views.clear()
        self._inner.close()


def test_the_session_runs_on_a_third_backend_unchanged(tmp_path: Path) -> None:
    backend = Wrapped(str(tmp_path / "s.sqlite3"))
    typed: Store = backend  # mypy checks it against the protocol, isinstance at run time
    assert isinstance(typed, Store)
    with Investigation.create(backend, state_bytes()) as inv:
        assert inv.store is backend  # used as it is, not reopened from a path
        req = inv.next_request()
        assert inv.show().open_request == req.request_id
    assert {"read", "write"} <= set(backend.transactions)
    assert backend.views  # the session kept its replayed state on the backend
    with Investigation.open(backend, inv.analysis_id, read_only=True) as again:
        assert again.show().open_request == req.request_id
    backend.close()


def test_an_object_that_is_no_store_and_no_path_is_refused() -> None:
    with pytest.raises(TypeError):
        Investigation.open(object(), "demo")  # type: ignore[arg-type]
