"""The store's interface: the rows, the compact request manifest, and what the session needs (`Store`, `Tx`).

A store holds analyses. The investigation state is event-sourced: the `created` event
carries the initial state and each later event carries only what changed, so a turn appends
one event plus the payloads that are new. Payloads are stored once, keyed by their content
hash, and shared by every item and analysis that has them. Small index tables (analyses,
requests, actions) answer "what is open, what is pending" without a replay, each with a
direct lookup (the open request, the pending actions, one action), never a scan of the
analysis's history. A request's manifest is stored compactly (`Manifest`): only the shorter
of its shown and indexed ID lists, the other being the rest of the evidence it was rendered
with. `snapshots` keeps the latest replayed state of each analysis (see `eventlog.log`).

Two backends implement it with the same tables and semantics: `sqlite` (the default, a file)
and `postgres` (a database server, for many worker processes). The session asks only for
`Store` (and, inside a transaction, `Tx`), so a third backend that satisfies them needs no
change to it.
"""

from __future__ import annotations

import typing
import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from ..errors import WorkingsetError
from ..io.caches import register
from ..model.state import (
    ActionId,
    AnalysisId,
    Count,
    EvidenceId,
    Hash,
    HypothesisId,
    Payload,
    RequestId,
)

# 2: compact request manifests (`requests.manifest`), the `actions_pending` index.
# 3: `snapshots`, the latest replayed state of an analysis (a version 2 store gains it on open).
# 4: a snapshot carries a checksum of its bytes (see `snapshots.take_snapshot`); the tables are
#    those of 3, and the snapshots a version 3 store holds are still read (checked in full).
SCHEMA_VERSION = 4
UPGRADABLE = (2, 3)  # opened for writing, a store of one of these versions becomes the current one


def older_version(rows: list[tuple]) -> int | None:
    """The version in `schema_version`'s rows if it is one the store upgrades from (`UPGRADABLE`), else None."""
    found = rows[0][0] if len(rows) == 1 else None
    return found if found in UPGRADABLE else None


REQUEST_COLUMNS = (
    "analysis_id, number, request_id, hypothesis, encoder, manifest, chars, hash, state_seq, status"
)
ACTION_COLUMNS = "analysis_id, action_id, hypothesis, request_id, iteration, source, query, purpose, status, evidence_id"


def _checkpoint(step: str) -> None:
    """Called after every write statement and around COMMIT; tests replace it to inject crashes."""


Status = Literal["active", "paused", "completed", "failed", "cancelled"]
STATUSES = typing.get_args(Status)


@dataclass(frozen=True)
class AnalysisRow:
    analysis_id: AnalysisId
    encoder: str
    status: Status
    prior_status: Status | None
    termination_reason: str | None
    created_at: str


@dataclass(frozen=True)
class EventRow:
    seq: int
    kind: str
    at: str
    data: bytes


