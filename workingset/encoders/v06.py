"""v6: hypothesis histories, notes and capture descriptors as columns/rows tables too."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from msgspec.structs import astuple, replace

from ..model.state import Evidence, Hypothesis, Note
from ._api import View
from ._render import CAPTURE_COLUMNS, heading, join_blocks, rows_caption, table
from .v05 import V5

HISTORY_COLUMNS = ("iteration", "kind", "evidence_refs", "verdict", "confidence", "text")
NOTE_COLUMNS = ("id", "hypothesis", "kind", "status", "iteration", "text")


def capture_cells(ev: Evidence) -> list[Any]:
    """The capture descriptor's values in CAPTURE_COLUMNS order."""
    return list(astuple(ev.capture))


# A row's cells in column order, read at C speed: a long run's context holds thousands of rows.
_HISTORY_ROW = attrgetter(*HISTORY_COLUMNS)
_NOTE_ROW = attrgetter(*NOTE_COLUMNS)


def history_table(h: Hypothesis) -> str:
    rows = list(map(_HISTORY_ROW, h.history))
    return rows_caption(len(rows), "history") + "\n" + table(HISTORY_COLUMNS, rows)


def notes_table(notes: list[Note]) -> str:
    rows = list(map(_NOTE_ROW, notes))
    return rows_caption(len(rows), "notes") + "\n" + table(NOTE_COLUMNS, rows)


def captures_table(items: list[Evidence]) -> str:
    rows = [[ev.id, *capture_cells(ev)] for ev in items]
    return rows_caption(len(rows), "captures") + "\n" + table(("id", *CAPTURE_COLUMNS), rows)


class V6(V5):
    """v6: hypothesis histories, notes and capture descriptors as columns/rows tables too."""

    version = 6

    def hypothesis_record(self, h: Hypothesis, view: View) -> dict[str, Any]:
        # Converting the whole history only to delete it cost the most on long runs.
        rec = super().hypothesis_record(replace(h, history=[]), view)
        del rec["history"]
        return rec

    def hypothesis_block(self, h: Hypothesis, view: View) -> str:
        return super().hypothesis_block(h, view) + "\n" + history_table(h)

    def notes_section(self, view: View) -> str:
        return heading(2, "Notes") + "\n" + notes_table(self.shown_notes(view))

    def evidence_section(self, view: View) -> str:
        if not view.shown:
            return super().evidence_section(view)
        blocks = [heading(2, self.evidence_heading), captures_table(view.shown)]
        blocks.extend(self.cached_block(ev, view) for ev in view.shown)
        return join_blocks(blocks)

    def evidence_record(self, ev: Evidence, view: View) -> dict[str, Any]:
        rec = super().evidence_record(ev, view)
        del rec["capture"]  # in the captures table
        return rec
