"""v13: v12, with index rows of a bounded size and a tail without lines that say none.

The layout, the sections, the cache breakpoints, the budget (characters, `:budget=N`), the
journal entries, the compaction walk (to a third) and recall are v12's. What changes is
what `benchmarks/v11_cost.py` showed v12 still paying for beyond a transcript:

- An `evidence_index` row is written like an evidence entry's head line (`E000007 H1 #3 log
  2026-06-10T15:38:40Z origin=loki:prod-eu action=B000007 cost=0.5 payload=archived
  ids=[…]`) instead of a jsonl row with every null spelled out, and its query follows on one
  line: raw when it is one plain line, else a JSON string. A text field longer than 200
  characters (the query, a predicate, a cursor…) is cut to its first 160, its length beside
  its name: `query~1372: "…"`, `predicate~734="…"`. Agents whose actions carry whole files
  (an editor call with the new text) made v12's index rows as long as the entries they
  stand for: on the 167-step OpenHands run the index alone outgrew the budget. The row still
  names the item, how and when it was captured and the identifiers of its payload; recall
  shows the whole item, every field in full.
- The preamble's protocol is reworded and says how to read an index row.
- "This turn" leaves out the lines that would list nothing (the preamble says so), and marks
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

# An index row writes a text field whole up to WHOLE characters, else its first EXCERPT.
WHOLE, EXCERPT = 200, 160

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Answer for the selected hypothesis with one JSON object that matches the output schema below, and nothing else.

The journal only grows; "This turn" is what changes. Journal entries, oldest first:
- Evidence: `ID collector #iteration scope captured_at`, then key=value for each set field of its capture, action, cost, language or rows (count), same_as (an earlier item with the same payload); unset is null, cost 0; quoted values are JSON. Then `query:` (inline or fenced) and the payload: text fenced, rows as jsonl, column names first. payload=unknown: not retained, not an empty result.
- Note or question: `ID hypothesis #iteration kind`, text fenced.
- Decision: `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced.
Past the budget, the oldest evidence becomes evidence_index rows: its head with payload=archived or unknown and ids= (identifiers from the payload), then `query:` on one line, raw when one plain line not starting with `"`, else a JSON string. A text longer than 200 characters shows its first 160: `query~N:`, `key~N=` (N: its length). A row proves no content: recall up to 4 IDs to see them in full in the next "This turn".

"This turn": iteration, cost; per hypothesis (* selected): ID, confidence, disposition, iterations used/limit, previous result, recalled (- none); plan, next checks; budget statuses other than settled (action set) or none; note statuses; archived items of this turn (previous, unsettled, recalled) in full; the result to assess. Lines with nothing to list are left out.

Rules: give "assessment" exactly when "assess:" names a result, for it; its confidence becomes the hypothesis's. Up to 8 notes. next: "query", "recall" or "conclude". Cite only evidence shown in full. A decision that breaks a rule is rejected with a code and changes nothing: answer again."""


def _cut(name: str, value: str, sep: str) -> str:
    """`name~N<sep>` and the JSON string of the value's first EXCERPT characters (N: its length)."""
    return f"{name}~{len(value)}{sep}{compact(value[:EXCERPT])}"


def index_query(query: str) -> str:
    """An index row's query line: raw when one plain line, else a JSON string; cut past WHOLE characters."""
    if len(query) > WHOLE:
        return _cut("query", query, ": ")
    if query and "\n" not in query and "\r" not in query and query == query.strip() and not query.startswith('"'):
        return f"query: {query}"
    return f"query: {compact(query)}"


def index_pair(key: str, value: Any) -> str:
    """An index row's `key=value`, as in a head line; a string past WHOLE characters cut (`key~N="…"`)."""
    if isinstance(value, str) and len(value) > WHOLE:
        return _cut(key, value, "=")
    return f"{key}={_value(value)}"


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
        pairs = " ".join(index_pair(k, v) for k, v in fields.items() if v is not None and not (k == "cost" and v == 0))
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
    # Rows of a bounded size make a compaction cheap to write, so a smaller journal pays: on the
    # runs measured (README, "v13"), budgets from 90,000 to 110,000 cost about the same and less
    # than 120,000; the default is the middle of that range.
    default_budget = 100_000

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
