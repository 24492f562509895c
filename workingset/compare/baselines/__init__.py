"""Baseline context strategies, for comparison only: how transcript-based agents resend a state.

These are not encoders: they have no version, no output schema and no decision protocol.
Each renders a state (for a hypothesis) purely and deterministically as a chat transcript
(`transcript.py`), and `body()` gives the request its source agent would send for it, fixed
prompt and cache breakpoints included (`bodies.py`). `BASELINES` is the one registry:

- `full-transcript`: every action and output verbatim.
- `masking-10`: outputs of the last 10 steps verbatim; older outputs become `<MASKED>`, as
  OpenHands' ObservationMaskingCondenser does (the observation masking that JetBrains'
  "The Complexity Trap" found as effective as LLM summarization).
- `last-5`: SWE-agent's `LastNObservations(n=5)`: older outputs become
  `Old environment output: (N lines omitted)`, N the output's line count.
- `last-5-polling-5`: the same with `polling=5`, SWE-agent's setting to spare the cache.
- `clear-tool-uses`: Anthropic's context editing (`clear_tool_uses_20250919`) with its defaults.
- `gemini-masking`: Gemini CLI's tool-output masking with its defaults.
- `openhands-condenser`: OpenHands' summarizing condenser as a size model (no LLM runs).

A hidden output is gone from the agent's context for good: `unrecoverable` counts them.
(workingset hides nothing it cannot give back: every archived payload is one recall away.)
See docs/baselines.md for each rule's source.
"""

from __future__ import annotations

from ...errors import UsageError
from ...model.state import State
from ...runs.fixed_prompt import FixedPrompt
from .anchors import (
    ClearToolUses,
    LastNObservations,
    SummarizingCondenser,
    ToolOutputMasking,
)
from .transcript import MASKED, Baseline, Plan

_ALL: tuple[Baseline, ...] = (
    Baseline("full-transcript"),
    Baseline("masking-10", keep=10),
    LastNObservations("last-5", n=5),
    LastNObservations("last-5-polling-5", n=5, polling=5),
    ClearToolUses("clear-tool-uses"),
    ToolOutputMasking("gemini-masking"),
    SummarizingCondenser("openhands-condenser"),
)
BASELINES: dict[str, Baseline] = {b.name: b for b in _ALL}


def for_run(fixed: FixedPrompt | None) -> dict[str, Baseline]:
    """The registry with every baseline sending `fixed` (a run's `runs.read_fixed_prompt`) with its requests."""
    return {name: b.with_fixed_prompt(fixed) for name, b in BASELINES.items()}


def get(name: str) -> Baseline:
    """The named baseline; an unknown name lists the valid ones."""
    baseline = BASELINES.get(name)
    if baseline is None:
        raise UsageError(
            f"no baseline {name!r}; available: {', '.join(BASELINES)}",
            details={"valid": list(BASELINES)},
        )
    return baseline


def unrecoverable(name: str, state: State, hypothesis: str) -> int:
    """How many earlier outputs the named baseline's rendering of `state` made unrecoverable."""
    return get(name).unrecoverable(state, hypothesis)


__all__ = ["BASELINES", "MASKED", "Baseline", "ClearToolUses", "LastNObservations", "Plan", "SummarizingCondenser",
           "ToolOutputMasking", "for_run", "get", "unrecoverable"]  # fmt: skip
