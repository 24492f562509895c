"""The per-turn API an investigation controller calls (SPEC §6–8): `Investigation`.

Each method is one store transaction: it brings the analysis's state up to date, validates,
applies the pure functions of `controller`, and writes the event with the index rows it
implies. A rejected call writes nothing.

The state is not rebuilt from the whole event log at every call. The store connection keeps
the replayed state of each analysis it has served (`journal.Replayed`) with the last event
it reflects; a call, inside its transaction, reads and applies only the events appended
since, whichever process appended them, so it sees every committed change and costs what is
new. A call that fails after it began changing that state drops it, and the next call
replays the log in full.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from . import controller as ctl
from .decisions import Query, check_decision, parse_decision
from .encoders import DEFAULT_ENCODER, get_encoder
from .errors import DecisionRejected, SessionError, StoreCorrupt, UsageError
from .hashing import content_hash
from .journal import (
    CreatedEvent,
    DecisionEvent,
    LifecycleEvent,
    RecordEvent,
    Replayed,
    RequestEvent,
    ResultInput,
    as_replayed,
    catch_up,
    check_timestamp,
    decode_result,
    encode_event,
    fill,
    replay,
    seed,
    snapshot_due,
    stored_payload,
    take_snapshot,
)
from .model import Evidence, EvidenceBudget, State, StoredContext, copy_state, load_start, validate_state
from .replies import Applied, Lifecycle, PendingAction, Recorded, Request, Summary
from .runs import make_stored_context, write_run
from .pgstore import PostgresStore, is_url
from .store import ActionRow, AnalysisRow, EventRow, Manifest, RequestRecord, RequestRow, SqliteStore, Tx

Store = SqliteStore | PostgresStore

DEFAULT_STORE = os.path.join(".workingset", "store.sqlite3")


def default_store_path() -> str:
    """`$WORKINGSET_STORE` (a file path or a `postgresql://` URL), else `.workingset/store.sqlite3`."""
    return os.environ.get("WORKINGSET_STORE") or DEFAULT_STORE


def utc_now() -> str:
    """The current time as RFC 3339 UTC with a `Z` offset (the default capture time)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_store(target: str | os.PathLike[str]) -> Store:
    """Open a store: a `postgresql://` URL, or else a SQLite file path (created on first use)."""
    path = os.fspath(target)
    return PostgresStore(path) if is_url(path) else SqliteStore(path)


def _open_store(store: Store | str | os.PathLike[str], must_exist: bool) -> tuple[Store, bool]:
    """The store a handle uses, and whether the handle opened it (a PostgreSQL URL or a SQLite path)."""
    if isinstance(store, (SqliteStore, PostgresStore)):
        return store, False
    path = os.fspath(store)
    if must_exist and not is_url(path) and not os.path.exists(path):
        raise SessionError(f"no store at {path}", code="unknown_analysis", details={"store": path})
    return open_store(path), True


def _as_bytes(value: str | bytes | dict[str, Any] | msgspec.Struct) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (dict, msgspec.Struct)):
        return msgspec.json.encode(value)
    raise TypeError(f"expected JSON text, bytes, a dict or a Struct, not {type(value).__name__}")


class _Call:
    """One API call's transaction and the analysis's kept state, brought up to date on demand."""

    def __init__(self, tx: Tx, analysis_id: str, view: Replayed | None):
        self.tx = tx
        self.analysis_id = analysis_id
        self.view = view
        self.dirty = False  # the view has been changed in memory by this call's own (uncommitted) work

    def sync(self) -> Replayed:
        """The kept state with every event committed so far applied (a full replay if there is none)."""
        view, self.view = self.view, None  # unusable if catching up fails half-way
        self.view = catch_up(self.tx, self.analysis_id, view)
        return self.view

    def complete(self) -> Replayed:
        """The synced state with every payload in place (for rendering or showing it)."""
        view, self.view = self.view, None  # unusable if filling fails half-way
        self.view = fill(self.tx, view if view is not None else catch_up(self.tx, self.analysis_id, None))
        return self.view

    def change(self) -> Replayed:
        """The synced view, about to be changed by this call: kept only if the call commits."""
        assert self.view is not None, "sync() first"
        self.dirty = True
        return self.view

    def append(self, kind: str, event: Any, at: str) -> int:
        """Append this call's event; a synced view then reflects it (its change must already be applied)."""
        data = encode_event(event)
        seq = self.tx.append_event(self.analysis_id, kind, at, data)
        if self.view is not None and self.dirty:
            self.view.note(seq, kind, len(data))
        return seq


