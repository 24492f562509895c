"""The size, nesting and number limits on every input, checked before any work starts.

Every JSON input — a state or stored-context file, a recorded result, a decision, an
imported trajectory — goes through `check_json` before it is decoded: its size against the
limit of its kind, its nesting against `max_depth`, and its objects for a key given twice.
The byte limits and the depth are `Limits`, configurable per call or through environment
variables; the number ranges (`MAX_COST`, `MAX_COUNT`) are part of the formats.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from typing import IO, Any

import msgspec

from ..errors import DecisionRejected, InvalidFile, TooLarge, UsageError, WorkingsetError
from .files import describe, open_regular, os_code
from .numbers import MAX_DIGITS, ascii_int

MiB = 1 << 20
# Number ranges of the formats: costs (each result's, the budget's and their running sum) and
# counts (iterations, iteration limits, pages, item counts, character counts).
MAX_COST = 1e12
MAX_COUNT = (
    2**53
)  # every such integer is exact as a JSON number in any language, and +1 never overflows
# Decoders recurse once per level and Python allows about 1,000 frames: the depth limit stays well under.
MAX_DEPTH = 500

KINDS = ("file", "result", "decision")
_ENV = {
    "max_file_bytes": "WORKINGSET_MAX_FILE_BYTES",
    "max_result_bytes": "WORKINGSET_MAX_RESULT_BYTES",
    "max_decision_bytes": "WORKINGSET_MAX_DECISION_BYTES",
    "max_depth": "WORKINGSET_MAX_DEPTH",
}


@dataclass(frozen=True)
class Limits:
    """The configurable limits; `Limits.current()` reads the environment's overrides."""

    max_file_bytes: int = 256 * MiB  # a state, a stored context, a trajectory file
    max_result_bytes: int = 64 * MiB  # one recorded query result (its payload and capture)
    max_decision_bytes: int = 1 * MiB  # one decision, as the model wrote it
    max_depth: int = 64  # arrays and objects inside each other; our formats need at most 8

    def __post_init__(self) -> None:
        for f in fields(self):
            value, top = getattr(self, f.name), MAX_DEPTH if f.name == "max_depth" else MAX_COUNT
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise UsageError(f"limit {f.name} must be an integer from 1 to {top}, not {value!r}",
                                 details={"limit": f.name})  # fmt: skip

    @classmethod
    def current(cls, environ: Any = None) -> Limits:
        """The defaults with each `WORKINGSET_MAX_*` environment variable that is set applied."""
        environ = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for name, var in _ENV.items():
            raw = environ.get(var)
            if raw is None or raw == "":
                continue
            value = ascii_int(raw.replace("_", ""))
            if value is None:
                raise UsageError(
                    f"{var} must be an integer of at most {MAX_DIGITS} digits, not {raw[:40]!r}",
                    details={"variable": var},
                )
            values[name] = value
        try:
            return cls(**values)
        except UsageError as err:
            var = _ENV[err.details["limit"]]
            raise UsageError(f"{var}: {err.message}", details={"variable": var}) from None

    def max_bytes(self, kind: str) -> int:
        """The byte limit of one kind of input: `file`, `result` or `decision`."""
        return getattr(self, f"max_{kind}_bytes")


def _error(kind: str, code: str, source: str, message: str, **details: Any) -> WorkingsetError:
    if kind == "decision":
        return DecisionRejected(f"the decision {message}", code=code, details=details)
    cls = TooLarge if code == "too_large" else InvalidFile
    return cls(f"{source}: {message}", details={"file": source, **details})


def too_large(kind: str, source: str, size: int | str, limits: Limits) -> WorkingsetError:
    """The `too_large` error for an input of `size` bytes (or a description such as "more than N")."""
    limit = limits.max_bytes(kind)
    var = _ENV[f"max_{kind}_bytes"]
    shown = f"{size:,} bytes" if isinstance(size, int) else size
    return _error(kind, "too_large", source, f"is {shown}; the limit is {limit:,} bytes ({var})",
                  path="$", limit=limit, setting=var)  # fmt: skip


