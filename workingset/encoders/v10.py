"""v10: full history again — every payload and every note in full; no index, no recall.

Evidence renders as in v7 (tables, code blocks, v5 references), untagged: the selected
hypothesis's previous result and the unsettled results are named in the turn section, so
the evidence stays an immutable prefix. Other hypotheses stay compact as in v8. Nothing is
hidden, so there is nothing to recall. The default for new requests.
"""

from __future__ import annotations

from ._api import View
from .v07 import V7
from .v09 import V9


class V10(V9):
    """v10: every payload and every note in full; no evidence_index, no recall decision."""

    version = 10
    supports_recall = False
    # What v8 and v9 hid, shown again as v7 showed it (v7's own code, not a copy): every item
    # in full in ID order, no evidence_index before them, every note of every hypothesis in
    # one table. Roles change from turn to turn; tagging items in place would break the cached
    # prefix in the middle of the evidence, so titles stay untagged and the turn names them.
    # v8's compact hypotheses and its "Evidence shown in full" heading stay.
    select = V7.select
    layout = V7.layout
    evidence_title = V7.evidence_title
    shown_notes = V7.shown_notes
    notes_section = V7.notes_section

    def task_lines(self, view: View) -> list[str]:
        lines = super().task_lines(view)
        h = view.selected
        roles = self.roles(view.state, h)
        unsettled = [eid for eid, these in roles.items() if "unsettled" in these]
        lines.insert(2, f"previous result of {h.id}: {h.control.previous_result or 'none'}")
        lines.insert(
            3,
            "unsettled results (awaiting assessment by their collectors): "
            + (", ".join(sorted(unsettled)) or "none"),
        )
        return lines
