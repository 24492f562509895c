"""The per-turn API an investigation controller calls (SPEC §6–8): `Investigation`.

Each method is one store transaction: it loads the analysis (replaying its event log),
validates, applies the pure functions of `controller`, and writes the event with the index
rows it implies. A rejected call writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from . import controller as ctl
from .decisions import Query, check_decision, parse_decision
from .encoders import DEFAULT_ENCODER, get_encoder
from .errors import DecisionRejected, SessionError, StoreCorrupt
from .hashing import content_hash
from .journal import (
    CreatedEvent,
    DecisionEvent,
    LifecycleEvent,
    RecordEvent,
    RequestEvent,
    ResultInput,
    check_timestamp,
    decode_result,
    encode_event,
    replay,
)
from .model import Evidence, EvidenceBudget, State, StoredContext, copy_state, load_state_or_context, validate_state
from .replies import Applied, Lifecycle, PendingAction, Recorded, Request, Summary
from .runs import make_stored_context, write_run
from .store import ActionRow, AnalysisRow, RequestRow, SqliteStore, Tx

DEFAULT_STORE = os.path.join(".workingset", "store.sqlite3")


def default_store_path() -> str:
    """`$WORKINGSET_STORE`, else `.workingset/store.sqlite3`."""
    return os.environ.get("WORKINGSET_STORE") or DEFAULT_STORE


def utc_now() -> str:
    """The current time as RFC 3339 UTC with a `Z` offset (the default capture time)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _open_store(store: SqliteStore | str | os.PathLike[str], must_exist: bool) -> tuple[SqliteStore, bool]:
    if isinstance(store, SqliteStore):
        return store, False
    path = os.fspath(store)
    if must_exist and not os.path.exists(path):
        raise SessionError(f"no store at {path}", code="unknown_analysis", details={"store": path})
    return SqliteStore(path), True


def _as_bytes(value: str | bytes | dict[str, Any] | msgspec.Struct) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (dict, msgspec.Struct)):
        return msgspec.json.encode(value)
    raise TypeError(f"expected JSON text, bytes, a dict or a Struct, not {type(value).__name__}")


