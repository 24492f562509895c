"""The common shape every importer reduces a trajectory to, and the helpers they share.

A source format is parsed into a `Trajectory`: the task, and the agent's items in the order
they happened — `Thought` (text the agent wrote), `Action` (one command or tool call with
the output the model was shown) and `Feedback` (a message the agent received that answers
no action, such as a format-error reply). `_build.py` turns that into investigation states.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..errors import InvalidFile
from ..io.limits import check_json, read_path
from ..model.state import ANALYSIS_ID_MAX_CHARS, is_timestamp, split_validation_error
from ..runs.fixed_prompt import FixedPrompt

T = TypeVar("T")

# Sources that record no time at all get this fixed instant, never the clock.
EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Thought:
    """Text the agent wrote: the visible reasoning before an action, or a reply without one."""

    text: str
    cost: float = 0.0  # the model call's cost when it produced no action (else on the Action)
    timestamp: str | None = None


@dataclass(frozen=True)
class Action:
    """One command or tool call, exactly as issued, and the output the model was shown."""

    query: str
    origin: str
    output: str | None  # byte-exact as the source stored it; None: the source kept none
    coverage: str | None = None  # "exit_code=N" (and flags) when the source states them
    truncated: bool | None = None
    cost: float = 0.0
    timestamp: str | None = None


@dataclass(frozen=True)
class Feedback:
    """A message to the agent that answers no action (format errors, later user messages)."""

    text: str
    origin: str
    timestamp: str | None = None


Item = Thought | Action | Feedback


@dataclass(frozen=True)
class Trajectory:
    """A parsed source: the case, the agent's items in order, and what was left out."""

    source: str
    name: str  # material for the default analysis ID: the instance ID, else the file name
    title: str
    statement: str
    opened_at: str | None
    agent: str
    model: str | None
    items: tuple[Item, ...]
    max_iterations: int | None = None
    max_cost: float | None = None
    remarks: tuple[str, ...] = ()  # what the import left out or could not know, for the user
    fixed_prompt: FixedPrompt | None = (
        None  # what the agent sent besides its steps, as far as the source records it
    )

    @property
    def actions(self) -> int:
        return sum(isinstance(i, Action) for i in self.items)


def fail(file: str | Path, path: str, message: str) -> InvalidFile:
    """The `invalid_file` error for a source, naming the file and the JSON path."""
    return InvalidFile(f"{file}: {message} (at {path})", details={"file": str(file), "path": path})


def decode(data: bytes, kind: type[T], file: str | Path) -> T:
    """Decode JSON into `kind` within the input limits; a syntax or shape error becomes `invalid_file` with its path."""
    check_json(data, "file", str(file))
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        message, where = split_validation_error(exc)
        raise fail(file, where, message) from None
    except msgspec.DecodeError as exc:
        raise fail(file, "$", f"not valid JSON ({exc})") from None
    except RecursionError:
        raise fail(
            file, "$", f"JSON nested deeper than the limit ({sys.getrecursionlimit()} levels)"
        ) from None


def convert(value: Any, kind: type[T], file: str | Path, path: str) -> T:
    """Convert already-decoded JSON into `kind`; errors carry `path` plus the inner path."""
    try:
        return msgspec.convert(value, type=kind)
    except msgspec.ValidationError as exc:
        message, where = split_validation_error(exc)
        raise fail(file, path + where[1:], message) from None


def read_source(path: Path) -> bytes:
    """Read a single-file source; a directory or unreadable path is `invalid_file`."""
    if path.is_dir():
        raise fail(path, "$", "is a directory; this format is one JSON file")
    return read_path(
        str(path)
    )  # a FIFO or device is refused, never read; a file over the limit is too_large


def text_of(content: Any) -> str | None:
    """The text of a chat message's content: a string, or the text parts of a list, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            text for p in content if isinstance(p, dict) and isinstance(text := p.get("text"), str)
        ]
        return "".join(parts)
    return None


def between(text: str, start: str, end: str) -> str | None:
    """The text between the first `start` and the next `end` after it, or None."""
    i = text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    return None if j < 0 else text[i + len(start) : j]


def first_line(text: str) -> str:
    """The first non-blank line, stripped (a title), or a fixed word when there is none."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "(untitled)"


LAST_UNIX_SECOND = 253402300799  # 9999-12-31T23:59:59Z, the last instant RFC 3339 can write


def from_epoch(seconds: float | int, file: str | Path, path: str) -> str:
    """An RFC 3339 UTC timestamp for Unix seconds (microseconds kept when given)."""
    if not 0 <= seconds <= LAST_UNIX_SECOND:
        raise fail(file, path, f"a Unix time out of range (0 … {LAST_UNIX_SECOND}): {seconds!r}")
    moment = datetime.fromtimestamp(seconds, UTC)
    if isinstance(seconds, int) or moment.microsecond == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$")


def with_offset(value: str, offset: timedelta, file: str | Path, path: str) -> str:
    """An ISO-8601 timestamp as RFC 3339: kept as written, `offset` attached when naive."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise fail(file, path, f"not an ISO-8601 timestamp: {value!r}") from None
    if is_timestamp(value):
        return value
    if moment.tzinfo is None and _NAIVE.match(value):
        return value + _offset_text(offset)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone(offset))
    return moment.isoformat().replace("+00:00", "Z")


def _offset_text(offset: timedelta) -> str:
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return "Z"
    sign = "+" if minutes > 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def analysis_id(name: str) -> str:
    """Lowercase `name` and fold it into an analysis ID (runs of other characters become '-')."""
    folded = re.sub(r"[^a-z0-9._-]+", "-", name.lower())
    folded = re.sub(r"^[^a-z0-9]+", "", folded)[:ANALYSIS_ID_MAX_CHARS]
    return folded or "imported"


def number(value: Any) -> float:
    """A cost from the source: a finite non-negative number, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if 0 <= value < float("inf") else 0.0


def dig(obj: Any, *keys: str) -> Any:
    """`obj[k1][k2]…` through nested objects, or None where a level is missing or not an object."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
