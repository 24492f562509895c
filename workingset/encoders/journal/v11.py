"""v11: cache-native working set — a static preamble, the case, an append-only journal, a small tail.

Order, first to last: (1) the preamble — role, the decision protocol in words, the output
schema — identical for every turn and every analysis; (2) the case and the hypotheses'
fixed parts; (3) the journal (`walk`): every evidence item (capture descriptor inline,
payload in full), note and decision in the order it happened, written once and never
changed; (4) the tail, the only part that changes from turn to turn: budgets, the
hypotheses' mutable state, statuses, this turn's roles, the working-set payloads the
journal does not show in full, and the task. The stable prefix (preamble, case, journal)
is where prompt-cache breakpoints go.

Bounded by a context budget in characters, part of the encoder's name
(`investigation_project_v11:budget=N`; the plain name is the default) and so recorded with
every stored context: past it the journal is compacted once into `evidence_index` rows and
appending resumes. Lossless: every evidence item is shown in full or is an index row.
Recall as in v8.
"""

from __future__ import annotations

from .._render import compact, rows_caption, table
from .base import (
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MIN_BUDGET,
    TAIL_RESERVE_MIN,
    JournalEncoder,
    JournalView,
    cost_limit,
    notes_by_status,
    recalled,
    status_exceptions,
)
from .walk import V11_FORMAT, Format

__all__ = [
    "DEFAULT_BUDGET", "MAX_BUDGET", "MIN_BUDGET", "TAIL_RESERVE_MIN", "V11", "JournalView",
    "cost_limit", "notes_by_status", "status_exceptions",
]  # fmt: skip

CONTROL_COLUMNS = (
    "id",
    "confidence",
    "disposition",
    "iterations_used",
    "iteration_limit",
    "previous_result",
    "recall_selection",
)

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Each turn you work on one selected hypothesis and answer with one decision.

This context has four parts, in this order: this preamble (the same every turn); the case; the journal, which holds every evidence item, note and decision in the order it happened, each entry written once and never changed; and "This turn", the only part that changes: budgets, the hypotheses' confidence, disposition and control state, statuses, the roles of evidence this turn, and your task.

Reading the journal:
- Each entry starts with one JSON record line; "entry" says what it is: evidence, note, question, or a decision's query, recall, assessment or conclude. A field left out of a record is null (an empty list for lists, 0 for cost).
- An evidence record holds the item's capture descriptor (the exact query and predicate, origin, snapshot, coverage, paging, item_count). Its payload follows in full: text in a fenced code block, rows as a jsonl code block (the first line holds the column names, each further line one row as a JSON array). "same_as" names an earlier entry whose payload is identical and shown in full. "payload": "unknown" means the content was not retained: not an empty result and not evidence of absence.
- Budget statuses, note statuses, confidences and dispositions change, so "This turn" states them, not the journal.
- When the journal outgrows the context budget, its oldest evidence items are archived: each becomes one row of the evidence_index table at the start of the journal, with its capture descriptor and exact identifiers copied from its payload (paths, hashes, error names, numbers with units). A row records that a capture exists and how it was made; it is not proof of what its payload contained. To assess or cite an archived item, recall it first (next.kind "recall", 1 to 4 IDs): recalled items are shown in full in "This turn" of your next context.

Deciding:
- assessment: required exactly when "This turn" says so, naming the selected hypothesis's unsettled previous result; otherwise leave it out. Its confidence becomes the hypothesis's confidence.
- notes: up to 8 notes or questions for the selected hypothesis.
- next: "query" (run one new query against a source), "recall" (show up to 4 archived evidence items in full in your next context) or "conclude" (settle the hypothesis: a disposition, a diagnosis and the evidence it rests on).
- Cite only evidence shown in full in this context, in the journal or in "This turn"; an index row is not enough.
- A decision that breaks a rule is rejected with a code and changes nothing: answer again.
- Answer with one JSON object that matches the output schema below, and nothing else."""


class V11(JournalEncoder):
    """v11: static preamble, case, append-only bounded journal, small tail; recall as in v8."""

    version = 11
    journal_format: Format = V11_FORMAT
    protocol = PROTOCOL
    tail_items_caption = "Working-set items archived in the journal, shown in full here:"

    # -- the tail --------------------------------------------------------------------------

    def budget_lines(self, view: JournalView) -> list[str]:
        state, h = view.state, view.selected
        assert view.journal is not None
        budget = state.budget
        return [
            f"context budget: {self.budget} characters · journal compactions: {view.journal.compactions}"
            f" · archived items: {len(view.journal.archived)}",
            f"iteration: {state.iteration} of {budget.max_iterations} · cost used: {compact(budget.cost_used)}{cost_limit(budget)}"
            f" · {h.id}'s iterations: {h.control.iterations_used} of {h.control.iteration_limit}",
        ]

    def hypotheses_lines(self, view: JournalView) -> list[str]:
        state = view.state
        rows = [[x.id, x.confidence, x.disposition, x.control.iterations_used, x.control.iteration_limit,
                 x.control.previous_result, recalled(state, x.id)] for x in state.hypotheses]  # fmt: skip
        return [rows_caption(len(rows), "hypotheses"), table(CONTROL_COLUMNS, rows)]

    def selected_lines(self, view: JournalView) -> list[str]:
        h = view.selected
        return [
            f"selected hypothesis: {h.id} {compact(h.title)} "
            + compact({"plan": h.control.plan, "next_checks": h.control.next_checks})
        ]

    def status_lines(self, view: JournalView) -> list[str]:
        state = view.state
        listed = "; ".join(f"{status} {', '.join(ids)}" for status, ids in notes_by_status(state))
        return [
            'evidence budget status: "settled" where an action is set, "none" where not, except: '
            + (", ".join(status_exceptions(state)) or "no exceptions"),
            "note status: null unless listed: " + (listed or "none listed"),
            self.roles_line(view),
        ]

    def roles_line(self, view: JournalView) -> str:
        h = view.selected
        unsettled = sorted(eid for eid, roles in view.roles.items() if "unsettled" in roles)
        selection = view.state.recall.get(h.id)
        recall = ", ".join(selection.evidence_refs) if selection else "none"
        return (f"previous result of {h.id}: {h.control.previous_result or 'none'} · unsettled results (awaiting "
                f"assessment by their collectors): {', '.join(unsettled) or 'none'} · recalled by {h.id}: {recall}")  # fmt: skip

    def task_lines(self, view: JournalView) -> list[str]:
        state, h = view.state, view.selected
        pending = state.pending_result(h.id)
        if pending is not None:
            assessment = (f'assessment: REQUIRED. {h.id}\'s previous result {pending} is unsettled: include "assessment" '
                          f'with "evidence_ref": "{pending}".')  # fmt: skip
        else:
            assessment = f'assessment: not allowed. {h.id} has no unsettled previous result: omit "assessment".'
        return [
            assessment,
            "Answer for the selected hypothesis with one JSON object that matches the output schema, and nothing else.",
        ]
