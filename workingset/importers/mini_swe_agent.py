"""mini-swe-agent `.traj.json` files: v1 text actions and v2 tool calls, told apart by the file.

The messages decide: tool calls or `tool` messages mean v2 (tool calls; `extra.actions` gives
each parsed command), else v1 text actions (one ```bash block per reply, parsed with the
config's `action_regex`, else mini-swe-agent's default). `trajectory_format`
(`mini-swe-agent-1`, `-1.1`, …) must name mini-swe-agent but does not decide the mode: some
2.x builds label tool-call runs `mini-swe-agent-1`; a label that disagrees with the messages
is reported. An action's output is the next message as the model saw it
(`<returncode>…<output>…`); in v2 each tool call is answered by the `tool` message with its
`tool_call_id`, so a reply with several tool calls (parallel tool calls) is several actions,
each with its own output; the reply's cost goes to its first action. The exit code goes to
the capture's coverage (`exit_code=N`), and head/tail elision by the observation template
marks it truncated. A reply with no action is a note, and the reply to it is feedback
(origin `mini-swe-agent:format_error`); a message the file marks with `extra.interrupt_type`
(2.x writes `FormatError` even when it kept no reply without an action) takes its origin from
that type, snake-cased. The final submit command is answered by the
submission itself (v1: the last user message; v2: the `exit` message, given to the call that
printed the submit marker, else the last call left unanswered).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from msgspec import Struct

from ..errors import WorkingsetError
from ..io.limits import check_json
from ..runs.fixed_prompt import FixedPrompt, PrefixMessage, is_prefix_role
from ._trajectory import (
    Action,
    Feedback,
    Item,
    Thought,
    Trajectory,
    decode,
    dig,
    fail,
    first_line,
    from_epoch,
    number,
    read_source,
    text_of,
)  # fmt: skip

DEFAULT_REGEX = r"```bash\s*\n(.*?)\n```"
SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_ELIDED = re.compile(r"<elided_chars>\s*\d+ characters elided\s*</elided_chars>")
_RETURNCODE = re.compile(
    r"^(?:<exception>.*?</exception>\s*)?<returncode>(-?[0-9]{1,18})</returncode>", re.DOTALL
)
_TASK = re.compile(r"\{\{-?\s*task\s*-?\}\}")
_JINJA = re.compile(r"\{\{|\{%|\{#")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class _Function(Struct):
    name: str = "bash"
    arguments: str = ""


class _Call(Struct):
    id: str | None = None
    function: _Function | None = None


class _Message(Struct):
    role: str
    content: Any = None
    tool_calls: list[_Call] | None = None
    tool_call_id: str | None = None
    extra: dict[str, Any] = {}


class _Traj(Struct):
    messages: list[_Message]
    info: dict[str, Any] = {}
    trajectory_format: str | None = None
    instance_id: str | None = None


def _statement(message: str, template: Any) -> str:
    """The `{{task}}` part of the rendered instance template, or the whole message."""
    if not isinstance(template, str) or not _TASK.search(template):
        return message
    before, after = _TASK.split(template, maxsplit=1)
    prefix = _JINJA.split(before)[-1]  # the literal text right before {{task}}
    suffix = _JINJA.split(after)[0]  # the literal text right after it
    start = message.find(prefix) + len(prefix) if prefix else 0
    if prefix and start < len(prefix):
        return message
    for tail in (suffix, suffix.rstrip("\n")):
        end = message.find(tail, start) if tail else len(message)
        if end >= 0:
            return message[start:end]
    return message


def _output_facts(text: str | None, returncode: Any = None) -> tuple[str | None, bool | None]:
    """(coverage, truncated) of a rendered observation."""
    if text is None:
        return None, None
    match = _RETURNCODE.match(text)
    code = returncode if isinstance(returncode, int) and not isinstance(returncode, bool) else None
    if code is None and match:
        code = int(match.group(1))
    coverage = None if code is None else f"exit_code={code}"
    if _ELIDED.search(text):
        return coverage, True
    return coverage, (False if match and "<output>" in text else None)


def _timestamp(extra: dict[str, Any], source: Path, path: str) -> str | None:
    """The message's Unix time (`extra.timestamp`, else the response's `created`) as RFC 3339."""
    for key, value in (
        ("timestamp", extra.get("timestamp")),
        ("response.created", dig(extra, "response", "created")),
    ):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return from_epoch(value, source, f"{path}.extra.{key}")
    return None


def _cost(extra: dict[str, Any]) -> float:
    return (
        number(extra["cost"])
        if "cost" in extra
        else number(dig(extra, "response", "usage", "cost"))
    )


def _feedback_origin(msg: _Message, after_bad_reply: bool) -> str:
    """What a message that answers no action is: the file's `interrupt_type` when it names one."""
    kind = msg.extra.get("interrupt_type")
    if isinstance(kind, str) and kind:
        return _CAMEL.sub("_", kind).lower()  # FormatError -> format_error
    return "format_error" if after_bad_reply and msg.role == "user" else msg.role


