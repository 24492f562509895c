"""A transcript baseline: how a transcript agent resends a state, and what it hides of it.

Each baseline renders a state (for a hypothesis) purely and deterministically, as a chat
transcript carries it: the task, then every step in order — the agent's notes, its action
(the exact query, with its origin) and the output. A strategy says only what it hides: its
`plan` maps outputs to the placeholder that replaces them, may drop whole steps, and may
put a summary after the task. Everything else (the text, the request body, the count of
unrecoverable outputs) follows from the plan here, the same way for every strategy.

A step is what the agents count: an action and its output, i.e. an evidence item with a
query, in ID order. Messages that answer no action (`query: null`, such as imported
format-error feedback) are not steps: they neither count towards a window nor are ever
masked. Notes come before the evidence of their iteration and are kept unless their step
is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from ...errors import SessionError
from ...model.state import Evidence, Note, RowsPayload, State
from ...runs.fixed_prompt import FixedPrompt
from .bodies import Part, body

MASKED = "<MASKED>"


class Plan(NamedTuple):
    """What a strategy hides of a state: replaced outputs, dropped evidence and notes, a summary."""

    replaced: dict[str, str]  # evidence ID -> the placeholder shown instead of its output
    dropped: frozenset[str] = frozenset()  # evidence and note IDs left out altogether
    summary: str | None = None  # shown after the task, in place of what was dropped


def output_text(ev: Evidence) -> str | None:
    """The output as the agent was shown it: text verbatim, rows as JSON lines."""
    payload = ev.payload
    if payload is None:
        return None
    if isinstance(payload, RowsPayload):
        lines = [msgspec.json.encode(payload.columns).decode()]
        lines += [msgspec.json.encode(row).decode() for row in payload.rows]
        return "\n".join(lines)
    return payload.text


def steps(state: State) -> list[Evidence]:
    """The state's steps (evidence answering an action), in ID order."""
    return [ev for ev in state.evidence if ev.capture.query is not None]


def check(state: State, hypothesis: str) -> None:
    """Refuse a hypothesis the state does not hold (`unknown_hypothesis`)."""
    if state.hypothesis(hypothesis) is None:
        known = ", ".join(h.id for h in state.hypotheses)
        raise SessionError(
            f"no hypothesis {hypothesis} in analysis {state.analysis_id}; known: {known}",
            code="unknown_hypothesis",
        )


def _masked(text: str) -> str:
    return MASKED


# The latest plans (`Baseline.planned`): a state's strategies are asked for theirs several times in a row.
_PLANS: dict[tuple[int, int, str], tuple[Any, State, Plan]] = {}
_PLANS_KEPT = 64


@dataclass(frozen=True)
class Baseline:
    """A transcript strategy: keep the last `keep` outputs verbatim (None: all), mask the rest.

    Subclasses override `plan`. `fixed` is the source agent's fixed prompt, which only the
    request body carries (`bodies.py`); bind one with `with_fixed_prompt`.
    """

    name: str
    keep: int | None = None
    placeholder: Callable[[str], str] = _masked
    fixed: FixedPrompt | None = field(default=None, compare=False)

    def plan(self, state: State, hypothesis: str) -> Plan:
        """All but the last `keep` steps' outputs replaced by the placeholder."""
        if self.keep is None:
            return Plan({})
        older = steps(state)[: max(0, len(steps(state)) - self.keep)]
        return Plan(
            {ev.id: self.placeholder(text) for ev in older if (text := output_text(ev)) is not None}
        )

    def planned(self, state: State, hypothesis: str) -> Plan:
        """`plan`, computed once for the same strategy, state object and hypothesis (the text, what it hides and the body all ask)."""
        key = (id(self), id(state), hypothesis)
        hit = _PLANS.get(key)
        if hit is not None and hit[0] is self and hit[1] is state:
            return hit[2]
        plan = self.plan(state, hypothesis)
        _PLANS[key] = (self, state, plan)  # held, so neither ID is reused while the entry lives
        if len(_PLANS) > _PLANS_KEPT:
            _PLANS.pop(next(iter(_PLANS)))
        return plan

    def with_fixed_prompt(self, fixed: FixedPrompt | None) -> Baseline:
        """This strategy, sending `fixed` (the run's agent's fixed prompt) with every request."""
        from dataclasses import replace

        return replace(self, fixed=fixed)

    def masked(self, state: State, hypothesis: str | None = None) -> set[str]:
        """IDs of the action outputs this strategy hides from the agent: replaced or dropped."""
        plan = self.planned(state, hypothesis or state.hypotheses[0].id)
        return set(plan.replaced) | {
            ev.id for ev in state.evidence if ev.id in plan.dropped and ev.payload is not None
        }

    def unrecoverable(self, state: State, hypothesis: str) -> int:
        """How many earlier outputs this rendering hid (gone for good from the agent's context)."""
        check(state, hypothesis)
        return len(self.masked(state, hypothesis))

    def __call__(self, state: State, hypothesis: str) -> str:
        """Render the transcript of `state` (pure, deterministic, never mutates the state)."""
        return "\n\n".join(self.messages(state, hypothesis)) + "\n"

    def messages(self, state: State, hypothesis: str) -> list[str]:
        """The transcript's messages in order (the task, then each note, action and output)."""
        return [part.text for part in self.parts(state, hypothesis)]

    def parts(self, state: State, hypothesis: str, task: bool = True) -> list[Part]:
        """The transcript's blocks with their roles; `task=False` leaves the task block out."""
        check(state, hypothesis)
        plan = self.planned(state, hypothesis)
        out = [Part("user", f"TASK: {state.case.title}\n{state.case.statement}")] if task else []
        if plan.summary is not None:
            out.append(Part("user", plan.summary))
        notes: dict[int, list[Note]] = {}
        evidence: dict[int, list[Evidence]] = {}
        for note in state.notes:  # grouped once: a long run has thousands of items
            if note.id not in plan.dropped:
                notes.setdefault(note.iteration, []).append(note)
        for item in state.evidence:
            if item.id not in plan.dropped:
                evidence.setdefault(item.iteration, []).append(item)
        for it in sorted(notes.keys() | evidence.keys()):
            for note in notes.get(it, ()):
                out.append(Part("assistant", f"{note.kind.upper()}:\n{note.text}"))
            for ev in evidence.get(it, ()):
                if ev.capture.query is not None:
                    out.append(
                        Part("assistant", f"ACTION ({ev.capture.origin}):\n{ev.capture.query}")
                    )
                    label = "OUTPUT"
                else:
                    label = f"MESSAGE ({ev.capture.origin})"
                text = output_text(ev)
                if text is None:
                    out.append(Part("user", f"{label}: (not kept)"))
                else:
                    out.append(Part("user", f"{label}:\n{plan.replaced.get(ev.id, text)}"))
        return out

    def body(
        self, state: State, hypothesis: str, provider: str = "anthropic", model: str | None = None
    ) -> dict[str, Any]:
        """The request body the source agent would send for this context (see `bodies.body`)."""
        return body(self, state, hypothesis, provider, model)