class Manifest(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """Which evidence a request showed in full and which it only indexed, stored compactly.

    `evidence` is the number of evidence items of the state the request was rendered from.
    The evidence list of an analysis only grows (a record appends, nothing removes or
    reorders), so those are the first `evidence` items of any later state. Only the shorter
    of `shown` and `indexed` is stored; the other one is the rest of those items, in ID order
    (`order="id"`) or in the state's order (`order="state"`). When neither rule reproduces
    the lists an encoder produced, both are stored and `order` is absent.
    """

    evidence: int
    order: Literal["id", "state"] | None = None
    shown: list[str] | None = None
    indexed: list[str] | None = None

    def __post_init__(self) -> None:
        stored = (self.shown is not None) + (self.indexed is not None)
        if self.evidence < 0 or stored != (1 if self.order is not None else 2):
            raise ValueError(
                "a manifest stores one ID list with an order, or both lists without one"
            )

    @classmethod
    def of(
        cls,
        shown: tuple[str, ...] | list[str],
        indexed: tuple[str, ...] | list[str],
        ids: list[str],
    ) -> Manifest:
        """The compact manifest of a request rendered with evidence `ids` (in state order)."""
        expected = (tuple(shown), tuple(indexed))
        key = "shown" if len(shown) <= len(indexed) else "indexed"
        listed = list(shown if key == "shown" else indexed)
        for order in ("id", "state"):
            manifest = cls(evidence=len(ids), order=order, **{key: listed})
            if manifest.resolve(ids) == expected:
                return manifest
        return cls(evidence=len(ids), shown=list(shown), indexed=list(indexed))

    def resolve(self, ids: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(shown, indexed) given the evidence IDs of the state now (in state order)."""
        if self.order is None:
            return tuple(self.shown or ()), tuple(self.indexed or ())
        if self.evidence > len(ids):
            raise ValueError(
                f"it was rendered with {self.evidence} evidence items, the state has {len(ids)}"
            )
        listed = self.shown if self.shown is not None else self.indexed or []
        skip = set(listed)
        rest = [eid for eid in ids[: self.evidence] if eid not in skip]
        if self.order == "id":
            rest.sort()
        return (
            (tuple(listed), tuple(rest)) if self.shown is not None else (tuple(rest), tuple(listed))
        )


MANIFEST_DECODER = msgspec.json.Decoder(Manifest)


@dataclass(frozen=True)
class RequestRow:
    """A request with its manifest resolved: what `Investigation.requests()` returns."""

    analysis_id: str
    number: int
    request_id: str
    hypothesis: str
    encoder: str
    shown: tuple[str, ...]
    indexed: tuple[str, ...]
    chars: int
    hash: str
    state_seq: int
    status: str


@dataclass(frozen=True)
class RequestRecord:
    """A row of the `requests` table: the manifest as stored."""

    analysis_id: AnalysisId
    number: Count
    request_id: RequestId
    hypothesis: HypothesisId
    encoder: str
    manifest: Manifest
    chars: Count
    hash: Hash
    state_seq: int
    status: Literal["open", "answered", "abandoned"]

    def resolved(self, ids: list[str]) -> RequestRow:
        """The row with `shown` and `indexed` spelled out, given the evidence IDs of the state now."""
        shown, indexed = self.manifest.resolve(ids)
        return RequestRow(self.analysis_id, self.number, self.request_id, self.hypothesis, self.encoder, shown,
                          indexed, self.chars, self.hash, self.state_seq, self.status)  # fmt: skip


@dataclass(frozen=True)
class ActionRow:
    analysis_id: AnalysisId
    action_id: ActionId
    hypothesis: HypothesisId
    request_id: RequestId
    iteration: Count
    source: str
    query: str
    purpose: str
    status: Literal["pending", "recorded"]
    evidence_id: EvidenceId | None = None


# Field names of the rows read back from a store, for checking them (`sqltx.SqlTx._checked`).
FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (AnalysisRow, RequestRecord, ActionRow)
}


class Tx(Protocol):
    """What the session needs from a store inside one transaction."""

    def analysis(self, analysis_id: str) -> AnalysisRow | None: ...
    def analysis_as_stored(self, analysis_id: str) -> AnalysisRow | None: ...
    def analysis_ids(self) -> list[str]: ...
    def insert_analysis(self, row: AnalysisRow) -> None: ...
    def set_status(
        self, analysis_id: str, status: str, prior_status: str | None, reason: str | None
    ) -> None: ...
    def set_encoder(self, analysis_id: str, encoder: str) -> None: ...
    def append_event(self, analysis_id: str, kind: str, at: str, data: bytes) -> int: ...
    def events(
        self, analysis_id: str, upto: int | None = None, after: int = 0
    ) -> list[EventRow]: ...
    def snapshot(self, analysis_id: str) -> tuple[int, bytes] | None: ...
    def put_snapshot(self, analysis_id: str, seq: int, data: bytes) -> None: ...
    def put_payload(self, payload: Payload) -> str: ...
    def payloads(self, hashes: Iterable[str]) -> dict[str, Payload]: ...
    def check_payloads(self, hashes: Iterable[str]) -> None: ...
    def insert_request(self, row: RequestRecord) -> None: ...
    def set_request_status(self, analysis_id: str, request_id: str, status: str) -> None: ...
    def abandon_open_requests(self, analysis_id: str) -> None: ...
    def open_request(self, analysis_id: str) -> RequestRecord | None: ...
    def request(self, analysis_id: str, request_id: str) -> RequestRecord | None: ...
    def request_count(self, analysis_id: str) -> int: ...
    def requests(self, analysis_id: str) -> list[RequestRecord]: ...
    def insert_action(self, row: ActionRow) -> None: ...
    def set_action_recorded(self, analysis_id: str, action_id: str, evidence_id: str) -> None: ...
    def action(self, analysis_id: str, action_id: str) -> ActionRow | None: ...
    def pending_actions(self, analysis_id: str) -> list[ActionRow]: ...
    def actions(self, analysis_id: str) -> list[ActionRow]: ...


@runtime_checkable
class Store(Protocol):
    """What the session needs from a store: its transactions, the states it keeps, where it is, closing it.

    `SqliteStore` and `PostgresStore` satisfy it (through `StoreBase`); `Investigation`
    accepts any object that does, and opens one of those two from a path or a URL.
    """

    path: str  # what messages name (a PostgreSQL URL without its password)
    empty: bool  # True: no schema yet and not allowed to create one, so it holds no analysis
    # Replayed states by analysis (`eventlog.view.Replayed`), kept by the session between calls.
    views: dict[str, Any]

    def read(self) -> AbstractContextManager[Tx]:
        """A read transaction: one consistent snapshot of the store."""
        ...

    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction: everything in it commits together, or nothing does."""
        ...

    def close(self) -> None:
        """Close the connection; the kept states go with it."""
        ...


class StoreBase:
    """What both backends share: the kept states, the read-only and empty flags, opening, closing."""

    def __init__(self, path: str, read_only: bool):
        self.path = path  # what messages name (a PostgreSQL URL without its password)
        self.read_only = read_only
        self.empty = False  # no schema yet and not allowed to create one
        self.snapshots = (
            True  # False: a version 2 store opened read-only (it has no snapshots table)
        )
        # Replayed states by analysis, kept by the session layer (`eventlog.view.Replayed`) so that a
        # call reads only the events appended since; they live and die with this connection.
        self.views: dict[str, Any] = {}
        self._conn: Any = None
        _LIVE.add(self)

    def _open(
        self,
        connect: Callable[[], Any],
        errors: type[Exception],
        translate: Callable[[Any, str], Exception],
    ) -> None:
        """Connect and set up (`_setup`), turning the driver's `errors` into ours; nothing stays open on failure."""
        try:
            self._conn = connect()
        except errors as exc:
            raise translate(exc, self.path) from None
        try:
            self._setup()
        except errors as exc:
            self._conn.close()
            raise translate(exc, self.path) from None
        except BaseException:
            self._conn.close()
            raise

    def _setup(self) -> None:
        raise NotImplementedError

    def _refuse_write(self) -> None:
        """`store_unavailable` when this store may not be written (opened read-only, or without a schema)."""
        if self.read_only or self.empty:
            why = "was opened read-only" if self.read_only else "holds no workingset schema"
            raise WorkingsetError(f"store {self.path} {why}; it cannot be written", code="store_unavailable",
                                  details={"store": self.path})  # fmt: skip

    def close(self) -> None:
        self.views.clear()
        self._conn.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Every store object alive in the process, so that the cache registry reaches their kept states.
_LIVE: weakref.WeakSet[StoreBase] = weakref.WeakSet()


def _clear_views() -> None:
    for store in list(_LIVE):
        store.views.clear()


register("kept views", holds="the replayed state of each analysis an open store has served (the next call replays it)",
         limit=None, size=lambda: sum(len(store.views) for store in list(_LIVE)), clear=_clear_views)  # fmt: skip
