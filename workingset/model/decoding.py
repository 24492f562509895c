"""Decoding a state or a stored context strictly, and the JSON path of what failed.

Decoding is strict: unknown keys, malformed IDs, naive timestamps and out-of-range numbers
fail with the JSON path, and a decoded state is then checked in full (`validation`). Every
failure is an `InvalidFile` with code `invalid_file` (or `too_large`, past the input limits).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import msgspec.inspect

from ..errors import InvalidFile
from ..io.limits import Limits, check_json, read_path
from ..io.numbers import MAX_DIGITS, ascii_int
from .records import State, StoredContext
from .validation import invalid_at, validate_state

_STATE_DECODER = msgspec.json.Decoder(State)
_CONTEXT_DECODER = msgspec.json.Decoder(StoredContext)
_PATH_RE = re.compile(r" - at `(\$[^`]*)`$")


def split_validation_error(exc: msgspec.ValidationError, root: Any = None) -> tuple[str, str]:
    """A msgspec validation error as (message, JSON path); the path is `$` where msgspec names none.

    Given the decoded `root` type, an invalid enum or tag value's message lists the valid ones.
    """
    text = str(exc)
    match = _PATH_RE.search(text)
    message, path = _PATH_RE.sub("", text), match.group(1) if match else "$"
    if root is not None and message.startswith(("Invalid enum value", "Invalid value")):
        valid = allowed_values(root, path)
        if valid:
            message += f"; expected one of: {', '.join(valid)}"
    return message, path


_TOKEN_RE = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def allowed_values(root: Any, path: str) -> tuple[str, ...] | None:
    """The values a string enum (a Literal, or a tagged union's tag) at JSON `path` of type `root` allows."""
    infos = [msgspec.inspect.type_info(root)]
    for name, index in _TOKEN_RE.findall(path[1:]):
        infos = [sub for info in infos for sub in _step(info, name, index)]
        if not infos:
            return None
    values: list[str] = []
    for info in infos:
        if isinstance(info, msgspec.inspect.LiteralType):
            values.extend(str(v) for v in info.values)
        elif isinstance(info, tuple):  # a tag field: the tags of the union's variants
            values.extend(info)
    return tuple(dict.fromkeys(values)) or None


def _members(info: Any) -> list[Any]:
    return (
        [m for t in info.types for m in _members(t)]
        if isinstance(info, msgspec.inspect.UnionType)
        else [info]
    )


def _step(info: Any, name: str, index: str) -> list[Any]:
    out: list[Any] = []
    members = _members(info)
    if name and any(
        isinstance(m, msgspec.inspect.StructType) and m.tag_field == name for m in members
    ):
        return [
            tuple(
                m.tag
                for m in members
                if isinstance(m, msgspec.inspect.StructType) and m.tag_field == name
            )
        ]
    for m in members:
        if index and isinstance(
            m, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.VarTupleType)
        ):
            out.append(m.item_type)
        elif name and isinstance(m, msgspec.inspect.DictType):
            out.append(m.value_type)
        elif name and isinstance(m, msgspec.inspect.StructType):
            out.extend(f.type for f in m.fields if f.encode_name == name)
    return out


def decode_strict(
    data: bytes,
    decoder: msgspec.json.Decoder,
    source: str,
    prefix: str = "$",
    *,
    kind: str | None = "file",
    limits: Limits | None = None,
) -> Any:
    """Check the input's limits (`kind`: file or result; None: checked already), then decode it strictly.

    Any failure is `too_large` or `invalid_file` with its JSON path.
    """
    if kind is not None:
        check_json(data, kind, source, limits)
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        message, path = split_validation_error(exc, decoder.type)
        raise invalid_at(source, prefix + path[1:], message) from None
    except msgspec.DecodeError as exc:
        raise InvalidFile(
            f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}
        ) from None


def _raw_object(data: bytes, source: str) -> dict:
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidFile(
            f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}
        ) from None
    if not isinstance(raw, dict):
        raise invalid_at(source, "$", "expected a JSON object")
    return raw


def load_state(
    data: bytes, source: str = "<state>", limits: Limits | None = None, *, checked: bool = False
) -> State:
    """Decode and fully validate a bare state; `limits` default to `Limits.current()`."""
    state = decode_strict(
        data, _STATE_DECODER, source, kind=None if checked else "file", limits=limits
    )
    validate_state(state, source)
    return state


def load_stored_context(
    data: bytes,
    source: str = "<stored context>",
    limits: Limits | None = None,
    *,
    checked: bool = False,
) -> StoredContext:
    """Decode and fully validate one stored context; `limits` default to `Limits.current()`."""
    ctx = decode_strict(
        data, _CONTEXT_DECODER, source, kind=None if checked else "file", limits=limits
    )
    validate_state(ctx.state, source, "$.state")
    if ctx.state.hypothesis(ctx.hypothesis) is None:
        raise invalid_at(source, "$.hypothesis", f"hypothesis {ctx.hypothesis} is not in the state")
    return ctx


def load_state_or_context(
    data: bytes, source: str = "<input>", limits: Limits | None = None
) -> State:
    """Take a bare state, or the state of a stored context (told apart by its `format` key)."""
    check_json(data, "file", source, limits)
    raw = _raw_object(data, source)
    if "format" in raw:
        return load_stored_context(data, source, checked=True).state
    return load_state(data, source, checked=True)


def load_start(
    data: bytes, source: str = "<input>", limits: Limits | None = None
) -> tuple[State, int]:
    """A state to start an analysis from, and the number of the request it comes from (0 for a bare state).

    A stored context's request ID ends in its request number (`-r0018`): an analysis created
    from it numbers its own requests on from there, so its IDs never repeat the context's.
    """
    check_json(data, "file", source, limits)
    raw = _raw_object(data, source)
    if "format" in raw:
        ctx = load_stored_context(data, source, checked=True)
        number = ascii_int(ctx.request_id.rsplit("-r", 1)[1])
        if number is None:
            raise invalid_at(
                source, "$.request_id", f"a request number of more than {MAX_DIGITS} digits"
            )
        return ctx.state, number
    return load_state(data, source, checked=True), 0


def read_file(path: str, limits: Limits | None = None) -> bytes:
    """Read a regular file's bytes (at most the file size limit): a bigger one is `too_large`.

    OS errors and special files (FIFOs, devices) are `invalid_file`, `details.reason` saying why
    with an OS code of `files.OS_CODES` (`not_found`, `not_regular_file`, …); see `limits.read_path`.
    """
    return read_path(path, "file", limits)


def dump_json(value: object) -> bytes:
    """Encode a Struct as indented JSON with a trailing newline (the on-disk form)."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n"


def copy_state(state: State) -> State:
    """Return a deep copy of a state (through its JSON form, so nothing is shared)."""
    return _STATE_DECODER.decode(msgspec.json.encode(state))
