"""The controller's loop: `submit_reply`, `turn` (one bounded turn) and `run` (every turn to the end).

A mixin of `session.Investigation` beside `turns.Turns`: `Host` lists what it uses. A reply
with no answer (refused, cut off, empty) is kept like any answer, as a rejection with its
`reply_*` code and the reply itself, so the export's `answers.jsonl` holds every reply the
model gave. It is not the analysis's failure: a turn whose tries end on one raises the
retryable `turn_incomplete` and leaves the request open (docs/controllers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .. import controller as ctl
from ..errors import DecisionRejected, ReplyUnusable, SessionError, UsageError, WorkingsetError
from ..eventlog.log import AnswerEvent
from ..io.limits import Limits
from ..providers import NOT_RETRYABLE, check_options
from ..store import AnalysisRow, Store, Tx
from .answers import answer_of
from .attempts import (
    Attempt,
    kept_answers,
    rejection,
    reply_bytes,
    reply_json,
    retry_of,
    sender,
    suggested_max_tokens,
)
from .calls import Call, stale
from .replies import Applied, Lifecycle, PendingAction, Recorded, Request, Summary


class Host(Protocol):
    """What `Loop` uses of the class it is mixed into (`session.Investigation`)."""

    store: Store
    analysis_id: str
    limits: Limits | None
    _clock: Callable[[], str]

    @property
    def status(self) -> str: ...

    def _call(self, write: bool) -> AbstractContextManager[Call]: ...

    def _require_active(self, tx: Tx, decision: bool = False) -> AnalysisRow: ...

    def next_request(self, hypothesis: str | None = None) -> Request: ...

    def submit(
        self, request_id: str, decision: str | bytes | dict[str, Any], *, size: int | None = None
    ) -> Applied: ...

    def record(self, action_id: str, result: Any = None, *, payload: Any = None, cost: float = 0.0,
               item_count: int | None = None) -> Recorded: ...  # fmt: skip

    def pending_actions(self) -> list[PendingAction]: ...

    def show(self) -> Summary: ...

    def fail(self, message: str) -> Lifecycle: ...


if TYPE_CHECKING:
    _Mixin = Host
else:
    _Mixin = object

Send = Callable[..., Any]  # send(body) or send(body, attempt) -> the provider's reply
RunQuery = Callable[[str, str], Any]  # (source, query) -> a payload, or a whole result


class Loop(_Mixin):
    """`submit_reply`, `turn` and `run` of an `Investigation`."""

    def submit_reply(self, request_id: str, reply: Any) -> Applied:
        """Submit the answer a provider reply carries (`answer_of`); a reply with none is kept, then raised.

        A reply with no answer (`reply_truncated`, `reply_refused`, `reply_empty`) is kept as a
        rejected answer with that code, its text the reply's JSON, and changes nothing else; the
        request stays open. Refused first, as `submit` would refuse any answer: a closed
        analysis (`analysis_closed`) or another request (`stale_request`), also kept.
        """
        try:
            answer = answer_of(reply)
        except ReplyUnusable as err:
            raise self._keep_reply(request_id, reply_bytes(reply), err) from None
        return self.submit(request_id, answer)

    def _keep_reply(
        self, request_id: str, data: bytes, err: ReplyUnusable, size: int | None = None
    ) -> WorkingsetError:
        """Keep a reply with no answer (its JSON `data`, or its head and whole `size`); returns why it was refused."""
        limit = (self.limits or Limits.current()).max_decision_bytes
        head, whole = (
            (data[:limit], len(data)) if size is None and len(data) > limit else (data, size)
        )
        refused: WorkingsetError = err
        with self._call(write=True) as call:
            try:
                self._require_active(call.tx, decision=True)
                req = call.tx.open_request(self.analysis_id)
                if req is None or req.request_id != request_id:
                    raise stale(call.tx, self.analysis_id, request_id, req)
                call.checked(self.store.path, req)  # a damaged store keeps nothing (as `submit`)
            except DecisionRejected as closed:
                refused = closed
            call.append(
                "answer", AnswerEvent.of(request_id, head, refused, size=whole), self._clock()
            )
        return refused

    def turn(
        self,
        send: Send,
        provider: str,
        *,
        retries: int = 2,
        hypothesis: str | None = None,
        ttl: str | None = None,
        strict: bool | None = None,
        fail_on_unusable: bool = False,
    ) -> Applied:
        """One bounded turn: the next request, `send` to the model, its answer submitted, retried on rejection.

        `send(body)` or `send(body, attempt)` takes the provider JSON (`Request.messages`, to
        merge into the SDK call) and, in the second form, the `Attempt` (the request, the try's
        number, the last rejection, a larger `max_tokens` after a cut-off); it returns the reply.
        A rejected answer goes back to the model with its rejection; a reply with no answer is
        kept and the same body asked again; at most `retries` more times. The tries are read
        from the kept answers of the open request, so a restarted turn continues them. When
        the tries run out on a rejected decision, the analysis is failed (`turn_failed`); on a
        reply with no answer, `turn_incomplete` is raised and the analysis stays active,
        unless `fail_on_unusable`. `stale_request` and `analysis_closed` are raised at once.
        """
        check_options(provider, ttl, strict)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UsageError(f"retries must be a whole number 0 or more, not {retries!r}")
        call_model = sender(send)
        req = self.next_request(hypothesis)
        last: WorkingsetError | None = None
        for _ in range(retries + 1):
            kept = self._kept(req.request_id)
            last = rejection(kept[-1]) if kept else None
            cut = (
                reply_json(kept[-1].data()) if kept and kept[-1].code == "reply_truncated" else None
            )
            body = req.messages(provider, retry=retry_of(kept, provider), ttl=ttl, strict=strict)
            attempt = Attempt(request=req, provider=provider, number=len(kept) + 1, last=last,
                              max_tokens=suggested_max_tokens(cut), body=body)  # fmt: skip
            reply = call_model(body, attempt)
            try:
                return self.submit_reply(req.request_id, reply)
            except ReplyUnusable as err:
                last = err
            except DecisionRejected as err:
                if err.code in NOT_RETRYABLE:
                    raise
                last = err
        assert last is not None
        tries = retries + 1
        reason = f"no valid answer to {req.request_id} in {tries} tries; the last: {last.code}: {last.message}"
        details: dict[str, Any] = {
            "request_id": req.request_id,
            "tries": tries,
            "last": last.to_dict(),
        }
        if isinstance(last, ReplyUnusable) and not fail_on_unusable:
            kept = self._kept(req.request_id)
            details["max_tokens"] = suggested_max_tokens(
                reply_json(kept[-1].data()) if kept else None
            )
            raise SessionError(reason + f"; {req.request_id} stays open: turn again", code="turn_incomplete",
                               details=details)  # fmt: skip
        self.fail(reason)
        raise SessionError(reason, code="turn_failed", details=details)

    def _kept(self, request_id: str) -> list[AnswerEvent]:
        with self._call(write=False) as call:
            req = call.tx.request(self.analysis_id, request_id)
            after = req.state_seq if req is not None else 0
            return kept_answers(call.tx, self.analysis_id, request_id, after)

    def run(
        self,
        send: Send,
        run_query: RunQuery,
        provider: str = "anthropic",
        *,
        cost: float | Callable[[PendingAction, Any], float] = 0.0,
        retries: int = 2,
        ttl: str | None = None,
        strict: bool | None = None,
        fail_on_unusable: bool = False,
        max_turns: int | None = None,
        on_turn: Callable[[Applied], Any] | None = None,
    ) -> Summary:
        """Every turn until the analysis ends: run and record each pending query, then `turn`; returns `show()`.

        `run_query(source, query)` returns the query's payload (`{"kind": "rows", ...}` or
        `{"kind": "text", ...}`), or a whole result (`{"scope", "capture", "payload", "cost"?}`)
        when it has more to say; `cost` is each result's cost, a number or a function of the
        pending action and the payload. It stops when the analysis is no longer active
        (completed, failed, cancelled, or paused by another process: `resume` and `run` again),
        after `max_turns` turns (the last one's query run and recorded), or on an error (`turn_incomplete` after replies with no answer:
        `run` again continues). Each step is one transaction, so a controller killed anywhere
        continues where it stopped when it runs again (a query whose result was not recorded is
        run again). `on_turn` is called with each turn's `Applied`.
        """
        check_options(provider, ttl, strict)
        turns = 0
        while self.status == ctl.ACTIVE:
            for action in self.pending_actions():
                if self.status != ctl.ACTIVE:
                    break  # paused or ended while the queries ran
                out = run_query(action.source, action.query)
                try:
                    self._record(action, out, cost)
                except SessionError as err:
                    if err.code != "analysis_closed":
                        raise
                    break  # cancelled or ended while the query ran: its result has nowhere to go
            if self.status != ctl.ACTIVE or (max_turns is not None and turns >= max_turns):
                break
            try:
                applied = self.turn(send, provider, retries=retries, ttl=ttl, strict=strict,
                                    fail_on_unusable=fail_on_unusable)  # fmt: skip
            except WorkingsetError as err:
                # A bound counted between changes (model calls, time) ended it at this turn's start.
                if err.code == "analysis_closed" and self.status != ctl.ACTIVE:
                    break
                raise
            turns += 1
            if on_turn is not None:
                on_turn(applied)
        return self.show()

    def _record(
        self, action: PendingAction, out: Any, cost: float | Callable[[PendingAction, Any], float]
    ) -> None:
        if isinstance(out, dict) and "scope" in out:
            self.record(action.action, out)
            return
        self.record(action.action, payload=out, cost=cost(action, out) if callable(cost) else cost)
