"""v15: a working set. What the analysis uses stays in view; cheaper than the transcript with every recall billed.

v14 chose what to show by age and paged every entry over 4,000 characters. v15 keeps v14's
layout, its bound, its index and its recall, and changes what the journal holds and how
lean it writes it (issue 32):

- **use decides what stays** (`walk15`): a compaction keeps the entries used last (cited by
  a decision, named by a later query, note or decision text, or recalled) within a third
  of the journal's room, and archives the rest by last use; a recalled evidence item is
  written again at the journal's end and stays while it is used;
- **pages only for what does not fit**: an entry is written whole up to a page of a tenth
  of the budget (10,000 characters at the default budget; v14: 4,000): four recalled pages
  take two fifths of it, with the tail's reserve (a quarter), the case (at most an eighth)
  and the preamble within the rest;
- **lean entries**: an evidence head line writes only what differs from the analysis's
  first evidence item (`evidence defaults:` in the case, said once), a query decision row
  without text is not written (its result's head names the hypothesis and iteration, and
  the row is still `H<n>/<k>` for recall), and the case's statement is fenced raw text.

Every parameter is a rule of the budget or of v14's rules (see `encodings/v15.md`); none was
chosen by measuring runs.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ...model.records import RowsPayload, TextPayload
from ...model.spans import MAX_SPANS
from ...model.state import Evidence, HistoryEntry, State
from .._render import _CONCLUDE, _EID, _QUERY, compact, fence, heading, rows_caption, table
from .base import ENTITY_COLUMNS, HYPOTHESIS_COLUMNS
from .v12 import _query_lines, _value
from .v13 import V13Format
from .v14 import _RECALL14, V14
from .walk import Journal, payload_lines
from .walk15 import Journal15, Plan15, walk15

# The fields an evidence head writes when they differ from the defaults (the first item's).
DEFAULT_FIELDS = ("collector", "scope", "predicate", "origin", "snapshot", "coverage", "truncated",
                  "page", "next_cursor", "eof", "item_count", "language")  # fmt: skip
PAGE_SHARE = 10  # a page is a tenth of the budget


def evidence_fields(ev: Evidence) -> dict[str, Any]:
    """The head fields a default can stand for, with their values (language: a text payload's)."""
    c = ev.capture
    language = ev.payload.language if isinstance(ev.payload, TextPayload) else None
    return {"collector": ev.collector, "scope": ev.scope, "predicate": c.predicate, "origin": c.origin,
            "snapshot": c.snapshot, "coverage": c.coverage, "truncated": c.truncated, "page": c.page,
            "next_cursor": c.next_cursor, "eof": c.eof, "item_count": c.item_count, "language": language}  # fmt: skip


def defaults_of(state: State) -> tuple[tuple[str, Any], ...]:
    """The evidence defaults: the head fields of the analysis's first evidence item (none before it exists)."""
    if not state.evidence:
        return ()
    return tuple(evidence_fields(state.evidence[0]).items())


class V15Format(V13Format):
    """v15's entries: v13's, with lean evidence heads (what differs from the defaults) and no text-less query rows."""

    def __init__(self, defaults: tuple[tuple[str, Any], ...] = ()):
        self.defaults = dict(defaults)
        self.key = ("v15", defaults)  # type: ignore[assignment]  # texts are cached per format and defaults

    def captured(self, ev: Evidence) -> str:
        """The head's capture time (v15: as stored)."""
        return ev.captured_at

    def action(self, ev: Evidence) -> str | None:
        """The head's `action=` field, or None when it writes none (v15: none when the item has no action)."""
        return None if ev.budget.action is None else f"action={_value(ev.budget.action)}"

    def evidence(self, ev: Evidence, same_as: str | None) -> str:
        parts = [ev.id, f"#{ev.iteration}", self.captured(ev)]
        for k, v in evidence_fields(ev).items():
            if k == "language" and not isinstance(ev.payload, TextPayload):
                continue
            if v != self.defaults.get(k):
                parts.append(f"{k}={_value(v)}")
        payload = ev.payload
        if payload is None:
            parts.append("payload=unknown")
        elif isinstance(payload, RowsPayload):
            parts.append(f"rows={len(payload.rows)}")
        action = self.action(ev)
        if action is not None:
            parts.append(action)
        if ev.budget.cost:
            parts.append(f"cost={compact(ev.budget.cost)}")
        if same_as is not None:
            parts.append(f"same_as={same_as}")
        lines = [" ".join(parts)]
        if ev.capture.query is not None:
            lines.append(_query_lines(ev.capture.query))
        return "\n".join(lines + payload_lines(ev, same_as))

    @staticmethod
    def writes_row(row: HistoryEntry) -> bool:
        """A query row with no text is not written: its result's head says the hypothesis and iteration."""
        return not (row.kind == "query" and row.text is None)


PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Answer for the selected hypothesis with one JSON object matching the decision schema this request carries (its tool or response format), nothing else.

Journal: entries oldest first, each written once.
- Evidence `ID #iteration captured_at`, then key=value for each head field that differs from the case's `evidence defaults` (null: unset), rows= (count), payload=unknown (not retained; not an empty result), action=, cost= (absent: none, 0), same_as= (an earlier item with the same payload); quoted values are JSON. Then `query:` (inline or fenced) and the payload: text fenced, rows as jsonl, column names first.
- Note `ID hypothesis #iteration kind`, text fenced.
- Decision `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced; its reference is H<n>/<k>, H<n>'s k-th decision. A query without text is not written: its result's head says it.
- An entry longer than a page: `REF paged: N chars, K pages; page 1:` and page 1 fenced; the pages joined are the entry.
The journal keeps what was used last: cited, recalled, or holding a name a later query, note or decision wrote. Past the budget the rest goes to evidence_index: an evidence row is the full head (ID collector #iteration scope captured_at, every set field) with payload=archived or unknown, ids=, pages= if paged, then `query:` on one line (over 200 characters: `query~N:` and its first 160); a note row `ID hypothesis #iteration kind archived`; a decision row `H<n>/<k> #iteration kind archived`; `A..B` names every ID of a kind from A to B. A row proves nothing: recall up to 4 references (evidence_refs; entries: N…, H<n>/<k>, case; pages: ["REF:page"]). Recalled evidence is written again at the journal's end and stays while used; other recalls show this turn only.

"This turn": iteration/limit, cost used/limit (no /limit: no limit; no cost: nothing spent, no limit); per hypothesis (* selected): ID, confidence, disposition, iterations used/limit, previous result (- none), recalled; plan, next checks; budget statuses of the evidence shown, other than settled (action set), none (no action) or unsettled for the result to assess; note statuses of the notes shown; archived or paged entries shown this turn, whole or `REF page P/K, N chars:` and the page fenced; the result to assess. Lines with nothing to list are left out.

Rules: "assessment" exactly when "assess:" names a result, for it; its confidence becomes the hypothesis's. Cite only evidence shown here (whole or a page). A conclusion may quote what it rests on: "quotes", each an evidence ID and text copied exactly from its payload (a rows payload: one jsonl line); each quote is recorded with its bytes, and one not in its payload is rejected. A rejected decision changes nothing: answer again."""


# A conclusion may quote the evidence it rests on: each quote is bound to its exact bytes (a span) on submit.
_QUOTE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["evidence_ref", "quote"],
    "properties": {"evidence_ref": _EID, "quote": {"type": "string", "pattern": "^[\\s\\S]+$"}},
}
_CONCLUDE15 = {
    **_CONCLUDE,
    "properties": {
        **_CONCLUDE["properties"],
        "quotes": {"type": "array", "maxItems": MAX_SPANS, "items": _QUOTE},
    },
}


