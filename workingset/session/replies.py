"""What the session API returns: the `--json` objects of docs/protocol.md#the-turn, and the human form of `show`."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
from tabulate import tabulate

from ..model.costs import cost_text
from ..model.state import State

if TYPE_CHECKING:
    from ..encoders import RenderedContext


class Request(msgspec.Struct, kw_only=True):
    """One rendered request: `spec()` is what `next --json` prints, `messages()` what a provider call takes."""

    request_id: str
    encoder: str
    hypothesis: str
    text: str
    shown: list[str]
    indexed: list[str]
    chars: int
    hash: str
    # Not in `next --json` (the protocol fixes its keys): what provider messages are built from.
    block_ends: list[int] = []  # where each section ends in `text` (the text blocks' boundaries)
    cache_ends: list[
        int
    ] = []  # where each section the encoder declares stable ends (cache breakpoints)
    assess: str | None = None  # the evidence ID rule A requires this decision to assess, if any

    PROTOCOL_KEYS: ClassVar[tuple[str, ...]] = ("request_id", "encoder", "hypothesis", "text", "shown", "indexed",
                                            "chars", "hash")  # fmt: skip

    def spec(self) -> dict[str, Any]:
        """The object of `next --json` (the keys docs/protocol.md#requests fixes), and `budget` when the encoder has a context budget (v11 and later)."""
        from ..encoders import get_encoder

        out = {key: getattr(self, key) for key in self.PROTOCOL_KEYS}
        budget = getattr(get_encoder(self.encoder), "budget", None)
        if budget is not None:
            out["budget"] = budget
        return out

    @property
    def decision_schema(self) -> dict[str, Any]:
        """The JSON Schema of a decision answering this request (its encoder's frozen schema; a copy)."""
        from ..encoders import get_encoder

        return copy.deepcopy(get_encoder(self.encoder).decision_schema)

    @property
    def stable_schema(self) -> bool:
        """Whether its encoder sends OpenAI the same strict schema every turn (v14: `stable_strict_schema`)."""
        from ..encoders import get_encoder

        return getattr(get_encoder(self.encoder), "stable_strict_schema", False)

    def messages(self, provider: str, *, retry: Any = (), ttl: str | None = None, strict: bool | None = None,
                 model: str | None = None) -> dict[str, Any]:  # fmt: skip
        """The JSON to merge into an `anthropic`, `openai` or `openai-responses` call (see `providers.messages`)."""
        from ..providers import messages

        return messages(self, provider, retry=retry, ttl=ttl, strict=strict, model=model)

    @classmethod
    def of(cls, out: RenderedContext, request_id: str, state: State, **overrides: Any) -> Request:
        """The request for a rendered context `out` of `state` (`overrides` replace §8 fields)."""
        from ..providers import section_ends

        fields: dict[str, Any] = dict(request_id=request_id, encoder=out.encoder, hypothesis=out.hypothesis, text=out.text,
                      shown=list(out.shown), indexed=list(out.indexed), chars=out.chars, hash=out.hash)  # fmt: skip
        fields.update(overrides)
        return cls(**fields, block_ends=section_ends(out.chunks), cache_ends=list(out.stable_ends()),
                   assess=state.pending_result(out.hypothesis))  # fmt: skip


class Applied(msgspec.Struct, kw_only=True):
    """The outcome of an accepted decision: `spec()` is what `submit --json` prints.

    For a query it also carries what was decided (`hypothesis`, `source`, `query`, `purpose`),
    so the controller runs it without reading the analysis back; they are None otherwise.
    """

    request_id: str
    applied: str
    iteration: int
    status: str
    action: str | None
    hypothesis: str | None = None
    source: str | None = None
    query: str | None = None
    purpose: str | None = None

    PROTOCOL_KEYS: ClassVar[tuple[str, ...]] = (
        "request_id",
        "applied",
        "iteration",
        "status",
        "action",
    )

    def spec(self) -> dict[str, Any]:
        """The object `submit --json` prints (its documented keys)."""
        return {key: getattr(self, key) for key in self.PROTOCOL_KEYS}


class Recorded(msgspec.Struct, kw_only=True):
    """The outcome of recording a query's result."""

    action: str
    evidence: str
    hypothesis: str
    status: str
    termination_reason: str | None


class PendingAction(msgspec.Struct, kw_only=True):
    """A query that was decided and whose result has not been recorded yet."""

    action: str
    hypothesis: str
    request_id: str
    iteration: int
    source: str
    query: str
    purpose: str


class Usage(msgspec.Struct, kw_only=True):
    """What the analysis used of each bound, as of its last event (`iteration` and `cost_used` are in its budget)."""

    iterations: int
    cost: float
    queries: int
    model_calls: int
    seconds: float


class Stop(msgspec.Struct, kw_only=True):
    """Why the analysis stopped: the reason's stable code, the status it went to, and one plain sentence."""

    reason: str
    status: str
    explanation: str


class Limitation(msgspec.Struct, kw_only=True):
    """An evidence item the outcome rests on only in part, and why (`lifecycle.limitations`)."""

    evidence: str
    why: list[str]


class Summary(msgspec.Struct, kw_only=True):
    """The analysis as `show --json` prints it."""

    status: str
    termination_reason: str | None
    encoder: str
    open_request: str | None
    pending_actions: list[PendingAction]
    state: State
    # The lifecycle (docs/protocol.md#stages, #status-and-termination, #partial-outcomes).
    stage: str = "planning"
    stop: Stop | None = None
    partial: bool = False
    limitations: list[Limitation] = []


class Lifecycle(msgspec.Struct, kw_only=True):
    """The outcome of pause, resume, cancel or fail."""

    analysis_id: str
    status: str
    prior_status: str | None
    termination_reason: str | None


def describe(summary: Summary, usage: Usage | None = None) -> str:
    """The human-readable form of `show`: status, budget, hypotheses, open request, pending actions, recall."""
    s = summary.state
    b = s.budget
    reason = f" ({summary.termination_reason})" if summary.termination_reason else ""
    limit = f" of {cost_text(b.max_cost)}" if b.max_cost is not None else " (no cost limit)"
    # Six columns: a query pending for a hypothesis is in the pending actions table below, not a seventh column.
    rows = [
        [h.id, h.title, h.disposition, f"{h.confidence:g}", f"{h.control.iterations_used}/{h.control.iteration_limit}",
         h.control.previous_result or "-"]
        for h in s.hypotheses
    ]  # fmt: skip
    lines = [
        f"analysis {s.analysis_id}: {summary.status}{reason}",
        *([f"stopped: {summary.stop.explanation}"] if summary.stop else []),
        f"stage: {summary.stage}",
        f"encoder: {summary.encoder}",
        f"iteration: {s.iteration} of {b.max_iterations} · cost used: {cost_text(b.cost_used)}{limit}",
        *_usage_lines(summary, usage),
        f"open request: {summary.open_request or 'none'}",
        "",
        tabulate(
            rows, headers=["id", "title", "disposition", "confidence", "iterations", "previous"]
        ),
        "",
    ]
    if summary.pending_actions:
        lines.append("pending actions:")
        lines.append(tabulate([[p.action, p.hypothesis, p.request_id, p.source, p.query] for p in summary.pending_actions],
                              headers=["action", "hypothesis", "request", "source", "query"]))  # fmt: skip
    else:
        lines.append("pending actions: none")
    if s.recall:
        for hid in sorted(s.recall):
            sel = s.recall[hid]
            lines.append(
                f"recall {hid}: {', '.join(sel.evidence_refs)} (iteration {sel.iteration})"
            )
    else:
        lines.append("recall selections: none")
    if summary.limitations:
        lines.append(f"limitations ({'partial outcome' if summary.partial else 'so far'}):")
        lines.extend(f"  {item.evidence}: {', '.join(item.why)}" for item in summary.limitations)
    return "\n".join(lines) + "\n"


def _usage_lines(summary: Summary, u: Usage | None) -> list[str]:
    """The usage of the three bounds the log counts, each with its limit (none said when it has none)."""
    b = summary.state.budget
    if u is None:
        return []

    def of(limit: object) -> str:
        return f" of {limit}" if limit is not msgspec.UNSET else ""

    return [f"queries run: {u.queries}{of(b.max_queries)} · model calls: {u.model_calls}{of(b.max_model_calls)} · "
            f"execution time: {u.seconds:g} s{of(b.max_seconds)}{' s' if b.max_seconds is not msgspec.UNSET else ''}"]  # fmt: skip
