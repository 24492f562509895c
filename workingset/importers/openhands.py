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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta, Struct

from ..io.limits import MAX_COUNT
from ..io.numbers import MAX_DIGITS, ascii_int
from ..runs.fixed_prompt import FixedPrompt, PrefixMessage, openai_tool
from ._trajectory import (
    Action,
    Feedback,
    Item,
    Thought,
    Trajectory,
    between,
    convert,
    decode,
    dig,
    fail,
    first_line,
    read_source,
    text_of,
    with_offset,
)  # fmt: skip

_EVENT_FILE = re.compile(r"^event-([0-9]+)-.*\.json$")
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
    function: _Function | None = None  # the OpenAI shape, as the SDK wrote it in 2025-09
    arguments: str | None = None  # later SDK builds flatten it: {id, name, arguments, origin}


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


class _SystemPrompt(Struct):
    system_prompt: Any = None  # a text block, or a list of them
    tools: list[dict[str, Any]] = []


def _fixed_prompt(system: _SystemPrompt | None, task: str | None) -> FixedPrompt | None:
    """The system prompt and tools of the `SystemPromptEvent`, and the task message as sent."""
    if system is None:
        return None
    prompt = system.system_prompt
    text = text_of(prompt if isinstance(prompt, (list, str)) else [prompt])
    tools = tuple(
        t for t in (openai_tool(d) for d in system.tools if isinstance(d, dict)) if t is not None
    )
    prefix = () if task is None else (PrefixMessage(role="user", text=task),)
    return FixedPrompt(agent="openhands", system=text, prefix=prefix, tools=tools)


# Unix seconds that datetime can hold (years 1970 … 9999).
UnixTime = Annotated[float, Meta(ge=0, le=253402300799)]


class _Cost(Struct):
    cost: Annotated[float, Meta(ge=0)] | None = None
    timestamp: UnixTime | None = None


class _Usage(Struct):
    response_id: str | None = None


class _Metrics(Struct):
    costs: list[_Cost] = []
    token_usages: list[_Usage] = []


class _Stats(Struct):
    service_to_metrics: dict[str, _Metrics] = {}


class _Base(Struct):
    """The parts of `base_state.json` the import reads; every other key is left alone."""

    agent: dict[str, Any] = {}
    max_iterations: Annotated[int, Meta(ge=1, le=MAX_COUNT)] | None = (
        None  # a budget's limit: at least 1
    )
    agent_status: str | None = None
    stats: _Stats | None = None


@dataclass(frozen=True)
class _Call:
    """One model call from the metrics: its service, cost and Unix time."""

    service: str
    cost: float
    at: float | None


def _source_events(
    source: Path,
) -> tuple[Path, list[tuple[Path, str, dict[str, Any]]], Path | None]:
    """(events folder or file, [(file, JSON path, event)], base_state.json or None) of a source."""
    if source.is_file():  # a single-file list of V1 events (`traj_*.json`)
        events = decode(read_source(source), list[dict[str, Any]], source)
        return source, [(source, f"$[{i}]", e) for i, e in enumerate(events)], None
    if not source.is_dir():
        raise fail(
            source,
            "$",
            "an OpenHands conversation is a directory (with base_state.json and events/)",
        )
    events_dir = None
    if any(_EVENT_FILE.match(p.name) for p in source.iterdir()):
        events_dir = source  # the events/ folder itself
    for candidate in (source / "events", source / "event_service" / "events"):
        if events_dir is None and candidate.is_dir():
            events_dir = candidate
    if events_dir is None:
        raise fail(source, "$", "not an OpenHands V1 conversation directory: no events/ folder")
    numbered = [
        (ascii_int(m.group(1)), p) for p in events_dir.iterdir() if (m := _EVENT_FILE.match(p.name))
    ]
    for number, path in numbered:
        if number is None:
            raise fail(path, "$", f"an event file number of more than {MAX_DIGITS} digits")
    files = sorted((number, p) for number, p in numbered if number is not None)
    if not files:
        raise fail(events_dir, "$", "no event-NNNNN-*.json files")
    for (number, first), (again, second) in zip(files, files[1:]):
        if number == again:  # the number is the order: two of one number leave it unknown
            raise fail(
                second,
                "$",
                f"two event files have the number {number}: {first.name} and {second.name}",
            )
    path = events_dir.parent / "base_state.json"
    base = path if path.exists() or path.is_symlink() else None
    conversation = (
        source.parent if events_dir == source else source
    )  # given the events/ folder: its parent
    for file in [p for _, p in files] + ([base] if base else []):
        _inside(file, conversation)
    return events_dir, [(p, "$", _load(p, dict[str, Any])) for _, p in files], base


