"""Baseline context strategies, for comparison only: how transcript-based agents resend a state.

These are not encoders: they have no version, no output schema and no decision protocol,
and are never used for requests. Each renders a state (for a hypothesis) purely and
deterministically, as a chat transcript would carry it: the task, then every step in
order — the agent's notes, its action (the exact query, with its origin) and the output.

- `full-transcript`: every action and output verbatim.
- `masking-10`: outputs of the last 10 steps verbatim; older outputs become `<MASKED>`, as
  OpenHands' ObservationMaskingCondenser does (the observation masking that JetBrains'
  "The Complexity Trap" found as effective as LLM summarization).
- `last-5`: SWE-agent's `LastNObservations(n=5)`: older outputs become
  `Old environment output: (N lines omitted)`, N the output's line count.

A masked output is gone from the agent's context for good: `unrecoverable` counts them.
(workingset hides nothing it cannot give back: every archived payload is one recall away.)
A step is what the agents count: an action and its output, i.e. an evidence item with a
query, in ID order. Messages that answer no action (`query: null`, such as imported
format-error feedback) are not steps: they neither count towards the window nor are ever
masked, as OpenHands masks only observations and SWE-agent only environment outputs. Notes
come before the evidence of their iteration and are always kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import msgspec

from .errors import SessionError, UsageError
from .model import Evidence, Note, RowsPayload, State

MASKED = "<MASKED>"


def _old_output(text: str) -> str:
    return f"Old environment output: ({len(text.splitlines())} lines omitted)"


def _output_text(ev: Evidence) -> str | None:
    """The output as the agent was shown it: text verbatim, rows as JSON lines."""
    payload = ev.payload
    if payload is None:
        return None
    if isinstance(payload, RowsPayload):
        lines = [msgspec.json.encode(payload.columns).decode()]
        lines += [msgspec.json.encode(row).decode() for row in payload.rows]
        return "\n".join(lines)
    return payload.text


def _check(state: State, hypothesis: str) -> None:
    if state.hypothesis(hypothesis) is None:
        known = ", ".join(h.id for h in state.hypotheses)
        raise SessionError(f"no hypothesis {hypothesis} in analysis {state.analysis_id}; known: {known}", code="unknown_hypothesis")


@dataclass(frozen=True)
class Baseline:
    """A transcript strategy: keep the last `keep` outputs verbatim (None: all), mask the rest."""

    name: str
    keep: int | None = None
    placeholder: Callable[[str], str] = lambda text: MASKED

    def masked(self, state: State) -> set[str]:
        """IDs of the action outputs this strategy replaces: all but the last `keep` steps'."""
        if self.keep is None:
            return set()
        steps = [ev for ev in state.evidence if ev.capture.query is not None]
        older = steps[: max(0, len(steps) - self.keep)]
        return {ev.id for ev in older if ev.payload is not None}

    def unrecoverable(self, state: State, hypothesis: str) -> int:
        """How many earlier outputs this rendering replaced by a placeholder (gone for good)."""
        _check(state, hypothesis)
        return len(self.masked(state))

    def __call__(self, state: State, hypothesis: str) -> str:
        """Render the transcript of `state` (pure, deterministic, never mutates the state)."""
        return "\n\n".join(self.messages(state, hypothesis)) + "\n"

    # replaced by hanchor: the source agents' fixed prompts and breakpoints (issue 21 item 4).
    def body(self, state: State, hypothesis: str, provider: str = "anthropic", model: str | None = None) -> dict[str, Any]:
        """The provider body of this transcript: the task as the first user message, each action an
        assistant message, each output a user message (a run of one role is one message), and one
        cache breakpoint on the last block (`cache_control`; `prompt_cache_breakpoint` for GPT-5.6)."""
        from .providers import breakpoint_family

        turns: list[dict[str, Any]] = []
        for i, text in enumerate(self.messages(state, hypothesis)):
            role = "assistant" if i and not text.startswith(("OUTPUT", "MESSAGE")) else "user"
            if not turns or turns[-1]["role"] != role:
                turns.append({"role": role, "content": []})
            turns[-1]["content"].append({"type": "text", "text": text})
        last = turns[-1]["content"][-1]
        if provider == "anthropic":
            last["cache_control"] = {"type": "ephemeral"}
        elif breakpoint_family(model):
            last["prompt_cache_breakpoint"] = {"mode": "explicit"}
        return {"messages": turns}

    def messages(self, state: State, hypothesis: str) -> list[str]:
        """The transcript's messages in order (the task, then each note, action and output)."""
        _check(state, hypothesis)
        masked = self.masked(state)
        blocks = [f"TASK: {state.case.title}\n{state.case.statement}"]
        notes: dict[int, list[Note]] = {}
        evidence: dict[int, list[Evidence]] = {}
        for note in state.notes:  # grouped once: a long run has thousands of items
            notes.setdefault(note.iteration, []).append(note)
        for item in state.evidence:
            evidence.setdefault(item.iteration, []).append(item)
        for it in sorted(notes.keys() | evidence.keys()):
            for note in notes.get(it, ()):
                blocks.append(f"{note.kind.upper()}:\n{note.text}")
            for ev in evidence.get(it, ()):
                if ev.capture.query is not None:
                    blocks.append(f"ACTION ({ev.capture.origin}):\n{ev.capture.query}")
                    label = "OUTPUT"
                else:
                    label = f"MESSAGE ({ev.capture.origin})"
                text = _output_text(ev)
                if text is None:
                    blocks.append(f"{label}: (not kept)")
                else:
                    blocks.append(f"{label}:\n{self.placeholder(text) if ev.id in masked else text}")
        return blocks


_ALL = (
    Baseline("full-transcript"),
    Baseline("masking-10", keep=10),
    Baseline("last-5", keep=5, placeholder=_old_output),
)
BASELINES: dict[str, Callable[[State, str], str]] = {b.name: b for b in _ALL}


def unrecoverable(name: str, state: State, hypothesis: str) -> int:
    """How many earlier outputs the named baseline's rendering of `state` made unrecoverable."""
    baseline = BASELINES.get(name)
    if not isinstance(baseline, Baseline):
        raise UsageError(f"no baseline {name!r}; available: {', '.join(BASELINES)}", details={"valid": list(BASELINES)})
    return baseline.unrecoverable(state, hypothesis)
