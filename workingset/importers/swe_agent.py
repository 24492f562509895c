"""SWE-agent `.traj` files (0.x; the 1.x layout reads the same way): one JSON object.

`trajectory[i]` gives each step: `action` (the command exactly as issued, trailing newline
included), `observation` (its raw output) and `thought`. The task is the first non-demo
user message of `history`; the issue text sits between `ISSUE:` and `INSTRUCTIONS:` (0.x)
or inside `<pr_description>` (1.x). A 0.x file records no timestamps, no exit codes and
no per-step costs, so those are the fixed epoch, unknown and 0.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from ._trajectory import Action, Item, Thought, Trajectory, between, decode, fail, first_line, number, read_source, text_of

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


class _Traj(Struct):
    trajectory: list[_Step]
    history: list[_Message] = []
    info: dict[str, Any] = {}


class _Probe(Struct):
    trajectory_format: str | None = None
    messages: Any = None


def _statement(message: str) -> str:
    """The issue text inside SWE-agent's instance template, or the whole message."""
    for start, end in (("ISSUE:\n", "\n\nINSTRUCTIONS:\n"), ("<pr_description>\n", "\n</pr_description>")):
        found = between(message, start, end)
        if found is not None:
            return found
    return message


def parse(source: Path) -> Trajectory:
    """Parse a SWE-agent `.traj` file."""
    data = read_source(source)
    probe = decode(data, _Probe, source)
    if probe.trajectory_format is not None or probe.messages is not None:
        raise fail(source, "$", "this is a mini-swe-agent trajectory, not SWE-agent's; use the format mini-swe-agent")
    traj = decode(data, _Traj, source)
    if not traj.trajectory:
        raise fail(source, "$.trajectory", "the trajectory holds no steps")
    task = next((m for m in traj.history if m.role == "user" and not m.is_demo), None)
    if task is None or text_of(task.content) is None:
        raise fail(source, "$.history", "no task message (a user message that is not a demonstration)")
    system = next((text_of(m.content) or "" for m in traj.history if m.role == "system"), "")
    commands = COMMANDS | set(_DOC_COMMAND.findall(system))
    statement = _statement(text_of(task.content) or "")

    items: list[Item] = []
    for step in traj.trajectory:
        items.append(Thought(step.thought))
        words = step.action.split(maxsplit=1)
        tool = words[0] if words and words[0] in commands else "bash"
        items.append(Action(query=step.action, origin=f"swe-agent:{tool}", output=step.observation))
    stats = traj.info.get("model_stats") if isinstance(traj.info.get("model_stats"), dict) else {}
    total = number(stats.get("instance_cost"))
    name = source.name.removesuffix(".traj").removesuffix(".json")
    return Trajectory(
        source=str(source), name=name, title=first_line(statement), statement=statement,
        opened_at=None, agent="SWE-agent", model=None, items=tuple(items),
        remarks=(
            "SWE-agent .traj files record no timestamps: opened_at is the fixed epoch 1970-01-01T00:00:00Z",
            f"no per-step costs in the source (its total is ${total:.4f}); evidence costs are 0",
        ),
    )  # fmt: skip
