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
from .decisions import Query, check_decision, check_spans, parse_decision
from .encoders import DEFAULT_ENCODER, RenderedContext, get_encoder
from .encoders.v11 import V11
from .errors import DecisionRejected, InvalidFile, SessionError, StoreCorrupt, UnknownEncoder
from .exports import journal_lines, state_hash, write_journal
from .files import check_new_run_dir
from .hashing import content_hash
from .journal import (
    AnswerEvent,
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
    replay,
    seed,
    stored_payload,
)
from .limits import MAX_COST, Limits
from .model import (
    Evidence, EvidenceBudget, State, StoredContext, copy_state, load_state_or_context, validate_state,
)  # fmt: skip
from .replies import Applied, Lifecycle, PendingAction, Recorded, Request, Summary
from .runs import make_stored_context, write_run
from .store import ActionRow, AnalysisRow, EventRow, Manifest, RequestRecord, RequestRow, SqliteStore, Tx

DEFAULT_STORE = os.path.join(".workingset", "store.sqlite3")


def default_store_path() -> str:
    """`$WORKINGSET_STORE`, else `.workingset/store.sqlite3`."""
    return os.environ.get("WORKINGSET_STORE") or DEFAULT_STORE


def utc_now() -> str:
    """The current time as RFC 3339 UTC with a `Z` offset (the default capture time)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _open_store(store: SqliteStore | str | os.PathLike[str], must_exist: bool, read_only: bool = False) -> tuple[SqliteStore, bool]:
    """The store and whether the handle owns it; a store that must exist is never created, nor its schema."""
    if isinstance(store, SqliteStore):
        return store, False
    return SqliteStore(os.fspath(store), create=not must_exist, read_only=read_only), True


def _as_bytes(value: str | bytes | dict[str, Any] | msgspec.Struct, what: str = "state") -> bytes:
    """JSON input as bytes; a string that is not valid Unicode (a lone surrogate) is refused with the input's code."""
    if isinstance(value, bytes):
        return value
    try:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (dict, msgspec.Struct)):
            return msgspec.json.encode(value)
    except UnicodeEncodeError:
        message = f"the {what} holds a string that is not valid Unicode (a lone surrogate)"
        if what == "decision":
            raise DecisionRejected(message, code="malformed_json", details={"path": "$"}) from None
        raise InvalidFile(message, details={"file": f"<{what}>", "path": "$"}) from None
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

    def change(self) -> Replayed:
        """The synced view, about to be changed by this call: kept only if the call commits."""
        assert self.view is not None, "sync() first"
        self.dirty = True
        return self.view

    def append(self, kind: str, event: Any, at: str) -> int:
        """Append this call's event; a synced view then reflects it (its change must already be applied)."""
        seq = self.tx.append_event(self.analysis_id, kind, at, encode_event(event))
        # A kept answer changes no state: a view that was current stays current past it.
        current = kind == "answer" and self.view is not None and self.view.seq == seq - 1
        if self.view is not None and (self.dirty or current):
            self.view.note(seq, kind)
        return seq


