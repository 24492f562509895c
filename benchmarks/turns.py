"""The controller's turn (submit plus next on the SQLite store): time and bytes written.

Pending: the session API (open an analysis on a SQLite store, submit a decision, render
the next request) is not in the package yet, so `measure_turns` reports that it did not
measure rather than print a number.
"""

from __future__ import annotations

from workingset.model import State


def measure_turns(state: State, sizes: object = None) -> str:
    """Return a Markdown paragraph with the turn measurements, or why there are none."""
    return "Not measured: the session API (submit and next on the SQLite store) is not in the package yet.\n"
