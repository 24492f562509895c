"""The fields `calibrate` reads from an OpenHands run, checked for their types before any is used.

Each event kind's fields that the request rebuilding reads (`calibrate.view`, `messages`,
`anthropic_body`) must have the type OpenHands writes, or be absent or null; anything else
is `invalid_file` naming the file and the JSON path, never a Python error halfway through.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..importers._trajectory import fail
from ..io.limits import MAX_COUNT

# A time of the run in Unix seconds (a cost's timestamp, a latency): finite, up to the year 9999.
MAX_SECONDS = 253_402_300_799.0

_TEXT: tuple[type, ...] = (str,)
_TEXTS: tuple[type, ...] = (str, list)  # a string or a list of content items
_OBJECT: tuple[type, ...] = (Mapping,)
_LIST: tuple[type, ...] = (list,)
_EVERY = {
    "id": _TEXT,
    "tool_call_id": _TEXT,
    "llm_response_id": _TEXT,
    "tool_name": _TEXT,
    "source": _TEXT,
}
_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "Condensation": {"forgotten_event_ids": _LIST, "summary": _TEXT, "summary_offset": (int,)},
    "ActionEvent": {"thought": _TEXTS, "tool_call": _OBJECT},
    "SystemPromptEvent": {"tools": _LIST},
    "MessageEvent": {"llm_message": _OBJECT, "extended_content": _TEXTS},
    "ObservationEvent": {"observation": _OBJECT},
}
_NESTED: dict[tuple[str, str], dict[str, tuple[type, ...]]] = {
    ("ActionEvent", "tool_call"): {"id": _TEXT, "function": _OBJECT, "name": _TEXT, "arguments": _TEXT},
    ("MessageEvent", "llm_message"): {"role": _TEXT, "content": _TEXTS},
    ("ObservationEvent", "observation"): {"kind": _TEXT, "metadata": _OBJECT, "content": _TEXTS,
                                          "message": _TEXTS, "output": _TEXTS, "error": (str, bool)},
}  # fmt: skip
_FUNCTION = {"name": _TEXT, "arguments": _TEXT, "description": _TEXT, "parameters": _OBJECT}
_METADATA = {"prefix": _TEXT, "suffix": _TEXT, "working_dir": _TEXT, "py_interpreter_path": _TEXT,
             "exit_code": (int,)}  # fmt: skip


def _fields(
    obj: Mapping[str, Any], types: Mapping[str, tuple[type, ...]], file: Path, at: str
) -> None:
    for key, kinds in types.items():
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join("an object" if k is Mapping else k.__name__ for k in kinds)
            raise fail(file, f"{at}.{key}", f"{key} must be {names}, not {type(value).__name__}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_COUNT:
            raise fail(file, f"{at}.{key}", f"{key} is out of range (at most {MAX_COUNT})")


def check_event(event: Mapping[str, Any], file: Path, at: str) -> None:
    """Refuse an event whose fields that `calibrate` reads have the wrong type (`invalid_file` with the path)."""
    kind = event["kind"]
    _fields(event, {**_EVERY, **_FIELDS.get(kind, {})}, file, at)
    for (owner, key), types in _NESTED.items():
        if owner == kind and isinstance(event.get(key), Mapping):
            _fields(event[key], types, file, f"{at}.{key}")
    if kind == "ActionEvent" and isinstance(event.get("tool_call"), Mapping):
        function = event["tool_call"].get("function")
        if isinstance(function, Mapping):
            _fields(function, _FUNCTION, file, f"{at}.tool_call.function")
    if kind == "ObservationEvent" and isinstance(event.get("observation"), Mapping):
        obs = event["observation"]
        if isinstance(obs.get("metadata"), Mapping):
            _fields(obs["metadata"], _METADATA, file, f"{at}.observation.metadata")
        if obs.get("kind") in ("ExecuteBashObservation", "StrReplaceEditorObservation"):
            _fields(obs, {"output": _TEXT}, file, f"{at}.observation")
    if kind == "Condensation":
        for i, item in enumerate(event.get("forgotten_event_ids") or ()):
            if not isinstance(item, str):
                raise fail(file, f"{at}.forgotten_event_ids[{i}]", "an event ID must be text")
    if kind == "SystemPromptEvent":
        for i, tool in enumerate(event.get("tools") or ()):
            if not isinstance(tool, Mapping):
                raise fail(file, f"{at}.tools[{i}]", "a tool must be an object")
            _fields(tool, {"function": _OBJECT, **_FUNCTION}, file, f"{at}.tools[{i}]")
            if isinstance(tool.get("function"), Mapping):
                _fields(tool["function"], _FUNCTION, file, f"{at}.tools[{i}].function")


def seconds(value: Any, file: Path, at: str) -> float | None:
    """A recorded time or duration in seconds, finite and at most `MAX_SECONDS` (None: absent or not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not (isinstance(value, float) and math.isfinite(value) or isinstance(value, int)) or not (
        abs(value) <= MAX_SECONDS
    ):
        raise fail(file, at, f"a time in seconds must be finite and at most {MAX_SECONDS:.0f}")
    return float(value)
