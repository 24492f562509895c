"""The per-turn API an investigation controller calls (docs/protocol.md#the-turn): `Investigation`.

Each method is one store transaction: it brings the analysis's state up to date, validates,
applies the pure functions of `controller`, and writes the event with the index rows it
implies. A rejected call writes nothing.

The state is not rebuilt from the whole event log at every call. The store connection keeps
the replayed state of each analysis it has served (`eventlog.view.Replayed`) with the last event
it reflects; a call, inside its transaction, reads and applies only the events appended
since, whichever process appended them, so it sees every committed change and costs what is
new. A call that fails after it began changing that state drops it, and the next call
replays the log in full. The turn's calls (`next_request`, `submit`, `record`) live in
`turns`, one call's transaction and the shared helpers in `calls`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import controller as ctl
from ..encoders import DEFAULT_ENCODER, get_encoder
from ..errors import SessionError, StoreCorrupt, UsageError
from ..eventlog.exports import event_hashes, journal_lines, state_hash, stored_lines, write_journal
from ..eventlog.log import CreatedEvent, LifecycleEvent, encode_event, replay, seed
from ..eventlog.snapshots import snapshot_at_creation, snapshot_due, take_snapshot
from ..io.files import check_new_run_dir
from ..io.limits import Limits
from ..model.state import State, StoredContext, copy_state, load_start, validate_state
from ..runs.layout import make_stored_context, write_run
from ..store import (
    AnalysisRow,
    EventRow,
    PostgresStore,
    RequestRecord,
    RequestRow,
    SqliteStore,
    Status,
    Store,
    Tx,
    is_url,
)
from .bounds import end_fields, lifecycle_stage, usage_of, with_lifecycle
from .budget import BudgetRaised, check_fixed_parts, raise_budget
from .calls import (
    Call,
    as_bytes,
    busy_hypotheses,
    check_in_log,
    closed,
    evidence_ids,
    externalize,
    pending_action,
    points_nowhere,
    stored_encoder,
)  # fmt: skip
from .loop import Loop
from .replies import Lifecycle, PendingAction, Summary, Usage
from .turns import Turns

DEFAULT_STORE = os.path.join(".workingset", "store.sqlite3")


def default_store_path() -> str:
    """`$WORKINGSET_STORE` (a file path or a `postgresql://` URL), else `.workingset/store.sqlite3`."""
    return os.environ.get("WORKINGSET_STORE") or DEFAULT_STORE


def utc_now() -> str:
    """The current time as RFC 3339 UTC with a `Z` offset (the default capture time)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _open_store(
    store: Store | str | os.PathLike[str], must_exist: bool, read_only: bool = False
) -> tuple[Store, bool]:
    """The store and whether the handle owns it (a PostgreSQL URL or a SQLite path); a SQLite store that
    must exist is never created, nor its schema. Any `Store` is used as it is."""
    if isinstance(store, Store):
        return store, False
    path = os.fspath(store)
    if is_url(path):
        return PostgresStore(path, read_only=read_only), True
    return SqliteStore(path, create=not must_exist, read_only=read_only), True