def read_bounded(stream: IO[bytes], kind: str, source: str, limits: Limits | None = None) -> bytes:
    """Read a whole stream, but never more than the kind's limit + 1 bytes (an endless file is `too_large` at once)."""
    limits = limits or Limits.current()
    limit = limits.max_bytes(kind)
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(kind, source, f"more than {limit:,} bytes", limits)
    return data


def read_path(path: str, kind: str = "file", limits: Limits | None = None) -> bytes:
    """Read a regular file of at most the kind's limit; OS errors and special files are `invalid_file`.

    The file is opened with `files.open_regular` (a FIFO or device is refused, never waited
    on); `details.reason` gives the OS code of `files.OS_CODES` (`not_found`, `not_regular_file`, …).
    """
    try:
        with open_regular(path) as fh:
            return read_bounded(fh, kind, path, limits)
    except OSError as exc:
        raise InvalidFile(f"{path}: cannot read ({describe(exc)})",
                          details={"file": path, "path": "$", "reason": os_code(exc)}) from None  # fmt: skip


# How much of a stream past its limit `read_head` reads to count it. A longer stream is refused
# as before, unkept: its size is not known, and an endless one (`< /dev/zero`) must end quickly.
COUNTED_MAX = 256 * MiB
_COUNT_CHUNK = 1 * MiB


def read_counted(
    stream: IO[bytes], kind: str, source: str, limits: Limits | None = None
) -> tuple[bytes, int | None]:
    """A stream's bytes and None; or, when it is longer than the kind's limit, its first `limit` bytes and its whole size.

    The rest is read only to be counted, in chunks, and at most `COUNTED_MAX` bytes of it:
    a longer stream is `too_large` at once, as with `read_bounded`.
    """
    limits = limits or Limits.current()
    limit = limits.max_bytes(kind)
    data = stream.read(limit + 1)
    if len(data) <= limit:
        return data, None
    size = len(data)
    while size <= limit + COUNTED_MAX:
        chunk = stream.read(_COUNT_CHUNK)
        if not chunk:
            return data[:limit], size
        size += len(chunk)
    raise too_large(kind, source, f"more than {limit:,} bytes", limits)


def read_path_counted(
    path: str, kind: str, limits: Limits | None = None
) -> tuple[bytes, int | None]:
    """`read_counted` for a regular file: its length is its size, and nothing is read past the head."""
    limits = limits or Limits.current()
    limit = limits.max_bytes(kind)
    try:
        with open_regular(path) as fh:
            data = fh.read(limit + 1)
            size = max(len(data), os.fstat(fh.fileno()).st_size)
    except OSError as exc:
        raise InvalidFile(f"{path}: cannot read ({describe(exc)})",
                          details={"file": path, "path": "$", "reason": os_code(exc)}) from None  # fmt: skip
    return (data, None) if len(data) <= limit else (data[:limit], size)


_SKELETON = b'[]{}:,"'
_NOT_SKELETON = bytes(b for b in range(256) if b not in _SKELETON)
_DEPTH_STEP = {ord("["): 1, ord("]"): -1}
_SQUARE = bytes.maketrans(b"{}", b"[]")


