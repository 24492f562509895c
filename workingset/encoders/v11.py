"""v11: cache-native working set — a static preamble, the case, an append-only journal, a small tail.

Order, first to last: (1) the preamble — role, the decision protocol in words, the output
schema — identical for every turn and every analysis; (2) the case and the hypotheses'
fixed parts; (3) the journal (`_journal`): every evidence item (capture descriptor inline,
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

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from ..errors import UnknownEncoder
from ..io.caches import register_lru
from ..model.state import Evidence, Hypothesis, State
from ._api import RenderedContext, View
from ._journal import V11_FORMAT, Format, Journal, Plan, plan
from ._render import compact, decision_schema, fence, heading, rows_caption, table
from .v01 import Chunk
from .v10 import V10

DEFAULT_BUDGET = 120_000
MIN_BUDGET, MAX_BUDGET = 20_000, 100_000_000
# Room the tail needs (budgets, statuses, task, a working-set payload or two); the journal
# gets the rest of the budget.
TAIL_RESERVE_MIN = 6_000
ENTITY_COLUMNS = ("id", "kind", "name", "source")
HYPOTHESIS_COLUMNS = ("id", "title", "mechanism")
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


@dataclass
class JournalView(View):
    """A v11 view: the journal's plan and the working-set items the tail shows in full."""

    journal: Plan | None = None
    tail_items: list[Evidence] | None = None
    case_text: str = ""


