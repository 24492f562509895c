"""v7: stable section order — immutable material (case, entities, evidence in ID order) first.

Mutable state (hypotheses, notes, budget, the turn) follows, so consecutive contexts of a
run share a long common prefix. Within the evidence section the captures table follows
the items, so a new item does not shift the payloads before it. An evidence item's budget
status changes when it is assessed, so it moves out of the evidence record into the
budget section's table.
The last full-history lossless format.
"""

from __future__ import annotations

from typing import Any

from ..model.state import Evidence, Hypothesis, State
from ._api import View
from ._render import Chunk, heading, join_blocks, rows_caption, table
from .v01 import to_plain
from .v06 import V6, captures_table

EVIDENCE_BUDGET_COLUMNS = ("id", "action", "status", "cost")


class V7(V6):
    """v7: stable section order: immutable material before mutable state."""

    version = 7

    def select(self, state: State, selected: Hypothesis) -> View:
        view = super().select(state, selected)
        view.shown = sorted(view.shown, key=lambda ev: ev.id)
        return view

    def layout(self, view: View) -> list[Chunk]:
        return [
            ("header", self.header(view)),
            ("case", self.case_section(view)),
            ("evidence", self.evidence_section(view)),
            *self.hypotheses_chunks(view),
            ("notes", self.notes_section(view)),
            ("budget", self.budget_section(view)),
            ("task", self.task_section(view)),
            ("output_schema", self.schema_section()),
        ]

    def evidence_section(self, view: View) -> str:
        if not view.shown:
            return super().evidence_section(view)
        blocks = [heading(2, self.evidence_heading)]
        blocks.extend(self.cached_block(ev, view) for ev in view.shown)
        blocks.append(captures_table(view.shown))
        return join_blocks(blocks)

    def evidence_record(self, ev: Evidence, view: View) -> dict[str, Any]:
        rec = super().evidence_record(ev, view)
        del rec["budget"]  # mutable: in the budget section
        return rec

    def budget_section(self, view: View) -> str:
        rows = [[ev.id, ev.budget.action, ev.budget.status, ev.budget.cost] for ev in view.shown]
        return "\n".join(
            [
                heading(2, "Budget"),
                self.record(to_plain(view.state.budget)),
                rows_caption(len(rows), "evidence budget"),
                table(EVIDENCE_BUDGET_COLUMNS, rows),
            ]
        )
