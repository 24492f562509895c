"""v12: v11's layout, with a smaller journal, tail and preamble.

The order, the sections, the cache breakpoints, the budget (characters, `:budget=N`), the
compaction walk and recall are v11's. What a provider bills beyond a plain transcript is
v11's records, its tail (uncached every turn) and its preamble (`benchmarks/v11_cost.py`);
v12 writes each of them shorter:

- A journal entry starts with a head line of positional fields and `key=value` pairs
  (`E000007 H1 #3 log 2026-06-10T15:38:40Z origin=loki:prod-eu action=B000007 cost=0.5
  language=log`) instead of a keyed JSON record; a decision's head is `H1 #3 assessment
  E000007 verdict=neutral`. A value is bare when it is one plain word that reads as no
  JSON value, else compact JSON.
- Free text stays raw: an evidence item's query follows its head as `query: …` (one line)
  or `query:` and a fenced block, and a decision's text (rationale, diagnosis) follows in a
  fenced block, never JSON-escaped.
- "This turn" holds data only (one line per hypothesis, statuses as lists of exceptions);
  what its fields mean is said once, in the preamble; the context budget is said once, in
  the case.
- A compaction archives until the journal is at most a third of its room (v11: a half): it
  rewrites less, saves more on every later turn, and the next one comes later.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from msgspec.structs import astuple

from ...model.state import Evidence, HistoryEntry, Hypothesis, Note, State, TextPayload
from .._render import CAPTURE_COLUMNS, compact, fence
from .base import JournalView, cost_limit, notes_by_status, recalled, status_exceptions
from .v11 import V11
from .walk import Format, payload_lines

# The characters of a value written bare in a head line (see `_value`); anything else is compact JSON.
# `\Z`, not `$`: `$` also matches before a final newline, which wrote "loki:prod\n" bare and broke the line.
_BARE = re.compile(r"^[A-Za-z0-9_.:/+-]+\Z")

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Each turn, answer for the selected hypothesis with one JSON object that matches the output schema below, and nothing else.

The preamble and the case never change, the journal only grows, "This turn" changes every turn.

Journal entries, oldest first:
- Evidence: `ID collector #iteration scope captured_at`, then key=value for each set field of its capture, action, cost, language or rows (count), same_as (an earlier item with the same payload); unset is null, cost 0; quoted values are JSON. Then `query:` (inline or fenced) and the payload in full: text fenced, rows as jsonl with the column names first. payload=unknown: not retained, which is not an empty result.
- Note or question: `ID hypothesis #iteration kind`, text fenced.
- Decision: `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced.
Past the context budget, the oldest evidence becomes evidence_index rows (descriptor and identifiers from the payload, no proof of its content); recall up to 4 IDs to see them in full in the next "This turn".

"This turn": budgets; per hypothesis: ID, confidence, disposition, iterations used/limit, previous result, recalled ("-": none); the selected one's plan and next checks; budget statuses other than settled (action set) or none; note statuses that are set; recalled items; whether an assessment is required.

Rules: give "assessment" exactly when required, for the evidence named; its confidence becomes the hypothesis's. Up to 8 notes. next: "query", "recall" or "conclude". Cite only evidence shown in full. A decision that breaks a rule is rejected with a code and changes nothing: answer again."""


_JSON_WORD = re.compile(
    r"^(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\Z"
)


def _value(value: Any) -> str:
    """A head-line value: a string bare when it is one plain word that reads as no JSON value, else compact JSON."""
    if isinstance(value, str) and _BARE.match(value) and not _JSON_WORD.match(value):
        return value
    return compact(value)


def _query_lines(query: str) -> str:
    """`query: …` on one line when the query is one plain line, else `query:` and a fenced block."""
    if query and "\n" not in query and "\r" not in query and query == query.strip():
        return f"query: {query}"
    return "query:\n" + fence(query)


def descriptor(ev: Evidence) -> dict[str, Any]:
    """An item's capture fields (query included), then its action and cost: what its head line names."""
    fields: dict[str, Any] = dict(zip(CAPTURE_COLUMNS, astuple(ev.capture)))
    fields.update(action=ev.budget.action, cost=ev.budget.cost)
    return fields


def _pair(key: str, value: Any) -> str:
    return f"{key}={_value(value)}"


def head_line(ev: Evidence, fields: dict[str, Any], pair: Callable[[str, Any], str] = _pair) -> str:
    """`ID collector #iteration scope captured_at`, then `pair(key, value)` of each set field (unset: None, a cost of 0)."""
    pairs = " ".join(
        pair(k, v) for k, v in fields.items() if v is not None and not (k == "cost" and v == 0)
    )
    return f"{ev.id} {ev.collector} #{ev.iteration} {_value(ev.scope)} {ev.captured_at} {pairs}"