def _commands(
    msg: _Message, text_mode: bool, regex: re.Pattern[str], path: str, source: Path
) -> tuple[list[tuple[str, str | None, str]], str]:
    """(command, tool_call_id, tool name) for each action of an assistant reply, and its thought."""
    content = text_of(msg.content) or ""
    if text_mode:
        found = list(regex.finditer(content))
        if len(found) != 1:
            return [], content
        m = found[0]
        return [(m.group(1).strip(), None, "bash")], (
            content[: m.start()] + content[m.end() :]
        ).strip()
    parsed = dig(msg.extra, "actions")
    parsed = [a for a in parsed if isinstance(a, dict)] if isinstance(parsed, list) else []
    by_id = {a["tool_call_id"]: a for a in parsed if isinstance(a.get("tool_call_id"), str)}
    out = []
    for k, call in enumerate(msg.tool_calls or []):
        action = by_id.get(call.id) if call.id else None
        if action is None and not by_id and k < len(parsed):
            action = parsed[k]  # no IDs to match on: the k-th parsed action
        command = action.get("command") if action is not None else None
        if not isinstance(command, str):
            raw = call.function.arguments if call.function else ""
            try:
                check_json(
                    raw.encode("utf-8", "surrogatepass"), "file", str(source)
                )  # model output: bounded first
                command = json.loads(raw)["command"]
            except (ValueError, TypeError, KeyError, RecursionError, WorkingsetError):
                command = raw  # kept exactly as the model wrote it
            if not isinstance(command, str):
                raise fail(
                    source,
                    f"{path}.tool_calls[{k}].function.arguments",
                    "the command is not a string",
                )
        out.append((command, call.id, call.function.name if call.function else "bash"))
    return out, content


def _fixed_prompt(msgs: list[_Message], task_at: int) -> FixedPrompt:
    """The system message and the messages up to the instance message (the rendered instance template)."""
    system = next((text_of(m.content) for m in msgs[:task_at] if m.role == "system"), None)
    prefix = [
        PrefixMessage(role=m.role, text=text_of(m.content) or "")
        for m in msgs[: task_at + 1]
        if is_prefix_role(m.role)
    ]
    return FixedPrompt(agent="mini-swe-agent", system=system, prefix=tuple(prefix))


