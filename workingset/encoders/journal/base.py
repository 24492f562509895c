"""The journal family's base: a static preamble, the case, the journal, and "This turn".

Order, first to last: (1) the preamble — the encoder's name, its protocol in words, the
output schema — identical for every turn and every analysis; (2) the case and the
hypotheses' fixed parts; (3) the journal (`walk`): every evidence item, note and decision in
the order it happened, written once and never changed, compacted into `evidence_index` rows
past its room; (4) the tail, "This turn", the only part that changes from turn to turn. The
stable prefix (preamble, case, journal) is where prompt-cache breakpoints go.

The context budget in characters is part of the encoder's name (`investigation_project_v11:budget=N`;
the plain name is the version's `default_budget`), so every stored context records it.

A version (v11, and each later one subclassing the one before) supplies its protocol, its
journal `Format` and the tail's groups of lines, each a hook: `budget_lines`,
`hypotheses_lines`, `selected_lines`, `status_lines`, the archived working-set items
(`tail_items_caption`) and `task_lines`; and overrides only the hooks its change touches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from ...errors import UnknownEncoder
from ...io.caches import register_lru
from ...io.numbers import ascii_int
from ...model.state import Evidence, Hypothesis, State
from .._api import RenderedContext, View
from .._render import (
    Chunk,
    compact,
    decision_schema,
    fence,
    heading,
    rendered_context,
    rows_caption,
    selected_hypothesis,
    table,
    turn_roles,
)
from .walk import Format, Journal, Plan, plan

DEFAULT_BUDGET = 120_000
MIN_BUDGET, MAX_BUDGET = 20_000, 100_000_000
# Room the tail needs (budgets, statuses, task, a working-set payload or two); the journal
# gets the rest of the budget.
TAIL_RESERVE_MIN = 6_000
ENTITY_COLUMNS = ("id", "kind", "name", "source")
HYPOTHESIS_COLUMNS = ("id", "title", "mechanism")


@dataclass
class JournalView(View):
    """A journal view: the journal's plan and the working-set items the tail shows in full."""

    journal: Plan | None = None
    tail_items: list[Evidence] | None = None
    case_text: str = ""


