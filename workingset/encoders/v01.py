"""v1: Markdown sections; every record of the state as indented JSON. Decisions: query, conclude.

This module holds the base encoder. Every later version subclasses the one before and
overrides only the hooks its change touches, so each module reads as its delta.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import msgspec
from msgspec.structs import replace

from ..model.state import Evidence, Hypothesis, Note, RowsPayload, State
from ._api import RenderedContext, View
from ._cache import BLOCKS
from ._render import (
    UNKNOWN_PAYLOAD,
    Chunk,
    compact,
    decision_schema,
    empty_rows_remark,
    fence,
    heading,
    indented,
    join_blocks,
    rendered_context,
    selected_hypothesis,
)


def to_plain(value: Any) -> Any:
    """A Struct as plain JSON data, fields in declared order (never the file's key order)."""
    return msgspec.to_builtins(value)


class V1:
    """v1: Markdown sections; every record of the state as indented JSON. Decisions: query, conclude."""

    version = 1
    supports_recall = False
    # Whether a conclusion may cite byte spans of shown payloads (`workingset.model.spans`): a schema
    # change, so only a new version may switch it on; v1–v10 never do.
    supports_spans = False
    evidence_heading = "Evidence"
    # Leading sections identical in every context of a run (the case never changes).
    stable_sections: tuple[str, ...] = ("header", "case")

    @property
    def name(self) -> str:
        return f"investigation_project_v{self.version}"

    @cached_property
    def decision_schema(self) -> dict[str, Any]:
        return decision_schema(self.name, self.supports_recall, spans=self.supports_spans)

    # -- the entry point -------------------------------------------------------------

    def render(self, state: State, hypothesis: str) -> RenderedContext:
        """Render the user message for `hypothesis`; pure, byte-deterministic, never mutates `state`."""
        selected = self.selected(state, hypothesis)
        return self.render_view(self.select(state, selected))

    def selected(self, state: State, hypothesis: str) -> Hypothesis:
        """The hypothesis to render for, or the error `unknown_hypothesis`."""
        return selected_hypothesis(state, hypothesis)

    def render_view(self, view: View) -> RenderedContext:
        """Lay out a selected view as the rendered context."""
        view.refs = self.references(view)
        return rendered_context(self.name, view, self.layout(view), self.stable_sections)

    # -- what is shown -----------------------------------------------------------------

    def select(self, state: State, selected: Hypothesis) -> View:
        """Every evidence item is shown in full, in the state's order."""
        return View(state=state, selected=selected, shown=list(state.evidence), indexed=[])

    def references(self, view: View) -> dict[str, str]:
        """Evidence ID -> earlier shown ID whose payload it repeats (none before v5)."""
        return {}

    # -- layout --------------------------------------------------------------------------

    def layout(self, view: View) -> list[Chunk]:
        return [
            ("header", self.header(view)),
            ("case", self.case_section(view)),
            ("budget", self.budget_section(view)),
            *self.hypotheses_chunks(view),
            ("evidence", self.evidence_section(view)),
            ("notes", self.notes_section(view)),
            ("task", self.task_section(view)),
            ("output_schema", self.schema_section()),
        ]

    def record(self, value: Any) -> str:
        """One record of the state as a JSON code block."""
        return fence(indented(value), "json")

    def header(self, view: View) -> str:
        return f"# Investigation context\nencoder: {self.name}\nanalysis: {view.state.analysis_id}"

    def case_section(self, view: View) -> str:
        return heading(2, "Case") + "\n" + self.record(to_plain(view.state.case))

    def budget_section(self, view: View) -> str:
        return heading(2, "Budget") + "\n" + self.record(to_plain(view.state.budget))

    # -- hypotheses ----------------------------------------------------------------------

    def hypotheses_chunks(self, view: View) -> list[Chunk]:
        chunks: list[Chunk] = [("other_hypotheses", heading(2, "Hypotheses"))]
        for h in view.state.hypotheses:
            category = "selected_hypothesis" if h.id == view.selected.id else "other_hypotheses"
            chunks.append((category, self.hypothesis_block(h, view)))
        return chunks

    def hypothesis_title(self, h: Hypothesis, view: View) -> str:
        mark = " (selected)" if h.id == view.selected.id else ""
        return heading(3, f"Hypothesis {h.id}{mark}")

    def hypothesis_record(self, h: Hypothesis, view: View) -> dict[str, Any]:
        return to_plain(h)

    def hypothesis_block(self, h: Hypothesis, view: View) -> str:
        return self.hypothesis_title(h, view) + "\n" + self.record(self.hypothesis_record(h, view))

    # -- evidence ------------------------------------------------------------------------

    def evidence_section(self, view: View) -> str:
        blocks = [heading(2, self.evidence_heading)]
        if not view.shown:
            blocks.append("(no evidence shown)")
        blocks.extend(self.cached_block(ev, view) for ev in view.shown)
        return join_blocks(blocks)

    def cached_block(self, ev: Evidence, view: View) -> str:
        """The item's block, rendered once per process for what it depends on (see `_cache`)."""
        return BLOCKS.block(self, ev, view, self.evidence_block)

    def evidence_title(self, ev: Evidence, view: View) -> str:
        return heading(3, f"Evidence {ev.id}")

    def evidence_record(self, ev: Evidence, view: View) -> dict[str, Any]:
        # Converting the payload only to replace it would cost the most in v3 and later.
        rec = to_plain(replace(ev, payload=None))
        rec["payload"] = self.payload_record(ev, view)
        return rec

    def payload_record(self, ev: Evidence, view: View) -> Any:
        """What the evidence record holds under `payload` (all of it, in v1)."""
        return to_plain(ev.payload)

    def payload_blocks(self, ev: Evidence, view: View) -> list[str]:
        """Blocks after the record that carry the payload (none in v1: it is in the record)."""
        return []

    def payload_remark(self, ev: Evidence, view: View) -> str:
        if ev.payload is None:
            return UNKNOWN_PAYLOAD
        if isinstance(ev.payload, RowsPayload) and not ev.payload.rows and ev.id not in view.refs:
            return empty_rows_remark(ev)
        return ""

    def evidence_block(self, ev: Evidence, view: View) -> str:
        parts = [self.evidence_title(ev, view), self.record(self.evidence_record(ev, view))]
        parts.extend(self.payload_blocks(ev, view))
        remark = self.payload_remark(ev, view)
        if remark:
            parts.append(remark)
        return "\n".join(parts)

    # -- notes ---------------------------------------------------------------------------

    def shown_notes(self, view: View) -> list[Note]:
        return list(view.state.notes)

    def notes_section(self, view: View) -> str:
        notes = self.shown_notes(view)
        body = "\n".join(self.record(to_plain(n)) for n in notes) if notes else "(no notes)"
        return heading(2, "Notes") + "\n" + body

    # -- the turn ------------------------------------------------------------------------

    def next_kinds(self) -> str:
        kinds = [
            '"query" (run one new query against a source)',
            '"conclude" (settle the hypothesis: a disposition, a diagnosis and the evidence it rests on)',
        ]
        if self.supports_recall:
            kinds.insert(
                1, '"recall" (show up to 4 archived evidence items in full in your next context)'
            )
        return "; ".join(kinds)

    def task_lines(self, view: View) -> list[str]:
        state, h = view.state, view.selected
        budget = state.budget
        cost = f"cost used: {compact(budget.cost_used)}" + (
            f" of {compact(budget.max_cost)}" if budget.max_cost is not None else " (no cost limit)"
        )
        lines = [
            f"iteration: {state.iteration} of {budget.max_iterations} · {cost}",
            f"selected hypothesis: {h.id} {compact(h.title)} "
            f"(its iterations: {h.control.iterations_used} of {h.control.iteration_limit})",
        ]
        pending = state.pending_result(h.id)
        if pending is not None:
            lines.append(
                f'assessment: REQUIRED. {h.id}\'s previous result {pending} is unsettled: include "assessment" '
                f'with "evidence_ref": "{pending}".'
            )
        else:
            lines.append(
                f'assessment: not allowed. {h.id} has no unsettled previous result: omit "assessment".'
            )
        lines.append(f"next: one of {self.next_kinds()}.")
        lines.append("Cite only evidence shown in full in this context.")
        lines.append(
            "Answer with one JSON object that matches the output schema below, and nothing else."
        )
        return lines

    def task_section(self, view: View) -> str:
        return heading(2, "Your turn") + "\n" + "\n".join(self.task_lines(view))

    def schema_section(self) -> str:
        return heading(2, "Output schema") + "\n" + self.record(self.decision_schema)
