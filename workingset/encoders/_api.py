"""What an encoder is (`Encoder`), the result every encoder returns, and the view of a state it renders from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

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


class Encoder(Protocol):
    """What every encoder offers: the value type of the registry (`ENCODERS`, `get_encoder`).

    A version taking options (the context budget of v11 and later) also has
    `with_options(options) -> Encoder`; `get_encoder` looks it up.
    """

    version: int  # the registry key and the number in `name`
    supports_recall: bool  # whether a decision may be a recall
    supports_spans: bool  # whether a conclusion may cite byte spans
    stable_sections: tuple[str, ...]  # leading section categories unchanged from turn to turn

    @property
    def name(self) -> str:
        """The name stored contexts record: `investigation_project_v<N>`, options after a colon."""
        ...

    @property
    def decision_schema(self) -> dict[str, Any]:
        """The JSON Schema of a decision answering this encoder's requests."""
        ...

    def render(self, state: State, hypothesis: str) -> RenderedContext:
        """The user message for `hypothesis`: pure, byte-deterministic, never changes `state`."""
        ...


@dataclass
class View:
    """What one render works from: the state, the selected hypothesis and the working set."""

    state: State
    selected: Hypothesis
    shown: list[Evidence]
    indexed: list[Evidence]
    roles: dict[str, list[str]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