class V15(V14):
    """v15: v14's layout and bound, a journal kept by use (`walk15`), whole entries up to a tenth of the budget, lean heads."""

    version = 15
    protocol = PROTOCOL
    # A conclusion's quotes become spans (`decisions.bind_quotes`), checked and replayed as spans are.
    supports_spans = True
    supports_quotes = True

    @cached_property
    def decision_schema(self) -> dict[str, Any]:
        schema = dict(super().decision_schema)
        schema["properties"] = {
            **schema["properties"],
            "next": {"oneOf": [_QUERY, _RECALL14, _CONCLUDE15]},
        }
        return schema

    @property
    def page_size(self) -> int:
        """A tenth of the budget: four recalled pages, the tail's reserve, the case and the preamble fit the budget."""
        return self.budget // PAGE_SHARE

    @cached_property
    def preamble(self) -> str:
        """The encoder line and the protocol. The answer's shape is the decision schema the request carries
        (Anthropic's tool, OpenAI's response format), said there once: v15 writes no outline of it."""
        return f"# Investigation context\nencoder: investigation_project_v{self.version}\n\n{self.protocol}"

    def format_of(self, state: State) -> V15Format:
        return _format(defaults_of(state))

    # -- the case --------------------------------------------------------------------------

    def full_case_text(self, state: State) -> str:
        """The case: title and opening time, the statement fenced raw, entities, hypotheses, budget, evidence defaults."""
        case = state.case
        entities = [[e.id, e.kind, e.name, e.source] for e in case.entities]
        hypotheses = [[h.id, h.title, h.mechanism] for h in state.hypotheses]
        lines = [heading(2, "Case"), f"analysis: {state.analysis_id}", f"title: {compact(case.title)}",
                 f"opened_at: {case.opened_at}", "statement:", fence(case.statement),
                 rows_caption(len(entities), "entities"), table(ENTITY_COLUMNS, entities),
                 rows_caption(len(hypotheses), "hypotheses"), table(HYPOTHESIS_COLUMNS, hypotheses),
                 f"context budget: {self.budget} characters"]  # fmt: skip
        return "\n".join(lines)

    def case_whole(self, state: State, case_text: str) -> bool:
        return len(self.full_case_text(state)) <= self.case_room

    def case_text(self, state: State) -> str:
        """v14's case (its first page past its room), then the evidence defaults, never paged."""
        text = super().case_text(state)
        defaults = defaults_of(state)
        if not defaults:
            return text
        return (
            text
            + "\nevidence defaults: "
            + " ".join(f"{k}={_value(v)}" for k, v in defaults if v is not None)
        )

    # -- the journal ---------------------------------------------------------------------------

    journal_class = Journal15  # its kept walk (v16: `Journal16`, which walks with a third kept)

    def new_journal(self, state: State) -> Journal15:
        case_text = self.case_text(state)
        return self.journal_class(
            self.journal_limit(case_text), self.page_size, self.format_of(state), case_text
        )

    def plan(self, state: State, journal: Journal | None, room: int, case_text: str) -> Plan15:
        """The v15 journal within `room`: the kept walk resumed (started over when its room or case changed), else a fresh walk."""
        fmt = self.format_of(state)
        if type(journal) is self.journal_class:  # a later version's journal walks another way
            assert isinstance(journal, Journal15)
            same = (
                journal.limit == room
                and journal.page_size == self.page_size
                and journal.case == case_text
            )
            if not same or journal.fmt is not fmt:
                journal.restart(room, self.page_size, fmt, case_text)
            return journal.plan(state)
        return walk15(state, room, self.page_size, fmt, case_text, self.journal_class.walk_class)


_FORMATS: dict[tuple[Any, ...], Any] = {}  # (class, its arguments) -> the format object


def cached_format(kind: type[V15Format], *args: Any) -> Any:
    """One `kind(*args)` per arguments (a kept journal checks its format by identity); a few per process."""
    key = (kind, *args)
    fmt = _FORMATS.get(key)
    if fmt is None:
        if len(_FORMATS) > 1024:
            _FORMATS.clear()
        fmt = _FORMATS[key] = kind(*args)
    return fmt


def _format(defaults: tuple[tuple[str, Any], ...]) -> V15Format:
    """v15's format for these evidence defaults."""
    fmt: V15Format = cached_format(V15Format, defaults)
    return fmt


__all__ = ["PROTOCOL", "V15", "V15Format", "cached_format", "defaults_of"]
