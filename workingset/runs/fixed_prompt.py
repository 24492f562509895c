"""An agent's fixed prompt: what its source agent sent before and around every step.

A transcript agent sends, on every call, more than its steps: a system prompt, the messages
before its first action (SWE-agent's demonstrations, then the instance template rendered
for the task) and its tool definitions. An importer keeps what the trajectory records of it
as a `FixedPrompt`, stored with the run (`runs.read_fixed_prompt`), so that the baselines
bill every token the agent sent (`baselines`). A run without one (a workingset session, or
one imported before this existed) has no fixed prompt: its baselines send the task alone.

`agent` names whose cache breakpoints the baselines place (`openhands`, `swe-agent`,
`mini-swe-agent`); tools are kept as the agent defined them, in OpenAI's function shape
(`name`, `description`, `parameters`: a JSON Schema).
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeGuard

import msgspec

from ..errors import InvalidFile
from ..io.limits import check_json
from ..model.state import split_validation_error

FIXED_PROMPT_FORMAT: Final = "workingset/fixed-prompt@1"
FIXED_PROMPT_FILE = "fixed-prompt.json"  # its name in a run directory of stored-context files
AGENTS = ("openhands", "swe-agent", "mini-swe-agent")


PrefixRole = Literal["user", "assistant"]


def is_prefix_role(role: str) -> TypeGuard[PrefixRole]:
    """Whether a message of this role can be a `PrefixMessage` (what the user or the model said)."""
    return role in ("user", "assistant")


class PrefixMessage(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A message the agent sent before its first action, verbatim (a demonstration, the instance)."""

    role: PrefixRole
    text: str


class Tool(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One tool definition, as the agent declared it."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = {}


class FixedPrompt(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What an agent sent on every call besides its steps, as its trajectory records it."""

    format: Literal["workingset/fixed-prompt@1"] = FIXED_PROMPT_FORMAT
    agent: Literal["openhands", "swe-agent", "mini-swe-agent"]
    system: str | None = None
    prefix: tuple[PrefixMessage, ...] = ()  # the last one is the instance (the task as sent)
    tools: tuple[Tool, ...] = ()


def dump(fixed: FixedPrompt) -> bytes:
    """The fixed prompt as its file holds it (indented JSON, trailing newline)."""
    return msgspec.json.format(msgspec.json.encode(fixed), indent=2) + b"\n"


def convert(value: Any, source: str, path: str = "$") -> FixedPrompt:
    """Validate decoded JSON as a fixed prompt; a wrong shape is `invalid_file` with its path."""
    try:
        return msgspec.convert(value, FixedPrompt)
    except msgspec.ValidationError as exc:
        message, where = split_validation_error(exc)
        at = path + where[1:]
        raise InvalidFile(
            f"{source}: not a fixed prompt ({message}) at {at}",
            details={"file": source, "path": at},
        ) from None


def load(data: bytes, source: str) -> FixedPrompt:
    """Decode a fixed-prompt file (within the input limits)."""
    check_json(data, "file", source)
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise InvalidFile(
            f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}
        ) from None
    return convert(value, source)


def openai_tool(tool: dict[str, Any]) -> Tool | None:
    """A tool from OpenAI's function shape (`{"type": "function", "function": {...}}` or the inner object)."""
    inner = tool.get("function")
    function: dict[str, Any] = inner if isinstance(inner, dict) else tool
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    description = function.get("description")
    parameters = function.get("parameters")
    return Tool(name=name, description=description if isinstance(description, str) else "",
                parameters=parameters if isinstance(parameters, dict) else {})  # fmt: skip