def parse(source: Path) -> Trajectory:
    """Parse a mini-swe-agent trajectory file (v1 or v2)."""
    data = read_source(source)
    traj = decode(data, _Traj, source)
    fmt = traj.trajectory_format
    if fmt is not None and not fmt.startswith("mini-swe-agent"):
        raise fail(source, "$.trajectory_format", f"not a mini-swe-agent trajectory ({fmt!r})")
    msgs = traj.messages
    task_at = next((i for i, m in enumerate(msgs) if m.role == "user"), None)
    if task_at is None or text_of(msgs[task_at].content) is None:
        raise fail(source, "$.messages", "no task message (the first user message)")
    tool_shaped = any(m.tool_calls or m.role == "tool" for m in msgs)
    text_mode = not tool_shaped
    remarks: list[str] = []
    if (fmt == "mini-swe-agent-1" and not text_mode) or (fmt == "mini-swe-agent-1.1" and text_mode):
        read_as = "tool calls" if tool_shaped else "text actions"
        remarks.append(
            f"trajectory_format {fmt!r} disagrees with the messages; read as {read_as}, as the messages hold"
        )
    config = dig(traj.info, "config") or {}
    regex = re.compile(dig(config, "agent", "action_regex") or DEFAULT_REGEX, re.DOTALL)
    # Looked up by a reply's call ID, which it may lack (None: no output of its own).
    by_call: dict[str | None, int] = {
        m.tool_call_id: i for i, m in enumerate(msgs) if m.role == "tool" and m.tool_call_id
    }

    items: list[Item] = []
    used: set[int] = set()
    pending: list[
        int
    ] = []  # indices in `items` of the last reply's actions still lacking an output
    after_bad_reply = False
    for i in range(task_at + 1, len(msgs)):
        msg, path = msgs[i], f"$.messages[{i}]"
        if i in used or msg.role == "system":
            continue
        when = _timestamp(msg.extra, source, path)
        if msg.role == "assistant":
            commands, thought = _commands(msg, text_mode, regex, path, source)
            cost = _cost(msg.extra)
            items.append(Thought(thought, 0.0 if commands else cost, when))
            after_bad_reply = not commands
            pending = []
            for k, (command, call_id, tool) in enumerate(commands):
                at = (
                    by_call.get(call_id)
                    if not text_mode
                    else (i + 1 if i + 1 < len(msgs) and msgs[i + 1].role == "user" else None)
                )
                out_msg = msgs[at] if at is not None else None
                output = text_of(out_msg.content) if out_msg else None
                if at is not None:
                    used.add(at)
                coverage, truncated = _output_facts(
                    output, dig(out_msg.extra, "returncode") if out_msg else None
                )
                action = Action(
                    query=command, origin=f"mini-swe-agent:{tool}", output=output, coverage=coverage,
                    truncated=truncated, cost=cost if k == 0 else 0.0,
                    timestamp=(_timestamp(out_msg.extra, source, f"$.messages[{at}]") if out_msg else None) or when,
                )  # fmt: skip
                items.append(action)
                if output is None:
                    pending.append(len(items) - 1)
        elif msg.role == "exit" and pending and text_of(msg.content) is not None:
            # The submit command's output is the submission, which v2 stores here.
            marked = [
                k
                for k in pending
                if any(m in getattr(items[k], "query", "") for m in SUBMIT_MARKERS)
            ]
            at = (marked or pending)[-1]
            submitted = items[at]
            assert isinstance(submitted, Action)  # `pending` holds the indices of actions
            items[at] = replace(submitted, output=text_of(msg.content))
            pending = []
        elif text_of(msg.content):
            origin = _feedback_origin(msg, after_bad_reply)
            items.append(Feedback(text_of(msg.content) or "", f"mini-swe-agent:{origin}", when))
    statement = _statement(
        text_of(msgs[task_at].content) or "", dig(config, "agent", "instance_template")
    )
    step_limit, cost_limit = dig(config, "agent", "step_limit"), dig(config, "agent", "cost_limit")
    version = dig(traj.info, "mini_version")
    opened_at = next(
        (t for i, m in enumerate(msgs) if (t := _timestamp(m.extra, source, f"$.messages[{i}]"))),
        None,
    )
    name = traj.instance_id or source.name.removesuffix(".json").removesuffix(".traj")
    return Trajectory(
        source=str(source), name=name, title=traj.instance_id or first_line(statement), statement=statement,
        opened_at=opened_at,
        agent=f"mini-swe-agent {version}" if isinstance(version, str) else "mini-swe-agent",
        model=dig(config, "model", "model_name") if isinstance(dig(config, "model", "model_name"), str) else None,
        items=tuple(items),
        max_iterations=step_limit if isinstance(step_limit, int) and step_limit > 0 else None,
        max_cost=number(cost_limit) or None,
        remarks=(*remarks, *(() if opened_at else ("no timestamps in the source: opened_at is the fixed epoch",))),
        fixed_prompt=_fixed_prompt(msgs, task_at),
    )  # fmt: skip
