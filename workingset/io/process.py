"""The edges of the process: standard streams that are closed or break, arguments that are not text.

Python hands bytes of an argument that are not UTF-8 to the program as lone surrogates
(`surrogateescape`). In a file path they are fine (the OS takes the bytes back); in an ID
they cannot be stored, and in JSON they cannot be written. These helpers let the CLI's one
error boundary give each case a code instead of a traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

import msgspec

from ..errors import UsageError, WorkingsetError
from .limits import Limits, read_bounded, read_counted

T = TypeVar("T")


def has_surrogates(text: str) -> bool:
    """Whether `text` holds bytes that were not valid UTF-8 (decoded with `surrogateescape`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def prepare_streams() -> WorkingsetError | None:
    """Make stdout and stderr write non-UTF-8 path bytes back as bytes; an error if stdout is closed.

    A closed stdout (`>&-`) is found before the command runs, so that nothing is changed
    by a command whose answer could not be told.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="surrogateescape")
            except (
                ValueError,
                OSError,
            ):  # pragma: no cover - a stream that cannot change its error handler
                pass
    if sys.stdout is None:
        return WorkingsetError(
            "stdout is closed; nothing was done", code="io_error", details={"stream": "stdout"}
        )
    return None


# C0 controls but tab and newline, DEL, and C1 controls (0x9b is a CSI on some terminals).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """`text` with each control character a terminal would act on (ESC, BEL, CR, …) written as `\\xHH`."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class Escaping:
    """A text stream whose writes go through `escape_controls`; everything else is the stream's own."""

    def __init__(self, stream: Any):
        self.unescaped = (
            stream  # what draws on the terminal on purpose (the progress bar) writes here
        )

    def write(self, text: str) -> int:
        return int(self.unescaped.write(escape_controls(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)


@contextlib.contextmanager
def escaped_streams() -> Iterator[None]:
    """The CLI's one output boundary for text from data: control characters never reach a terminal raw.

    stderr (error lines, notes) is always escaped; stdout only when it is a terminal, so
    that text piped or redirected (a rendered context, a table) stays byte for byte what
    was rendered. JSON output escapes them itself (`\\u001b`).
    """
    saved = sys.stdout, sys.stderr
    out, err = saved
    if out is not None and _is_terminal(out):
        sys.stdout = Escaping(out)
    if err is not None:
        sys.stderr = Escaping(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def stdin_bytes(kind: str = "file", limits: Limits | None = None) -> bytes:
    """All of stdin, at most the `kind`'s limit (`limits.read_bounded`); a closed stdin (`<&-`) is `usage_error`."""
    return _read_stdin(lambda stream: read_bounded(stream, kind, "<stdin>", limits))


def stdin_counted(kind: str, limits: Limits | None = None) -> tuple[bytes, int | None]:
    """Stdin as `limits.read_counted` reads it: past the `kind`'s limit, its head and its whole size."""
    return _read_stdin(lambda stream: read_counted(stream, kind, "<stdin>", limits))


def _read_stdin(read: Callable[[IO[bytes]], T]) -> T:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or stream.closed:
        raise UsageError("stdin is closed; give the JSON as a file or inline instead of -")
    try:
        return read(stream)
    except OSError as exc:
        raise UsageError(f"cannot read stdin ({exc.strerror or exc})") from None


def non_text_argument(kwargs: dict[str, Any]) -> UsageError | None:
    """The error naming the first argument that is not valid UTF-8 (None: there is none, so it is a bug)."""
    for name, value in kwargs.items():
        if isinstance(value, str) and has_surrogates(value):
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return UsageError(f"the {name.replace('_', '-')} argument '{shown}' is not valid UTF-8 text",
                              details={"argument": name})  # fmt: skip
    return None


def json_safe(value: Any) -> Any:
    """`value` with every string's non-UTF-8 bytes as U+FFFD, so that it can be written as JSON."""
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that no byte gave
            raw = value.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return json_safe(msgspec.to_builtins(value))
    return value


def broken_pipe() -> int:
    """Say that stdout's reader went away (exit 2); stdout then points at /dev/null, so no later flush fails."""
    sys.stderr.write("error: io_error: stdout was closed before all of the output was written\n")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (
        OSError,
        AttributeError,
        ValueError,
    ):  # pragma: no cover - stdout without a file descriptor
        pass
    return 2
