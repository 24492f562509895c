"""Progress on stderr for long commands (import, verify, compare): a rich bar, or lines in a log.

On a terminal the bar is drawn from the start (`DELAY`, 0 s by default) and counts the work's
units (contexts for `compare`). Its time left is the units left over the *average* rate since
the start, so one slow run does not swing it the way a recent-window rate would; it appears
once a unit is done. With no terminal (a pipe, a CI log) and `lines=True`, each `advance`
writes one line (`compare: 1,204/9,870 contexts, 0:41 elapsed, about 4:55 left: 12/67 runs,
RUN`), so a long job is never minutes of silence. It never writes to stdout, so a command's
output (and its `--json`) is the same with or without it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

DELAY = 0.0  # seconds of work before a bar is drawn


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


def eta(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the average rate since the start; None before any unit is done."""
    if done <= 0 or elapsed <= 0:
        return None
    return max(total - done, 0) * elapsed / done


@contextmanager
def progress(
    label: str, total: int, stream: TextIO | None = None, delay: float = DELAY, *, unit: str = "",
    lines: bool = False, clock: Callable[[], float] = time.monotonic,
) -> Iterator[Callable[..., None]]:  # fmt: skip
    """Yield `advance(n=1, note=None)`: a bar for `total` units on a terminal, else (with `lines`) a line per call."""
    out = sys.stderr if stream is None else stream
    raw = getattr(
        out, "unescaped", out
    )  # the bar's own escape codes are not data (`process.Escaping`)
    start = clock()
    done = 0
    if not (hasattr(raw, "isatty") and raw.isatty()):

        def line(n: int = 1, note: str | None = None) -> None:
            nonlocal done
            done += n
            if not lines:
                return
            elapsed = clock() - start
            left = eta(done, total, elapsed)
            text = f"{label}: {done:,}/{total:,}{' ' + unit if unit else ''}, {_clock(elapsed)} elapsed"
            text += "" if left is None else f", about {_clock(left)} left"
            out.write(text + (f": {note}" if note else "") + "\n")
            out.flush()

        yield line
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class Left(ProgressColumn):
        """Time left at the average rate since the start (rich's own swings with the last few updates)."""

        def render(self, task: Any) -> Text:
            left = eta(int(task.completed), int(task.total or 0), clock() - start)
            return Text(
                "" if left is None else f"about {_clock(left)} left", style="progress.remaining"
            )

    bar: Any = None
    task: Any = None

    def advance(n: int = 1, note: str | None = None) -> None:
        nonlocal done, bar, task
        done += n
        if bar is None and clock() - start >= delay:
            bar = Progress(
                TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn(), Left(),
                console=Console(file=raw), transient=True,
            )  # fmt: skip
            bar.start()
            task = bar.add_task(label, total=total, completed=done)
        elif bar is not None:
            bar.update(task, completed=done)

    try:
        if delay <= 0:
            advance(0)  # drawn at once, before the first unit is done
        yield advance
    finally:
        if bar is not None:
            bar.stop()
