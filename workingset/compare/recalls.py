"""The bill a real agent pays: each step's recall and re-run turns, billed in the run's cache meter.

`compare_use` walks a run once per strategy. For each context it renders the recorded state,
splits the next step's needs (`use.step_needs`) into in view and not, and then, before the
recorded step:

- **a re-run turn** for each earlier output holding something the strategy cannot bring back
  (a masked or cleared transcript, a version without recall): the state with the command
  run again (`rerun_state`: the session's own `controller.apply_decision` of a query and
  `apply_record` of its result, the same payload under a new ID), rendered and billed;
- **recall turns** for what one recall brings back: a recall decision naming the latest
  earlier output that holds each need (v14: with the page that holds it), at most
  `MAX_RECALL` items a turn, applied to the state as the session applies it
  (`recall_state`), rendered exactly as the encoder renders a recall, and billed. A need the
  rendered recall does not show is counted gone.

Every request is billed in the same cache meter as the recorded ones, at the context's send
time. Output tokens are every turn's answer: the recorded step's text (the same for every
strategy), and each added decision's JSON; they cost the model's output price
(`OUTPUT_PRICE`, in input-token units). Anthropic adds a tool-use system prompt to every
request that carries tools (`TOOL_PROMPT`); it is billed as leading tokens of each such request.
Prices and figures are quoted with their sources in docs/billing.md.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec.structs import replace

from ..decisions import (
    MAX_RECALL,
    Decision,
    PagedRecall,
    PagedRecallDecision,
    Query,
    Recall,
    RecallDecision,
)
from ..model.state import Evidence, EvidenceBudget, State, StoredContext
from ..runs.fixed_prompt import FixedPrompt
from ..tokens.count import DEFAULT_ENCODING, count_tokens
from .billing import PROVIDER, Billing, CacheOptions, Meter, Prompt, model_names, state_time
from .use import Need, StepUse, Use, in_view, step_needs

# Output price as a multiple of the input price, per cache model (docs/billing.md, "Output and tool-use tokens").
OUTPUT_PRICE: dict[str, float | None] = {
    "anthropic": 5.0,
    "openai-auto": 8.0,
    "openai-5.6": 6.0,
    "ideal": None,
}
# Anthropic's tool-use system prompt, tokens per (model prefix, tool_choice kind): "auto" (auto or none) or "any" (any or tool).
TOOL_PROMPT: dict[tuple[str, str], int] = {
    ("claude-3-opus", "auto"): 530, ("claude-3-opus", "any"): 281,
    ("claude-3-sonnet", "auto"): 159, ("claude-3-sonnet", "any"): 235,
    ("claude-3-haiku", "auto"): 264, ("claude-3-haiku", "any"): 340,
}  # fmt: skip
_VERSION = re.compile(r"^v(\d+)(?::.+)?$")
_FILLER = (
    0  # the token id standing for the tool-use system prompt's tokens (the same every request)
)


def tool_prompt_tokens(model: str | None, body: Mapping[str, Any]) -> int:
    """The tool-use system prompt Anthropic adds to `body` under API `model` (0: no tools, or no figure known)."""
    if not body.get("tools") or model is None:
        return 0
    choice = (body.get("tool_choice") or {}).get("type", "auto")
    kind = "any" if choice in ("any", "tool") else "auto"
    known = [p for p, k in TOOL_PROMPT if k == kind and model.startswith(p)]
    return TOOL_PROMPT[(max(known, key=len), kind)] if known else 0


def _copy(state: State, hid: str) -> State:
    """A copy of `state` that applying one decision for `hid` changes without touching `state`."""
    hyps = [replace(h, history=list(h.history), control=replace(h.control)) if h.id == hid else h
            for h in state.hypotheses]  # fmt: skip
    return replace(state, hypotheses=hyps, evidence=list(state.evidence), notes=list(state.notes),
                   recall=dict(state.recall), budget=replace(state.budget))  # fmt: skip


def recall_state(
    state: State, hid: str, refs: Sequence[str], pages: Sequence[str], paged: bool
) -> State:
    """`state` after a recall of `refs` (and, v14, `pages`: `REF:page`) by `hid`, applied as the session applies it."""
    from ..controller import Allocated, apply_decision

    out = _copy(state, hid)
    decision: Any = (PagedRecallDecision(next=PagedRecall(evidence_refs=list(refs), pages=list(pages))) if paged
                     else RecallDecision(next=Recall(evidence_refs=list(refs))))  # fmt: skip
    apply_decision(out, hid, decision, Allocated())
    return out


def _next_id(state: State, prefix: str, ids: Sequence[str]) -> str:
    numbers = [int(i[1:]) for i in ids if i[1:].isdigit()]
    return f"{prefix}{max(numbers, default=0) + 1:06d}"


def rerun_state(state: State, hid: str, holder: str) -> State:
    """`state` after `hid` runs the command of evidence `holder` again and gets the same output under a new ID."""
    from ..controller import Allocated, apply_decision, apply_record

    out = _copy(state, hid)
    ev = next(e for e in out.evidence if e.id == holder)
    actions = [e.budget.action for e in out.evidence if e.budget.action]
    action = _next_id(out, "B", [a for a in actions if a])
    query = Query(source=ev.capture.origin, query=ev.capture.query or "", purpose="re-run")
    apply_decision(out, hid, Decision(next=query), Allocated(action=action))
    again = replace(ev, id=_next_id(out, "E", [e.id for e in out.evidence]), collector=hid, iteration=out.iteration,
                    budget=EvidenceBudget(action=action, status="unsettled"))  # fmt: skip
    apply_record(out, again)
    return out


def recall_json(refs: Sequence[str], pages: Sequence[str]) -> str:
    """The added recall decision as the model writes it (its output tokens)."""
    nxt: dict[str, Any] = {"kind": "recall", "evidence_refs": list(refs)}
    if pages:
        nxt["pages"] = list(pages)
    return msgspec.json.encode({"next": nxt}).decode()


def rerun_json(ev: Evidence) -> str:
    """The added re-run decision as the model writes it."""
    q = {
        "kind": "query",
        "source": ev.capture.origin,
        "query": ev.capture.query or "",
        "purpose": "re-run",
    }
    return msgspec.json.encode({"next": q}).decode()


@dataclass
class Bill:
    """One strategy's with-recalls bill under one cache model."""

    input: Billing = field(default_factory=lambda: Billing(0, 0, 0, 0, 0.0))
    # The recorded requests alone, in a meter of their own, no tool-use prompt: `compare`'s cache bill.
    as_recorded: Billing = field(default_factory=lambda: Billing(0, 0, 0, 0, 0.0))
    output_tokens: int = 0
    tool_prompt_tokens: int = 0
    recall_turns: int = 0
    rerun_turns: int = 0
    output_price: float | None = None

    @property
    def output_cost(self) -> float:
        return self.output_tokens * (self.output_price or 0.0)

    @property
    def cost(self) -> float:
        """Input (cache-billed, tool-use prompt included) plus output, in full-price input-token units."""
        return self.input.cost + self.output_cost

    def to_json(self) -> dict[str, Any]:
        b = self.input
        return {"tokens": b.tokens, "uncached_tokens": b.uncached, "written_tokens": b.written, "read_tokens": b.read,
                "input_cost": round(b.cost, 1), "output_tokens": self.output_tokens, "output_price": self.output_price,
                "output_cost": round(self.output_cost, 1), "tool_prompt_tokens": self.tool_prompt_tokens,
                "recall_turns": self.recall_turns, "rerun_turns": self.rerun_turns,
                "effective_cost": round(self.cost, 1), "as_recorded": round(self.as_recorded.cost, 1)}  # fmt: skip