class Investigation:
    """One analysis in a store: the methods a controller calls every turn."""

    def __init__(self, store: SqliteStore, analysis_id: str, *, owns_store: bool = False, clock: Callable[[], str] = utc_now):
        self.store = store
        self.analysis_id = analysis_id
        self._owns_store = owns_store
        self._clock = clock

    # -- lifecycle of the handle -----------------------------------------------------

    @classmethod
    def create(
        cls,
        store: SqliteStore | str | os.PathLike[str],
        state: State | bytes | str | dict[str, Any],
        *,
        encoder: str = DEFAULT_ENCODER,
        clock: Callable[[], str] = utc_now,
    ) -> Investigation:
        """Create an analysis from a state (or a stored context's state); `encoder` renders its requests."""
        enc = get_encoder(encoder)
        if isinstance(state, State):
            validate_state(state)
            state = copy_state(state)
        else:
            state = load_state_or_context(_as_bytes(state))
        db, owns = _open_store(store, must_exist=False)
        inv = cls(db, state.analysis_id, owns_store=owns, clock=clock)
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
            event = CreatedEvent(state=_externalize(tx, copy_state(state)), encoder=encoder, status=status,
                                 termination_reason=reason)  # fmt: skip
            tx.append_event(aid, "created", at, encode_event(event))

    @classmethod
    def open(cls, store: SqliteStore | str | os.PathLike[str], analysis_id: str, *, clock: Callable[[], str] = utc_now) -> Investigation:
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

    def _state(self, tx: Tx, upto: int | None = None) -> State:
        state = None
        for _, state in replay(tx, self.analysis_id, upto):
            pass
        if state is None:
            raise StoreCorrupt(f"store {self.store.path}: analysis {self.analysis_id} has no events")
        return state

    @property
    def state(self) -> State:
        """The current state (SPEC §3), rebuilt from the store."""
        with self.store.read() as tx:
            self._row(tx)
            return self._state(tx)

    def show(self) -> Summary:
        """Status, termination reason, encoder, open request, pending actions and the current state."""
        with self.store.read() as tx:
            row = self._row(tx)
            state = self._state(tx)
            open_req = _open_request(tx, self.analysis_id)
            return Summary(
                status=row.status,
                termination_reason=row.termination_reason,
                encoder=row.encoder,
                open_request=open_req.request_id if open_req else None,
                pending_actions=[_pending(a) for a in tx.actions(self.analysis_id) if a.status == "pending"],
                state=state,
            )

    def requests(self) -> list[RequestRow]:
        """Every request of the analysis with its persisted manifest, in order."""
        with self.store.read() as tx:
            self._row(tx)
            return tx.requests(self.analysis_id)

    # -- the turn ----------------------------------------------------------------------

    def next_request(self, hypothesis: str | None = None) -> Request:
        """Render and persist the next request (scheduler's or the caller's hypothesis), or return the open one."""
        aid = self.analysis_id
        with self.store.write() as tx:
            row = self._require_active(tx)
            requests = tx.requests(aid)
            open_req = next((r for r in requests if r.status == "open"), None)
            state = self._state(tx)
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
                return self._rerender(tx, open_req)
            if hypothesis is None:
                hid = ctl.schedule(state, busy)
            else:
                ctl.check_choice(state, hypothesis, busy)
                hid = hypothesis
            out = get_encoder(row.encoder).render(state, hid)
            number = len(requests) + 1
            rid = f"{aid}-r{number:04d}"
            event = RequestEvent(request_id=rid, hypothesis=hid, encoder=out.encoder, shown=list(out.shown),
                                 indexed=list(out.indexed), chars=out.chars, hash=out.hash)  # fmt: skip
            seq = tx.append_event(aid, "request", self._clock(), encode_event(event))
            tx.insert_request(RequestRow(aid, number, rid, hid, out.encoder, out.shown, out.indexed, out.chars,
                                         out.hash, seq, "open"))  # fmt: skip
            return Request(request_id=rid, encoder=out.encoder, hypothesis=hid, text=out.text, shown=list(out.shown),
                           indexed=list(out.indexed), chars=out.chars, hash=out.hash)  # fmt: skip

    def submit(self, request_id: str, decision: str | bytes | dict[str, Any]) -> Applied:
        """Validate a decision for the open request and apply it atomically (SPEC §6); reject with a stable code."""
        data = _as_bytes(decision)
        aid = self.analysis_id
        with self.store.write() as tx:
            self._require_active(tx, decision=True)
            req = _open_request(tx, aid)
            if req is None or req.request_id != request_id:
                raise _stale(tx, aid, request_id, req)
            supports_recall = get_encoder(req.encoder).supports_recall
            parsed = parse_decision(data, supports_recall=supports_recall)
            state = self._state(tx)
            check_decision(parsed, state, hypothesis_id=req.hypothesis, request_id=request_id,
                           shown=req.shown, supports_recall=supports_recall)  # fmt: skip
            actions = tx.actions(aid)
            ids = ctl.allocate(state, parsed, [a.action_id for a in actions])
            iteration = ctl.apply_decision(state, req.hypothesis, parsed, ids)
            busy = _busy(tx, aid) | ({req.hypothesis} if ids.action else set())
            status, reason = ctl.termination(state, ctl.ACTIVE, busy)
            event = DecisionEvent(request_id=request_id, hypothesis=req.hypothesis, decision=parsed,
                                  notes=list(ids.notes), action=ids.action, iteration=iteration,
                                  status=status, termination_reason=reason)  # fmt: skip
            tx.append_event(aid, "decision", self._clock(), encode_event(event))
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
        with self.store.write() as tx:
            row = self._row(tx)
            if row.status in ctl.TERMINAL:
                raise _closed(row)
            action = next((a for a in tx.actions(aid) if a.action_id == action_id), None)
            if action is None or action.status != "pending":
                pending = [a.action_id for a in tx.actions(aid) if a.status == "pending"]
                why = f"its result was recorded as {action.evidence_id}" if action else "no such action"
                raise SessionError(
                    f"{action_id} is not a pending action of analysis {aid} ({why}); pending: {', '.join(pending) or 'none'}",
                    code="unknown_action",
                    details={"action": action_id, "pending": pending},
                )
            parsed = result if isinstance(result, ResultInput) else decode_result(_as_bytes(result), source)
            state = self._state(tx)
            eid = ctl.next_evidence_id(state)
            payload = parsed.payload
            evidence = Evidence(
                id=eid, collector=action.hypothesis, scope=parsed.scope, capture=parsed.capture, payload=payload,
                content_hash=content_hash(payload) if payload is not None else None,
                budget=EvidenceBudget(action=action_id, status="unsettled", cost=parsed.cost),
                iteration=action.iteration, captured_at=captured_at,
            )  # fmt: skip
            ctl.apply_record(state, evidence)
            busy = _busy(tx, aid) - {action.hypothesis}
            status, reason = ctl.termination(state, row.status, busy)
            if row.status != ctl.ACTIVE:
                reason = row.termination_reason
            stored = msgspec.structs.replace(evidence, payload=None)
            if payload is not None:
                tx.put_payload(payload)
            event = RecordEvent(action=action_id, evidence=stored, status=status, termination_reason=reason)
            tx.append_event(aid, "record", self._clock(), encode_event(event))
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
        with self.store.write() as tx:
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
                status, reason = ctl.termination(self._state(tx), row.prior_status or ctl.ACTIVE, _busy(tx, aid))
            else:
                status = ctl.CANCELLED if verb == "cancel" else ctl.FAILED
                reason = status
                req = _open_request(tx, aid)
                if req is not None:
                    tx.set_request_status(aid, req.request_id, "abandoned")
            event = LifecycleEvent(status=status, prior_status=prior, termination_reason=reason, message=message)
            tx.append_event(aid, verb, self._clock(), encode_event(event))
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

    def _contexts(self, tx: Tx, requests: list[RequestRow]) -> Iterator[StoredContext]:
        by_seq: dict[int, list[RequestRow]] = {}
        for req in requests:
            by_seq.setdefault(req.state_seq, []).append(req)
        for seq, state in replay(tx, self.analysis_id):
            for req in by_seq.get(seq, ()):
                yield self._context(req, copy_state(state))

    def _context(self, req: RequestRow, state: State) -> StoredContext:
        ctx = make_stored_context(req.request_id, req.encoder, req.hypothesis, state)
        if ctx.rendered is None or ctx.rendered.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        return ctx

    def _rerender(self, tx: Tx, req: RequestRow) -> Request:
        state = self._state(tx, upto=req.state_seq)
        out = get_encoder(req.encoder).render(state, req.hypothesis)
        if out.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        return Request(request_id=req.request_id, encoder=out.encoder, hypothesis=req.hypothesis, text=out.text,
                       shown=list(req.shown), indexed=list(req.indexed), chars=req.chars, hash=req.hash)  # fmt: skip

    def _require_active(self, tx: Tx, decision: bool = False) -> AnalysisRow:
        row = self._row(tx)
        if row.status != ctl.ACTIVE:
            raise _closed(row, decision)
        return row


