"""v10: full history again — every payload and every note in full; no index, no recall.

Evidence renders as in v7 (tables, code blocks, v5 references), untagged: the selected
hypothesis's previous result and the unsettled results are named in the turn section, so
the evidence stays an immutable prefix. Other hypotheses stay compact as in v8. Nothing is
hidden, so there is nothing to recall. The default for new requests.
"""

from __future__ import annotations

from ..model.state import Evidence, Hypothesis, State
from ._api import View
from ._render import heading
from .v06 import notes_table
from .v09 import V9


class V10(V9):
    """v10: every payload and every note in full; no evidence_index, no recall decision."""

    version = 10
    supports_recall = False

    def select(self, state: State, selected: Hypothesis) -> View:
        view = super().select(state, selected)
        view.shown = sorted(state.evidence, key=lambda ev: ev.id)
        view.indexed = []
        return view

    def index_section(self, view: View) -> str:
        return ""

    def shown_notes(self, view: View) -> list:
        return list(view.state.notes)

    def notes_section(self, view: View) -> str:
        return heading(2, "Notes") + "\n" + notes_table(self.shown_notes(view))

    def evidence_title(self, ev: Evidence, view: View) -> str:
        # Roles change from turn to turn; tagging items in place would break the cached
        # prefix in the middle of the evidence, so v10 names them in the turn section.
        return heading(3, f"Evidence {ev.id}")

    def task_lines(self, view: View) -> list[str]:
        lines = super().task_lines(view)
        prev = view.selected.control.previous_result
        unsettled = [eid for eid, roles in view.roles.items() if "unsettled" in roles]
        lines.insert(2, f"previous result of {view.selected.id}: {prev or 'none'}")
        lines.insert(
            3,
            "unsettled results (awaiting assessment by their collectors): "
            + (", ".join(sorted(unsettled)) or "none"),
        )
        return lines
