"""Compatibility path: v11 is `encoders.journal.v11`; v14, the session and tests import it from here until they move."""

from .journal.v11 import (
    CONTROL_COLUMNS,
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MIN_BUDGET,
    PROTOCOL,
    TAIL_RESERVE_MIN,
    V11,
    JournalView,
    cost_limit,
    notes_by_status,
    status_exceptions,
)

__all__ = [
    "CONTROL_COLUMNS", "DEFAULT_BUDGET", "MAX_BUDGET", "MIN_BUDGET", "PROTOCOL", "TAIL_RESERVE_MIN",
    "V11", "JournalView", "cost_limit", "notes_by_status", "status_exceptions",
]  # fmt: skip