class Investigation:
    """One analysis in a store: the methods a controller calls every turn."""

    def __init__(
        self, store: SqliteStore, analysis_id: str, *, owns_store: bool = False, clock: Callable[[], str] = utc_now,
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
        store: SqliteStore | str | os.PathLike[str],
        state: State | bytes | str | dict[str, Any],
        *,
        encoder: str = DEFAULT_ENCODER,
        clock: Callable[[], str] = utc_now,
        limits: Limits | None = None,
    ) -> Investigation:
        """Create an analysis from a state (or a stored context's state); `encoder` renders its requests.

        `limits` bound this handle's inputs (state, decisions, results); default `Limits.current()`.
        """
        enc = get_encoder(encoder)
        if isinstance(state, State):
            validate_state(state)
            state = copy_state(state)
        else:
            state = load_state_or_context(_as_bytes(state), limits=limits)
        db, owns = _open_store(store, must_exist=False)
        inv = cls(db, state.analysis_id, owns_store=owns, clock=clock, limits=limits)
        try:
            inv._create(state, enc.name)
        except BaseException:
            inv.close()
            raise
        return inv

    def _create(self, state: State, encoder: str) -> None:
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
                                 termination_reason=reason)  # fmt: skip
            data = encode_event(event)
            seq = tx.append_event(aid, "created", at, data)
            view = seed(aid, EventRow(seq, "created", at, data), payloads)
        self.store.views[aid] = view

    @classmethod
    def open(
        cls, store: SqliteStore | str | os.PathLike[str], analysis_id: str, *, clock: Callable[[], str] = utc_now,
        limits: Limits | None = None, read_only: bool = False,
    ) -> Investigation:
        """Open an existing analysis; `unknown_analysis` if the store does not hold it.

        With `read_only` the store file is opened read-only (`show`, `state`, `requests`, `export`
        work, also on read-only media; the other calls are `store_unavailable`).
        """
        db, owns = _open_store(store, must_exist=True, read_only=read_only)
        inv = cls(db, analysis_id, owns_store=owns, clock=clock, limits=limits)
        try:
            if db.empty:
                raise SessionError(f"no analysis {analysis_id!r} in {db.path}: the store is empty; known: none",
                                   code="unknown_analysis", details={"analysis": analysis_id})  # fmt: skip
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
        _stored_encoder(row.encoder, f"analysis {self.analysis_id}")
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
        if call.view is not None:  # committed
            views[self.analysis_id] = call.view

    @property
    def state(self) -> State:
        """The current state (SPEC §3): a copy, up to date with the store."""
        with self._call(write=False) as call:
            self._row(call.tx)
            return copy_state(call.sync().state)

    def show(self) -> Summary:
        """Status, termination reason, encoder, open request, pending actions and the current state."""
        with self._call(write=False) as call:
            tx = call.tx
            row = self._row(tx)
            state = copy_state(call.sync().state)
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
            out = render_kept(call.sync(), row.encoder, hid)
            number = tx.request_count(aid) + 1
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
        """Validate a decision for the open request and apply it atomically (SPEC §6); reject with a stable code.

        Every answer is kept verbatim in the event log (`answer` events, see `journal.AnswerEvent`):
        a rejected one is appended on its own and changes nothing else, so the request stays open.
        """
        data = _as_bytes(decision, "decision")
        with self._call(write=True) as call:
            try:
                return self._apply_answer(call, request_id, data)
            except DecisionRejected as err:
                rejected = err  # kept below, in this same transaction, before it is raised
                call.append("answer", AnswerEvent.of(request_id, data, err), self._clock())
        raise rejected

    def _apply_answer(self, call: _Call, request_id: str, data: bytes) -> Applied:
        """Validate and apply one answer; a `DecisionRejected` leaves the transaction untouched."""
        aid = self.analysis_id
        tx = call.tx
        self._require_active(tx, decision=True)
        req = tx.open_request(aid)
        if req is None or req.request_id != request_id:
            raise _stale(tx, aid, request_id, req)
        enc = _stored_encoder(req.encoder, f"request {req.request_id}")
        supports_recall = enc.supports_recall
        parsed = parse_decision(data, supports_recall=supports_recall, supports_spans=enc.supports_spans,
                                limits=self.limits)
        view = call.sync()
        state = view.state
        # Rule G checks against exactly the IDs this request showed (its manifest, resolved).
        shown = self._resolved(req, _evidence_ids(state)).shown
        check_decision(parsed, state, hypothesis_id=req.hypothesis, request_id=request_id,
                       shown=shown, supports_recall=supports_recall)  # fmt: skip
        if enc.supports_spans:
            check_spans(parsed, state, shown=shown, request_id=request_id)
        ids = ctl.allocate(state, parsed, numbers=view.numbers)
        busy = _busy(tx, aid) | ({req.hypothesis} if ids.action else set())
        call.change()
        # Applied as a replay will apply it: the decision decoded from its stored form.
        iteration = view.apply_decision(req.hypothesis, as_replayed(parsed), ids)
        status, reason = ctl.termination(state, ctl.ACTIVE, busy)
        event = DecisionEvent(request_id=request_id, hypothesis=req.hypothesis, decision=parsed,
                              notes=list(ids.notes), action=ids.action, iteration=iteration,
                              status=status, termination_reason=reason)  # fmt: skip
        at = self._clock()
        call.append("answer", AnswerEvent.of(request_id, data), at)
        call.append("decision", event, at)
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
            # A ResultInput built in Python is checked like JSON: its numbers have ranges too.
            parsed = decode_result(_as_bytes(result, "result"), source, self.limits)
            _check_result_matches(parsed, action)
            view = call.sync()
            state = view.state
            if state.budget.cost_used + parsed.cost > MAX_COST:
                raise InvalidFile(
                    f"{source}: cost {parsed.cost:g} would take the analysis's cost_used {state.budget.cost_used:g} "
                    f"past {MAX_COST:g}, the largest cost a budget holds at $.cost",
                    details={"file": source, "path": "$.cost", "limit": MAX_COST},
                )
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
        """Write every request as a stored-context file whose hash verifies, and the journal and answers beside them.

        Returns the stored-context paths; `journal.jsonl` and `answers.jsonl` (see `exports`)
        are what `workingset replay` rebuilds the analysis from. `directory` must be new or hold
        no `.json` files (checked first); the stored contexts are written all or none. Each is
        written as the replay reaches its request, from the replayed state itself: memory stays
        that of one state and time that of the bytes written, however long the history (holding
        a copy per request made both grow with its square).
        """
        check_new_run_dir(directory)
        with self._call(write=False) as call:
            row = self._row(call.tx)
            requests = call.tx.requests(self.analysis_id)
            call.tx.actions(self.analysis_id)  # read only to check them: an export reads everything once
            paths = write_run(directory, self._contexts(call.tx, requests))
            lines = journal_lines(call.tx, self.analysis_id)
            final = call.sync().state
        header = {"analysis_id": self.analysis_id, "encoder": row.encoder}
        end = {"events": len(lines), "status": row.status, "termination_reason": row.termination_reason,
               "state_hash": state_hash(final)}  # fmt: skip
        write_journal(directory, header, lines, end)
        return paths

    def _contexts(self, tx: Tx, requests: list[RequestRecord]) -> Iterator[StoredContext]:
        """Each request's stored context, in order; valid only until the next one is asked for."""
        by_seq: dict[int, list[RequestRecord]] = {}
        for req in requests:
            by_seq.setdefault(req.state_seq, []).append(req)
        for row, event, state in replay(tx, self.analysis_id):
            for req in by_seq.pop(row.seq, ()):
                if row.kind != "request" or (event.request_id, event.hash) != (req.request_id, req.hash):
                    raise StoreCorrupt(f"store {self.store.path}: request {req.request_id} points at event {row.seq}, "
                                       f"which is not its request event", details={"analysis": self.analysis_id,
                                       "request_id": req.request_id, "seq": row.seq})  # fmt: skip
                # The live replayed state, not a copy: the caller writes each context before the next.
                yield self._context(req, state)
        for seq, reqs in by_seq.items():
            raise _points_nowhere(self.store.path, self.analysis_id, reqs[0], seq)

    def _context(self, req: RequestRecord, state: State) -> StoredContext:
        _stored_encoder(req.encoder, f"request {req.request_id}")
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
            state = view.state  # nothing changed the state since the request was rendered
            out = render_kept(view, req.encoder, req.hypothesis)
        else:
            at = catch_up(call.tx, self.analysis_id, None, upto=req.state_seq) if req.state_seq >= 1 else None
            if at is None or at.seq != req.state_seq:
                raise _points_nowhere(self.store.path, self.analysis_id, req, req.state_seq)
            state = at.state
            out = _stored_encoder(req.encoder, f"request {req.request_id}").render(state, req.hypothesis)
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