@dataclass(frozen=True)
class UseComparison:
    """Per strategy: each context's `StepUse`, and per cache model its with-recalls `Bill`."""

    strategies: tuple[str, ...]
    steps: Mapping[str, tuple[StepUse, ...]]
    bills: Mapping[str, Mapping[str, Bill]]  # model -> strategy -> bill

    def use(self, strategy: str) -> Use:
        return sum((s.use() for s in self.steps[strategy]), Use())


def _version(name: str) -> tuple[str, bool, bool] | None:
    """(encoder name, supports recall, supports pages) of a strategy that is an encoder version; None for a baseline."""
    from ..encoders import get_encoder

    if not _VERSION.match(name):
        return None
    encoder = get_encoder(name)
    return ("investigation_project_" + name, bool(encoder.supports_recall),
            bool(getattr(encoder, "supports_pages", False)))  # fmt: skip


def _page_of(name: str, state: State, ref: str, value: str) -> int:
    """The page of entry `ref` whose text holds `value` whole (1 when it fits a page or no page does).

    An encoder with paged recall may say it itself, `page_of(state, ref, value) -> int`; else
    v14's pages are used (`entry_text`, `page_size`, `walk14.page_bounds`), and an encoder
    with neither gets page 1.
    """
    from ..encoders import get_encoder
    from ..encoders.journal.walk14 import page_bounds

    encoder: Any = get_encoder(name)
    if hasattr(encoder, "page_of"):
        return int(encoder.page_of(state, ref, value))
    if not hasattr(encoder, "entry_text") or not hasattr(encoder, "page_size"):
        return 1
    text = encoder.entry_text(state, ref)
    if text is None or len(text) <= encoder.page_size:
        return 1
    start = 0
    for number, end in enumerate(page_bounds(text, encoder.page_size), 1):
        if value in text[start:end]:
            return number
        start = end
    return 1


