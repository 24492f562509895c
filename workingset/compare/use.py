"""What each step used, and whether each strategy showed it (`compare --use`).

For every context of a run whose next step is recorded, the identifiers that step *used*:
harvested (`model.used.harvest_used`) from what the agent wrote next, and kept only when
they occur in an earlier output (an evidence payload of the context's state) and not in the
case, the task or the agent's fixed prompt. What the agent wrote next is read from the run's
last state, by the iteration the step consumed (the context's state iteration + 1):

- an imported trajectory: the step's thoughts (its notes) and its action (the command, the
  capture's `query` of the evidence it produced);
- an exported analysis: the decision's notes, its query, source and purpose, its rationale
  or diagnosis (the history entries it wrote) and the evidence IDs it cited (`E…`).

A cited evidence ID is used as a whole item. Per strategy and context, each used identifier is

- **in view**: the context's text holds it (a cited item: the first `HEAD` characters of
  its payload are in the text, i.e. it or its first page is shown);
- **recall away**: not in view, and one recall decision (`recalls.recall_state`: the latest
  earlier output that holds it, and for v14 the page that holds it) brings it into the text
  of the context that follows (checked by rendering that context);
- **gone**: neither (a masked or cleared transcript, a version without recall, or a name a
  recall page does not hold whole): a real agent re-runs the command.

`Use` counts identifiers and steps; `compare_use` measures a run and bills it with the recall
and re-run turns those needs imply (`recalls.py`). Nothing here calls a model.

Stable module API: `Use`, `Need`, `step_needs`, `StepUse`, `compare_use`, `UseComparison`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..model.harvest import payload_text
from ..model.state import State, StoredContext
from ..model.used import harvest_used
from ..runs.fixed_prompt import FixedPrompt

HEAD = 200  # characters of a cited item's payload that, in the text, count it as shown


@dataclass(frozen=True)
class Use:
    """Counts of used identifiers (`used` = `in_view` + `recall_away` + `gone`) and of steps."""

    used: int = 0
    in_view: int = 0
    recall_away: int = 0
    gone: int = 0
    steps: int = 0  # contexts whose next step used at least one identifier
    steps_needing_recall: int = 0  # steps with something one recall away
    steps_with_gone: int = 0  # steps with something gone

    def __add__(self, other: Use) -> Use:
        return Use(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Use)))

    def share_in_view(self) -> float | None:
        """The share of used identifiers in view, or None when nothing was used."""
        return self.in_view / self.used if self.used else None

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(Use)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Use:
        return cls(**{f.name: int(data[f.name]) for f in fields(Use)})


@dataclass(frozen=True)
class Need:
    """One identifier a step used: its text (or a cited evidence ID), and the earlier outputs holding it."""

    value: str
    holders: tuple[
        str, ...
    ]  # evidence IDs of the context's state whose payload holds it, oldest first
    cited: bool = False  # `value` is an evidence ID the decision cited

    def in_text(self, text: str, heads: Mapping[str, str]) -> bool:
        """Whether a context's text shows it."""
        if self.cited:
            return heads[self.value] in text
        return self.value in text


@dataclass(frozen=True)
class StepUse:
    """One strategy's view of one step's needs."""

    in_view: tuple[Need, ...] = ()
    recall_away: tuple[Need, ...] = ()
    gone: tuple[Need, ...] = ()

    def use(self) -> Use:
        n = len(self.in_view) + len(self.recall_away) + len(self.gone)
        return Use(used=n, in_view=len(self.in_view), recall_away=len(self.recall_away), gone=len(self.gone),
                   steps=int(n > 0), steps_needing_recall=int(bool(self.recall_away)),
                   steps_with_gone=int(bool(self.gone)))  # fmt: skip


def fixed_text(fixed: FixedPrompt | None) -> str:
    """Everything the agent's fixed prompt sends (system, prefix messages, tools), as one text."""
    if fixed is None:
        return ""
    import msgspec

    parts = [fixed.system or "", *(m.text for m in fixed.prefix)]
    parts += [
        f"{t.name}\n{t.description}\n{msgspec.json.encode(t.parameters).decode()}"
        for t in fixed.tools
    ]
    return "\n".join(parts)


def next_step(final: State, iteration: int) -> tuple[str, tuple[str, ...]] | None:
    """What the agent wrote at `iteration` (text, cited evidence IDs), from the run's last state; None: nothing recorded."""
    texts: list[str] = [n.text for n in final.notes if n.iteration == iteration]
    cited: list[str] = []
    for h in final.hypotheses:
        for entry in h.history:
            if entry.iteration != iteration:
                continue
            if entry.text is not None:
                texts.append(entry.text)
            # An imported trajectory's assessments and queries carry no text: the importer's, not the agent's.
            if entry.text is not None or entry.kind in ("recall", "conclude"):
                cited += [r for r in entry.evidence_refs if r not in cited]
    for ev in final.evidence:
        if ev.iteration == iteration and ev.budget.action is not None and ev.capture.query:
            texts.append(ev.capture.query)
    if not texts and not cited:
        return None
    return "\n".join(texts), tuple(cited)


class _Holders:
    """Which evidence payloads of a run hold an identifier (computed once per identifier)."""

    def __init__(self, final: State):
        self.texts = [
            (ev.id, payload_text(ev.payload)) for ev in final.evidence if ev.payload is not None
        ]
        self.cache: dict[str, tuple[str, ...]] = {}

    def __call__(self, value: str) -> tuple[str, ...]:
        found = self.cache.get(value)
        if found is None:
            found = self.cache[value] = tuple(eid for eid, text in self.texts if value in text)
        return found


def step_needs(contexts: Sequence[StoredContext], fixed: FixedPrompt | None = None
               ) -> tuple[list[tuple[Need, ...]], list[str]]:  # fmt: skip
    """Per context, the identifiers its next step used (empty: none, or no next step recorded), and per context the answer's text."""
    if not contexts:
        return [], []
    final = contexts[-1].state
    holders = _Holders(final)
    fixed_prompt = fixed_text(fixed)
    out: list[tuple[Need, ...]] = []
    answers: list[str] = []
    for ctx in contexts:
        state = ctx.state
        step = next_step(final, state.iteration + 1)
        if step is None:
            out.append(())
            answers.append("")
            continue
        text, cited = step
        answers.append(text)
        present = {ev.id for ev in state.evidence if ev.payload is not None}
        prompt = "\n".join([state.case.title, state.case.statement, fixed_prompt])
        needs: list[Need] = []
        for value in harvest_used(text):
            if value in prompt:
                continue
            held = tuple(e for e in holders(value) if e in present)
            if held:
                needs.append(Need(value, held))
        needs += [Need(eid, (eid,), cited=True) for eid in cited if eid in present]
        out.append(tuple(needs))
    return out, answers


def heads(state: State) -> dict[str, str]:
    """Each evidence item's payload head (`HEAD` characters), what shows a cited item."""
    return {
        ev.id: payload_text(ev.payload)[:HEAD] for ev in state.evidence if ev.payload is not None
    }


def in_view(needs: Sequence[Need], text: str, state: State) -> tuple[list[Need], list[Need]]:
    """Split needs into (in the text, not in the text)."""
    head = heads(state) if any(n.cited for n in needs) else {}
    shown: list[Need] = []
    hidden: list[Need] = []
    for need in needs:
        (shown if need.in_text(text, head) else hidden).append(need)
    return shown, hidden


__all__ = [
    "HEAD",
    "Need",
    "StepUse",
    "Use",
    "fixed_text",
    "heads",
    "in_view",
    "next_step",
    "step_needs",
]