def _inside(path: Path, conversation: Path) -> None:
    """Refuse a file of the conversation that is a symbolic link or resolves outside its directory.

    A conversation directory is data to read, not a map of the file system: a link in it
    could make the import read (and put into every rendered context) any file the user can.
    """
    if path.is_symlink():
        raise fail(
            path,
            "$",
            "is a symbolic link; a conversation's files must be regular files in its directory",
        )
    if not path.resolve().is_relative_to(conversation.resolve()):
        raise fail(path, "$", f"resolves outside the conversation directory {conversation}")


def _load(path: Path, kind: type) -> Any:
    return decode(read_source(path), kind, path)  # a FIFO or device is refused, never read


def _calls(base: _Base) -> dict[str, _Call]:
    """Each model call by response ID (`token_usages[i]` and `costs[i]` are one call)."""
    out: dict[str, _Call] = {}
    for service, metrics in (base.stats.service_to_metrics if base.stats else {}).items():
        for usage, cost in zip(metrics.token_usages, metrics.costs):
            if usage.response_id:
                out[usage.response_id] = _Call(service, cost.cost or 0.0, cost.timestamp)
    return out


def _offset(
    events: list[tuple[Path, str, dict[str, Any]]], calls: dict[str, _Call]
) -> timedelta | None:
    """The UTC offset of naive event times: an action's time minus its model call's Unix time."""
    for _, _, event in events:
        call = calls.get(str(event.get("llm_response_id")))
        if call is not None and call.at is not None and isinstance(event.get("timestamp"), str):
            try:
                local = datetime.fromisoformat(event["timestamp"])
            except ValueError:
                continue
            if local.tzinfo is None:
                delta = (
                    local.replace(tzinfo=UTC) - datetime.fromtimestamp(call.at, UTC)
                ).total_seconds()
                quarters = round(delta / 900)  # offsets are whole quarter hours
                if abs(quarters) <= 14 * 4:
                    return timedelta(seconds=quarters * 900)
    return None


def _output(answer: _Answer | None) -> tuple[str | None, str | None, bool | None]:
    """(output, coverage, truncated) of the event answering an action."""
    if answer is None:
        return None, None, None
    if answer.error is not None or answer.rejection_reason is not None:
        return answer.error if answer.error is not None else answer.rejection_reason, "error", None
    obs = answer.observation
    flags = []
    if isinstance(dig(obs, "metadata", "exit_code"), int):
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


def _name(source: Path) -> str:
    """Material for the analysis ID: the conversation directory's name, whichever level was given."""
    if source.is_file():
        return source.name.removesuffix(".json")
    path = source.parent if source.name == "events" else source
    return path.parent.name if path.name == "event_service" else path.name


def _utc(when: str | None) -> float | None:
    try:
        return datetime.fromisoformat(when).timestamp() if when else None
    except ValueError:
        return None


