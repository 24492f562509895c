"""Tell which trajectory format a source is, so that a wrong `FORMAT` names the right one.

`identify` looks only at the shape (a directory with events, the top-level keys of a JSON
object, the keys of a list's first items); it never decides how a source is parsed, only
what to say when the format the user named does not fit it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from ..errors import WorkingsetError
from ..io.limits import check_json
from ._trajectory import read_source

_EVENT_FILE = re.compile(r"^event-\d+-.*\.json$")

# What each kind of source is, in words (the name is the format to use, when there is one).
WHAT = {
    "swe-agent": "a SWE-agent trajectory (`trajectory`/`history`)",
    "mini-swe-agent": "a mini-swe-agent trajectory (`messages`)",
    "openhands": "an OpenHands V1 conversation (events with a `kind`)",
    "openhands-part": (
        "a part of an OpenHands V1 conversation (its base_state.json or one event file); import the "
        "conversation directory with the format openhands"
    ),
    "json-text": (
        "one JSON string, not a trajectory (some OpenHands scripts save a printed log of the events "
        "this way); there are no events or messages to import"
    ),
    "openhands-v0": (
        "an OpenHands V0 event list (`traj_*.json`: events with `action`/`observation` keys, as the "
        "legacy OpenHands writes); workingset reads OpenHands V1 (agent-sdk) conversations, a "
        "directory with base_state.json and events/, or a file holding a list of V1 events"
    ),
}


def identify(path: Path) -> str | None:
    """The format `path` looks like (a key of `WHAT`), or None when it is none of them."""
    try:
        if path.is_dir():
            if any(_EVENT_FILE.match(p.name) for p in path.iterdir()) or (path / "events").is_dir():
                return "openhands"
            return "openhands" if (path / "event_service" / "events").is_dir() else None
        data = read_source(path)  # a FIFO or device is refused, never read
        check_json(data, "file", str(path))  # too deep or a key twice: not a shape to name
        top = msgspec.json.decode(data)
    except (OSError, WorkingsetError, msgspec.DecodeError, RecursionError):
        return None  # unreadable or not JSON: the parser says so in its own words
    return _shape(top, path)


def _shape(top: Any, path: Path) -> str | None:
    if isinstance(top, str):
        return "json-text"
    if isinstance(top, dict):
        if "messages" in top:
            return "mini-swe-agent"
        if "trajectory" in top or "history" in top:
            return "swe-agent"
        if (isinstance(top.get("kind"), str) and "timestamp" in top) or (
            "agent" in top and "agent_status" in top
        ):
            return "openhands-part"  # one event file, or base_state.json
        return None
    if isinstance(top, list) and top and all(isinstance(e, dict) for e in top[:20]):
        head = top[:20]
        if all(isinstance(e.get("kind"), str) for e in head):
            return "openhands"
        if any("action" in e or "observation" in e for e in head) and all(
            "kind" not in e for e in head
        ):
            return "openhands-v0"
    return None
