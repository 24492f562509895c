"""The result every encoder returns, and the view of a state it renders from."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Evidence, Hypothesis, State


@dataclass(frozen=True)
class RenderedContext:
    """One rendered user message: its text, which IDs it shows in full or only in the index."""

    encoder: str
    hypothesis: str
    text: str
    shown: tuple[str, ...]
    indexed: tuple[str, ...]
    chars: int
    hash: str
    # Characters per section category (header, case, selected_hypothesis, other_hypotheses,
    # evidence, evidence_index, notes, budget, task, output_schema), in render order.
    sections: tuple[tuple[str, int], ...] = ()


@dataclass
class View:
    """What one render works from: the state, the selected hypothesis and the working set."""

    state: State
    selected: Hypothesis
    shown: list[Evidence]
    indexed: list[Evidence]
    roles: dict[str, list[str]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
