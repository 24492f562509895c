"""A baseline's request body: its transcript as its source agent sends it, fixed prompt and cache marks included.

The transcript's blocks become messages (consecutive blocks of one role are one message,
each block one content block); with the run's fixed prompt, the system prompt and tool
definitions go first and the agent's pre-step messages (demonstrations, the instance
message) replace the task block. Cache breakpoints go where the source agent puts them
(`PLACEMENTS`, sources in docs/baselines.md):

- `openhands` — the system prompt's block, and the last block of the last user message
  (`LLM._apply_prompt_caching`).
- `swe-agent` — the last two user messages (`CacheControlHistoryProcessor`,
  `last_n_messages: 2` as its Anthropic configs set it).
- `mini-swe-agent` — the last message (`set_cache_control(mode="default_end")`, its default
  for Claude models). A run without a fixed prompt is sent this way too.

The Anthropic body is `{"tools", "system", "messages"}` with `cache_control` marks; the
OpenAI body is Chat Completions' `{"tools", "messages"}`, whose marks are
`prompt_cache_breakpoint` on the same blocks for the GPT-5.6 family and later, and none for
older models (they cache automatically). Model, max_tokens and the like are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ...errors import UsageError
from ...model.state import State
from ...providers import breakpoint_family
from ...runs.fixed_prompt import FixedPrompt

EPHEMERAL = {"type": "ephemeral"}
EXPLICIT = {"mode": "explicit"}
PROVIDERS = ("anthropic", "openai")
Messages = list[dict[str, Any]]


class Part(NamedTuple):
    """One block of the transcript: who says it and its text."""

    role: str  # user | assistant
    text: str


class Baseline(Protocol):
    """What a body needs of a transcript strategy (`transcript.Baseline`): its fixed prompt and its blocks.

    Named here, not imported, so that the transcript can build its body without a cycle.
    """

    @property
    def fixed(self) -> FixedPrompt | None: ...

    def parts(self, state: State, hypothesis: str, task: bool = True) -> list[Part]: ...


def _last_user(messages: Messages, n: int) -> list[int]:
    return [i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"][:n]


PLACEMENTS: dict[str, tuple[bool, Callable[[Messages], list[int]]]] = {
    # agent -> (mark the system prompt, the messages whose last block is marked)
    "openhands": (True, lambda m: _last_user(m, 1)),
    "swe-agent": (False, lambda m: _last_user(m, 2)),
    "mini-swe-agent": (False, lambda m: [len(m) - 1] if m else []),
}


def _messages(parts: list[Part]) -> Messages:
    out: Messages = []
    for part in parts:
        if out and out[-1]["role"] == part.role:
            out[-1]["content"].append({"type": "text", "text": part.text})
        else:
            out.append({"role": part.role, "content": [{"type": "text", "text": part.text}]})
    return out


def transcript_parts(baseline: Baseline, state: State, hypothesis: str) -> list[Part]:
    """The blocks sent after the system prompt: the agent's pre-step messages (else the task), then the steps."""
    fixed = baseline.fixed
    if fixed is None or not fixed.prefix:
        return baseline.parts(state, hypothesis)
    return [Part(m.role, m.text) for m in fixed.prefix] + baseline.parts(
        state, hypothesis, task=False
    )


def body(
    baseline: Baseline,
    state: State,
    hypothesis: str,
    provider: str = "anthropic",
    model: str | None = None,
) -> dict[str, Any]:
    """The provider request body the source agent would send for this context (pure, deterministic)."""
    if provider not in PROVIDERS:
        raise UsageError(f"no provider {provider!r}; available: {', '.join(PROVIDERS)}", code="unknown_provider",
                         details={"valid": list(PROVIDERS)})  # fmt: skip
    fixed: FixedPrompt | None = baseline.fixed
    messages = _messages(transcript_parts(baseline, state, hypothesis))
    mark_system, marked = PLACEMENTS[fixed.agent if fixed is not None else "mini-swe-agent"]
    system = fixed.system if fixed is not None else None
    if provider == "anthropic":
        for i in marked(messages):
            messages[i]["content"][-1]["cache_control"] = dict(EPHEMERAL)
        out: dict[str, Any] = {}
        if fixed is not None and fixed.tools:
            out["tools"] = [{"name": t.name, "description": t.description,
                             "input_schema": t.parameters or {"type": "object", "properties": {}}} for t in fixed.tools]  # fmt: skip
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if mark_system:
                block["cache_control"] = dict(EPHEMERAL)
            out["system"] = [block]
        out["messages"] = messages
        return out
    explicit = breakpoint_family(model)
    if explicit:  # OpenAI takes no breakpoint on assistant output
        for i in marked(messages):
            if messages[i]["role"] != "assistant":
                messages[i]["content"][-1]["prompt_cache_breakpoint"] = dict(EXPLICIT)
    head: Messages = []
    if system:
        block = {"type": "text", "text": system}
        if explicit and mark_system:
            block["prompt_cache_breakpoint"] = dict(EXPLICIT)
        head.append({"role": "system", "content": [block]})
    out = {}
    if fixed is not None and fixed.tools:
        out["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                          "parameters": t.parameters or {"type": "object", "properties": {}}}}
                        for t in fixed.tools]  # fmt: skip
    out["messages"] = head + messages
    return out
