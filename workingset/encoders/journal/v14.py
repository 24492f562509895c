"""v14: v13's layout with a hard bound: every context is at most its budget, and nothing is lost.

The preamble, the case, the journal entries, the index rows and the tail lines are v13's.
What changes is what could make a v13 context pass its budget (issue 22):

- an entry longer than a page (an 868,167-character `git diff`) is written as its first page,
  its length and its page count (`walk14`); a recall can ask for any page of it;
- compactions archive notes and decision rows too, each addressable by its reference
  (`N…`, `H<n>/<k>`), and index rows become ID ranges when they alone would pass their room;
- the tail shows at most five entries (the result to assess and up to four recalled ones),
  each at most a page, and the statuses of what the context shows;
- a case longer than its room is paged like an entry (`case`);
- should the parts still pass the budget (very many hypotheses, notes shown with statuses),
  the journal's room shrinks by the excess and the walk runs again, so the bound always holds.

Every parameter is a stated rule of the budget (see `encodings/v14.md`): the budget itself is
a quarter of the smallest context window of the models billed, in characters at 2 per token;
the tail's reserve is a quarter of the budget; a page is a fifth of what the reserve leaves
after a fifth for its lines, shared by the tail's five entries (`budget // 25`); compactions
come at v12's points (the journal's room, then half a room more), so between two of them the
journal only grows, block by block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...errors import TooLarge
from ...io.numbers import ascii_int
from ...model.state import ENTRY_REF, PAGE_REF, State
from .._render import (
    _ASSESSMENT,
    _CONCLUDE,
    _EID,
    _NOTES,
    _QUERY,
    compact,
    fence,
    heading,
    ref_array,
)
from .v11 import JournalView
from .v12 import _value
from .v13 import EXCERPT, V13, V13_FORMAT, schema_outline
from .walk import Journal
from .walk14 import (
    Journal14,
    Plan14,
    decision_refs,
    page,
    page_bounds,
    paged_text,
    same_as_targets,
    walk,
)

# The smallest context window of the models billed (Claude: "1M (or 200k) tokens", Claude Platform
# Docs, "Context windows", read 2026-12-02), a quarter of it, at 2 characters per token (a count
# that overstates the tokens of English and code, so the context stays within the quarter).
SMALLEST_WINDOW_TOKENS, WINDOW_SHARE, CHARS_PER_TOKEN = 200_000, 4, 2
DEFAULT_BUDGET = SMALLEST_WINDOW_TOKENS // WINDOW_SHARE * CHARS_PER_TOKEN
TAIL_SLOTS = 5  # the result to assess and up to four recalled entries (MAX_RECALL)

# The schema's form of the model's patterns (`^…$`: the outline writes it; Python's whole-string check is the model's).
_REF, _PAGE = f"^{ENTRY_REF}$", f"^{PAGE_REF}$"
_RECALL14 = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "evidence_refs"],
    "properties": {
        "kind": {"const": "recall"},
        "evidence_refs": ref_array(_EID),
        "entries": ref_array({"type": "string", "pattern": _REF}),
        "pages": ref_array({"type": "string", "pattern": _PAGE}),
    },
}

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Answer for the selected hypothesis with one JSON object matching the output schema, nothing else.

Journal, oldest first; each entry is written once and never changes:
- Evidence: `ID collector #iteration scope captured_at`, then key=value for each set field of capture, action, cost, language or rows (count), same_as (an earlier item with the same payload, shown or archived); unset: null, cost 0; quoted values are JSON. Then `query:` (inline or fenced) and the payload: text fenced, rows as jsonl, column names first. payload=unknown: not retained, not an empty result.
- Note or question: `ID hypothesis #iteration kind`, text fenced.
- Decision `H<n>/<k>` (hypothesis H<n>'s k-th decision): `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced.
An entry longer than a page is `REF paged: N chars, K pages; page 1:` and its first page fenced; the pages joined are the entry.
Past the budget, the oldest entries are archived into evidence_index: an evidence row is its head with payload=archived or unknown, ids= (from the payload) and pages= if paged, then `query:` on one line, raw if plain and not starting with `"`, else JSON; a text over 200 characters shows its first 160: `query~N:`, `key~N=` (N: its length). A note row is `ID hypothesis #iteration kind archived`, a decision row `H<n>/<k> #iteration kind archived`. Older rows become ranges: `A..B` names every ID of that kind from A to B. A row proves nothing: recall up to 4 references (evidence_refs, entries: N…, H<n>/<k>, case) to see them next turn, pages: ["REF:page"] for another page than the first.

"This turn": iteration/limit, cost used/limit (no /limit: no cost limit; no cost: nothing spent, no limit); per hypothesis (* selected): ID, confidence, disposition, iterations used/limit, previous result (- none), recalled if any; plan, next checks; budget statuses, of the evidence this context shows, other than settled (action set), none (no action) or unsettled for the result to assess; note statuses of the notes it shows; archived or paged entries shown this turn (the result to assess, recalled), each whole or as `REF page P/K, N chars:` and that page fenced; the result to assess. Lines with nothing to list are left out.

Rules: "assessment" exactly when "assess:" names a result, for it; its confidence becomes the hypothesis's. Cite only evidence shown in this context (whole or a page). A decision breaking a rule is rejected and changes nothing: answer again."""


