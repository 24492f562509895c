"""v8: the working set — full payloads only for the items this turn needs; an evidence_index for the rest.

Shown in full, once each and tagged with their roles: the selected hypothesis's previous
result, every result whose budget action is unsettled (of any hypothesis), and the
selected hypothesis's recalled IDs. Every other item is one row of the `evidence_index`
table: ID, collector, scope, the full capture descriptor, and payload state `archived` or
`unknown`. The selected hypothesis keeps its control state, history and notes; case-level
notes stay; other hypotheses carry only title, mechanism, confidence and disposition.
Adds the recall decision.
"""

from __future__ import annotations

from typing import Any

from ..model.state import Evidence, Hypothesis, Note, State
from ._api import View
from ._render import CAPTURE_COLUMNS, Chunk, heading, rows_caption, table, turn_roles
from .v06 import capture_cells, history_table
from .v07 import V7

INDEX_COLUMNS = ("id", "collector", "scope", *CAPTURE_COLUMNS, "payload")
OTHER_HYPOTHESIS_COLUMNS = ("id", "title", "mechanism", "confidence", "disposition")


class V8(V7):
    """v8: working set; archived evidence as rows of one evidence_index table; adds recall."""

    version = 8
    supports_recall = True
    evidence_heading = "Evidence shown in full"

    def roles(self, state: State, selected: Hypothesis) -> dict[str, list[str]]:
        """Evidence ID -> its roles this turn (`_render.ROLE_ORDER`)."""
        return turn_roles(state, selected, self.supports_recall)

    def select(self, state: State, selected: Hypothesis) -> View:
        roles = self.roles(state, selected)
        ordered = sorted(state.evidence, key=lambda ev: ev.id)
        return View(
            state=state,
            selected=selected,
            shown=[ev for ev in ordered if ev.id in roles],
            indexed=[ev for ev in ordered if ev.id not in roles],
            roles=roles,
        )

    def layout(self, view: View) -> list[Chunk]:
        """v7's, with the evidence_index just before the evidence shown in full."""
        chunks = super().layout(view)
        at = [category for category, _ in chunks].index("evidence")
        return [*chunks[:at], ("evidence_index", self.index_section(view)), *chunks[at:]]

    # -- evidence ------------------------------------------------------------------------

    def index_section(self, view: View) -> str:
        rows = [
            [ev.id, ev.collector, ev.scope, *capture_cells(ev), "unknown" if ev.payload is None else "archived"]
            for ev in view.indexed
        ]  # fmt: skip
        return "\n".join(
            [
                heading(2, "evidence_index"),
                "Archived evidence, one row per item. A row records that a capture exists and how it was "
                "made; it is not proof of what its payload contained. Payload `archived` is retained and "
                "can be recalled; `unknown` was never retained.",
                rows_caption(len(rows), "evidence_index"),
                table(INDEX_COLUMNS, rows),
            ]
        )

    def evidence_title(self, ev: Evidence, view: View) -> str:
        return super().evidence_title(ev, view) + f" [{', '.join(view.roles[ev.id])}]"

    # -- hypotheses ----------------------------------------------------------------------

    def hypothesis_record(self, h: Hypothesis, view: View) -> dict[str, Any]:
        rec = super().hypothesis_record(h, view)
        if self.supports_recall:
            selection = view.state.recall.get(h.id)
            rec["recall_selection"] = None if selection is None else selection.evidence_refs
        return rec

    def hypotheses_chunks(self, view: View) -> list[Chunk]:
        h = view.selected
        selected = "\n".join(
            [
                heading(2, f"Selected hypothesis {h.id}"),
                self.record(self.hypothesis_record(h, view)),
                history_table(h),
            ]
        )
        others = [h2 for h2 in view.state.hypotheses if h2.id != h.id]
        rows = [[getattr(o, c) for c in OTHER_HYPOTHESIS_COLUMNS] for o in others]
        compact_others = "\n".join(
            [
                heading(2, "Other hypotheses"),
                rows_caption(len(rows), "hypotheses"),
                table(OTHER_HYPOTHESIS_COLUMNS, rows),
            ]
        )
        return [("selected_hypothesis", selected), ("other_hypotheses", compact_others)]

    # -- notes and the turn --------------------------------------------------------------

    def shown_notes(self, view: View) -> list[Note]:
        return [
            n for n in view.state.notes if n.hypothesis is None or n.hypothesis == view.selected.id
        ]

    def task_lines(self, view: View) -> list[str]:
        lines = super().task_lines(view)
        if self.supports_recall:
            lines.insert(
                -2,
                "Evidence listed only in the evidence_index is archived: you have not seen its contents. "
                'To assess or cite it, recall it first (next.kind "recall", 1 to 4 IDs); recalled items '
                "are shown in full in your next context.",
            )
        return lines
