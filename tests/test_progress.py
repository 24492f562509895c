"""The progress bar: drawn on a terminal once the work outlasts its delay, never otherwise."""

from __future__ import annotations

import io

from workingset.progress import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    with progress("working", 3, stream=out, delay=0) as step:
        for _ in range(3):
            step(1)
    assert out.getvalue() == ""


def test_no_bar_for_work_shorter_than_the_delay():
    out = _Terminal()
    with progress("working", 3, stream=out, delay=3600) as step:
        for _ in range(3):
            step(1)
    assert out.getvalue() == ""


def test_a_bar_on_a_terminal_for_long_work():
    out = _Terminal()
    with progress("working", 4, stream=out, delay=0) as step:
        for _ in range(4):
            step(1)
    assert "working" in out.getvalue()
