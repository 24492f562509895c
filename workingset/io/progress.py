"""A progress bar on stderr for long commands (import, verify, compare), drawn by rich.

The bar appears only when stderr is a terminal and the work has run for more than a second
(`DELAY`); short commands, pipes, CI logs and tests see nothing. It never writes to stdout,
so a command's output (and its `--json`) is the same with or without it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

DELAY = 1.0  # seconds of work before a bar is worth drawing


@contextmanager
def progress(
    label: str, total: int, stream: TextIO | None = None, delay: float = DELAY
) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n=1)`; a bar for `total` steps shows on a terminal after `delay` seconds."""
    out = sys.stderr if stream is None else stream
    out = getattr(
        out, "unescaped", out
    )  # the bar's own escape codes are not data (`process.Escaping`)
    if not (hasattr(out, "isatty") and out.isatty()):

        def skip(n: int = 1) -> None:
            """No bar: nothing to advance."""

        yield skip
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    start = time.monotonic()
    done = 0
    bar: Progress | None = None
    task = None

    def advance(n: int = 1) -> None:
        nonlocal done, bar, task
        done += n
        if bar is None and time.monotonic() - start >= delay:
            bar = Progress(
                TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=Console(file=out), transient=True,
            )  # fmt: skip
            bar.start()
            task = bar.add_task(label, total=total, completed=done)
        elif bar is not None and task is not None:
            bar.update(task, completed=done)

    try:
        yield advance
    finally:
        if bar is not None:
            bar.stop()
