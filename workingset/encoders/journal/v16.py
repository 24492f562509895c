"""v16: v15's working set on v14's parameters, with compact evidence heads.

v15 (issue 32) chose what a compaction keeps by use, but kept two thirds of the journal's room,
the one parameter it chose by measuring the corpus, and wrote every entry whole up to a tenth
of the budget. v16 keeps v15's layout, bound, index, recall, quotes and its choice by use, and
takes every parameter from a rule released before it:

- **what a compaction keeps**: the entries used last (v15's rule, `walk15`) within a third of
  the journal's room, v14's share;
- **pages**: v14's page (the tail's reserve less a fifth, shared by its five entries: 4,000
  characters at the default budget), which a turn's four recalled pages and the result to
  assess fit;
- **compact entries**, written by rules a reader undoes (the preamble states them):
  - a head's capture time is written without its date when that is the case's opening date;
  - when the analysis numbers its actions like its evidence (the first item's action is `B`
    and its ID's digits; the case says `evidence actions: numbered`), an item whose action is
    that is written without `action=`, and one with no action writes `action=null`;
  - a neutral assessment with neither confidence nor text is not written (every result shown
    is assessed once; the row is still `H<n>/<k>` for recall), as v15 writes no query row
    without text.

Nothing here was chosen by measuring runs (`encodings/v16.md`, "Name and budget").
"""

from __future__ import annotations

from typing import Any

from ...model.state import Evidence, HistoryEntry, State
from .v12 import _value
from .v14 import V14
from .v15 import PROTOCOL as PROTOCOL15
from .v15 import V15, V15Format, cached_format, defaults_of
from .walk15 import Journal15, Walk15

KEEP = (1, 3)  # v14's share of the room a compaction keeps


def _numbered_action(ev: Evidence) -> str:
    """The action an analysis that numbers its actions like its evidence gives `ev`: `B` and its ID's digits."""
    return f"B{ev.id[1:]}"


def numbered(state: State) -> bool:
    """Whether the analysis numbers its actions like its evidence: its first item's action is `B` and its digits."""
    return bool(state.evidence) and state.evidence[0].budget.action == _numbered_action(
        state.evidence[0]
    )


class V16Format(V15Format):
    """v15's entries with compact heads (the date the case's, a numbered action left out) and fewer assessment rows."""

    def __init__(self, defaults: tuple[tuple[str, Any], ...], date: str, numbered: bool):
        super().__init__(defaults)
        self.date, self.numbered = date, numbered
        self.key = ("v16", defaults, date, numbered)  # type: ignore[assignment]  # texts cached per format

    def captured(self, ev: Evidence) -> str:
        """The capture time without its date when that is the case's opening date."""
        day, sep, clock = ev.captured_at.partition("T")
        return clock if sep and clock and day == self.date else ev.captured_at

    def action(self, ev: Evidence) -> str | None:
        """With numbered actions: none for the item's own number, `action=null` for no action; else v15's."""
        if not self.numbered:
            return super().action(ev)
        if ev.budget.action == _numbered_action(ev):
            return None
        return f"action={_value(ev.budget.action)}"

    @staticmethod
    def writes_row(row: HistoryEntry) -> bool:
        """v15's rows, less a neutral assessment with neither confidence nor text."""
        neutral = row.kind == "assessment" and row.verdict == "neutral" and row.confidence is None
        return V15Format.writes_row(row) and not (neutral and row.text is None)


_EVIDENCE15 = (
    "- Evidence `ID #iteration captured_at`, then key=value for each head field that differs from the case's "
    "`evidence defaults` (null: unset), rows= (count), payload=unknown (not retained; not an empty result), action=, "
    "cost= (absent: none, 0), same_as= (an earlier item with the same payload); quoted values are JSON."
)
_EVIDENCE16 = (
    "- Evidence `ID #iteration captured_at` (the time alone: on the case's opened_at date), then key=value for each "
    "head field that differs from the case's `evidence defaults` (null: unset), rows= (count), payload=unknown (not "
    "retained; not an empty result), action= (absent: none; with `evidence actions: numbered`, B and the ID's digits, "
    "and action=null is none), cost= (absent: none, 0), same_as= (an earlier item with the same payload); quoted "
    "values are JSON."
)
_ROWS15 = "A query without text is not written: its result's head says it."
_ROWS16 = (
    "Not written: a query without text (its result's head says it), a neutral assessment with no confidence or "
    "text (every result is assessed once)."
)
assert _EVIDENCE15 in PROTOCOL15 and _ROWS15 in PROTOCOL15
PROTOCOL = PROTOCOL15.replace(_EVIDENCE15, _EVIDENCE16).replace(_ROWS15, _ROWS16)


class Walk16(Walk15):
    """v15's walk keeping a third of the room at a compaction (v14's share)."""

    keep = KEEP


class Journal16(Journal15):
    """A v16 walk kept between renders of one analysis (the same bytes as a fresh walk)."""

    walk_class = Walk16


class V16(V15):
    """v16: v15's working set with v14's share and page, compact heads, fewer assessment rows."""

    version = 16
    protocol = PROTOCOL
    journal_class = Journal16
    page_size = V14.page_size  # v14's page: a turn's recalled pages fit the tail

    def format_of(self, state: State) -> V16Format:
        fmt: V16Format = cached_format(
            V16Format, defaults_of(state), state.case.opened_at.partition("T")[0], numbered(state)
        )
        return fmt

    def case_text(self, state: State) -> str:
        """v15's case (with the evidence defaults), and `evidence actions: numbered` when they are."""
        text = super().case_text(state)
        return text + "\nevidence actions: numbered" if numbered(state) else text


__all__ = ["KEEP", "PROTOCOL", "V16", "V16Format", "numbered"]