def plan_recalls(needs: Sequence[Need], state: State, version: tuple[str, bool, bool]
                 ) -> list[tuple[list[str], list[str], list[Need]]]:  # fmt: skip
    """The recall turns bringing `needs` back: (refs, pages, the needs each turn is for), at most MAX_RECALL refs a turn.

    Each need is recalled from the latest earlier output holding it (the first item with the
    same payload, when it repeats one), v14 with the page holding it.
    """
    name, _, paged = version
    wanted: dict[tuple[str, int], list[Need]] = {}
    # An item whose payload repeats an earlier one's is written `same_as` that one, without the
    # payload: the recall names the first item with that payload (the one whose entry holds it).
    first: dict[str, str] = {}
    for ev in state.evidence:
        if ev.content_hash is not None:
            first.setdefault(ev.content_hash, ev.id)
    hashes = {ev.id: ev.content_hash for ev in state.evidence}
    for need in needs:
        latest = need.holders[-1]
        digest = hashes.get(latest)
        ref = first.get(digest, latest) if digest is not None else latest
        number = _page_of(name, state, ref, need.value) if paged and not need.cited else 1
        wanted.setdefault((ref, number), []).append(need)
    turns: list[tuple[list[str], list[str], list[Need]]] = []
    for (ref, number), group in wanted.items():
        turn = next((t for t in turns if len(t[0]) < MAX_RECALL and ref not in t[0]), None)
        if turn is None:
            turn = ([], [], [])
            turns.append(turn)
        turn[0].append(ref)
        if number > 1:
            turn[1].append(f"{ref}:{number}")
        turn[2].extend(group)
    return turns


Renderer = Callable[[State, str], Any]


