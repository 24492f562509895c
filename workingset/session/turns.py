"""The turn: `next_request`, `submit` and `record`, each one store transaction (docs/protocol.md#the-turn).

A mixin of `session.Investigation`, which supplies the store, the analysis ID, the clock and
`_call` (the transaction with the analysis's kept state): `Host` lists what the mixin uses of it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

from .. import controller as ctl
from ..decisions import (
    Query,
    Recall,
    StoredDecision,
    bind_quotes,
    check_decision,
    check_recall_pages,
    check_spans,
    parse_decision,
)
from ..encoders import RenderedContext
from ..encoders.journal.base import render_kept as resuming_render
from ..errors import (
    DecisionRejected,
    InvalidFile,
    SessionError,
    StoreCorrupt,
    UsageError,
)
from ..eventlog.log import (
    AnswerEvent,
    DecisionEvent,
    RecordEvent,
    Replayed,
    RequestEvent,
    ResultInput,
    as_replayed,
    catch_up,
    check_timestamp,
    decode_result,
    fill,
    stored_payload,
)  # fmt: skip
from ..io.limits import MAX_COST, Limits, too_large
from ..model.costs import add_cost, cost_text
from ..model.hashing import content_hash
from ..model.state import Evidence, EvidenceBudget
from ..store import ActionRow, AnalysisRow, Manifest, RequestRecord, RequestRow, Store, Tx
from .bounds import checked_bounds, usage_at
from .calls import (
    Call,
    as_bytes,
    busy_hypotheses,
    check_result_matches,
    closed,
    evidence_ids,
    points_nowhere,
    stale,
    stored_encoder,
)  # fmt: skip
from .replies import Applied, Lifecycle, Recorded, Request


class Host(Protocol):
    """What `Turns` uses of the class it is mixed into (`session.Investigation`)."""

    store: Store
    analysis_id: str
    limits: Limits | None
    _clock: Callable[[], str]

    def _call(self, write: bool) -> AbstractContextManager[Call]: ...

    def _row(self, tx: Tx, checked: bool = True) -> AnalysisRow: ...

    def _resolved(self, req: RequestRecord, ids: list[str]) -> RequestRow: ...

    def fail(self, message: str) -> Lifecycle: ...


# Type checkers see `Turns` as a `Host` (so it may use the host's members, and the host is checked
# against them); at run time it derives from `object` alone, as a plain mixin.
if TYPE_CHECKING:
    _Mixin = Host
else:
    _Mixin = object


class Turns(_Mixin):
    """The per-turn calls of an `Investigation`."""

    def next_request(self, hypothesis: str | None = None) -> Request:
        """Render and persist the next request (scheduler's or the caller's hypothesis), or return the open one."""
        with checked_bounds(self):  # a bound the log counts may have run out since the last call
            return self._next_request(hypothesis)

    def _next_request(self, hypothesis: str | None) -> Request:
        aid = self.analysis_id
        with self._call(write=True) as call:
            tx = call.tx
            row = self._require_active(tx)
            open_req = tx.open_request(aid)
            state = call.sync().state
            busy = busy_hypotheses(tx, aid)
            if hypothesis is not None and state.hypothesis(hypothesis) is None:
                ctl.check_choice(
                    state, hypothesis, busy
                )  # unknown_hypothesis, the most specific code
            if open_req is not None:
                if hypothesis is not None and hypothesis != open_req.hypothesis:
                    raise SessionError(
                        f"request {open_req.request_id} for {open_req.hypothesis} is open; answer it before "
                        f"asking for {hypothesis}",
                        code="request_open",
                        details={
                            "request_id": open_req.request_id,
                            "hypothesis": open_req.hypothesis,
                        },
                    )
                return self._rerender(call, open_req)
            if hypothesis is None:
                hid = ctl.schedule(state, busy)
            else:
                ctl.check_choice(state, hypothesis, busy)
                hid = hypothesis
            view = call.complete()
            out = render_kept(view, row.encoder, hid)
            number = max(tx.request_count(aid), view.requests_before) + 1
            rid = f"{aid}-r{number:04d}"
            manifest = Manifest.of(out.shown, out.indexed, evidence_ids(state))
            event = RequestEvent(request_id=rid, hypothesis=hid, encoder=out.encoder, manifest=manifest,
                                 chars=out.chars, hash=out.hash)  # fmt: skip
            call.change()  # the request event advances the kept state's position (not the state)
            seq = call.append("request", event, self._clock())
            tx.insert_request(RequestRecord(aid, number, rid, hid, out.encoder, manifest, out.chars, out.hash, seq,
                                            "open"))  # fmt: skip
            return Request.of(out, rid, state)

    def submit(
        self, request_id: str, decision: str | bytes | dict[str, Any], *, size: int | None = None
    ) -> Applied:
        """Validate a decision for the open request and apply it atomically (docs/protocol.md#decisions); reject with a stable code.

        Every answer is kept verbatim in the event log (`answer` events, see `journal.AnswerEvent`):
        a rejected one is appended on its own and changes nothing else, so the request stays open.
        One over `max_decision_bytes` keeps its first that many bytes and its whole `size`,
        whatever it is refused for. A reader that stopped at the limit (the CLI) gives just those
        bytes and the `size` it counted: the answer is refused and kept exactly as if given whole.
        """
        with checked_bounds(self):  # a bound the log counts may have run out since the last call
            return self._submit(request_id, decision, size)

    def _submit(
        self, request_id: str, decision: str | bytes | dict[str, Any], size: int | None
    ) -> Applied:
        data = as_bytes(decision, "decision")
        limit = (self.limits or Limits.current()).max_decision_bytes
        with self._call(write=True) as call:
            try:
                return self._apply_answer(call, request_id, data, size)
            except DecisionRejected as err:
                rejected = err  # kept below, in this same transaction, before it is raised
                head, whole = (
                    (data[:limit], len(data))
                    if size is None and len(data) > limit
                    else (data, size)
                )
                call.append(
                    "answer", AnswerEvent.of(request_id, head, err, size=whole), self._clock()
                )
        raise rejected

    def _apply_answer(
        self, call: Call, request_id: str, data: bytes, size: int | None = None
    ) -> Applied:
        """Validate and apply one answer (of `size` bytes when `data` is only its head); a `DecisionRejected` leaves the transaction untouched."""
        aid = self.analysis_id
        tx = call.tx
        self._require_active(tx, decision=True)
        req = tx.open_request(aid)
        if req is None or req.request_id != request_id:
            raise stale(tx, aid, request_id, req)
        if size is not None:  # where `parse_decision` refuses an answer given whole
            raise too_large("decision", "<decision>", size, self.limits or Limits.current())
        enc = stored_encoder(req.encoder, f"request {req.request_id}")
        call.checked(
            self.store.path, req
        )  # a damaged store keeps no answer (the code `show` and `next` give)
        supports_recall = enc.supports_recall
        supports_pages = getattr(enc, "supports_pages", False)
        parsed = parse_decision(
            data,
            supports_recall=supports_recall,
            supports_spans=enc.supports_spans,
            limits=self.limits,
            supports_pages=supports_pages,
            null_assessment=getattr(enc, "stable_strict_schema", False),
            supports_quotes=getattr(enc, "supports_quotes", False),
        )
        view = call.sync()
        if isinstance(parsed.next, Recall) or (
            enc.supports_spans
            and (getattr(parsed.next, "spans", None) or getattr(parsed.next, "quotes", None))
        ):
            view = (
                call.complete()
            )  # what a recall, a span or a quote is checked against includes the payloads
        state = view.state
        # A v15 conclusion's quotes become spans (its stored form), checked below as spans are.
        parsed = bind_quotes(parsed, state)
        # Rule G checks against exactly the IDs this request showed (its manifest, resolved).
        shown = self._resolved(req, evidence_ids(state)).shown
        check_decision(parsed, state, hypothesis_id=req.hypothesis, request_id=request_id,
                       shown=shown, supports_recall=supports_recall)  # fmt: skip
        if enc.supports_spans:
            check_spans(parsed, state, shown=shown, request_id=request_id)
        if supports_pages:
            check_recall_pages(parsed, state, enc.page_count)
        ids = ctl.allocate(state, parsed, numbers=view.numbers)
        busy = busy_hypotheses(tx, aid) | ({req.hypothesis} if ids.action else set())
        call.change()
        # Applied as a replay will apply it: the decision decoded from its stored form.
        iteration = view.apply_decision(req.hypothesis, as_replayed(parsed), ids)
        at = self._clock()
        # This answer is kept below: it is one more model call.
        status, reason = ctl.termination(state, ctl.ACTIVE, busy, usage_at(view, at, answers=1))
        # The event is only encoded here. Every version's decision schema is a subset of
        # `StoredDecision` (the widest), so what it encodes to decodes as one, as a replay reads it.
        stored = cast(StoredDecision, parsed)
        event = DecisionEvent(request_id=request_id, hypothesis=req.hypothesis, decision=stored,
                              notes=list(ids.notes), action=ids.action, iteration=iteration,
                              status=status, termination_reason=reason)  # fmt: skip
        call.append("answer", AnswerEvent.of(request_id, data), at)
        call.append("decision", event, at)
        tx.set_request_status(aid, request_id, "answered")
        kind = type(parsed.next).__struct_config__.tag
        assert isinstance(kind, str)  # query, recall and conclude are tagged by their `kind` name
        applied = Applied(
            request_id=request_id,
            applied=kind,
            iteration=iteration,
            status=status,
            action=ids.action,
        )
        if isinstance(parsed.next, Query):
            q = parsed.next
            assert ids.action is not None  # `allocate` gives a query its action ID
            tx.insert_action(ActionRow(aid, ids.action, req.hypothesis, request_id, iteration,
                                       q.source, q.query, q.purpose, "pending"))  # fmt: skip
            # What was decided, so the controller runs the query without reading the analysis back.
            applied = msgspec.structs.replace(applied, hypothesis=req.hypothesis, source=q.source, query=q.query,
                                              purpose=q.purpose)  # fmt: skip
        if status != ctl.ACTIVE:
            tx.set_status(aid, status, None, reason)
        return applied

    def record(
        self,
        action_id: str,
        result: str | bytes | dict[str, Any] | ResultInput | None = None,
        *,
        payload: dict[str, Any] | msgspec.Struct | None = None,
        cost: float = 0.0,
        item_count: int | None = None,
        captured_at: str | None = None,
        source: str = "<result>",
    ) -> Recorded:
        """Record a pending query's result as new, unsettled evidence; it becomes the hypothesis's previous result.

        `result` is `{"scope", "capture", "payload", "cost"?}` (JSON text, bytes, a dict or a `ResultInput`).
        Or give only `payload=` (with `cost=` and `item_count=` if known): the result is then a
        `query_result` whose `capture.query` and `capture.origin` are the action's decided query
        and source. `captured_at` defaults to now (recording may read the clock; rendering never does).
        """
        aid = self.analysis_id
        if (result is None) == (payload is None):
            raise UsageError("record takes the whole result or payload= (the capture then comes from the action), "
                             "exactly one of them")  # fmt: skip
        if captured_at is None:
            captured_at = self._clock()
        check_timestamp(captured_at)
        with self._call(write=True) as call:
            tx = call.tx
            row = self._row(tx)
            if row.status in ctl.TERMINAL:
                raise closed(row)
            action = tx.action(aid, action_id)
            if action is None or action.status != "pending":
                pending = [a.action_id for a in tx.pending_actions(aid)]
                why = (
                    f"its result was recorded as {action.evidence_id}"
                    if action
                    else "no such action"
                )
                raise SessionError(
                    f"{action_id} is not a pending action of analysis {aid} ({why}); pending: {', '.join(pending) or 'none'}",
                    code="unknown_action",
                    details={"action": action_id, "pending": pending},
                )
            if result is None:
                result = of_action(action, payload, cost, item_count)
            # A ResultInput built in Python is checked like JSON: its numbers have ranges too.
            parsed = decode_result(as_bytes(result, "result"), source, self.limits)
            check_result_matches(parsed, action)
            view = call.checked(self.store.path, tx.open_request(aid))
            state = view.state
            if add_cost(state.budget.cost_used, parsed.cost) > MAX_COST:
                raise InvalidFile(
                    f"{source}: cost {cost_text(parsed.cost)} would take the analysis's cost_used {cost_text(state.budget.cost_used)} "
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
            busy = busy_hypotheses(tx, aid) - {action.hypothesis}
            call.change()
            # Applied as a replay will apply it: the evidence decoded from its stored event, the payload
            # from its canonical bytes (nothing shared with the caller's objects).
            kept = as_replayed(stored)
            kept.payload = stored_payload(payload) if payload is not None else None
            view.apply_record(kept)
            at = self._clock()
            status, reason = ctl.termination(state, row.status, busy, usage_at(view, at))
            if row.status != ctl.ACTIVE:
                reason = row.termination_reason
            if payload is not None:
                tx.put_payload(payload)
            event = RecordEvent(
                action=action_id, evidence=stored, status=status, termination_reason=reason
            )
            call.append("record", event, at)
            tx.set_action_recorded(aid, action_id, eid)
            if status != row.status:
                tx.set_status(aid, status, None, reason)
            return Recorded(action=action_id, evidence=eid, hypothesis=action.hypothesis, status=status,
                            termination_reason=reason)  # fmt: skip

    def _rerender(self, call: Call, req: RequestRecord) -> Request:
        view = call.view
        if view is not None and view.changed <= req.state_seq <= view.seq:
            view = call.complete()  # nothing changed the state since the request was rendered
            state = view.state
            out = render_kept(view, req.encoder, req.hypothesis)
        else:
            at = (
                catch_up(call.tx, self.analysis_id, None, upto=req.state_seq)
                if req.state_seq >= 1
                else None
            )
            if at is None or at.seq != req.state_seq:
                raise points_nowhere(self.store.path, self.analysis_id, req, req.state_seq)
            state = fill(call.tx, at).state
            out = stored_encoder(req.encoder, f"request {req.request_id}").render(
                state, req.hypothesis
            )
        if out.hash != req.hash:
            raise StoreCorrupt(
                f"store {self.store.path}: request {req.request_id} no longer re-renders to its recorded hash",
                details={"request_id": req.request_id},
            )
        row = self._resolved(req, evidence_ids(state))
        return Request.of(
            out, req.request_id, state, shown=list(row.shown), indexed=list(row.indexed)
        )

    def _require_active(self, tx: Tx, decision: bool = False) -> AnalysisRow:
        row = self._row(tx)
        if row.status != ctl.ACTIVE:
            raise closed(row, decision)
        return row


def render_kept(view: Replayed, encoder: str, hypothesis: str) -> RenderedContext:
    """Render the kept state; an encoder that can resume its work between turns (the journal family) keeps it on the view."""
    return resuming_render(
        stored_encoder(encoder, "a stored row"), view.state, hypothesis, view.renders
    )


def of_action(
    action: ActionRow, payload: Any, cost: float, item_count: int | None
) -> dict[str, Any]:
    """The `query_result` of a pending action's own query and source, holding `payload`."""
    capture: dict[str, Any] = {"query": action.query, "origin": action.source}
    if item_count is not None:
        capture["item_count"] = item_count
    return {"scope": "query_result", "capture": capture, "payload": payload, "cost": cost}
