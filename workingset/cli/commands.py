"""The `workingset` command line: the typer app, every command on it, and the console entry point.

Every command is a few lines over the library, in the module of what it does (`contexts`,
`costs`, `trajectories`, `sessions`), and runs behind the one error boundary (`boundary`).
`COMMANDS` lists them in the order `workingset --help` shows them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import typer

try:  # typer >= 0.29 vendors click
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - older typer on top of click
    from click.exceptions import UsageError as ClickUsageError  # type: ignore[import-not-found, no-redef]

from ..errors import UsageError
from . import contexts, costs, sessions, trajectories
from .boundary import guarded, report_error

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Lossless, deterministic, versioned prompt contexts for investigation agents.",
)

COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("render", contexts.render),
    ("verify", contexts.verify),
    ("compare", costs.compare),
    ("requests", costs.requests),
    ("report", costs.report),
    ("import", trajectories.import_),
    ("convert", contexts.convert),
    ("init", sessions.init),
    ("next", sessions.next_),
    ("submit", sessions.submit),
    ("record", sessions.record),
    ("show", sessions.show),
    ("pause", sessions.pause),
    ("resume", sessions.resume),
    ("cancel", sessions.cancel),
    ("budget", sessions.budget),
    ("export", sessions.export),
    ("schema", contexts.schema),
    ("replay", contexts.replay),
    ("calibrate", costs.calibrate),
)
for _name, _command in COMMANDS:
    app.command(_name)(guarded(_command))


@cache
def _click_command() -> Any:
    """The click command typer builds from `app`, built once: typer rebuilds it on every call of
    `app(...)` (about 15 ms for these commands, from their signatures), and a process that runs
    the CLI more than once (the tests, a script calling `main`) would pay that on each run."""
    return typer.main.get_command(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app, turning usage errors into the error contract."""
    from ..io.process import escaped_streams, prepare_streams

    args = list(sys.argv[1:] if argv is None else argv)
    closed = prepare_streams()
    if closed is not None:
        report_error(closed, as_json=False)
        return 2
    with escaped_streams():
        return _main(args)


def _main(args: list[str]) -> int:
    from ..io.process import broken_pipe

    try:
        result = _click_command().main(args=args, prog_name="workingset", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit, so that a reader gone away is an error we report
    except BrokenPipeError:
        return broken_pipe()
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 1
    except ClickUsageError as exc:
        message = exc.format_message() or "no command given; see `workingset --help`"
        report_error(UsageError(message), as_json="--json" in args)
        return 2
    return result if isinstance(result, int) else 0


def run() -> None:
    """The `workingset` console script."""
    sys.exit(main())