def render_kept(view: Replayed, encoder: str, hypothesis: str) -> RenderedContext:
    """Render the kept state; an encoder that can resume its work between turns (v11) keeps it on the view."""
    enc = _stored_encoder(encoder, "a stored row")
    if not isinstance(enc, V11):
        return enc.render(view.state, hypothesis)
    journal = view.renders.get(enc.name)
    if journal is None:
        journal = view.renders[enc.name] = enc.new_journal(view.state)
    return enc.render(view.state, hypothesis, journal=journal)


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


def _check_result_matches(result: ResultInput, action: ActionRow) -> None:
    """A result must be of the query its action decided: `capture.origin` is its source, `capture.query` its query."""
    for field, got, expected in (("origin", result.capture.origin, action.source), ("query", result.capture.query, action.query)):
        if got != expected:
            raise SessionError(
                f"the result's capture.{field} {got!r} is not the {'source' if field == 'origin' else 'query'} "
                f"{expected!r} that {action.action_id} decided; record the result of that query",
                code="result_mismatch",
                details={"action": action.action_id, "path": f"$.capture.{field}", "expected": expected, "got": got},
            )


def _stored_encoder(name: str, owner: str) -> Any:
    """The encoder a store row names; an unknown name there is damage, not the caller's `unknown_encoder`."""
    try:
        return get_encoder(name)
    except UnknownEncoder as err:
        raise StoreCorrupt(f"{owner} names an unknown encoder ({err.message})", details={"encoder": name}) from None


def _points_nowhere(path: str, analysis_id: str, req: RequestRecord, seq: int) -> StoreCorrupt:
    return StoreCorrupt(f"store {path}: request {req.request_id} points at event {seq}, which the log of {analysis_id} "
                        "does not have", details={"analysis": analysis_id, "request_id": req.request_id, "seq": seq})  # fmt: skip


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