@dataclass
class View14(JournalView):
    """A v14 view: the journal's plan, the tail's entries (reference, text) and the case as written."""

    plan14: Plan14 | None = None
    tail_entries: list[tuple[str, str]] = field(default_factory=list)
    tail_refs: frozenset[str] = frozenset()


class V14(V13):
    """v14: v13 with a hard bound (paged entries, every kind archived, ranged index rows) and paged recall."""

    version = 14
    journal_format = V13_FORMAT  # v13's entries and index rows; v14 changes the walk (`walk14`)
    protocol = PROTOCOL
    default_budget = DEFAULT_BUDGET
    supports_pages = True
    # OpenAI caches the response format before the messages: v14's strict schema is the same every
    # turn (assessment required, nullable; rule A is checked on submit), and a null assessment is none.
    stable_strict_schema = True

    @property
    def tail_reserve(self) -> int:
        return max(6_000, self.budget // 4)

    @property
    def page_size(self) -> int:
        """A page, fence included: the tail's reserve less a fifth for its lines, shared by its five entries."""
        return (self.tail_reserve - self.tail_reserve // 5) // TAIL_SLOTS

    @property
    def case_room(self) -> int:
        return self.budget // 8

    @cached_property
    def decision_schema(self) -> dict[str, Any]:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"investigation_project_v{self.version} decision",
            "type": "object",
            "additionalProperties": False,
            "required": ["next"],
            "properties": {
                "assessment": _ASSESSMENT,
                "notes": _NOTES,
                "next": {"oneOf": [_QUERY, _RECALL14, _CONCLUDE]},
            },
        }

    @cached_property
    def preamble(self) -> str:
        return "\n\n".join(
            [
                f"# Investigation context\nencoder: investigation_project_v{self.version}",
                self.protocol,
                heading(2, "Output schema")
                + "\n`?`: optional key; no other keys.\n"
                + schema_outline(self.decision_schema),
            ]
        )

    # -- entries by reference --------------------------------------------------------------

    def entry_text(
        self, state: State, ref: str, same_as: dict[str, str] | None = None
    ) -> str | None:
        """The full text of the entry `ref` names (evidence, note, `H<n>/<k>`, `case`), or None.

        `same_as` is the state's `same_as_targets`, when the caller has them."""
        fmt = self.format_of(state)
        if ref == "case":
            return self.full_case_text(state)
        if ref[0] == "E":
            ev = next((e for e in state.evidence if e.id == ref), None)
            targets = same_as_targets(state) if same_as is None else same_as
            return None if ev is None else fmt.entry_text("evidence", ev, None, targets.get(ref))
        if ref[0] == "N":
            note = next((n for n in state.notes if n.id == ref), None)
            return None if note is None else fmt.entry_text("note", note, None)
        hid, _, k = ref.partition("/")
        h, row = state.hypothesis(hid), ascii_int(k)
        if h is None or row is None or not 1 <= row <= len(h.history):
            return None
        return fmt.entry_text("history", h.history[row - 1], hid)

    def format_of(self, state: State) -> Any:
        """How this state's entries are written: v13's entries (a later version may write them per analysis)."""
        return self.journal_format

    def page_count(self, state: State, ref: str) -> int:
        """How many pages the entry `ref` has (1 when it fits a page; 0 when there is no such entry)."""
        text = self.entry_text(state, ref)
        if text is None:
            return 0
        return 1 if len(text) <= self.page_size else len(page_bounds(text, self.page_size))

    # -- what is shown -----------------------------------------------------------------

    def render(self, state: State, hypothesis: str, journal: Journal | None = None) -> Any:
        """Render within the budget: if the parts pass it, the journal's room shrinks by the excess and the walk reruns."""
        selected = self.selected(state, hypothesis)
        limit = None
        while True:
            view = self.select(state, selected, journal if limit is None else None, limit=limit)
            out = self.render_view(view)
            if out.chars <= self.budget:
                return out
            room = self.journal_limit(view.case_text) if limit is None else limit
            if (
                room == 0
            ):  # what no walk shrinks (preamble, case page, the tail's lines) passes the budget
                raise TooLarge(
                    f"{self.name}: the preamble, the case and this turn's lines alone take {out.chars} characters, "
                    f"more than the budget of {self.budget}; render with a larger budget (v14:budget=N; "
                    "an analysis moves to one with `workingset budget`)",
                    details={"chars": out.chars, "budget": self.budget},
                )
            limit = max(room - (out.chars - self.budget), 0)

    def fixed_chars(self, state: State, hypothesis: str) -> int:
        """The characters of this context with no room for the journal: what no walk shrinks (`render` refuses past the budget)."""
        view = self.select(state, self.selected(state, hypothesis), None, limit=0)
        return self.render_view(view).chars

    def full_case_text(self, state: State) -> str:
        return super().case_text(state)

    def case_whole(self, state: State, case_text: str) -> bool:
        """Whether the context shows the whole case (`case_text`: its case section)."""
        return case_text == self.full_case_text(state)

    def case_text(self, state: State) -> str:
        """v13's case; past its room (an eighth of the budget), its first page and its length (recall `case`)."""
        text = self.full_case_text(state)
        if len(text) <= self.case_room:
            return text
        paged, _count = paged_text("case", text, self.page_size)
        return "\n".join([heading(2, "Case"), f"analysis: {state.analysis_id}",
                          f"context budget: {self.budget} characters", paged])  # fmt: skip

    def new_journal(self, state: State) -> Journal14:
        """A v14 walk to keep between the renders of one analysis's growing state (same bytes as a fresh walk)."""
        return Journal14(
            self.journal_limit(self.case_text(state)), self.page_size, self.journal_format
        )

    def select(
        self, state: State, selected: Any, journal: Journal | None = None, limit: int | None = None
    ) -> View14:
        roles = self.roles(state, selected)
        case_text = self.case_text(state)
        room = self.journal_limit(case_text) if limit is None else limit
        plan = self.plan(state, journal, room, case_text)
        tail = self.tail_entries(state, selected, plan, case_text)
        tail_refs = frozenset(ref for ref, _ in tail)
        # The tail's evidence, in evidence order (at most five: no pass over the whole state each turn).
        tail_items = sorted((state.evidence[plan.positions[r]] for r in tail_refs if r in plan.positions),
                            key=lambda ev: plan.positions[ev.id])  # fmt: skip
        in_journal = {ev.id for ev in plan.shown}
        extra = [ev for ev in tail_items if ev.id not in in_journal]
        return View14(
            state=state, selected=selected, shown=plan.shown + extra,
            indexed=[ev for ev in plan.archived if ev.id not in tail_refs] if extra else plan.archived, roles=roles,
            journal=None, tail_items=tail_items, case_text=case_text,
            plan14=plan, tail_entries=tail, tail_refs=tail_refs,
        )  # fmt: skip

    def plan(self, state: State, journal: Journal | None, room: int, case_text: str) -> Plan14:
        """The journal within `room`: the kept walk resumed (started over when its room changed), else a fresh walk."""
        if type(journal) is Journal14:  # a later version's journal walks another way
            if journal.limit != room or journal.page_size != self.page_size:
                journal.restart(room, self.page_size, self.journal_format)
            return journal.plan(state)
        return walk(state, room, self.page_size, self.journal_format)

    def tail_entries(
        self, state: State, selected: Any, plan: Plan14, case_text: str
    ) -> list[tuple[str, str]]:
        """The entries the tail shows: the result to assess when archived, and each recalled one not already in view.

        An entry is shown whole when it fits a page, else as the page asked for (page 1 by
        default; page 1 of an entry the journal pages is already in view).
        """
        wanted: list[str] = []
        previous = selected.control.previous_result
        if previous is not None and previous in plan.archived_refs:
            wanted.append(previous)
        selection = state.recall.get(selected.id)
        pages: dict[str, str] = {}  # reference -> the page number as the selection writes it
        if selection is not None:
            wanted += [r for r in [*selection.evidence_refs, *selection.entries] if r not in wanted]
            pages = {item.rpartition(":")[0]: item.rpartition(":")[2] for item in selection.pages}
        out: list[tuple[str, str]] = []
        for ref in wanted:
            written = pages.get(ref, "1")
            number = ascii_int(written) or 0  # more digits than any page count: no such page
            in_view = ref in plan.whole_refs or (ref in plan.shown_refs and number == 1)
            if ref == "case":
                in_view = self.case_whole(state, case_text) or number == 1
            if in_view:
                continue
            text = self.entry_text(state, ref, plan.same_as)
            if text is None:
                continue
            if len(text) <= self.page_size:
                out.append((ref, f"{ref}:\n{text}" if ref[0] == "H" else text))
                continue
            body = page(text, self.page_size, number)
            count = len(page_bounds(text, self.page_size))
            if body is None:  # a stored selection can name a page another budget had
                out.append((ref, f"{ref} page {written}/{count}, {len(text)} chars: no such page"))
            else:
                out.append(
                    (ref, f"{ref} page {written}/{count}, {len(text)} chars:\n" + fence(body))
                )
        return out

    def journal_blocks(self, view: JournalView) -> list[str]:
        assert isinstance(view, View14) and view.plan14 is not None
        # The entries one block per iteration (`Plan14.blocks`): the same bytes as one body.
        return [heading(2, "Journal"), view.plan14.index_text, *(view.plan14.blocks or [""])]

    def references(self, view: Any) -> dict[str, str]:
        if not isinstance(view, View14) or view.plan14 is None:
            return {}
        shown = {ev.id for ev in view.shown}
        return {k: v for k, v in view.plan14.same_as.items() if k in shown}

    # -- the tail --------------------------------------------------------------------------

    # -- the tail: v13's hooks, with what v14 shows ----------------------------------------
    # v13's budget and task lines as they are; the others say what this context shows: the
    # recalled entries too, a plan cut at a page, only the statuses of the entries in view,
    # and the archived or paged entries this turn brings back.

    def hypotheses_lines(self, view: JournalView) -> list[str]:
        recall = {hid: [*sel.evidence_refs, *sel.entries] for hid, sel in view.state.recall.items()}
        return [
            self.hypothesis_mark(x, view) + self.hypothesis_line(x, recall.get(x.id))
            for x in view.state.hypotheses
        ]

    def selected_lines(self, view: JournalView) -> list[str]:
        # A plan or next checks longer than a page (never seen in a run) is cut as v13 cuts a row's text.
        control, lines = view.selected.control, []
        if control.plan is not None:
            lines.append(_bounded("plan", compact(control.plan), control.plan, self.page_size))
        if control.next_checks:
            checks = compact(control.next_checks)
            lines.append(_bounded("next checks", checks, checks, self.page_size))
        return lines

    def status_lines(self, view: JournalView) -> list[str]:
        """The budget and note statuses of what this context shows (journal and tail), in evidence order."""
        assert isinstance(view, View14) and view.plan14 is not None
        state, plan = view.state, view.plan14
        pending = state.pending_result(view.selected.id)
        seen = sorted(
            (ev for ev in view.shown if ev.id != pending), key=lambda ev: plan.positions[ev.id]
        )
        exceptions = [f"{ev.id} {ev.budget.status}" for ev in seen
                      if ev.budget.status != ("settled" if ev.budget.action is not None else "none")]  # fmt: skip
        lines = []
        if exceptions:
            lines.append("budget status: " + ", ".join(exceptions))
        in_view = plan.shown_refs | view.tail_refs
        by_status: dict[str, list[str]] = {}
        for note in state.notes:
            if note.status is not None and note.id in in_view:
                by_status.setdefault(note.status, []).append(note.id)
        if by_status:
            listed = (
                f"{_value(status)} {', '.join(ids)}" for status, ids in sorted(by_status.items())
            )
            lines.append("note status: " + "; ".join(listed))
        return lines

    def tail_item_lines(self, view: JournalView) -> list[str]:
        assert isinstance(view, View14)
        if not view.tail_entries:
            return []
        return ["archived or paged, shown this turn:", *(text for _, text in view.tail_entries)]


def _bounded(name: str, written: str, value: str, room: int) -> str:
    """`name: <written>`; past `room` characters, `name~N: ` and the JSON string of the first EXCERPT (v13's cut)."""
    if len(written) <= room:
        return f"{name}: {written}"
    return f"{name}~{len(value)}: {compact(value[:EXCERPT])}"


__all__ = ["DEFAULT_BUDGET", "V14", "decision_refs"]
