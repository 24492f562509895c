"""The CLI's one error boundary, and how every command prints its result.

A `WorkingsetError` becomes one line `error: <code>: <message>` on stderr (and with `--json`
the object `{"error": {...}}` on stdout) and exit code 2; a usage error does the same with
code `usage_error` (`commands.main`). Exit 1 is left for bugs.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import msgspec
import typer

from ..errors import WorkingsetError


def emit_json(value: Any) -> None:
    """Print a JSON document on stdout (the machine-readable form of every command)."""
    try:
        data = msgspec.json.encode(value)
    except UnicodeEncodeError:  # a path argument with bytes that are not UTF-8: shown as U+FFFD
        from ..io.process import json_safe

        data = msgspec.json.encode(json_safe(value))
    sys.stdout.write(data.decode("utf-8") + "\n")


def report_error(err: WorkingsetError, as_json: bool) -> None:
    """Print an error in the CLI contract's form (docs/protocol.md#errors); a name that was not UTF-8 never makes it crash."""
    line = "error: {}: {}\n".format(err.code, " ".join(err.message.split("\n")))
    try:
        # `main` lets stderr write a path's non-UTF-8 bytes back as they were given.
        sys.stderr.write(line)
    except UnicodeEncodeError:  # a stream that cannot, or a lone surrogate no byte gave: U+FFFD
        from ..io.process import json_safe

        sys.stderr.write(json_safe(line))
    if as_json:
        emit_json({"error": err.to_dict()})


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """The error boundary: library errors become exit 2 with one line, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WorkingsetError as err:
            report_error(err, bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None
        except BrokenPipeError:  # stdout's reader went away (typer would exit 1 in silence)
            from ..io.process import broken_pipe

            raise typer.Exit(broken_pipe()) from None
        except OSError as exc:  # a failure the library did not name: its OS code (files.OS_CODES)
            from ..io.files import os_error

            report_error(os_error(exc), bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None
        except UnicodeEncodeError:  # an ID argument with bytes that are not UTF-8 reached the store
            from ..io.process import non_text_argument

            named = non_text_argument(kwargs)
            if named is None:
                raise
            report_error(named, bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None

    return wrapper