class V11(V10):
    """v11: static preamble, case, append-only bounded journal, small tail; recall as in v8."""

    version = 11
    supports_recall = True
    stable_sections = ("preamble", "case", "journal")
    journal_format: Format = V11_FORMAT
    protocol = PROTOCOL
    default_budget = (
        DEFAULT_BUDGET  # the budget of the plain name; a later version may choose its own
    )

    def __init__(self, budget: int | None = None):
        self.budget = self.default_budget if budget is None else budget

    @property
    def name(self) -> str:
        base = f"investigation_project_v{self.version}"
        return base if self.budget == self.default_budget else f"{base}:budget={self.budget}"

    def with_options(self, options: str) -> V11:
        """The encoder for `budget=N` (characters, from MIN_BUDGET to MAX_BUDGET)."""
        key, _, value = options.partition("=")
        if (
            key != "budget"
            or not (value.isascii() and value.isdigit())
            or not MIN_BUDGET <= int(value) <= MAX_BUDGET
        ):
            raise UnknownEncoder(
                f"v{self.version} takes one option, budget=N with N from {MIN_BUDGET} to {MAX_BUDGET} characters; got {options!r}",
                details={"option": options},
            )
        return _with_budget(type(self), int(value))

    @cached_property
    def decision_schema(self) -> dict[str, Any]:
        # The base name, so that the preamble is the same under every budget.
        return decision_schema(f"investigation_project_v{self.version}", self.supports_recall)

    @cached_property
    def preamble(self) -> str:
        return "\n\n".join(
            [
                f"# Investigation context\nencoder: investigation_project_v{self.version}",
                self.protocol,
                heading(2, "Output schema") + "\n" + fence(compact(self.decision_schema), "json"),
            ]
        )

    @property
    def tail_reserve(self) -> int:
        return max(TAIL_RESERVE_MIN, self.budget // 8)

    # -- what is shown -----------------------------------------------------------------

    def render(
        self, state: State, hypothesis: str, journal: Journal | None = None
    ) -> RenderedContext:
        """Render as every version does; `journal`, kept by a caller between the turns of one
        analysis, lets the walk resume where the last render stopped (same bytes, less work)."""
        selected = self.selected(state, hypothesis)
        return self.render_view(self.select(state, selected, journal))

    def new_journal(self, state: State) -> Journal:
        """A journal walk to keep between the renders of one analysis's growing state."""
        return Journal(self.journal_limit(self.case_text(state)), self.journal_format)

    def journal_limit(self, case_text: str) -> int:
        """The journal's room: the budget less the preamble, the case and the tail's reserve."""
        return max(self.budget - len(self.preamble) - len(case_text) - 4 - self.tail_reserve, 0)

    def select(
        self, state: State, selected: Hypothesis, journal: Journal | None = None
    ) -> JournalView:
        roles = self.roles(state, selected)
        case_text = self.case_text(state)
        limit = self.journal_limit(case_text)
        fmt = self.journal_format
        kept = journal is not None and journal.limit == limit and journal.fmt is fmt
        walked = journal.plan(state) if kept else plan(state, limit, fmt)
        in_tail = {eid for eid in roles if eid in walked.archived_ids}
        tail_items = sorted((ev for ev in walked.archived if ev.id in in_tail), key=lambda e: e.id)
        return JournalView(
            state=state, selected=selected, shown=walked.shown + tail_items,
            indexed=[ev for ev in walked.archived if ev.id not in in_tail] if in_tail else walked.archived, roles=roles,
            journal=walked, tail_items=tail_items, case_text=case_text,
        )  # fmt: skip

    def references(self, view: View) -> dict[str, str]:
        return dict(view.journal.same_as) if isinstance(view, JournalView) and view.journal else {}

    def layout(self, view: View) -> list[Chunk]:
        assert isinstance(view, JournalView)
        return [
            ("preamble", self.preamble),
            ("case", view.case_text),
            # The journal's heading, index and entries as separate blocks of one section: the
            # same bytes as one, and the text is joined once (the index can be megabytes).
            *(("journal", block) for block in self.journal_blocks(view)),
            ("tail", self.tail_section(view)),
        ]

    # -- the stable part -----------------------------------------------------------------

    def case_text(self, state: State) -> str:
        case = state.case
        entities = [[e.id, e.kind, e.name, e.source] for e in case.entities]
        hypotheses = [[h.id, h.title, h.mechanism] for h in state.hypotheses]
        return "\n".join(
            [
                heading(2, "Case"),
                f"analysis: {state.analysis_id}",
                compact(
                    {"title": case.title, "statement": case.statement, "opened_at": case.opened_at}
                ),
                rows_caption(len(entities), "entities"),
                table(ENTITY_COLUMNS, entities),
                rows_caption(len(hypotheses), "hypotheses"),
                table(HYPOTHESIS_COLUMNS, hypotheses),
            ]
        )

    def journal_blocks(self, view: JournalView) -> list[str]:
        """The journal: its heading, the evidence_index once anything is archived, then the entries.

        The entries come one block per iteration (`Plan.cuts`): joined by the layout's blank
        lines they are the body byte for byte, and a provider request sends each as its own
        content block, so the journal of the previous turn ends at a block boundary.
        """
        assert view.journal is not None
        body, cuts = view.journal.body, view.journal.cuts
        ends = [cut - 2 for cut in cuts[1:]] + [len(body)]
        return [
            heading(2, "Journal"),
            view.journal.index_text,
            *(body[a:b] for a, b in zip(cuts, ends)),
        ]

    # -- the tail --------------------------------------------------------------------------

    def tail_section(self, view: JournalView) -> str:
        state, h = view.state, view.selected
        assert view.journal is not None
        recall = {hid: sel.evidence_refs for hid, sel in state.recall.items()}
        rows = [[x.id, x.confidence, x.disposition, x.control.iterations_used, x.control.iteration_limit,
                 x.control.previous_result, recall.get(x.id)] for x in state.hypotheses]  # fmt: skip
        lines = [
            heading(2, "This turn"),
            f"context budget: {self.budget} characters · journal compactions: {view.journal.compactions}"
            f" · archived items: {len(view.journal.archived)}",
            *self.task_lines(view)[:1],
            rows_caption(len(rows), "hypotheses"),
            table(CONTROL_COLUMNS, rows),
            f"selected hypothesis: {h.id} {compact(h.title)} "
            + compact({"plan": h.control.plan, "next_checks": h.control.next_checks}),
            self.status_line(state),
            self.note_status_line(state),
            self.roles_line(view),
        ]
        if view.tail_items:
            lines.append("Working-set items archived in the journal, shown in full here:")
            lines.extend(self.journal_format.evidence_text(ev) for ev in view.tail_items)
        lines.extend(self.task_lines(view)[1:])
        return "\n".join(lines)

    def status_line(self, state: State) -> str:
        return ('evidence budget status: "settled" where an action is set, "none" where not, except: '
                + (", ".join(status_exceptions(state)) or "no exceptions"))  # fmt: skip

    def note_status_line(self, state: State) -> str:
        listed = "; ".join(f"{status} {', '.join(ids)}" for status, ids in notes_by_status(state))
        return "note status: null unless listed: " + (listed or "none listed")

    def roles_line(self, view: JournalView) -> str:
        h = view.selected
        unsettled = sorted(eid for eid, roles in view.roles.items() if "unsettled" in roles)
        selection = view.state.recall.get(h.id)
        recalled = ", ".join(selection.evidence_refs) if selection else "none"
        return (f"previous result of {h.id}: {h.control.previous_result or 'none'} · unsettled results (awaiting "
                f"assessment by their collectors): {', '.join(unsettled) or 'none'} · recalled by {h.id}: {recalled}")  # fmt: skip

    def task_lines(self, view: View) -> list[str]:
        state, h = view.state, view.selected
        budget = state.budget
        lines = [
            f"iteration: {state.iteration} of {budget.max_iterations} · cost used: {compact(budget.cost_used)}{cost_limit(budget)}"
            f" · {h.id}'s iterations: {h.control.iterations_used} of {h.control.iteration_limit}",
        ]
        pending = state.pending_result(h.id)
        if pending is not None:
            lines.append(f'assessment: REQUIRED. {h.id}\'s previous result {pending} is unsettled: include "assessment" '
                         f'with "evidence_ref": "{pending}".')  # fmt: skip
        else:
            lines.append(
                f'assessment: not allowed. {h.id} has no unsettled previous result: omit "assessment".'
            )
        lines.append(
            "Answer for the selected hypothesis with one JSON object that matches the output schema, and nothing else."
        )
        return lines


def status_exceptions(state: State) -> list[str]:
    """`ID status` of every evidence item whose budget status is not the rule's ("settled" with an action, else "none")."""
    return [f"{ev.id} {ev.budget.status}" for ev in state.evidence
            if ev.budget.status != ("settled" if ev.budget.action is not None else "none")]  # fmt: skip


def notes_by_status(state: State) -> list[tuple[str, list[str]]]:
    """The IDs of the notes whose status is set, grouped by status, the statuses in order."""
    by_status: dict[str, list[str]] = {}
    for note in state.notes:
        if note.status is not None:
            by_status.setdefault(note.status, []).append(note.id)
    return sorted(by_status.items())


def cost_limit(budget: Any) -> str:
    """What follows the cost used: ` of <max>`, or that there is no limit."""
    return f" of {compact(budget.max_cost)}" if budget.max_cost is not None else " (no cost limit)"


@lru_cache(maxsize=32)
def _with_budget(cls: type[V11], budget: int) -> V11:
    return cls(budget)


register_lru(
    "budgeted encoders",
    _with_budget,
    holds="v11+ encoders made for a `:budget=N`, by version and budget",
)