def compare_use(contexts: Sequence[StoredContext], renderers: Mapping[str, Renderer], *,
                fixed: FixedPrompt | None = None, recall: bool = True, encoding: str = DEFAULT_ENCODING,
                cached_price: float = 0.1, cache: Sequence[str] = (), cache_options: CacheOptions | None = None,
                retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None = None) -> UseComparison:  # fmt: skip
    """Measure each strategy's view of each step's needs and bill the run with its recall and re-run turns.

    The keyword arguments are `engine.compare_contexts`'s (`cached_price` is used without
    `cache_options`); `fixed` is the run's fixed prompt (`runs.read_fixed_prompt`), whose text
    no used identifier may come from. Without `cache` models only the use is measured.
    """
    models = model_names(cache)
    options = cache_options or CacheOptions(cached_price=cached_price)
    needs, answers = step_needs(contexts, fixed)
    answer_tokens = [count_tokens(a, encoding) if a else 0 for a in answers]
    steps: dict[str, tuple[StepUse, ...]] = {}
    bills: dict[str, dict[str, Bill]] = {m: {} for m in models}
    for name, renderer in renderers.items():
        per, bill = _walk(
            name,
            renderer,
            contexts,
            needs,
            answer_tokens,
            models,
            options,
            encoding,
            recall,
            retries,
        )
        steps[name] = per
        for m in models:
            bills[m][name] = bill[m]
    return UseComparison(strategies=tuple(renderers), steps=steps, bills=bills)


@dataclass(frozen=True)
class Turn:
    """One request a strategy sends: recorded (`request`, `retry` k) or added before the step (`recall`, `rerun`)."""

    kind: str
    request_id: str
    time: float
    rendering: Any
    body: Callable[[str, str | None], dict[str, Any]] | None = (
        None  # None: the rendering's own body
    )
    retry: int = 0
    answer: str | None = None  # an added turn's decision, as the model writes it (its output)


@dataclass(frozen=True)
class Step:
    """The end of one context's turns: how the strategy showed its needs."""

    index: int
    use: StepUse


def turns(name: str, renderer: Renderer, contexts: Sequence[StoredContext], needs: Sequence[Sequence[Need]],
          recall: bool = True, retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None = None
          ) -> Iterator[Turn | Step]:  # fmt: skip
    """Every request one strategy sends over the run, in order, each context's closed by its `Step`.

    Per context: the recorded request and its retries, then the recall turns that bring back
    what one recall can, then a re-run turn per earlier output holding something gone. The
    bill (`compare_use`) and `workingset requests --with-recalls` both walk this one sequence.
    """
    from .engine import _retry_body

    version = _version(name)
    for k, ctx in enumerate(contexts):
        state = ctx.state if recall else msgspec.structs.replace(ctx.state, recall={})
        hid, time = ctx.hypothesis, state_time(state)
        rendering = renderer(state, hid)
        yield Turn("request", ctx.request_id, time, rendering)
        tries = (
            (retries or {}).get(ctx.request_id, ()) if getattr(rendering, "retried", None) else ()
        )
        for j in range(1, len(tries) + 1):
            body = _retry_body(rendering, ctx.request_id, tries[:j])
            yield Turn("retry", ctx.request_id, time, rendering, body, retry=j)
        shown, hidden = in_view(needs[k], rendering.text, state)
        away: list[Need] = []
        can_recall = version is not None and version[1]
        gone: list[Need] = [] if can_recall else list(hidden)
        current = state
        if version is not None and can_recall and hidden:
            for refs, pages, group in plan_recalls(hidden, state, version):
                after = recall_state(current, hid, refs, pages, version[2])
                again = renderer(after, hid)
                yield Turn("recall", ctx.request_id, time, again, answer=recall_json(refs, pages))
                seen, missed = in_view(group, again.text, after)
                away += seen
                gone += missed
        for holder in dict.fromkeys(n.holders[-1] for n in gone):
            current = rerun_state(current, hid, holder)
            answer = rerun_json(next(e for e in state.evidence if e.id == holder))
            yield Turn("rerun", ctx.request_id, time, renderer(current, hid), answer=answer)
        yield Step(k, StepUse(tuple(shown), tuple(away), tuple(gone)))


