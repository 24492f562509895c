"""`workingset calibrate`: our `anthropic` cache model against what Anthropic really billed.

OpenHands V1 conversations record, per LLM call, Anthropic's own token counts
(`base_state.json` → `stats.service_to_metrics.default.token_usages`). This module rebuilds
the request body the agent sent on each of those calls from the events (system prompt and
tools, the task, tool calls and results, condensation summaries), with OpenHands' cache
breakpoints, converted to the Anthropic Messages shape the way LiteLLM converts it; bills
the run with `wire.body_blocks` → `wire.to_prompt` → `billing.bill("anthropic", …)`; and sets
the prediction beside the bill. Where each rule comes from (file and commit) is in
docs/calibrate.md.

In these runs `prompt_tokens` is the cache reads plus the uncached input, and the cache
writes come on top, so a call's input is `prompt_tokens + cache_write_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidFile
from ..importers._trajectory import dig, fail
from ..importers.openhands import _load, _source_events
from ..tokens.count import DEFAULT_ENCODING
from . import billing, wire
from .calibrate_input import check_event, seconds

SERVICE = (
    "default"  # the agent's own LLM; the condenser's calls are another prefix and another service
)
TARGET_POINTS = 2.0  # the target: each share within 2 points on at least 95% of calls
TARGET_CALLS = 0.95
EPHEMERAL = {"type": "ephemeral"}
# openhands/sdk/utils/truncate.py and openhands/tools/execute_bash/constants.py (docs/calibrate.md)
TEXT_LIMIT = 50_000
BASH_LIMIT = 30_000
TRUNCATE_NOTICE = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"
ANSWERS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")
CONVERTIBLE = ("SystemPromptEvent", "MessageEvent", "ActionEvent", *ANSWERS)


@dataclass(frozen=True)
class Usage:
    """What Anthropic billed one call: uncached input, cache reads and cache writes."""

    uncached: int
    cache_read: int
    cache_write: int

    @property
    def input(self) -> int:
        return self.uncached + self.cache_read + self.cache_write


@dataclass(frozen=True)
class Call:
    """One LLM call of the agent: its response ID, send time, rebuilt body and recorded usage."""

    index: int
    response_id: str
    sent_at: float | None  # Unix seconds
    body: dict[str, Any]
    recorded: Usage


@dataclass(frozen=True)
class Row:
    """One call's recorded bill beside the model's prediction."""

    call: int
    recorded: Usage
    predicted: billing.Billing

    def errors(self) -> tuple[float, float]:
        """How far the predicted read and write shares are from the recorded ones, in points."""
        got, want = self.predicted, self.recorded
        read = (
            100 * (got.read / got.tokens - want.cache_read / want.input)
            if got.tokens and want.input
            else 0.0
        )
        write = (
            100 * (got.written / got.tokens - want.cache_write / want.input)
            if got.tokens and want.input
            else 0.0
        )
        return read, write

    def within(self, points: float = TARGET_POINTS) -> bool:
        return all(abs(e) <= points for e in self.errors())


@dataclass(frozen=True)
class Calibration:
    """A run's calls billed by the model, beside what was billed."""

    run: str
    model: str  # the LLM the run used, as recorded
    rows: tuple[Row, ...]

    @property
    def tokenizer_ratio(self) -> float:
        ours = sum(r.predicted.tokens for r in self.rows)
        return sum(r.recorded.input for r in self.rows) / ours if ours else 0.0

    @property
    def within(self) -> int:
        return sum(r.within() for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        """The `calibrate --json` document."""
        calls: list[dict[str, Any]] = [
            {
                "call": r.call,
                "recorded": _recorded(r.recorded),
                "predicted": _predicted(r.predicted),
            }
            for r in self.rows
        ]
        return {
            "run": self.run, "model": "anthropic", "tokenizer_ratio": round(self.tokenizer_ratio, 4), "calls": calls,
            "totals": {
                "calls": len(self.rows), "within_2_points": self.within,
                "recorded": {k: sum(c["recorded"][k] for c in calls) for k in ("uncached", "cache_read", "cache_write")},
                "predicted": {k: sum(c["predicted"][k] for c in calls) for k in ("uncached", "read", "written")},
            },
        }  # fmt: skip


def _recorded(u: Usage) -> dict[str, int]:
    return {"uncached": u.uncached, "cache_read": u.cache_read, "cache_write": u.cache_write}


def _predicted(b: billing.Billing) -> dict[str, int]:
    return {"uncached": b.uncached, "read": b.read, "written": b.written}


# ---------------------------------------------------------------------------------------
# The recorded bill


def _count(value: Any, file: Path, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(file, path, "a token count must be a whole number from 0")
    return value


def _usages(base: Mapping[str, Any], file: Path) -> list[tuple[str, Usage, float | None]]:
    """Each agent call's (response ID, usage, send time) from base_state.json, in call order."""
    metrics = dig(base, "stats", "service_to_metrics", SERVICE)
    usages = metrics.get("token_usages") if isinstance(metrics, Mapping) else None
    at = f"$.stats.service_to_metrics.{SERVICE}"
    for key in ("token_usages", "costs", "response_latencies"):
        if (
            isinstance(metrics, Mapping)
            and metrics.get(key) is not None
            and not isinstance(metrics[key], list)
        ):
            raise fail(
                file, f"{at}.{key}", f"{key} must be an array, not {type(metrics[key]).__name__}"
            )
    if not usages:
        raise InvalidFile(
            f"{file}: records no token usage of the agent's LLM (stats.service_to_metrics.{SERVICE}.token_usages)",
            code="no_usage", details={"file": str(file), "path": f"$.stats.service_to_metrics.{SERVICE}.token_usages"},
        )  # fmt: skip
    costs = metrics.get("costs") if isinstance(metrics.get("costs"), list) else []
    latencies: dict[str, float | None] = {}
    for k, lat in enumerate(metrics.get("response_latencies") or ()):
        if not isinstance(lat, Mapping) or not isinstance(lat.get("response_id"), str):
            raise fail(
                file,
                f"{at}.response_latencies[{k}]",
                "a latency must be an object with a response_id",
            )
        latencies[lat["response_id"]] = seconds(
            lat.get("latency"), file, f"{at}.response_latencies[{k}].latency"
        )
    out = []
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        at = f"$.stats.service_to_metrics.{SERVICE}.token_usages[{i}]"
        if not isinstance(usage, Mapping) or not isinstance(usage.get("response_id"), str):
            raise fail(file, at, "a token usage must be an object with a response_id")
        prompt = _count(usage.get("prompt_tokens"), file, f"{at}.prompt_tokens")
        read = _count(usage.get("cache_read_tokens", 0), file, f"{at}.cache_read_tokens")
        write = _count(usage.get("cache_write_tokens", 0), file, f"{at}.cache_write_tokens")
        if read > prompt:
            raise fail(
                file,
                at,
                f"cache_read_tokens ({read}) exceed prompt_tokens ({prompt}), which count them",
            )
        # The cost is logged when the response arrives; the request left `latency` seconds before.
        done = seconds(
            dig(costs[i], "timestamp") if i < len(costs) and isinstance(costs[i], Mapping) else None,
            file, f"$.stats.service_to_metrics.{SERVICE}.costs[{i}].timestamp",
        )  # fmt: skip
        latency = latencies.get(usage["response_id"])
        sent = None if done is None else done - (latency or 0.0)
        if usage["response_id"] in seen:
            continue  # one response logged twice is one call, billed once (docs/calibrate.md)
        seen.add(usage["response_id"])
        out.append((usage["response_id"], Usage(prompt - read, read, write), sent))
    return out


# ---------------------------------------------------------------------------------------
# What OpenHands sent: events → OpenAI-format messages, with its cache marks


def truncate(text: str, limit: int) -> str:
    """OpenHands' `maybe_truncate`: keep the head and tail, the notice in the middle."""
    if len(text) <= limit:
        return text
    room = limit - len(TRUNCATE_NOTICE)
    return text[: room // 2 + room % 2] + TRUNCATE_NOTICE + text[len(text) - room // 2 :]


def _texts(content: Any) -> list[str]:
    """The text items of an SDK content list (a string counts as one item)."""
    if isinstance(content, str):
        return [content]
    return [
        c["text"]
        for c in content or ()
        if isinstance(c, Mapping) and isinstance(c.get("text"), str)
    ]


def _observation(obs: Mapping[str, Any]) -> list[str]:
    """The text an observation shows the model (each tool's `agent_observation`)."""
    kind = obs.get("kind")
    if kind == "ExecuteBashObservation":
        meta: Mapping[str, Any] = obs.get("metadata") or {}
        text = f"{meta.get('prefix') or ''}{obs.get('output') or ''}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
        if obs.get("error") is True:
            text = f"[There was an error during command execution.]\n{text}"
        return [truncate(text, BASH_LIMIT)]
    if kind == "StrReplaceEditorObservation":
        return [obs["error"] if obs.get("error") else obs.get("output") or ""]
    for key in (
        "content",
        "message",
        "output",
    ):  # think, task tracker, finish; MCP results carry content lists
        if key in obs:
            return _texts(obs[key])
    return []


def _tool_result(event: Mapping[str, Any]) -> list[str]:
    if event["kind"] == "AgentErrorEvent":
        return [str(event.get("error", ""))]
    if event["kind"] == "UserRejectObservation":
        return [f"Action rejected: {event.get('rejection_reason', 'User rejected the action')}"]
    return _observation(event.get("observation") or {})


def view(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events the model sees: condensations applied, the latest summary inserted (`View.from_events`)."""
    forgotten: set[str] = set()
    for e in events:
        if e.get("kind") == "Condensation":
            forgotten.update(e.get("forgotten_event_ids") or ())
            forgotten.add(str(e.get("id")))
        elif e.get("kind") == "CondensationRequest":
            forgotten.add(str(e.get("id")))
    kept: list[Mapping[str, Any]] = [
        e for e in events if e.get("id") not in forgotten and e.get("kind") in CONVERTIBLE
    ]
    for e in reversed(events):
        if (
            e.get("kind") == "Condensation"
            and e.get("summary") is not None
            and e.get("summary_offset") is not None
        ):
            kept.insert(
                e["summary_offset"], {"kind": "CondensationSummaryEvent", "summary": e["summary"]}
            )
            break
    calls = {e.get("tool_call_id") for e in kept if e.get("kind") == "ActionEvent"}
    answered = {e.get("tool_call_id") for e in kept if e.get("kind") in ANSWERS}
    # An action without its observation (or the reverse) is dropped, as the SDK does.
    return [
        e for e in kept
        if not (e["kind"] in ANSWERS and e.get("tool_call_id") not in calls)
        and not (e["kind"] == "ActionEvent" and e.get("tool_call_id") not in answered)
    ]  # fmt: skip


def _tool_call(event: Mapping[str, Any]) -> dict[str, Any]:
    call = event.get("tool_call") or {}
    function: Mapping[str, Any] = (
        call["function"] if isinstance(call.get("function"), Mapping) else call
    )
    return {"id": call.get("id", event.get("tool_call_id")), "name": function.get("name", event.get("tool_name", "")),
            "arguments": function.get("arguments") or "{}"}  # fmt: skip


def messages(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The SDK's messages for a view (`events_to_messages`), each {role, texts, tool_calls?, tool_call_id?}."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(events):
        e = events[i]
        kind = e["kind"]
        if (
            kind == "ActionEvent"
        ):  # one assistant message per LLM response (parallel calls share it)
            batch = [e]
            while i + 1 < len(events) and events[i + 1]["kind"] == "ActionEvent" and events[i + 1].get(
                "llm_response_id") == e.get("llm_response_id"):  # fmt: skip
                i += 1
                batch.append(events[i])
            out.append(
                {
                    "role": "assistant",
                    "texts": _texts(e.get("thought")),
                    "tool_calls": [_tool_call(b) for b in batch],
                }
            )
        elif kind == "SystemPromptEvent":
            out.append({"role": "system", "texts": _texts([e.get("system_prompt")])})
        elif kind == "MessageEvent":
            llm = e.get("llm_message") or {}
            texts = _texts(llm.get("content")) + _texts(e.get("extended_content"))
            out.append({"role": llm.get("role", "user"), "texts": texts})
        elif kind == "CondensationSummaryEvent":
            out.append({"role": "user", "texts": [e["summary"]]})
        else:
            out.append(
                {"role": "tool", "texts": _tool_result(e), "tool_call_id": e.get("tool_call_id")}
            )
        i += 1
    return out


def _cache_marks(msgs: list[dict[str, Any]]) -> None:
    """OpenHands' `_apply_prompt_caching`: the system message and the last user or tool message."""
    if msgs and msgs[0]["role"] == "system":
        msgs[0]["cache"] = True
    for m in reversed(msgs):
        if m["role"] in ("user", "tool"):
            m["cache"] = True
            break


# ---------------------------------------------------------------------------------------
# What Anthropic received: LiteLLM's conversion to the Messages API


def _text_block(text: str, marked: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": truncate(text, TEXT_LIMIT)}
    if marked:
        block["cache_control"] = dict(EPHEMERAL)
    return block


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # never sent this way in practice; billed as the text it is


def anthropic_body(tools: list[Mapping[str, Any]], msgs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Messages API body LiteLLM sends for OpenHands' messages (consecutive user turns merged)."""
    _cache_marks(msgs)
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for m in msgs:
        # The SDK marks the last content item; on a tool message LiteLLM puts it on the tool_result block.
        texts, marked = m["texts"], bool(m.get("cache"))
        if m["role"] == "system":
            system.extend(
                _text_block(t, marked and k == len(texts) - 1) for k, t in enumerate(texts)
            )
            continue
        role = "assistant" if m["role"] == "assistant" else "user"
        if m["role"] == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.get("tool_call_id"),
                                     "content": [_text_block(t, False) for t in texts]}  # fmt: skip
            if marked:
                block["cache_control"] = dict(EPHEMERAL)
            content = [block]
        elif role == "assistant":
            content = [_text_block(t, False) for t in texts if t]  # LiteLLM drops empty text blocks
            content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": _arguments(c["arguments"])}
                        for c in m.get("tool_calls") or ()]  # fmt: skip
        else:
            content = [_text_block(t, marked and k == len(texts) - 1) for k, t in enumerate(texts)]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(content)
        else:
            turns.append({"role": role, "content": content})
    anthropic_tools = []
    for tool in tools:
        fn: Mapping[str, Any] = (
            tool["function"] if isinstance(tool.get("function"), Mapping) else tool
        )
        anthropic_tools.append({"name": fn.get("name"), "description": fn.get("description", ""),
                                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}}})  # fmt: skip
    return {"tools": anthropic_tools, "system": system, "messages": turns}


# ---------------------------------------------------------------------------------------
# The run


def _placed(events: Sequence[Mapping[str, Any]], response_ids: list[str], file: Path) -> list[int]:
    """For each call, the index of the first event it produced (its action, else an agent message)."""
    first: dict[str, int] = {}
    for i, e in enumerate(events):
        if e.get("kind") == "ActionEvent" and isinstance(e.get("llm_response_id"), str):
            first.setdefault(e["llm_response_id"], i)
    # A call that answered with a message and no action is the next agent message not yet taken.
    spare = iter(
        i
        for i, e in enumerate(events)
        if e.get("kind") == "MessageEvent" and e.get("source") == "agent"
    )
    out = []
    for k, rid in enumerate(response_ids):
        at = first.get(rid)
        if at is None:
            at = next(spare, None)
        if at is None:
            raise fail(file, f"$.stats.service_to_metrics.{SERVICE}.token_usages[{k}]",
                       f"call {rid} produced no event in the conversation: cannot tell what it was sent")  # fmt: skip
        out.append(at)
    return out


def read_calls(source: Path) -> tuple[str, str, list[Call]]:
    """(run name, LLM model, every agent call rebuilt) of an OpenHands V1 conversation directory."""
    where, loaded, base_file = _source_events(source)
    if base_file is None:
        raise InvalidFile(f"{source}: no base_state.json, so no recorded bill to calibrate against",
                          code="no_usage", details={"file": str(source)})  # fmt: skip
    base = _load(base_file, dict[str, Any])
    usages = _usages(base, base_file)
    events = [e for _, _, e in loaded]
    for path, where_in, e in loaded:
        if not isinstance(e.get("kind"), str):
            raise fail(path, f"{where_in}.kind", "an event must name its kind")
        check_event(e, path, where_in)
    system = next((e for e in events if e["kind"] == "SystemPromptEvent"), None)
    if system is None or not isinstance(system.get("tools"), list):
        raise fail(
            where,
            "$",
            "no SystemPromptEvent with tools: the system prompt and tool definitions are unknown",
        )
    places = _placed(events, [rid for rid, _, _ in usages], base_file)
    calls = []
    for k, ((rid, usage, sent), at) in enumerate(zip(usages, places)):
        body = anthropic_body(system["tools"], messages(view(events[:at])))
        calls.append(Call(k + 1, rid, sent, body, usage))
    model = dig(base, "agent", "llm", "model")
    name = source.parent.name if source.name in ("events", "event_service") else source.name
    return name, model if isinstance(model, str) else "unknown", calls


def prompts(calls: Iterable[Call], encoding: str) -> Iterator[billing.Prompt]:
    """Each call's body as the cache model sees it."""
    for call in calls:
        yield wire.to_prompt(wire.body_blocks(call.body, "anthropic"), call.sent_at, encoding)


def warm_start(calls: list[Call]) -> list[Call]:
    """The calls after a request of the fixed prefix alone (tools and system), sent just before the first.

    An evaluation runs many conversations of one agent at once, and a cache is shared within
    an organization, so another conversation may have written the tools and system prompt
    minutes earlier. This is a hypothesis about the world outside the run, off by default.
    """
    if not calls:
        return calls
    first = calls[0]
    body = {"tools": first.body["tools"], "system": first.body["system"], "messages": []}
    return [Call(0, "", first.sent_at, body, Usage(0, 0, 0)), *calls]


def calibrate(source: str | Path, options: billing.CacheOptions | None = None, encoding: str = DEFAULT_ENCODING,
              warm: bool = False) -> Calibration:  # fmt: skip
    """Bill every agent call of an OpenHands run with the `anthropic` model, beside the recorded bill."""
    name, model, calls = read_calls(Path(source))
    sent = warm_start(calls) if warm else calls
    billed = billing.bill("anthropic", prompts(sent, encoding), options)[len(sent) - len(calls) :]
    return Calibration(
        name, model, tuple(Row(c.index, c.recorded, b) for c, b in zip(calls, billed))
    )


def lines(cal: Calibration) -> Iterator[str]:
    """The human-readable table: each call's recorded and predicted tokens and shares."""
    yield f"{cal.run}: {len(cal.rows)} calls of {cal.model}, billed by the anthropic cache model"
    yield f"tokenizer ratio (recorded input / our tokens): {cal.tokenizer_ratio:.4f}"
    yield f"{'call':>4}  {'recorded uncached/read/write':>30}  {'predicted uncached/read/written':>31}  {'read pts':>8}  {'write pts':>9}"
    for r in cal.rows:
        rec, pre = r.recorded, r.predicted
        dr, dw = r.errors()
        flag = "" if r.within() else "  *"
        yield (f"{r.call:>4}  {rec.uncached:>8} {rec.cache_read:>10} {rec.cache_write:>10}  "
               f"{pre.uncached:>9} {pre.read:>10} {pre.written:>10}  {dr:>+8.2f}  {dw:>+9.2f}{flag}")  # fmt: skip
    t = cal.to_json()["totals"]
    rec, pre = t["recorded"], t["predicted"]
    yield (f"{'all':>4}  {rec['uncached']:>8} {rec['cache_read']:>10} {rec['cache_write']:>10}  "
           f"{pre['uncached']:>9} {pre['read']:>10} {pre['written']:>10}")  # fmt: skip
    yield (f"{cal.within} of {len(cal.rows)} calls ({100 * cal.within / len(cal.rows):.1f}%) have both shares within "
           f"{TARGET_POINTS:g} points (target: {100 * TARGET_CALLS:g}%; * marks the others)")  # fmt: skip
