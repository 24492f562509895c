"""OpenHands V1 (agent-sdk) conversation directories: `base_state.json` plus `events/`.

Events are read in the order of their file names' zero-padded index. Each `ActionEvent` is
an action, answered by the `ObservationEvent` (or `AgentErrorEvent`, `UserRejectObservation`)
whose `action_id` or `tool_call_id` names it. The query is the bash command itself, or for
every other tool the call's `arguments` exactly as the model wrote them. The output is the
observation's `output` (`content` for think, `message` for finish) as stored; a bash exit
code goes to the capture's coverage, and an output carrying the SDK's `<response clipped>`
marker is truncated. `Condensation` events change only what the model was later shown:
every event they forgot is still in the directory and is imported in full; their summary
is not. Event times are naive local times; the offset is read off the per-call cost
timestamps in `base_state.json` (Unix seconds), else they are taken as UTC.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from msgspec import Struct

from ..files import describe, open_regular
from ._trajectory import (
    Action, Feedback, Item, Thought, Trajectory, between, convert, decode, fail, first_line,
    number, text_of, with_offset,
)  # fmt: skip

_EVENT_FILE = re.compile(r"^event-(\d+)-.*\.json$")
CLIPPED = "<response clipped><NOTE>"
ANSWERS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")


class _Kind(Struct):
    kind: str
    timestamp: str | None = None
    source: str | None = None


class _Function(Struct):
    name: str = ""
    arguments: str | None = None


class _ToolCall(Struct):
    function: _Function | None = None


class _ActionEvent(Struct):
    id: str
    action: dict[str, Any]
    thought: list[dict[str, Any]] = []
    tool_name: str = ""
    tool_call_id: str | None = None
    tool_call: _ToolCall | None = None
    llm_response_id: str | None = None


class _Answer(Struct):
    action_id: str | None = None
    tool_call_id: str | None = None
    observation: dict[str, Any] = {}
    error: str | None = None
    rejection_reason: str | None = None


class _Message(Struct):
    llm_message: dict[str, Any]


def _events_dir(source: Path) -> Path:
    if not source.is_dir():
        raise fail(source, "$", "an OpenHands conversation is a directory (with base_state.json and events/)")
    if any(_EVENT_FILE.match(p.name) for p in source.iterdir()):
        return source  # the events/ folder itself
    for candidate in (source / "events", source / "event_service" / "events"):
        if candidate.is_dir():
            return candidate
    raise fail(source, "$", "not an OpenHands V1 conversation directory: no events/ folder")


def _load(path: Path, kind: type) -> Any:
    try:
        with open_regular(path) as fh:  # a FIFO or device is refused, never read
            data = fh.read()
    except OSError as exc:
        raise fail(path, "$", f"cannot read ({describe(exc)})") from None
    return decode(data, kind, path)


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _calls(base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each model call's cost record by response ID (`token_usages[i]` and `costs[i]` are one call)."""
    out: dict[str, dict[str, Any]] = {}
    for metrics in (_dig(base, "stats", "service_to_metrics") or {}).values():
        for usage, cost in zip(_dig(metrics, "token_usages") or [], _dig(metrics, "costs") or []):
            if isinstance(usage, dict) and isinstance(cost, dict) and isinstance(usage.get("response_id"), str):
                out[usage["response_id"]] = cost
    return out


def _offset(events: list[tuple[Path, dict[str, Any]]], calls: dict[str, dict[str, Any]]) -> timedelta:
    """The UTC offset of naive event times: an action's time minus its model call's Unix time."""
    for _, event in events:
        seen = _dig(calls, str(event.get("llm_response_id")), "timestamp")
        if isinstance(seen, (int, float)) and isinstance(event.get("timestamp"), str):
            try:
                local = datetime.fromisoformat(event["timestamp"])
            except ValueError:
                continue
            if local.tzinfo is None:
                delta = (local.replace(tzinfo=timezone.utc) - datetime.fromtimestamp(seen, timezone.utc)).total_seconds()
                quarters = round(delta / 900)  # offsets are whole quarter hours
                if abs(quarters) <= 14 * 4:
                    return timedelta(seconds=quarters * 900)
    return timedelta(0)


