"""The result every encoder returns, and the view of a state it renders from."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.state import Evidence, Hypothesis, State


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
    # The same text cut into consecutive blocks, in render order and never merged:
    # (section category, characters, separator included). Joined, the blocks are `text`.
    chunks: tuple[tuple[str, int], ...] = ()
    # Leading section categories the encoder declares unchanged from turn to turn of a run
    # (where prompt-cache breakpoints go); a prefix of the categories of `chunks`.
    stable_sections: tuple[str, ...] = ()

    def blocks(self) -> tuple[tuple[str, str], ...]:
        """The text as (category, block text) pairs that join to `text` byte for byte."""
        out, at = [], 0
        for category, n in self.chunks:
            out.append((category, self.text[at : at + n]))
            at += n
        return tuple(out)

    def stable_ends(self) -> tuple[int, ...]:
        """Character offsets where each declared stable leading section ends, in order."""
        ends: list[int] = []
        at = 0
        stable = set(self.stable_sections)
        for i, (category, n) in enumerate(self.chunks):
            if category not in stable:
                break
            at += n
            following = self.chunks[i + 1][0] if i + 1 < len(self.chunks) else None
            if following != category:
                ends.append(at)
        return tuple(ends)


@dataclass
class View:
    """What one render works from: the state, the selected hypothesis and the working set."""

    state: State
    selected: Hypothesis
    shown: list[Evidence]
    indexed: list[Evidence]
    roles: dict[str, list[str]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
