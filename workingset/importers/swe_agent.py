"""SWE-agent `.traj` files (0.x; the 1.x layout reads the same way): one JSON object.

`trajectory[i]` gives each step: `action` (the command exactly as issued, trailing newline
included), `observation` (its raw output) and `thought`. The task is the first non-demo
user message of `history`; the issue text sits between `ISSUE:` and `INSTRUCTIONS:` (0.x)
or inside `<pr_description>` (1.x). A 0.x file records no timestamps, no exit codes and
no per-step costs, so those are the fixed epoch, unknown and 0. A 1.x file's `replay_config`
(the run's config, a JSON string) gives the model (`agent.model.name`), the instance ID
(`problem_statement.id`, else `environment`) and the limits (`per_instance_cost_limit`,
`per_instance_call_limit`; 0 means none).

A file without `trajectory` (SWE-agent 1.x demonstrations keep only `history`) is read from
`history`: each non-demo assistant message with an `action` is a step, answered by the
message right after it (the observation as the model saw it, prompt suffix included); the
tool is the message's function call name when it has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Struct

from ..runs.fixed_prompt import FixedPrompt, PrefixMessage, is_prefix_role
from ._trajectory import (
    Action,
    Item,
    Thought,
    Trajectory,
    between,
    decode,
    dig,
    fail,
    first_line,
    number,
    read_source,
    text_of,
)

# SWE-agent 0.x's default special commands; anything else ran in bash.
COMMANDS = frozenset({
    "open", "goto", "scroll_up", "scroll_down", "create", "submit", "search_dir", "search_file",
    "find_file", "edit", "str_replace_editor",
})  # fmt: skip
_DOC_COMMAND = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):\n  docstring:", re.MULTILINE)


class _Step(Struct):
    action: str
    observation: str
    thought: str = ""


class _Message(Struct):
    role: str
    content: Any = None
    is_demo: bool = False
    action: Any = None
    thought: Any = None
    tool_calls: Any = None


class _Traj(Struct):
    trajectory: list[_Step] | None = None
    history: list[_Message] = []
    info: dict[str, Any] = {}
    environment: Any = None
    replay_config: Any = None


# 0.x names its one environment; 1.x names the environment after the instance.
_GENERIC_ENVIRONMENTS = frozenset({"swe_main", "main", "docker", "local", "modal"})


@dataclass(frozen=True)
class _RunFacts:
    """What SWE-agent 1.x's `replay_config` (the run's config) says about the run."""

    instance: str | None = None
    model: str | None = None
    cost_limit: float | None = None
    call_limit: int | None = None


def _run_facts(traj: _Traj, remarks: list[str]) -> _RunFacts:
    """The instance ID, model and limits from `replay_config` (a JSON string or an object)."""
    config = traj.replay_config
    if isinstance(config, str):
        try:
            config = msgspec.json.decode(config)
        except (msgspec.DecodeError, RecursionError):
            config = None
    if traj.replay_config is not None and not isinstance(config, dict):
        remarks.append(
            "replay_config is not a JSON object: the model, instance ID and limits it would give are unknown"
        )
        config = {}
    config = config or {}
    model = dig(config, "agent", "model") or {}
    instance = dig(config, "problem_statement", "id")
    if not isinstance(instance, str) or not instance:
        env = traj.environment
        instance = (
            env if isinstance(env, str) and env and env not in _GENERIC_ENVIRONMENTS else None
        )
    name = dig(model, "name")
    cost_limit, call_limit = (
        dig(model, "per_instance_cost_limit"),
        dig(model, "per_instance_call_limit"),
    )
    if config and not (isinstance(call_limit, int) and call_limit > 0):
        remarks.append(
            "no call limit in replay_config (per_instance_call_limit 0 or absent): the step limit is the step count"
        )
    return _RunFacts(
        instance=instance, model=name if isinstance(name, str) and name else None,
        cost_limit=number(cost_limit) or None,
        call_limit=call_limit if isinstance(call_limit, int) and not isinstance(call_limit, bool) and call_limit > 0 else None,
    )  # fmt: skip


def _statement(message: str) -> str:
    """The issue text inside SWE-agent's instance template, or the whole message."""
    for start, end in (
        ("ISSUE:\n", "\n\nINSTRUCTIONS:\n"),
        ("<pr_description>\n", "\n</pr_description>"),
    ):
        found = between(message, start, end)
        if found is not None:
            return found
    return message


def _tool(action: str, commands: frozenset[str]) -> str:
    words = action.split(maxsplit=1)
    return words[0] if words and words[0] in commands else "bash"