def _output(answer: _Answer | None) -> tuple[str | None, str | None, bool | None]:
    """(output, coverage, truncated) of the event answering an action."""
    if answer is None:
        return None, None, None
    if answer.error is not None or answer.rejection_reason is not None:
        return answer.error if answer.error is not None else answer.rejection_reason, "error", None
    obs = answer.observation
    flags = []
    if isinstance(_dig(obs, "metadata", "exit_code"), int):
        flags.append(f"exit_code={obs['metadata']['exit_code']}")
    if obs.get("timeout") is True:
        flags.append("timeout")
    text = None
    if isinstance(obs.get("error"), str) and obs["error"]:
        text = obs["error"]  # the editor shows its error instead of the output
        flags.append("error")
    else:
        for key in ("output", "content", "message"):
            text = text_of(obs.get(key))
            if text is not None:
                break
    truncated = True if text is not None and CLIPPED in text else None
    return text, "; ".join(flags) or None, truncated


def parse(source: Path) -> Trajectory:
    """Parse an OpenHands V1 conversation directory."""
    events_dir = _events_dir(source)
    files = sorted((int(m.group(1)), p) for p in events_dir.iterdir() if (m := _EVENT_FILE.match(p.name)))
    if not files:
        raise fail(events_dir, "$", "no event-NNNNN-*.json files")
    events = [(p, _load(p, dict[str, Any])) for _, p in files]
    base_file = events_dir.parent / "base_state.json"
    base = _load(base_file, dict[str, Any]) if base_file.exists() else {}
    calls = _calls(base)
    offset = _offset(events, calls)
    answers: dict[str, _Answer] = {}
    for path, event in events:
        head = convert(event, _Kind, path, "$")
        if head.kind in ANSWERS:
            answer = convert(event, _Answer, path, "$")
            for key in (answer.action_id, answer.tool_call_id):
                if key:
                    answers.setdefault(key, answer)

    items: list[Item] = []
    task: str | None = None
    opened_at = None
    skipped: Counter[str] = Counter()
    charged: set[str] = set()
    for path, event in events:
        head = convert(event, _Kind, path, "$")
        when = with_offset(head.timestamp, offset, path, "$.timestamp") if head.timestamp else None
        opened_at = opened_at or when
        if head.kind == "ActionEvent":
            ev = convert(event, _ActionEvent, path, "$")
            items.append(Thought(text_of(ev.thought) or "", 0.0, when))
            if ev.action.get("kind") == "ExecuteBashAction" and isinstance(ev.action.get("command"), str):
                query = ev.action["command"]
            elif ev.tool_call and ev.tool_call.function and ev.tool_call.function.arguments is not None:
                query = ev.tool_call.function.arguments
            else:
                raise fail(path, "$.tool_call.function.arguments", "the action has neither a command nor tool-call arguments")
            answer = answers.get(ev.id) or (answers.get(ev.tool_call_id) if ev.tool_call_id else None)
            output, coverage, truncated = _output(answer)
            rid = ev.llm_response_id
            cost = number(_dig(calls, rid, "cost")) if rid and rid not in charged else 0.0
            charged.add(rid or "")
            tool = ev.tool_name or str(ev.action.get("kind", "tool"))
            items.append(Action(query, f"openhands:{tool}", output, coverage, truncated, cost, when))
        elif head.kind == "MessageEvent":
            text = text_of(convert(event, _Message, path, "$").llm_message.get("content")) or ""
            if head.source == "user" and task is None:
                task = text
            elif head.source == "user":
                items.append(Feedback(text, "openhands:user", when))
            else:
                items.append(Thought(text, 0.0, when))
        elif head.kind not in ANSWERS and head.kind != "SystemPromptEvent":
            skipped[head.kind] += 1
    if task is None:
        raise fail(events_dir, "$", "no task: no MessageEvent from the user")
    statement = between(task, "<issue_description>\n", "\n</issue_description>")
    statement = task if statement is None else statement
    name = source.parent.name if source.name == "event_service" else source.name
    agent_kind = _dig(base, "agent", "kind")
    model = _dig(base, "agent", "llm", "model")
    max_iterations = base.get("max_iterations")
    remarks = [f"skipped {n} {kind} event(s)" for kind, n in sorted(skipped.items())]
    if skipped.get("Condensation"):
        remarks.append("Condensation: every forgotten event is imported in full; the summary is not")
    return Trajectory(
        source=str(source), name=name, title=first_line(statement), statement=statement,
        opened_at=opened_at, agent=f"OpenHands {agent_kind}" if isinstance(agent_kind, str) else "OpenHands",
        model=model if isinstance(model, str) else None, items=tuple(items),
        max_iterations=max_iterations if isinstance(max_iterations, int) and max_iterations > 0 else None,
        remarks=tuple(remarks),
    )  # fmt: skip
