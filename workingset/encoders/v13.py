"""v13: v12, with index rows of a bounded size, a shorter preamble and a tail without empty lines.

The layout, the sections, the cache breakpoints, the budget (characters, `:budget=N`), the
journal entries, the compaction walk (to a third) and recall are v12's. What changes is
what `benchmarks/v11_cost.py` showed v12 still paying for beyond a transcript:

- An `evidence_index` row is written like an evidence entry's head line (`E000007 H1 #3 log
  2026-06-10T15:38:40Z origin=loki:prod-eu action=B000007 cost=0.5 payload=archived
  ids=[…]`) instead of a jsonl row with every null spelled out, and its query follows on one
  line: raw when it is one plain line, else a JSON string; a query longer than 200
  characters is cut to its first 160 (`query (1372 chars, first 160): "…"`). Agents whose
  actions carry whole files (an editor call with the new text) made v12's index rows as long
  as the entries they stand for: on the 167-step OpenHands run the index alone outgrew the
  budget. The row still names the item, how and when it was captured and the identifiers
  of its payload; recall shows the whole item, query included.
- The preamble's protocol says the same in fewer words.
- "This turn" leaves out the lines that would say "none" (the preamble says so), and marks
  the selected hypothesis with `*` on its own line instead of a line of its own.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import astuple

from ..harvest import harvest
from ..model import Evidence
from ._render import compact, heading, rows_caption
from .v06 import CAPTURE_COLUMNS
from .v11 import JournalView, cost_limit, notes_by_status, status_exceptions
from .v12 import V12, V12Format, _value

# An index row's query is written whole up to this many characters, else cut to QUERY_EXCERPT.
QUERY_WHOLE, QUERY_EXCERPT = 200, 160

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Answer for the selected hypothesis with one JSON object that matches the output schema below, and nothing else.

The preamble and the case never change, the journal only grows, "This turn" changes every turn.

Journal entries, oldest first:
- Evidence: `ID collector #iteration scope captured_at`, then key=value for each set field of its capture, action, cost, language or rows (count), same_as (an earlier item with the same payload); unset is null, cost 0; quoted values are JSON. Then `query:` (inline or fenced) and the payload: text fenced, rows as jsonl, column names first. payload=unknown: not retained, not an empty result.
- Note or question: `ID hypothesis #iteration kind`, text fenced.
- Decision: `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced.
Past the budget, the oldest evidence becomes evidence_index rows: its head with payload=archived or unknown and ids= (identifiers from the payload), then `query:` on one line (JSON unless plain; past 200 characters, the first 160). A row proves no content: recall up to 4 IDs to see them in full in the next "This turn".

"This turn": iteration, cost; per hypothesis (* selected): ID, confidence, disposition, iterations used/limit, previous result, recalled (- none); plan, next checks; budget statuses other than settled (action set) or none; note statuses; recalled items; the result to assess. Empty lines are left out.

Rules: give "assessment" exactly when "assess:" names a result, for it; its confidence becomes the hypothesis's. Up to 8 notes. next: "query", "recall" or "conclude". Cite only evidence shown in full. A decision that breaks a rule is rejected with a code and changes nothing: answer again."""


def index_query(query: str) -> str:
    """An index row's query line: raw when one plain line, else a JSON string; cut past QUERY_WHOLE characters."""
    if len(query) > QUERY_WHOLE:
        return f"query ({len(query)} chars, first {QUERY_EXCERPT}): {compact(query[:QUERY_EXCERPT])}"
    if query and "\n" not in query and "\r" not in query and query == query.strip() and not query.startswith('"'):
        return f"query: {query}"
    return f"query: {compact(query)}"


class V13Format(V12Format):
    """v13's journal: v12's entries; index rows as head lines with a bounded query."""

    key = "v13"

    def index_row(self, ev: Evidence) -> str:
        fields: dict[str, Any] = dict(zip(CAPTURE_COLUMNS, astuple(ev.capture)))
        query = fields.pop("query")
        fields.update(action=ev.budget.action, cost=ev.budget.cost, payload="unknown" if ev.payload is None else "archived")
        identifiers = harvest(ev.payload)
        if identifiers:
            fields["ids"] = identifiers
        pairs = " ".join(f"{k}={_value(v)}" for k, v in fields.items() if v is not None and not (k == "cost" and v == 0))
        head = f"{ev.id} {ev.collector} #{ev.iteration} {_value(ev.scope)} {ev.captured_at} {pairs}"
        return head if query is None else head + "\n" + index_query(query)

    def index_block(self, count: int, rows: str) -> str:
        return rows_caption(count, "evidence_index (archived evidence)") + "\n" + rows


V13_FORMAT = V13Format()


class V13(V12):
    """v13: v12 with bounded head-line index rows, a shorter preamble and a tail without empty lines."""

    version = 13
    journal_format = V13_FORMAT
    protocol = PROTOCOL

    def tail_section(self, view: JournalView) -> str:
        state, h = view.state, view.selected
        budget = state.budget
        recall = {hid: sel.evidence_refs for hid, sel in state.recall.items()}
        lines = [
            heading(2, "This turn"),
            f"iteration {state.iteration} of {budget.max_iterations} · cost used {compact(budget.cost_used)}{cost_limit(budget)}",
            *(("*" if x.id == h.id else "") + self.hypothesis_line(x, recall.get(x.id)) for x in state.hypotheses),
        ]
        if h.control.plan is not None:
            lines.append(f"plan: {compact(h.control.plan)}")
        if h.control.next_checks:
            lines.append(f"next checks: {compact(h.control.next_checks)}")
        if exceptions := status_exceptions(state):
            lines.append("budget status: " + ", ".join(exceptions))
        if notes := notes_by_status(state):
            lines.append("note status: " + "; ".join(f"{_value(status)} {', '.join(ids)}" for status, ids in notes))
        if view.tail_items:
            lines.append("archived, shown in full this turn:")
            lines.extend(self.journal_format.evidence_text(ev) for ev in view.tail_items)
        pending = state.pending_result(h.id)
        lines.append(f"assess: {pending}" if pending is not None else "assess: none (leave assessment out)")
        return "\n".join(lines)