def request_lines(contexts: Sequence[StoredContext], name: str, provider: str, model: str | None = None,
                  fixed: FixedPrompt | None = None, retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None = None,
                  recall: bool = True) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Every request of the bill with recalls, as sent (`workingset requests --with-recalls`).

    The lines of `engine.request_bodies`, and before each step the added turns, marked
    `"added": "recall"` or `"rerun"`. A first try and an added turn carry `"answer"`: what the
    model wrote (the recorded step's text; the added decision's JSON), whose tokens the bill
    counts at the output price. Billing these lines as any other requests, plus those answers,
    gives `compare --use`'s bill with recalls.
    """
    from datetime import UTC, datetime

    from .engine import strategy_renderer

    needs, answers = step_needs(contexts, fixed)
    step = 0
    for item in turns(name, strategy_renderer(name, fixed), contexts, needs, recall, retries):
        if isinstance(item, Step):
            step += 1
            continue
        body = (item.body or item.rendering.body)(provider, model)
        if model is not None:
            body = {"model": model, **body}
        line: dict[str, Any] = {"request_id": item.request_id}
        if item.kind == "retry":
            line["retry"] = item.retry
        elif item.kind != "request":
            line["added"] = item.kind
        sent = datetime.fromtimestamp(item.time, UTC).isoformat().replace("+00:00", "Z")
        line.update(sent_at=sent, body=body)
        if item.kind != "retry":
            line["answer"] = answers[step] if item.answer is None else item.answer
        yield line


def _walk(name: str, renderer: Renderer, contexts: Sequence[StoredContext], needs: Sequence[Sequence[Need]],
          answer_tokens: Sequence[int], models: Sequence[str], options: CacheOptions, encoding: str, recall: bool,
          retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None) -> tuple[tuple[StepUse, ...], dict[str, Bill]]:  # fmt: skip
    """One strategy over the run: each step's use, and per model its bill with the added turns."""
    from .engine import _plus, sent_prompts

    meters = {m: Meter(m, options) for m in models}
    recorded = {m: Meter(m, options) for m in models}
    bill = {m: Bill(output_price=OUTPUT_PRICE.get(m)) for m in models}
    api = {m: (PROVIDER[m], _api_model(m, options)) for m in models}

    def send(turn: Turn) -> None:
        sent = sent_prompts(turn.rendering, models, turn.time, options, encoding, turn.body)
        make = turn.body or turn.rendering.body
        for m in models:
            if turn.kind in ("request", "retry"):
                bill[m].as_recorded = _plus(bill[m].as_recorded, recorded[m](sent[m]))
            extra = (
                tool_prompt_tokens(api[m][1], make(*api[m]))
                if api[m][0] == "anthropic" and make
                else 0
            )
            bill[m].input = _plus(bill[m].input, meters[m](_lead(sent[m], extra)))
            bill[m].tool_prompt_tokens += extra

    per: list[StepUse] = []
    for item in turns(name, renderer, contexts, needs, recall, retries):
        if isinstance(item, Step):  # the recorded answer closes the step
            for m in models:
                bill[m].output_tokens += answer_tokens[item.index]
            per.append(item.use)
            continue
        send(item)
        if item.answer is not None:  # an added turn: its decision is output too
            tokens = count_tokens(item.answer, encoding)
            for m in models:
                bill[m].output_tokens += tokens
                bill[m].recall_turns += item.kind == "recall"
                bill[m].rerun_turns += item.kind == "rerun"
    return tuple(per), bill


def _api_model(model: str, options: CacheOptions) -> str | None:
    from .engine import API_MODEL

    return API_MODEL.get(model, options.model if PROVIDER[model] == "anthropic" else None)


def _lead(prompt: Prompt, n: int) -> Prompt:
    """`prompt` with `n` leading tokens (the tool-use system prompt), its offsets shifted."""
    if not n:
        return prompt
    tokens = array("I", [_FILLER]) * n + prompt.tokens
    return Prompt(tokens=tokens, breakpoints=tuple(b + n for b in prompt.breakpoints), time=prompt.time,
                  blocks=tuple(b + n for b in prompt.blocks),
                  implicit=None if prompt.implicit is None else prompt.implicit + n)  # fmt: skip


__all__ = ["MAX_RECALL", "OUTPUT_PRICE", "TOOL_PROMPT", "Bill", "UseComparison", "compare_use", "plan_recalls",
           "recall_state", "rerun_state", "tool_prompt_tokens"]  # fmt: skip