class JournalEncoder(ABC):
    """The journal family: preamble, case, append-only bounded journal, tail; recall as in v8."""

    version: int
    protocol: str  # the preamble's words: how to read the context and how to answer
    journal_format: Format
    tail_items_caption: str  # the line before the archived working-set items "This turn" shows
    supports_recall = True
    supports_spans = False  # see `V1.supports_spans`
    stable_sections: tuple[str, ...] = ("preamble", "case", "journal")
    default_budget = DEFAULT_BUDGET  # the budget of the plain name; a version may choose its own

    def __init__(self, budget: int | None = None):
        self.budget = self.default_budget if budget is None else budget

    @property
    def name(self) -> str:
        base = f"investigation_project_v{self.version}"
        return base if self.budget == self.default_budget else f"{base}:budget={self.budget}"

    def with_options(self, options: str) -> JournalEncoder:
        """The encoder for `budget=N` (characters, from MIN_BUDGET to MAX_BUDGET)."""
        key, _, value = options.partition("=")
        budget = ascii_int(value)
        if key != "budget" or budget is None or not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise UnknownEncoder(
                f"v{self.version} takes one option, budget=N with N from {MIN_BUDGET} to {MAX_BUDGET} characters; got {options[:100]!r}",
                details={"option": options[:100]},
            )
        return _with_budget(self, budget)

    @cached_property
    def decision_schema(self) -> dict[str, Any]:
        # The base name, so that the preamble is the same under every budget.
        return decision_schema(
            f"investigation_project_v{self.version}",
            self.supports_recall,
            spans=self.supports_spans,
        )

    # -- the preamble --------------------------------------------------------------------

    @cached_property
    def preamble(self) -> str:
        return "\n\n".join(
            [
                f"# Investigation context\nencoder: investigation_project_v{self.version}",
                self.protocol,
                self.schema_section(),
            ]
        )

    def schema_section(self) -> str:
        """The preamble's last part: the decision's JSON Schema as one compact line."""
        return heading(2, "Output schema") + "\n" + fence(compact(self.decision_schema), "json")

    @property
    def tail_reserve(self) -> int:
        return max(TAIL_RESERVE_MIN, self.budget // 8)

    # -- what is shown -------------------------------------------------------------------

    def render(
        self, state: State, hypothesis: str, journal: Journal | None = None
    ) -> RenderedContext:
        """Render the user message for `hypothesis` (pure, byte-deterministic); `journal`, kept by a
        caller between the turns of one analysis, lets the walk resume where the last render stopped
        (same bytes, less work)."""
        selected = self.selected(state, hypothesis)
        return self.render_view(self.select(state, selected, journal))

    def selected(self, state: State, hypothesis: str) -> Hypothesis:
        """The hypothesis to render for, or the error `unknown_hypothesis`."""
        return selected_hypothesis(state, hypothesis)

    def render_view(self, view: View) -> RenderedContext:
        """Lay out a selected view as the rendered context."""
        view.refs = self.references(view)
        return rendered_context(self.name, view, self.layout(view), self.stable_sections)

    def roles(self, state: State, selected: Hypothesis) -> dict[str, list[str]]:
        """Evidence ID -> its roles this turn (`_render.ROLE_ORDER`)."""
        return turn_roles(state, selected, self.supports_recall)

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
        if journal is not None and type(journal) is Journal:
            if journal.limit != limit or journal.fmt is not fmt:
                journal.restart(limit, fmt)
            walked = journal.plan(state)
        else:
            walked = plan(state, limit, fmt)
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

    # -- the tail ------------------------------------------------------------------------

    def tail_section(self, view: JournalView) -> str:
        """The tail, "This turn": its heading, then each group of lines (a hook), in this order."""
        return "\n".join(
            [
                heading(2, "This turn"),
                *self.budget_lines(view),
                *self.hypotheses_lines(view),
                *self.selected_lines(view),
                *self.status_lines(view),
                *self.tail_item_lines(view),
                *self.task_lines(view),
            ]
        )

    @abstractmethod
    def budget_lines(self, view: JournalView) -> list[str]:
        """The run's budgets: iteration, cost."""

    @abstractmethod
    def hypotheses_lines(self, view: JournalView) -> list[str]:
        """Every hypothesis's mutable state: confidence, disposition, control, recalled IDs."""

    @abstractmethod
    def selected_lines(self, view: JournalView) -> list[str]:
        """The selected hypothesis's plan and next checks."""

    @abstractmethod
    def status_lines(self, view: JournalView) -> list[str]:
        """Budget and note statuses, which the journal leaves out because they change."""

    def tail_item_lines(self, view: JournalView) -> list[str]:
        """The working-set items the journal archived, in full: the caption, then each entry."""
        if not view.tail_items:
            return []
        return [
            self.tail_items_caption,
            *(self.journal_format.evidence_text(ev) for ev in view.tail_items),
        ]

    @abstractmethod
    def task_lines(self, view: JournalView) -> list[str]:
        """What to answer: whether an assessment is due, for which result."""


def render_kept(
    encoder: Any, state: State, hypothesis: str, kept: dict[str, Journal]
) -> RenderedContext:
    """Render `state`, a journal encoder resuming the walk it keeps in `kept` (by encoder name).

    The renders of one analysis's growing state (a session's turns, an import's steps, a stored
    run's contexts) share their walk, so each costs what is new; the bytes are a fresh render's.
    When the state changes the walk's room or case (v15's evidence defaults appear with the first
    item), the kept journal starts over with the new ones and resumes from then on. Any other
    encoder renders the state whole."""
    if not isinstance(encoder, JournalEncoder):
        return encoder.render(state, hypothesis)
    journal = kept.get(encoder.name)
    if journal is None:
        journal = kept[encoder.name] = encoder.new_journal(state)
    return encoder.render(state, hypothesis, journal=journal)


def recalled(state: State, hypothesis: str) -> list[str] | None:
    """The evidence IDs `hypothesis` recalled (None when it has no recall selection)."""
    selection = state.recall.get(hypothesis)
    return None if selection is None else selection.evidence_refs


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
def _with_budget(encoder: JournalEncoder, budget: int) -> JournalEncoder:
    """One encoder per version and budget (keyed by the encoder asked, as the registry holds one per version)."""
    return type(encoder)(budget)


register_lru(
    "budgeted encoders",
    _with_budget,
    holds="v11+ encoders made for a `:budget=N`, by version and budget",
)