def _call_name(msg: _Message) -> str | None:
    """The function name of a history message's first tool call, if it has one."""
    calls = msg.tool_calls if isinstance(msg.tool_calls, list) else []
    function = calls[0].get("function") if calls and isinstance(calls[0], dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None


def _from_history(traj: _Traj, commands: frozenset[str], source: Path) -> list[Item]:
    """Steps of a history-only file: each assistant `action`, answered by the next message."""
    history = [(i, m) for i, m in enumerate(traj.history) if not m.is_demo]
    items: list[Item] = []
    for k, (i, msg) in enumerate(history):
        if msg.role != "assistant" or msg.action is None:
            continue
        if not isinstance(msg.action, str):
            raise fail(source, f"$.history[{i}].action", "Expected `str`")
        thought = msg.thought if isinstance(msg.thought, str) else ""
        nxt = history[k + 1][1] if k + 1 < len(history) else None
        output = text_of(nxt.content) if nxt is not None and nxt.role != "assistant" else None
        items.append(Thought(thought))
        items.append(
            Action(
                query=msg.action,
                origin=f"swe-agent:{_call_name(msg) or _tool(msg.action, commands)}",
                output=output,
            )
        )
    return items


def _fixed_prompt(traj: _Traj, task: _Message) -> FixedPrompt:
    """The system prompt, the demonstrations and the instance message, as `history` holds them (no tool schemas: a `.traj` keeps none)."""
    system = next((text_of(m.content) for m in traj.history if m.role == "system"), None)
    prefix = []
    for msg in traj.history:
        if msg is task:
            break
        text = text_of(msg.content)
        if msg.is_demo and is_prefix_role(msg.role) and text is not None:
            prefix.append(PrefixMessage(role=msg.role, text=text))
    prefix.append(PrefixMessage(role="user", text=text_of(task.content) or ""))
    return FixedPrompt(agent="swe-agent", system=system, prefix=tuple(prefix))


def parse(source: Path) -> Trajectory:
    """Parse a SWE-agent `.traj` file."""
    data = read_source(source)
    traj = decode(data, _Traj, source)
    if traj.trajectory is not None and not traj.trajectory:
        raise fail(source, "$.trajectory", "the trajectory holds no steps")
    task = next((m for m in traj.history if m.role == "user" and not m.is_demo), None)
    if traj.trajectory is None and not any(
        m.role == "assistant" and m.action is not None for m in traj.history
    ):
        raise fail(
            source,
            "$",
            "no `trajectory` list, and `history` holds no agent actions (assistant messages with an `action`)",
        )
    if task is None or text_of(task.content) is None:
        raise fail(
            source, "$.history", "no task message (a user message that is not a demonstration)"
        )
    system = next((text_of(m.content) or "" for m in traj.history if m.role == "system"), "")
    commands = COMMANDS | set(_DOC_COMMAND.findall(system))
    statement = _statement(text_of(task.content) or "")

    items: list[Item] = []
    remarks: list[str] = []
    if traj.trajectory is None:
        items = _from_history(traj, commands, source)
        remarks.append(
            "no `trajectory` in the source: steps are read from `history`; outputs are the observations as the model saw them"
        )
    for step in traj.trajectory or []:
        items.append(Thought(step.thought))
        items.append(
            Action(
                query=step.action,
                origin=f"swe-agent:{_tool(step.action, commands)}",
                output=step.observation,
            )
        )
    stats = traj.info.get("model_stats")
    if isinstance(stats, dict) and "instance_cost" in stats:
        costs = f"no per-step costs in the source (its total is ${number(stats['instance_cost']):.4f}); evidence costs are 0"
    else:
        costs = "the source records no costs; evidence costs are 0"
    version = traj.info.get("swe_agent_version")
    run = _run_facts(traj, remarks)
    return Trajectory(
        source=str(source), name=run.instance or source.name.removesuffix(".traj").removesuffix(".json"),
        title=run.instance or first_line(statement), statement=statement,
        opened_at=None, agent=f"SWE-agent {version}" if isinstance(version, str) else "SWE-agent",
        model=run.model, items=tuple(items), max_iterations=run.call_limit, max_cost=run.cost_limit,
        remarks=(
            *remarks,
            "SWE-agent .traj files record no timestamps: opened_at is the fixed epoch 1970-01-01T00:00:00Z",
            costs,
        ),
        fixed_prompt=_fixed_prompt(traj, task),
    )  # fmt: skip
