"""The progress bar: drawn on a terminal once the work outlasts its delay, never otherwise."""

from __future__ import annotations

import io

import pytest

from workingset.io.progress import eta, progress


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


# -- issue 33, item 10: drawn at once, counting contexts, a steady time left, lines in a log ----------


def test_the_bar_is_drawn_before_the_first_unit_is_done():
    stream = _Terminal()
    with progress("compare", 100, stream=stream, unit="contexts"):
        assert "compare" in stream.getvalue() and "0/100" in stream.getvalue()


def test_without_a_terminal_each_run_is_a_line_with_contexts_and_time_left():
    now = [0.0]
    stream = io.StringIO()
    with progress(
        "compare", 40, stream=stream, unit="contexts", lines=True, clock=lambda: now[0]
    ) as step:
        for contexts, seconds, run in ((10, 30.0, "a"), (20, 90.0, "b"), (10, 120.0, "c")):
            now[0] = seconds
            step(contexts, run)
    assert stream.getvalue().splitlines() == [
        "compare: 10/40 contexts, 0:30 elapsed, about 1:30 left: a",  # 30 contexts left at 3 s each
        "compare: 30/40 contexts, 1:30 elapsed, about 0:30 left: b",
        "compare: 40/40 contexts, 2:00 elapsed, about 0:00 left: c",
    ]


def test_time_left_is_the_average_rate_since_the_start():
    """A slow unit after fast ones moves the estimate by its share of the whole, not by its own rate."""
    assert eta(0, 10, 5.0) is None
    assert eta(5, 10, 10.0) == 10.0
    # one unit took 10 s after nine of 1 s: the estimate follows the average (1.9 s), not the last (10 s)
    assert eta(10, 20, 19.0) == pytest.approx(19.0)


def test_many_runs_print_a_line_per_run_to_stderr_without_a_terminal(tmp_path):
    import shutil

    from tests.helpers.common import BUG17, invoke

    for name in ("a", "b"):
        shutil.copytree(BUG17, tmp_path / name, ignore=shutil.ignore_patterns("*.py", "*.md"))
    result = invoke("compare", str(tmp_path), "--base", "v10", "--summary")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert [line.split(", ")[0] for line in lines] == [
        "compare: 18/36 contexts",
        "compare: 36/36 contexts",
    ]
    assert lines[-1].endswith(f"2/2 runs, {tmp_path / 'b'}")