class Investigation(Turns, Loop):
    """One analysis in a store: the methods a controller calls every turn."""

    def __init__(
        self, store: Store, analysis_id: str, *, owns_store: bool = False, clock: Callable[[], str] = utc_now,
        limits: Limits | None = None,
    ):  # fmt: skip
        self.store = store
        self.analysis_id = analysis_id
        self._owns_store = owns_store
        self._clock = clock
        self.limits = limits  # None: `Limits.current()` at each call (the environment's)

    # -- lifecycle of the handle -----------------------------------------------------

    @classmethod
    def create(
        cls,
        store: Store | str | os.PathLike[str],
        state: State | bytes | str | dict[str, Any],
        *,
        encoder: str = DEFAULT_ENCODER,
        clock: Callable[[], str] = utc_now,
        requests_before: int = 0,
        limits: Limits | None = None,
        check_fixed: bool = True,
    ) -> Investigation:
        """Create an analysis from a state (or a stored context's state); `encoder` renders its requests.

        Its requests are numbered from `requests_before + 1`; created from a stored context (as
        JSON), from the number after that context's request. A state whose fixed parts alone
        pass the encoder's budget is `too_large` (`budget.check_fixed_parts`), unless not
        `check_fixed`: a replay rebuilds analyses created before that check as they were.
        """
        enc = get_encoder(encoder)
        if isinstance(state, State):
            validate_state(state)
            state = copy_state(state)
        else:
            state, number = load_start(as_bytes(state), limits=limits)
            requests_before = max(requests_before, number)
        if requests_before < 0:
            raise UsageError(f"requests_before must be 0 or more, not {requests_before}")
        if check_fixed:
            check_fixed_parts(state, enc)  # too_large: no request of it could ever be rendered
        db, owns = _open_store(store, must_exist=False)
        inv = cls(db, state.analysis_id, owns_store=owns, clock=clock, limits=limits)
        try:
            inv._create(state, enc.name, requests_before)
        except BaseException:
            inv.close()
            raise
        return inv

    def _create(self, state: State, encoder: str, requests_before: int) -> None:
        aid = state.analysis_id
        with self.store.write() as tx:
            if tx.analysis(aid) is not None:
                raise SessionError(f"analysis {aid} already exists in {self.store.path}", code="analysis_exists",
                                   details={"analysis": aid})  # fmt: skip
            status, reason = ctl.termination(state, ctl.ACTIVE, busy=())
            at = self._clock()
            tx.insert_analysis(AnalysisRow(aid, encoder, status, None, reason, at))
            payloads: dict[str, Any] = {}
            event = CreatedEvent(state=externalize(tx, copy_state(state), payloads), encoder=encoder, status=status,
                                 termination_reason=reason, requests_before=requests_before)  # fmt: skip
            data = encode_event(event)
            seq = tx.append_event(aid, "created", at, data)
            view = seed(aid, EventRow(seq, "created", at, data), payloads)
            if snapshot_at_creation(len(data)):
                tx.put_snapshot(aid, seq, take_snapshot(view))
        self.store.views[aid] = view

    @classmethod
    def open(
        cls,
        store: Store | str | os.PathLike[str],
        analysis_id: str,
        *,
        clock: Callable[[], str] = utc_now,
        limits: Limits | None = None,
        read_only: bool = False,
    ) -> Investigation:
        """Open an existing analysis; `unknown_analysis` if the store does not hold it.

        With `read_only` the store is opened read-only (`show`, `state`, `requests`, `export`
        work, also on read-only media; the other calls are `store_unavailable`).
        """
        db, owns = _open_store(store, must_exist=True, read_only=read_only)
        inv = cls(db, analysis_id, owns_store=owns, clock=clock, limits=limits)
        try:
            if db.empty:
                raise SessionError(f"no analysis {analysis_id!r} in {db.path}: the store is empty; known: none",
                                   code="unknown_analysis", details={"analysis": analysis_id})  # fmt: skip
            with db.read() as tx:
                inv._row(
                    tx, checked=False
                )  # each call checks what it reads; cancel needs no more than this
        except BaseException:
            inv.close()
            raise
        return inv

    @classmethod
    def open_or_create(
        cls,
        store: Store | str | os.PathLike[str],
        state: State | bytes | str | dict[str, Any],
        *,
        encoder: str = DEFAULT_ENCODER,
        clock: Callable[[], str] = utc_now,
        limits: Limits | None = None,
    ) -> Investigation:
        """Open the state's analysis if the store holds it, else create it: the one call of a controller that restarts.

        The state is read and checked either way (its `analysis_id` names the analysis). An
        analysis that exists is opened as it is, with its own encoder: `encoder_mismatch` if
        `encoder` names another, so a restart never silently continues with other settings.
        """
        enc = get_encoder(encoder)
        if isinstance(state, State):
            validate_state(state)
            aid = state.analysis_id
        else:
            aid = load_start(as_bytes(state), limits=limits)[0].analysis_id
        db, owns = _open_store(store, must_exist=False)
        try:
            with db.read() as tx:
                row = tx.analysis(aid)
            if row is None:
                try:
                    return cls.create(
                        db, state, encoder=enc.name, clock=clock, limits=limits
                    )._owning(owns)
                except SessionError as err:
                    if err.code != "analysis_exists":
                        raise
                    with db.read() as tx:  # another process created it since: open that one
                        row = tx.analysis(aid)
                    assert row is not None
            if row.encoder != enc.name:
                raise SessionError(f"analysis {aid} in {db.path} renders with {row.encoder}, not {enc.name}",
                                   code="encoder_mismatch", details={"analysis": aid, "encoder": row.encoder})  # fmt: skip
            return cls.open(db, aid, clock=clock, limits=limits)._owning(owns)
        except BaseException:
            if owns:
                db.close()
            raise

    def _owning(self, owns: bool) -> Investigation:
        self._owns_store = owns
        return self

    def close(self) -> None:
        """Close the store if this handle opened it."""
        if self._owns_store:
            self.store.close()
            self._owns_store = False

    def __enter__(self) -> Investigation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------

    def _row(self, tx: Tx, checked: bool = True) -> AnalysisRow:
        """The analysis's row (`unknown_analysis` if absent); unless `checked`, only its types and statuses are checked."""
        row = tx.analysis(self.analysis_id) if checked else tx.analysis_as_stored(self.analysis_id)
        if row is None:
            known = ", ".join(tx.analysis_ids()) or "none"
            raise SessionError(f"no analysis {self.analysis_id!r} in {self.store.path}; known: {known}",
                               code="unknown_analysis", details={"analysis": self.analysis_id})  # fmt: skip
        if checked:
            stored_encoder(row.encoder, f"analysis {self.analysis_id}")
        return row

    @contextmanager
    def _call(self, write: bool) -> Iterator[Call]:
        """One transaction with the analysis's kept state; the state is kept again only if it stays right."""
        views = self.store.views
        with self.store.write() if write else self.store.read() as tx:
            call = Call(tx, self.analysis_id, views.pop(self.analysis_id, None))
            try:
                yield call
            except BaseException:
                if (
                    call.view is not None and not call.dirty
                ):  # untouched: still the state of committed events
                    views[self.analysis_id] = call.view
                raise
            # Only a call that changed the state takes one: a rejected answer writes its event alone (docs/protocol.md).
            if write and call.dirty and call.view is not None and snapshot_due(call.view):
                # In the call's transaction: the snapshot commits with the events it reflects.
                tx.put_snapshot(self.analysis_id, call.view.seq, take_snapshot(call.view))
        if call.view is not None:  # committed
            views[self.analysis_id] = call.view

    @property
    def status(self) -> str:
        """The analysis's status (`active`, `paused`, `completed`, `failed`, `cancelled`), read from its row alone."""
        with self.store.read() as tx:
            return self._row(tx).status

    def pending_actions(self) -> list[PendingAction]:
        """The queries decided and not yet recorded, oldest first (after a restart: what is left to run)."""
        with self.store.read() as tx:
            self._row(tx)
            return [pending_action(a) for a in tx.pending_actions(self.analysis_id)]

    @property
    def state(self) -> State:
        """The current state (docs/protocol.md#the-investigation-state): a copy, up to date with the store."""
        with self._call(write=False) as call:
            self._row(call.tx)
            call.sync()
            return copy_state(call.complete().state)

    def show(self) -> Summary:
        """Status, termination reason, encoder, open request, pending actions and the current state."""
        with self._call(write=False) as call:
            tx = call.tx
            row = self._row(tx)
            open_req = tx.open_request(self.analysis_id)
            check_in_log(self.store.path, self.analysis_id, open_req, call.sync())
            view = call.complete()
            state = copy_state(view.state)
            pending = [pending_action(a) for a in tx.pending_actions(self.analysis_id)]
            return with_lifecycle(Summary(
                status=row.status,
                termination_reason=row.termination_reason,
                encoder=row.encoder,
                open_request=open_req.request_id if open_req else None,
                pending_actions=pending,
                state=state,
            ), view)  # fmt: skip

    def usage(self) -> Usage:
        """What the analysis used of each of its five bounds, as of its last event (until it ended)."""
        with self._call(write=False) as call:
            self._row(call.tx)
            return usage_of(call.sync())

    @property
    def stage(self) -> str:
        """The analysis's stage (docs/protocol.md#stages): planning, executing, evaluating, updating, paused or its end."""
        return self.show().stage

    def requests(self) -> list[RequestRow]:
        """Every request of the analysis with its persisted manifest (shown and indexed spelled out), in order."""
        with self._call(write=False) as call:
            self._row(call.tx)
            ids = evidence_ids(call.sync().state)
            return [self._resolved(req, ids) for req in call.tx.requests(self.analysis_id)]

    def _resolved(self, req: RequestRecord, ids: list[str]) -> RequestRow:
        try:
            return req.resolved(ids)
        except ValueError as exc:
            raise StoreCorrupt(f"store {self.store.path}: the manifest of request {req.request_id} is damaged ({exc})",
                               details={"request_id": req.request_id}) from None  # fmt: skip

    # -- status transitions ------------------------------------------------------------

    def pause(self) -> Lifecycle:
        """Pause an active analysis, remembering its exact prior status."""
        return self._transition("pause")

    def resume(self) -> Lifecycle:
        """Resume a paused analysis to its prior status, then evaluate the termination policy."""
        return self._transition("resume")

    def cancel(self) -> Lifecycle:
        """Cancel an active or paused analysis (terminal, reason `cancelled`)."""
        return self._transition("cancel")

    def fail(self, message: str) -> Lifecycle:
        """Mark a non-recoverable technical failure (terminal, reason `failed`)."""
        return self._transition("fail", message)

    def raise_budget(self, budget: int) -> BudgetRaised:
        """Render the next requests with a larger budget of the same version (a `budget` event; see `session.budget`)."""
        return raise_budget(self, budget)

    def _transition(self, verb: str, message: str | None = None) -> Lifecycle:
        aid = self.analysis_id
        closing = verb in ("cancel", "fail")
        with self._call(write=True) as call:
            tx = call.tx
            # Closing reads neither the state nor the request rows: an analysis the store can no
            # longer render (one written before IDs had to match whole) can still be closed.
            row = self._row(tx, checked=not closing)
            if row.status in ctl.TERMINAL:
                raise closed(row)
            status: Status
            prior, reason = None, None
            if verb == "pause":
                if row.status == ctl.PAUSED:
                    raise SessionError(f"analysis {aid} is already paused", code="invalid_transition",
                                       details={"status": row.status})  # fmt: skip
                # The analysis stays open, so it must be sound: a pause appended to a damaged log
                # (after a deleted last event) would fill the gap and hide the damage from later calls.
                call.checked(self.store.path, tx.open_request(aid))
                status, prior = ctl.PAUSED, row.status
            elif verb == "resume":
                if row.status != ctl.PAUSED:
                    raise SessionError(f"analysis {aid} is {row.status}, not paused", code="invalid_transition",
                                       details={"status": row.status})  # fmt: skip
                view = call.checked(self.store.path, tx.open_request(aid))
                # Paused time is not execution time: the clock stood still since the pause.
                status, reason = ctl.termination(
                    view.state,
                    row.prior_status or ctl.ACTIVE,
                    busy_hypotheses(tx, aid),
                    view.usage(),
                )
            else:
                status = ctl.CANCELLED if verb == "cancel" else ctl.FAILED
                reason = status
                tx.abandon_open_requests(aid)
            event = LifecycleEvent(
                status=status, prior_status=prior, termination_reason=reason, message=message
            )
            if verb in ("pause", "resume"):
                call.change()  # synced above: the kept state's position moves past this event
            call.append(verb, event, self._clock())
            tx.set_status(aid, status, prior, reason)
            return Lifecycle(
                analysis_id=aid, status=status, prior_status=prior, termination_reason=reason
            )

    # -- export ------------------------------------------------------------------------

    def export(self, directory: str | os.PathLike[str], *, as_stored: bool = False) -> list[Path]:
        """Write every request as a stored-context file whose hash verifies, and the journal and answers beside them.

        Returns the stored-context paths; `journal.jsonl` and `answers.jsonl` (see `exports`)
        are what `workingset replay` rebuilds the analysis from. `directory` must be new or hold
        no `.json` files (checked first); the stored contexts are written all or none. Each is
        written as the replay reaches its request, from the replayed state itself: memory stays
        that of one state and time that of the bytes written, however long the history (holding
        a copy per request made both grow with its square).

        With `as_stored` nothing is checked or rendered: the journal and answers hold the events
        as the store has them (`exports.stored_lines`), with no stored contexts and no state hash
        (`"state_hash": null`), so that an analysis the store can no longer render is still read
        out. Its replay reports the first place the current checks refuse.
        """
        check_new_run_dir(directory)
        if as_stored:
            return self._export_stored(directory)
        try:
            return self._export(directory)
        except StoreCorrupt as err:
            err.message += "; `export --as-stored` writes its events as stored, unchecked"
            err.args = (err.message,)
            raise

    def _export_stored(self, directory: str | os.PathLike[str]) -> list[Path]:
        with self._call(write=False) as call:
            row = self._row(call.tx, checked=False)
            lines = stored_lines(call.tx, self.analysis_id)
        header = {"analysis_id": self.analysis_id, "encoder": row.encoder}
        end = {
            "events": len(lines),
            "status": row.status,
            "termination_reason": row.termination_reason,
            "state_hash": None,
        }
        write_journal(directory, header, lines, end)
        return []

    def _export(self, directory: str | os.PathLike[str]) -> list[Path]:
        with self._call(write=False) as call:
            row = self._row(call.tx)
            requests = call.tx.requests(self.analysis_id)
            call.tx.actions(
                self.analysis_id
            )  # read only to check them: an export reads everything once
            paths = write_run(directory, self._contexts(call.tx, requests))
            lines = journal_lines(call.tx, self.analysis_id)
            call.sync()
            view = call.complete()
            final = view.state
            summary = with_lifecycle(Summary(status=row.status, termination_reason=row.termination_reason,
                                             encoder=row.encoder, open_request=None, state=final,
                                             pending_actions=[pending_action(a) for a in call.tx.pending_actions(self.analysis_id)]),
                                     view)  # fmt: skip
            summary.stage = lifecycle_stage(call.tx, self.analysis_id, summary)
            usage = usage_of(view)
        header = {"analysis_id": self.analysis_id, "encoder": row.encoder}
        end = {"events": len(lines), "status": row.status, "termination_reason": row.termination_reason,
               "state_hash": state_hash(final), "event_hashes": event_hashes(lines), **end_fields(summary, usage)}  # fmt: skip
        write_journal(directory, header, lines, end)
        return paths

    def _contexts(self, tx: Tx, requests: list[RequestRecord]) -> Iterator[StoredContext]:
        """Each request's stored context, in order; valid only until the next one is asked for."""
        by_seq: dict[int, list[RequestRecord]] = {}
        for req in requests:
            by_seq.setdefault(req.state_seq, []).append(req)
        for row, event, state in replay(tx, self.analysis_id):
            for req in by_seq.pop(row.seq, ()):
                if row.kind != "request" or (event.request_id, event.hash) != (
                    req.request_id,
                    req.hash,
                ):
                    raise StoreCorrupt(f"store {self.store.path}: request {req.request_id} points at event {row.seq}, "
                                       f"which is not its request event", details={"analysis": self.analysis_id,
                                       "request_id": req.request_id, "seq": row.seq})  # fmt: skip
                # The live replayed state, not a copy: the caller writes each context before the next.
                yield self._context(req, state)
        for seq, reqs in by_seq.items():
            raise points_nowhere(self.store.path, self.analysis_id, reqs[0], seq)

    def _context(self, req: RequestRecord, state: State) -> StoredContext:
        stored_encoder(req.encoder, f"request {req.request_id}")
        ctx = make_stored_context(req.request_id, req.encoder, req.hypothesis, state)
        if ctx.rendered is None or ctx.rendered.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        return ctx
