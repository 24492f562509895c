"""The progress bar: drawn on a terminal once the work outlasts its delay, never otherwise."""

from __future__ import annotations

import io

import pytest

from workingset.io.progress import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "delay", "drawn"),
    [
        (io.StringIO(), 0, False),  # not a terminal: never
        (_Terminal(), 3600, False),  # a terminal, but the work ends before the delay
        (_Terminal(), 0, True),  # a terminal and long work
    ],
)
def test_a_bar_only_on_a_terminal_for_long_work(stream, delay, drawn):
    with progress("working", 3, stream=stream, delay=delay) as step:
        for _ in range(3):
            step(1)
    assert ("working" in stream.getvalue()) is drawn and (stream.getvalue() == "") is not drawn