def parse(source: Path) -> Trajectory:
    """Parse an OpenHands V1 conversation directory, or a single-file list of its events."""
    where, events, base_file = _source_events(source)
    base = _load(base_file, _Base) if base_file else _Base()
    calls = _calls(base)
    offset = _offset(events, calls)
    answers: dict[str, _Answer] = {}
    heads = [convert(event, _Kind, path, at) for path, at, event in events]
    for (path, at, event), head in zip(events, heads):
        if head.kind in ANSWERS:
            answer = convert(event, _Answer, path, at)
            for key in (answer.action_id, answer.tool_call_id):
                if key:
                    answers.setdefault(key, answer)
    charged = {
        str(e.get("llm_response_id")) for _, _, e in events if e.get("kind") == "ActionEvent"
    }
    # Model calls that answer no action (the condenser's): charged where they happened.
    loose = sorted(
        ((c.at if c.at is not None else float("inf")), rid)
        for rid, c in calls.items()
        if rid not in charged
    )

    items: list[Item] = []
    task: str | None = None
    opened_at = None
    skipped: Counter[str] = Counter()
    charged = set()
    finished = False
    naive = False
    system: _SystemPrompt | None = None
    for (path, at, event), head in zip(events, heads):
        when = (
            with_offset(head.timestamp, offset or timedelta(0), path, f"{at}.timestamp")
            if head.timestamp
            else None
        )
        naive = naive or (when is not None and when != head.timestamp)  # an offset was attached
        opened_at = opened_at or when
        moment = _utc(when)
        while loose and moment is not None and loose[0][0] <= moment:
            items.append(Thought("", calls[loose.pop(0)[1]].cost, when))
        if head.kind == "ActionEvent":
            ev = convert(event, _ActionEvent, path, at)
            items.append(Thought(text_of(ev.thought) or "", 0.0, when))
            call = ev.tool_call
            arguments = (
                call.function.arguments
                if call and call.function
                else (call.arguments if call else None)
            )
            if ev.action.get("kind") == "ExecuteBashAction" and isinstance(
                ev.action.get("command"), str
            ):
                query = ev.action["command"]
            elif arguments is not None:
                query = arguments
            else:
                raise fail(
                    path,
                    f"{at}.tool_call.function.arguments",
                    "the action has neither a command nor tool-call arguments",
                )
            finished = finished or ev.action.get("kind") == "FinishAction"
            found = answers.get(ev.id) or (
                answers.get(ev.tool_call_id) if ev.tool_call_id else None
            )
            output, coverage, truncated = _output(found)
            rid = ev.llm_response_id
            cost = calls[rid].cost if rid in calls and rid not in charged else 0.0
            charged.add(rid or "")
            tool = ev.tool_name or str(ev.action.get("kind", "tool"))
            items.append(
                Action(query, f"openhands:{tool}", output, coverage, truncated, cost, when)
            )
        elif head.kind == "MessageEvent":
            text = text_of(convert(event, _Message, path, at).llm_message.get("content")) or ""
            if head.source == "user" and task is None:
                task = text
            elif head.source == "user":
                items.append(Feedback(text, "openhands:user", when))
            else:
                items.append(Thought(text, 0.0, when))
        elif head.kind == "SystemPromptEvent":
            system = system or convert(event, _SystemPrompt, path, at)
        elif head.kind not in ANSWERS:
            skipped[head.kind] += 1
    items.extend(Thought("", calls[rid].cost, None) for _, rid in loose)
    remarks = _remarks(base, base_file, calls, charged, offset, naive, finished, task is None)
    remarks += [f"skipped {n} {kind} event(s)" for kind, n in sorted(skipped.items())]
    if skipped.get("Condensation"):
        remarks.append(
            "Condensation: every forgotten event is imported in full; the summary is not"
        )
    statement = (
        between(task, "<issue_description>\n", "\n</issue_description>")
        if task is not None
        else None
    )
    statement = (
        statement
        if statement is not None
        else (task if task is not None else "(the source holds no task message)")
    )
    agent_kind = dig(base.agent, "kind")
    model = dig(base.agent, "llm", "model")
    return Trajectory(
        source=str(source), name=_name(source), title=first_line(statement) if task is not None else _name(source),
        statement=statement, opened_at=opened_at,
        agent=f"OpenHands {agent_kind}" if isinstance(agent_kind, str) else "OpenHands",
        model=model if isinstance(model, str) else None, items=tuple(items),
        max_iterations=base.max_iterations,
        remarks=tuple(remarks), fixed_prompt=_fixed_prompt(system, task),
    )  # fmt: skip


def _remarks(base: _Base, base_file: Path | None, calls: dict[str, _Call], charged: set[str],
             offset: timedelta | None, naive: bool, finished: bool, no_task: bool) -> list[str]:  # fmt: skip
    """What the user should know about the import: every value the source did not give."""
    out = []
    if no_task:
        out.append("no task: the source holds no MessageEvent from the user; the statement says so")
    if base_file is None:
        out.append(
            "no base_state.json: the model, the iteration limit and the costs are unknown (costs are 0)"
        )
    elif not calls:
        out.append("base_state.json records no model calls (stats.service_to_metrics): costs are 0")
    loose = [c for rid, c in calls.items() if rid not in charged]
    if loose:
        services = ", ".join(sorted({c.service for c in loose}))
        out.append(f"{len(loose)} model call(s) of {services} answer no action (${sum(c.cost for c in loose):.4f}): "
                   "counted in cost_used where they happened")  # fmt: skip
    if naive and offset is None:
        out.append("event times carry no UTC offset and no model call gives it: taken as UTC")
    if not finished or base.agent_status not in (None, "finished"):
        status = (
            f"agent_status {base.agent_status!r}"
            if base.agent_status is not None
            else "no agent_status"
        )
        out.append(
            f"the conversation did not finish: {'a finish action' if finished else 'no finish action'}, {status}"
        )
    return out