class Investigation:
    """One analysis in a store: the methods a controller calls every turn."""

    def __init__(self, store: Store, analysis_id: str, *, owns_store: bool = False, clock: Callable[[], str] = utc_now):
        self.store = store
        self.analysis_id = analysis_id
        self._owns_store = owns_store
        self._clock = clock

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
    ) -> Investigation:
        """Create an analysis from a state (or a stored context's state); `encoder` renders its requests.

        Its requests are numbered from `requests_before + 1`; created from a stored context (as
        JSON), from the number after that context's request.
        """
        enc = get_encoder(encoder)
        if isinstance(state, State):
            validate_state(state)
            state = copy_state(state)
        else:
            state, number = load_start(_as_bytes(state))
            requests_before = max(requests_before, number)
        if requests_before < 0:
            raise UsageError(f"requests_before must be 0 or more, not {requests_before}")
        db, owns = _open_store(store, must_exist=False)
        inv = cls(db, state.analysis_id, owns_store=owns, clock=clock)
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
            event = CreatedEvent(state=_externalize(tx, copy_state(state), payloads), encoder=encoder, status=status,
                                 termination_reason=reason, requests_before=requests_before)  # fmt: skip
            data = encode_event(event)
            seq = tx.append_event(aid, "created", at, data)
            view = seed(aid, EventRow(seq, "created", at, data), payloads)
        self.store.views[aid] = view

    @classmethod
    def open(cls, store: Store | str | os.PathLike[str], analysis_id: str, *, clock: Callable[[], str] = utc_now) -> Investigation:
        """Open an existing analysis; `unknown_analysis` if the store does not hold it."""
        db, owns = _open_store(store, must_exist=True)
        inv = cls(db, analysis_id, owns_store=owns, clock=clock)
        try:
            with db.read() as tx:
                inv._row(tx)
        except BaseException:
            inv.close()
            raise
        return inv

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

    def _row(self, tx: Tx) -> AnalysisRow:
        row = tx.analysis(self.analysis_id)
        if row is None:
            known = ", ".join(tx.analysis_ids()) or "none"
            raise SessionError(f"no analysis {self.analysis_id!r} in {self.store.path}; known: {known}",
                               code="unknown_analysis", details={"analysis": self.analysis_id})  # fmt: skip
        return row

    @contextmanager
    def _call(self, write: bool) -> Iterator[_Call]:
        """One transaction with the analysis's kept state; the state is kept again only if it stays right."""
        views = self.store.views
        with self.store.write() if write else self.store.read() as tx:
            call = _Call(tx, self.analysis_id, views.pop(self.analysis_id, None))
            try:
                yield call
            except BaseException:
                if call.view is not None and not call.dirty:  # untouched: still the state of committed events
                    views[self.analysis_id] = call.view
                raise
            if write and call.view is not None and snapshot_due(call.view):
                # In the call's transaction: the snapshot commits with the events it reflects.
                tx.put_snapshot(self.analysis_id, call.view.seq, take_snapshot(call.view))
        if call.view is not None:  # committed
            views[self.analysis_id] = call.view

    @property
    def state(self) -> State:
        """The current state (SPEC §3): a copy, up to date with the store."""
        with self._call(write=False) as call:
            self._row(call.tx)
            call.sync()
            return copy_state(call.complete().state)

    def show(self) -> Summary:
        """Status, termination reason, encoder, open request, pending actions and the current state."""
        with self._call(write=False) as call:
            tx = call.tx
            row = self._row(tx)
            call.sync()
            state = copy_state(call.complete().state)
            open_req = tx.open_request(self.analysis_id)
            return Summary(
                status=row.status,
                termination_reason=row.termination_reason,
                encoder=row.encoder,
                open_request=open_req.request_id if open_req else None,
                pending_actions=[_pending(a) for a in tx.pending_actions(self.analysis_id)],
                state=state,
            )

    def requests(self) -> list[RequestRow]:
        """Every request of the analysis with its persisted manifest (shown and indexed spelled out), in order."""
        with self._call(write=False) as call:
            self._row(call.tx)
            ids = _evidence_ids(call.sync().state)
            return [self._resolved(req, ids) for req in call.tx.requests(self.analysis_id)]

    def _resolved(self, req: RequestRecord, ids: list[str]) -> RequestRow:
        try:
            return req.resolved(ids)
        except ValueError as exc:
            raise StoreCorrupt(f"store {self.store.path}: the manifest of request {req.request_id} is damaged ({exc})",
                               details={"request_id": req.request_id}) from None  # fmt: skip

    # -- the turn ----------------------------------------------------------------------

    def next_request(self, hypothesis: str | None = None) -> Request:
        """Render and persist the next request (scheduler's or the caller's hypothesis), or return the open one."""
        aid = self.analysis_id
        with self._call(write=True) as call:
            tx = call.tx
            row = self._require_active(tx)
            open_req = tx.open_request(aid)
            state = call.sync().state
            busy = _busy(tx, aid)
            if hypothesis is not None and state.hypothesis(hypothesis) is None:
                ctl.check_choice(state, hypothesis, busy)  # unknown_hypothesis, the most specific code
            if open_req is not None:
                if hypothesis is not None and hypothesis != open_req.hypothesis:
                    raise SessionError(
                        f"request {open_req.request_id} for {open_req.hypothesis} is open; answer it before "
                        f"asking for {hypothesis}",
                        code="request_open",
                        details={"request_id": open_req.request_id, "hypothesis": open_req.hypothesis},
                    )
                return self._rerender(call, open_req)
            if hypothesis is None:
                hid = ctl.schedule(state, busy)
            else:
                ctl.check_choice(state, hypothesis, busy)
                hid = hypothesis
            state = call.complete().state
            out = get_encoder(row.encoder).render(state, hid)
            number = max(tx.request_count(aid), call.view.requests_before) + 1
            rid = f"{aid}-r{number:04d}"
            manifest = Manifest.of(out.shown, out.indexed, _evidence_ids(state))
            event = RequestEvent(request_id=rid, hypothesis=hid, encoder=out.encoder, manifest=manifest,
                                 chars=out.chars, hash=out.hash)  # fmt: skip
            call.change()  # the request event advances the kept state's position (not the state)
            seq = call.append("request", event, self._clock())
            tx.insert_request(RequestRecord(aid, number, rid, hid, out.encoder, manifest, out.chars, out.hash, seq,
                                            "open"))  # fmt: skip
            return Request.of(out, rid, state)

    def submit(self, request_id: str, decision: str | bytes | dict[str, Any]) -> Applied:
        """Validate a decision for the open request and apply it atomically (SPEC §6); reject with a stable code."""
        data = _as_bytes(decision)
        aid = self.analysis_id
        with self._call(write=True) as call:
            tx = call.tx
            self._require_active(tx, decision=True)
            req = tx.open_request(aid)
            if req is None or req.request_id != request_id:
                raise _stale(tx, aid, request_id, req)
            supports_recall = get_encoder(req.encoder).supports_recall
            parsed = parse_decision(data, supports_recall=supports_recall)
            view = call.sync()
            state = view.state
            # Rule G checks against exactly the IDs this request showed (its manifest, resolved).
            shown = self._resolved(req, _evidence_ids(state)).shown
            check_decision(parsed, state, hypothesis_id=req.hypothesis, request_id=request_id,
                           shown=shown, supports_recall=supports_recall)  # fmt: skip
            ids = ctl.allocate(state, parsed, numbers=view.numbers)
            busy = _busy(tx, aid) | ({req.hypothesis} if ids.action else set())
            call.change()
            # Applied as a replay will apply it: the decision decoded from its stored form.
            iteration = view.apply_decision(req.hypothesis, as_replayed(parsed), ids)
            status, reason = ctl.termination(state, ctl.ACTIVE, busy)
            event = DecisionEvent(request_id=request_id, hypothesis=req.hypothesis, decision=parsed,
                                  notes=list(ids.notes), action=ids.action, iteration=iteration,
                                  status=status, termination_reason=reason)  # fmt: skip
            call.append("decision", event, self._clock())
            tx.set_request_status(aid, request_id, "answered")
            if isinstance(parsed.next, Query):
                q = parsed.next
                tx.insert_action(ActionRow(aid, ids.action, req.hypothesis, request_id, iteration,
                                           q.source, q.query, q.purpose, "pending"))  # fmt: skip
            if status != ctl.ACTIVE:
                tx.set_status(aid, status, None, reason)
            kind = type(parsed.next).__struct_config__.tag
            return Applied(request_id=request_id, applied=kind, iteration=iteration, status=status, action=ids.action)

    def record(
        self,
        action_id: str,
        result: str | bytes | dict[str, Any] | ResultInput,
        *,
        captured_at: str | None = None,
        source: str = "<result>",
    ) -> Recorded:
        """Record a pending query's result as new, unsettled evidence; it becomes the hypothesis's previous result.

        `result` is `{"scope", "capture", "payload", "cost"?}` (JSON text, bytes, a dict or a `ResultInput`);
        `captured_at` defaults to now (recording may read the clock; rendering never does).
        """
        aid = self.analysis_id
        if captured_at is None:
            captured_at = self._clock()
        check_timestamp(captured_at)
        with self._call(write=True) as call:
            tx = call.tx
            row = self._row(tx)
            if row.status in ctl.TERMINAL:
                raise _closed(row)
            action = tx.action(aid, action_id)
            if action is None or action.status != "pending":
                pending = [a.action_id for a in tx.pending_actions(aid)]
                why = f"its result was recorded as {action.evidence_id}" if action else "no such action"
                raise SessionError(
                    f"{action_id} is not a pending action of analysis {aid} ({why}); pending: {', '.join(pending) or 'none'}",
                    code="unknown_action",
                    details={"action": action_id, "pending": pending},
                )
            parsed = result if isinstance(result, ResultInput) else decode_result(_as_bytes(result), source)
            view = call.sync()
            state = view.state
            eid = ctl.next_evidence_id(state, view.numbers)
            payload = parsed.payload
            evidence = Evidence(
                id=eid, collector=action.hypothesis, scope=parsed.scope, capture=parsed.capture, payload=payload,
                content_hash=content_hash(payload) if payload is not None else None,
                budget=EvidenceBudget(action=action_id, status="unsettled", cost=parsed.cost),
                iteration=action.iteration, captured_at=captured_at,
            )  # fmt: skip
            stored = msgspec.structs.replace(evidence, payload=None)
            busy = _busy(tx, aid) - {action.hypothesis}
            call.change()
            # Applied as a replay will apply it: the evidence decoded from its stored event, the payload
            # from its canonical bytes (nothing shared with the caller's objects).
            kept = as_replayed(stored)
            kept.payload = stored_payload(payload) if payload is not None else None
            view.apply_record(kept)
            status, reason = ctl.termination(state, row.status, busy)
            if row.status != ctl.ACTIVE:
                reason = row.termination_reason
            if payload is not None:
                tx.put_payload(payload)
            event = RecordEvent(action=action_id, evidence=stored, status=status, termination_reason=reason)
            call.append("record", event, self._clock())
            tx.set_action_recorded(aid, action_id, eid)
            if status != row.status:
                tx.set_status(aid, status, None, reason)
            return Recorded(action=action_id, evidence=eid, hypothesis=action.hypothesis, status=status,
                            termination_reason=reason)  # fmt: skip

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

    def _transition(self, verb: str, message: str | None = None) -> Lifecycle:
        aid = self.analysis_id
        with self._call(write=True) as call:
            tx = call.tx
            row = self._row(tx)
            if row.status in ctl.TERMINAL:
                raise _closed(row)
            prior, reason = None, None
            if verb == "pause":
                if row.status == ctl.PAUSED:
                    raise SessionError(f"analysis {aid} is already paused", code="invalid_transition",
                                       details={"status": row.status})  # fmt: skip
                status, prior = ctl.PAUSED, row.status
            elif verb == "resume":
                if row.status != ctl.PAUSED:
                    raise SessionError(f"analysis {aid} is {row.status}, not paused", code="invalid_transition",
                                       details={"status": row.status})  # fmt: skip
                status, reason = ctl.termination(call.sync().state, row.prior_status or ctl.ACTIVE, _busy(tx, aid))
            else:
                status = ctl.CANCELLED if verb == "cancel" else ctl.FAILED
                reason = status
                req = tx.open_request(aid)
                if req is not None:
                    tx.set_request_status(aid, req.request_id, "abandoned")
            event = LifecycleEvent(status=status, prior_status=prior, termination_reason=reason, message=message)
            if verb == "resume":
                call.change()  # synced above: the kept state's position moves past this event
            call.append(verb, event, self._clock())
            tx.set_status(aid, status, prior, reason)
            return Lifecycle(analysis_id=aid, status=status, prior_status=prior, termination_reason=reason)

    # -- export ------------------------------------------------------------------------

    def export(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write every request of the analysis as a stored-context file whose hash verifies."""
        with self.store.read() as tx:
            self._row(tx)
            requests = tx.requests(self.analysis_id)
            contexts = list(self._contexts(tx, requests))
        return write_run(directory, contexts)

    def _contexts(self, tx: Tx, requests: list[RequestRecord]) -> Iterator[StoredContext]:
        by_seq: dict[int, list[RequestRecord]] = {}
        for req in requests:
            by_seq.setdefault(req.state_seq, []).append(req)
        for seq, state in replay(tx, self.analysis_id):
            for req in by_seq.get(seq, ()):
                yield self._context(req, copy_state(state))

    def _context(self, req: RequestRecord, state: State) -> StoredContext:
        ctx = make_stored_context(req.request_id, req.encoder, req.hypothesis, state)
        if ctx.rendered is None or ctx.rendered.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        return ctx

    def _rerender(self, call: _Call, req: RequestRecord) -> Request:
        view = call.view
        if view is not None and view.changed <= req.state_seq <= view.seq:
            state = call.complete().state  # nothing changed the state since the request was rendered
        else:
            state = fill(call.tx, catch_up(call.tx, self.analysis_id, None, upto=req.state_seq)).state
        out = get_encoder(req.encoder).render(state, req.hypothesis)
        if out.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        row = self._resolved(req, _evidence_ids(state))
        return Request.of(out, req.request_id, state, shown=list(row.shown), indexed=list(row.indexed))

    def _require_active(self, tx: Tx, decision: bool = False) -> AnalysisRow:
        row = self._row(tx)
        if row.status != ctl.ACTIVE:
            raise _closed(row, decision)
        return row


def _externalize(tx: Tx, state: State, payloads: dict[str, Any]) -> State:
    """Move every payload into the content-addressed payload table; the state keeps the hashes.

    `payloads` receives each one as the store gives it back, by hash.
    """
    for ev in state.evidence:
        if ev.payload is not None:
            digest = tx.put_payload(ev.payload)
            if digest not in payloads:
                payloads[digest] = stored_payload(ev.payload)
            ev.payload = None
    return state


def _evidence_ids(state: State) -> list[str]:
    return [ev.id for ev in state.evidence]


def _busy(tx: Tx, analysis_id: str) -> set[str]:
    return {a.hypothesis for a in tx.pending_actions(analysis_id)}


def _pending(a: ActionRow) -> PendingAction:
    return PendingAction(action=a.action_id, hypothesis=a.hypothesis, request_id=a.request_id, iteration=a.iteration,
                         source=a.source, query=a.query, purpose=a.purpose)  # fmt: skip


def _closed(row: AnalysisRow, decision: bool = False) -> SessionError | DecisionRejected:
    why = f" ({row.termination_reason})" if row.termination_reason else ""
    hint = "; resume it first" if row.status == ctl.PAUSED else ""
    cls = DecisionRejected if decision else SessionError
    return cls(f"analysis {row.analysis_id} is {row.status}{why}{hint}", code="analysis_closed",
               details={"status": row.status, "termination_reason": row.termination_reason})  # fmt: skip


def _stale(tx: Tx, analysis_id: str, request_id: str, open_req: RequestRecord | None) -> DecisionRejected:
    known = tx.request(analysis_id, request_id)
    if known is not None:
        why = f"request {request_id} was already {known.status}"
    else:
        why = f"request {request_id} is not a request of analysis {analysis_id}"
    now = f"; the open request is {open_req.request_id}" if open_req else "; no request is open"
    return DecisionRejected(why + now, code="stale_request",
                            details={"request_id": request_id, "open_request": open_req.request_id if open_req else None})  # fmt: skip