def skeleton(data: bytes) -> bytes:
    """The brackets, braces, colons and commas of JSON text that lie outside its strings (byte operations only).

    Escaped backslashes go first, then escaped quotes, so that every remaining quote opens
    or closes a string and they alternate; everything but structure and quotes is dropped
    before the strings are cut out, so the cutting handles little.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Dropping two adjacent quotes removes an empty string or joins two strings over a gap
    # without structure; either way the skeleton is the same, and most strings go at C speed.
    kept = data.translate(None, _NOT_SKELETON).replace(b'""', b"")
    return b"".join(kept.split(b'"')[::2]) if b'"' in kept else kept


def nesting_depth(data: bytes, limit: int, shape: bytes | None = None) -> int:
    """How deep arrays and objects nest in JSON text, counted up to `limit` + 1 (no decoding, no recursion).

    `shape` is the text's `skeleton` when the caller has it.
    """
    opening = data.count(b"[") + data.count(b"{")
    if opening <= limit:
        return opening  # an upper bound, enough to know the limit holds
    brackets = (skeleton(data) if shape is None else shape).translate(_SQUARE, b":,")
    depth = 0
    # Each pass removes the innermost pairs, so well-nested text empties in exactly `depth` passes.
    while brackets and depth <= limit:
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):  # unbalanced (not JSON): the deepest prefix is the depth
            level = deepest = 0
            for b in brackets:
                level += _DEPTH_STEP[b]
                deepest = max(deepest, level)
            return min(depth + deepest, limit + 1)
        brackets, depth = shorter, depth + 1
    return depth


# Up to this many values in containers, keys are counted by walking the decoded value;
# past it, by re-encoding it and cutting its strings out (C speed, but a pass over every byte).
_WALK_MAX = 100_000


def duplicate_key(data: bytes, shape: bytes | None = None) -> tuple[str, str] | None:
    """The first key given twice in one object and that object's JSON path, or None.

    Keys are counted in the text (outside strings a colon only ever follows a key) and in a
    last-wins decoding of it: the counts differ only when a key repeats, and only then is
    the text parsed again, keeping every pair, to say where. Text that does not decode is
    left to the caller's decoder to report.
    """
    shape = skeleton(data) if shape is None else shape
    in_text = shape.count(b":")
    if not in_text:
        return None
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if shape.count(b",") + shape.count(b"[") + shape.count(b"{") <= _WALK_MAX:
        kept = _count_keys(value)
    else:
        kept = skeleton(msgspec.json.encode(value)).count(b":")
    if kept == in_text:
        return None
    return _find_repeat(json.loads(data, object_pairs_hook=_Pairs), "$")


def _count_keys(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return count


class _Pairs(list):
    """An object's (key, value) pairs in order, duplicates kept."""


def _find_repeat(value: Any, path: str) -> tuple[str, str] | None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, _ in value:
            if key in seen:
                return key, path
            seen.add(key)
        items = ((f"{path}.{key}", item) for key, item in value)
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    else:
        return None
    for sub, item in items:
        found = _find_repeat(item, sub)
        if found:
            return found
    return None


def check_json(data: bytes, kind: str, source: str, limits: Limits | None = None) -> None:
    """Refuse input over its size limit, nested past `max_depth`, or with a key given twice — before decoding it.

    `kind` is `file` or `result` (errors `too_large` and `invalid_file`) or `decision`
    (`too_large` and `schema_violation`); each message names the limit or the key and path.
    """
    limits = limits or Limits.current()
    if len(data) > limits.max_bytes(kind):
        raise too_large(kind, source, len(data), limits)
    shape = skeleton(data)
    depth = nesting_depth(data, limits.max_depth, shape)
    if depth > limits.max_depth:
        raise _error(kind, "schema_violation" if kind == "decision" else "invalid_file", source,
                     f"nests arrays and objects deeper than {limits.max_depth} levels (WORKINGSET_MAX_DEPTH)",
                     path="$", limit=limits.max_depth, setting="WORKINGSET_MAX_DEPTH")  # fmt: skip
    repeated = duplicate_key(data, shape)
    if repeated:
        key, path = repeated
        raise _error(kind, "schema_violation" if kind == "decision" else "invalid_file", source,
                     f"gives the key {key!r} twice in the object at {path}", path=path, key=key)  # fmt: skip


def jsonl_lines(path: str, limits: Limits | None = None) -> list[tuple[int, bytes]]:
    """A JSON Lines file's lines with their numbers (from 1), each checked by `check_json` before anyone decodes it.

    The one reader of an export's `journal.jsonl` and `answers.jsonl` (`replay`, `compare`,
    `requests`, `report`): the file is at most `max_file_bytes` (`read_path`), and each line
    is bounded in nesting and has no key given twice (`invalid_file` naming the line).
    """
    limits = limits or Limits.current()
    lines = read_path(path, "file", limits).splitlines()
    for number, raw in enumerate(lines, 1):
        check_json(raw, "file", f"{path}: line {number}", limits)
    return list(enumerate(lines, 1))
