"""The strategies users would pick instead of workingset, each with its documented defaults.

Each is a `Baseline` that states only its plan (what it hides); sources, dates and commits
are in docs/baselines.md. Token thresholds are counted with the project's tokenizer
(`tokens.py`, cl100k_base), not the providers' own: the same count for every strategy.
Strategies that keep state between turns (Gemini CLI's masking, OpenHands' condenser) are
replayed from the first step on every call, so each state's plan is a pure function of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.state import Evidence, State
from ...tokens.count import count_tokens
from .transcript import Baseline, Plan, output_text, steps


def _old_output(text: str) -> str:
    return f"Old environment output: ({len(text.splitlines())} lines omitted)"


@dataclass(frozen=True)
class LastNObservations(Baseline):
    """SWE-agent's `LastNObservations(n, polling)`: the window moves only every `polling` observations.

    SWE-agent counts the instance message as observation 0 and never elides it; it elides
    observations 1 … L-1 with L = (observations // polling) * polling - n, so between n
    and n + polling - 1 outputs stay verbatim and the prefix changes once per `polling` steps.
    """

    n: int = 5
    polling: int = 1

    def plan(self, state: State, hypothesis: str) -> Plan:
        done = steps(state)
        cut = max(0, ((len(done) + 1) // self.polling) * self.polling - self.n - 1)
        return Plan(
            {ev.id: _old_output(text) for ev in done[:cut] if (text := output_text(ev)) is not None}
        )


CLEARED = "[tool result cleared]"  # Anthropic does not publish its placeholder's text


@dataclass(frozen=True)
class ClearToolUses(Baseline):
    """Anthropic's server-side context editing `clear_tool_uses_20250919` with its defaults.

    Once the request's input exceeds `trigger` tokens, every tool result but the `keep`
    latest is replaced by a placeholder; if that would clear fewer than `clear_at_least`
    tokens, nothing is cleared. The API applies it to each request before the prompt is
    cached, so the body here carries the edited transcript: what Anthropic bills.
    """

    trigger: int = 100_000
    keep_uses: int = 3
    clear_at_least: int = 0

    def plan(self, state: State, hypothesis: str) -> Plan:
        full = Baseline(self.name, fixed=self.fixed).body(state, hypothesis)
        from ..wire import body_blocks

        if count_tokens("".join(b.text for b in body_blocks(full, "anthropic"))) <= self.trigger:
            return Plan({})
        done = steps(state)
        older = [
            ev for ev in done[: max(0, len(done) - self.keep_uses)] if output_text(ev) is not None
        ]
        cleared = sum(count_tokens(output_text(ev) or "") - count_tokens(CLEARED) for ev in older)
        if not older or cleared < self.clear_at_least:
            return Plan({})
        return Plan({ev.id: CLEARED for ev in older})


MASK_TAG = "tool_output_masked"


def _preview(ev: Evidence, text: str) -> str:
    """Gemini CLI's preview of a masked output: head and tail lines for the shell, characters otherwise."""
    if "shell" in ev.capture.origin or "bash" in ev.capture.origin:
        lines = text.split("\n")
        if len(lines) <= 20:
            return text
        return (
            "\n".join(lines[:10])
            + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n"
            + "\n".join(lines[-10:])
        )
    return f"{text[:250]}\n... [TRUNCATED] ...\n{text[-250:]}" if len(text) > 500 else text


def gemini_snippet(ev: Evidence, text: str) -> str:
    """The masked snippet that replaces an output (the file path is a fixed, made-up one: nothing is written)."""
    path = f"tool-outputs/{ev.capture.origin.split(':')[-1]}_{ev.id.lower()}.txt"
    return f"<{MASK_TAG}>\n{_preview(ev, text)}\n\nOutput too large. Full output available at: {path}\n</{MASK_TAG}>"


@dataclass(frozen=True)
class ToolOutputMasking(Baseline):
    """Gemini CLI's tool-output masking: protect the newest `protect` tool tokens, mask only in batches.

    Before each call it scans tool outputs from the newest back, skipping the latest turn's
    and those already masked; the output that crosses `protect` tokens and every older one
    are prunable, and they are masked only if they add up to `min_prunable` tokens or more
    (and only where the snippet is smaller). Masked outputs stay masked.
    """

    protect: int = 50_000
    min_prunable: int = 30_000
    protect_latest_turn: bool = True

    def plan(self, state: State, hypothesis: str) -> Plan:
        done = [ev for ev in steps(state) if output_text(ev) is not None]
        size = {ev.id: count_tokens(output_text(ev) or "") for ev in done}
        masked: dict[str, str] = {}
        for t in range(1, len(done) + 1):  # replay each call: what it saw was the first t outputs
            seen, prunable, total = 0, [], 0
            for ev in reversed(done[: t - 1] if self.protect_latest_turn else done[:t]):
                if ev.id in masked:
                    continue
                if seen <= self.protect:
                    seen += size[ev.id]
                    if seen <= self.protect:
                        continue
                prunable.append(ev)
                total += size[ev.id]
            if total >= self.min_prunable:
                for ev in prunable:
                    snippet = gemini_snippet(ev, output_text(ev) or "")
                    if count_tokens(snippet) < size[ev.id]:
                        masked[ev.id] = snippet
        return Plan(masked)


# The median size of the 9 summaries recorded in the OpenHands runs of ../shared/corpus/raw and the
# 167-step one of ../shared/corpus/all (cl100k tokens; tests/compare/test_baselines.py recomputes it).
# OpenHands documents none.
SUMMARY_TOKENS = 409


def summary_text(forgotten: int, tokens: int = SUMMARY_TOKENS) -> str:
    """A stand-in of the summary's size: no LLM runs offline, so only its length is modelled."""
    head = f"SUMMARY (size model: {forgotten} events condensed; no summary was written offline):"
    return head + " summary" * max(0, tokens - count_tokens(head))


@dataclass(frozen=True)
class SummarizingCondenser(Baseline):
    """OpenHands' `LLMSummarizingCondenser` as a size model, with its defaults (max_size 240, keep_first 2).

    The view is the system prompt and the task (the `keep_first` events), then two events a
    step (action, observation) and one per other message. When it holds more than
    `max_size` events, the events after the first `keep_first` up to the tail of
    `max_size // 2 - keep_first - 1` events (rounded to whole steps) are forgotten and one
    summary event takes their place; a later condensation forgets that summary too.
    """

    max_size: int = 240
    keep_first: int = 2
    summary_tokens: int = SUMMARY_TOKENS

    def plan(self, state: State, hypothesis: str) -> Plan:
        view: list[tuple[str | None, int]] = []  # (evidence ID, its events); None: the summary
        forgotten: list[Evidence] = []
        by_id = {ev.id: ev for ev in state.evidence}
        tail = self.max_size // 2 - self.keep_first - 1
        for ev in state.evidence:
            view.append((ev.id, 2 if ev.capture.query is not None else 1))
            events = self.keep_first + sum(n for _, n in view)
            if events <= self.max_size:
                continue
            end, at = events - tail - self.keep_first, 0  # forget view units up to this many events
            cut = 0
            while cut < len(view) and at < end:
                at += view[cut][1]
                cut += 1
            forgotten += [by_id[i] for i, _ in view[:cut] if i is not None]
            view = [(None, 1)] + view[cut:]
        if not forgotten:
            return Plan({})
        first_kept = min(
            (by_id[i].iteration for i, _ in view if i is not None), default=state.iteration + 1
        )
        dropped = {ev.id for ev in forgotten} | {
            n.id for n in state.notes if n.iteration < first_kept
        }
        return Plan({}, frozenset(dropped), summary_text(len(forgotten), self.summary_tokens))
