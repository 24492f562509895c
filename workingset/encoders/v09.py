"""v9: v8, and the selected hypothesis's and the case-level notes are condensed.

Open questions and notes of the last 3 iterations stay in full; older ones become rows
of a `notes_index` table (ID, kind, status, iteration, length in characters).
"""

from __future__ import annotations

from ..model.state import Note
from ._api import View
from ._render import heading, rows_caption, table
from .v06 import notes_table
from .v08 import V8

RECENT_ITERATIONS = 3
NOTES_INDEX_COLUMNS = ("id", "kind", "status", "iteration", "length")


def is_open_question(note: Note) -> bool:
    """A question nobody has marked answered (status `open` or unset)."""
    return note.kind == "question" and note.status != "answered"


class V9(V8):
    """v9: v8 with notes condensed: open questions and recent notes in full, the rest indexed."""

    version = 9

    def notes_section(self, view: View) -> str:
        horizon = view.state.iteration - RECENT_ITERATIONS
        notes = self.shown_notes(view)
        full = [n for n in notes if is_open_question(n) or n.iteration > horizon]
        older = [n for n in notes if not (is_open_question(n) or n.iteration > horizon)]
        rows = [[n.id, n.kind, n.status, n.iteration, len(n.text)] for n in older]
        return "\n".join(
            [
                heading(2, "Notes"),
                notes_table(full),
                rows_caption(
                    len(rows), "notes_index (older notes, not shown; length in characters)"
                ),
                table(NOTES_INDEX_COLUMNS, rows),
            ]
        )