class V12Format(Format):
    """v12's journal entries: positional head lines, raw query and text."""

    key = "v12"
    compact_to = 3

    def evidence(self, ev: Evidence, same_as: str | None) -> str:
        fields = descriptor(ev)
        query = fields.pop("query")
        payload = ev.payload
        if payload is None:
            fields["payload"] = "unknown"
        elif isinstance(payload, TextPayload):
            fields["language"] = payload.language
        else:
            fields["rows"] = len(payload.rows)
        fields["same_as"] = same_as
        lines = [head_line(ev, fields)]
        if query is not None:
            lines.append(_query_lines(query))
        return "\n".join(lines + payload_lines(ev, same_as))

    def note(self, note: Note) -> str:
        return (
            f"{note.id} {_value(note.hypothesis)} #{note.iteration} {_value(note.kind)}\n"
            + fence(note.text)
        )

    def history(self, row: HistoryEntry, hypothesis: str) -> str:
        head = [hypothesis, f"#{row.iteration}", _value(row.kind), *row.evidence_refs]
        if row.verdict is not None:
            head.append(f"verdict={_value(row.verdict)}")
        if row.confidence is not None:
            head.append(f"confidence={compact(row.confidence)}")
        text = " ".join(head)
        return text if row.text is None else text + "\n" + fence(row.text)


V12_FORMAT = V12Format()


class V12(V11):
    """v12: v11 with positional journal heads, raw free text, and a data-only tail."""

    version = 12
    journal_format = V12_FORMAT
    protocol = PROTOCOL
    tail_items_caption = "archived, shown in full this turn:"

    def case_text(self, state: State) -> str:
        """v11's case, then the context budget (fixed for the analysis, so it is said once, here)."""
        return super().case_text(state) + f"\ncontext budget: {self.budget} characters"

    # -- the tail: data only, its meaning said once in the preamble ------------------------

    def budget_lines(self, view: JournalView) -> list[str]:
        budget = view.state.budget
        return [f"iteration {view.state.iteration} of {budget.max_iterations} · cost used {compact(budget.cost_used)}{cost_limit(budget)}"]  # fmt: skip

    def hypotheses_lines(self, view: JournalView) -> list[str]:
        state = view.state
        return [
            self.hypothesis_mark(x, view) + self.hypothesis_line(x, recalled(state, x.id))
            for x in state.hypotheses
        ]

    def hypothesis_mark(self, x: Hypothesis, view: JournalView) -> str:
        """What a hypothesis's line starts with: nothing (the selected one has its own line)."""
        return ""

    @classmethod
    def hypothesis_line(cls, x: Any, recalled: list[str] | None) -> str:
        return f"{cls.hypothesis_head(x)} {','.join(recalled) if recalled else '-'}"

    @staticmethod
    def hypothesis_head(x: Any) -> str:
        """A hypothesis line but its last field: ID, confidence, disposition, iterations used/limit, previous result."""
        c = x.control
        return (f"{x.id} {compact(x.confidence)} {_value(x.disposition)} {c.iterations_used}/{c.iteration_limit}"
                f" {c.previous_result or '-'}")  # fmt: skip

    def selected_lines(self, view: JournalView) -> list[str]:
        return [self.selected_line(view.selected)]

    @staticmethod
    def selected_line(h: Any) -> str:
        parts = [f"selected: {h.id}"]
        if h.control.plan is not None:
            parts.append(f"plan {compact(h.control.plan)}")
        if h.control.next_checks:
            parts.append(f"next checks {compact(h.control.next_checks)}")
        return " · ".join(parts)

    def status_lines(self, view: JournalView) -> list[str]:
        return [self.budget_status_line(view.state), self.note_status_line(view.state)]

    @staticmethod
    def budget_status_line(state: State) -> str:
        return "budget status exceptions: " + (", ".join(status_exceptions(state)) or "none")

    def note_status_line(self, state: State) -> str:
        listed = "; ".join(
            f"{_value(status)} {', '.join(ids)}" for status, ids in notes_by_status(state)
        )
        return "note status: " + (listed or "none set")

    def task_lines(self, view: JournalView) -> list[str]:
        pending = view.state.pending_result(view.selected.id)
        return [
            "assessment: none (leave it out)"
            if pending is None
            else f"assessment: required, for {pending}"
        ]