def _externalize(tx: Tx, state: State) -> State:
    """Move every payload into the content-addressed payload table; the state keeps the hashes."""
    for ev in state.evidence:
        if ev.payload is not None:
            tx.put_payload(ev.payload)
            ev.payload = None
    return state


def _open_request(tx: Tx, analysis_id: str) -> RequestRow | None:
    return next((r for r in tx.requests(analysis_id) if r.status == "open"), None)


def _busy(tx: Tx, analysis_id: str) -> set[str]:
    return {a.hypothesis for a in tx.actions(analysis_id) if a.status == "pending"}


def _pending(a: ActionRow) -> PendingAction:
    return PendingAction(action=a.action_id, hypothesis=a.hypothesis, request_id=a.request_id, iteration=a.iteration,
                         source=a.source, query=a.query, purpose=a.purpose)  # fmt: skip


def _closed(row: AnalysisRow, decision: bool = False) -> SessionError | DecisionRejected:
    why = f" ({row.termination_reason})" if row.termination_reason else ""
    hint = "; resume it first" if row.status == ctl.PAUSED else ""
    cls = DecisionRejected if decision else SessionError
    return cls(f"analysis {row.analysis_id} is {row.status}{why}{hint}", code="analysis_closed",
               details={"status": row.status, "termination_reason": row.termination_reason})  # fmt: skip


def _stale(tx: Tx, analysis_id: str, request_id: str, open_req: RequestRow | None) -> DecisionRejected:
    known = {r.request_id: r for r in tx.requests(analysis_id)}
    if request_id in known:
        why = f"request {request_id} was already {known[request_id].status}"
    else:
        why = f"request {request_id} is not a request of analysis {analysis_id}"
    now = f"; the open request is {open_req.request_id}" if open_req else "; no request is open"
    return DecisionRejected(why + now, code="stale_request",
                            details={"request_id": request_id, "open_request": open_req.request_id if open_req else None})  # fmt: skip
