"""The comparison baselines: transcript rendering, masking windows and unrecoverable counts."""

from __future__ import annotations

import msgspec
import pytest

from tests.helpers.common import long_run_path
from tests.helpers.real_corpus import CORPUS, needs_corpus
from tests.helpers.sdks import request_validators
from workingset.compare.baselines import (
    BASELINES,
    MASKED,
    Baseline,
    ClearToolUses,
    LastNObservations,
    SummarizingCondenser,
    ToolOutputMasking,
    for_run,
    unrecoverable,
)
from workingset.compare.baselines.anchors import CLEARED, SUMMARY_TOKENS, gemini_snippet
from workingset.errors import SessionError, UsageError
from workingset.model.hashing import content_hash
from workingset.model.state import (
    Budget,
    Capture,
    Case,
    Control,
    Evidence,
    EvidenceBudget,
    Hypothesis,
    Note,
    RowsPayload,
    State,
    TextPayload,
    validate_state,
)  # fmt: skip
from workingset.runs.fixed_prompt import FixedPrompt, PrefixMessage, Tool
from workingset.tokens.count import count_tokens


def _output(i: int) -> str:
    return "".join(f"out {i} line {j}\n" for j in range(i + 1))  # step i: i + 1 lines


def _evidence(i: int, payload, *, query: str | None = None, status: str = "settled") -> Evidence:
    return Evidence(
        id=f"E{i:06d}", collector="H1", scope="query_result" if query is not None else "feedback",
        capture=Capture(query=query, origin="sh:bash" if query is not None else "agent:format_error"),
        payload=payload, content_hash=None if payload is None else content_hash(payload),
        budget=EvidenceBudget(action=f"B{i:06d}" if query is not None else None,
                              status=status if query is not None else "none"),
        iteration=i, captured_at="2026-06-10T20:00:00Z",
    )  # fmt: skip


def transcript_state(steps: int = 12) -> State:
    """`steps` commands `cmd i` with outputs of i + 1 lines, a note per step; the last unsettled."""
    evidence = [
        _evidence(i, TextPayload(language=None, text=_output(i)), query=f"cmd {i}",
                  status="unsettled" if i == steps else "settled")
        for i in range(1, steps + 1)
    ]  # fmt: skip
    state = State(
        analysis_id="tiny", iteration=steps, budget=Budget(max_iterations=50),
        case=Case(title="Tiny", statement="Workers lose leases.\n", opened_at="2026-06-10T20:00:00Z"),
        hypotheses=[Hypothesis(
            id="H1", title="t", mechanism="m", confidence=0.5, disposition="open",
            control=Control(iterations_used=steps, iteration_limit=50, previous_result=f"E{steps:06d}"),
        )],
        evidence=evidence,
        notes=[Note(id=f"N{i:06d}", hypothesis="H1", kind="note", text=f"thinking {i}", iteration=i) for i in range(1, steps + 1)],
    )  # fmt: skip
    validate_state(state)
    return state


def test_registry_names_the_baselines():
    assert list(BASELINES) == ["full-transcript", "masking-10", "last-5", "last-5-polling-5", "clear-tool-uses",
                               "gemini-masking", "openhands-condenser"]  # fmt: skip


def test_full_transcript_of_two_steps_exactly():
    text = BASELINES["full-transcript"](transcript_state(2), "H1")
    assert text == (
        "TASK: Tiny\nWorkers lose leases.\n\n\n"
        "NOTE:\nthinking 1\n\nACTION (sh:bash):\ncmd 1\n\nOUTPUT:\nout 1 line 0\nout 1 line 1\n\n\n"
        "NOTE:\nthinking 2\n\nACTION (sh:bash):\ncmd 2\n\nOUTPUT:\nout 2 line 0\nout 2 line 1\nout 2 line 2\n\n"
    )


@pytest.mark.parametrize("name", list(BASELINES))
def test_pure_and_deterministic(name: str):
    state = transcript_state()
    before = msgspec.json.encode(state)
    first = BASELINES[name](state, "H1")
    assert BASELINES[name](transcript_state(), "H1") == first
    assert msgspec.json.encode(state) == before


def test_full_transcript_keeps_every_action_and_output_in_order():
    state = transcript_state()
    text = BASELINES["full-transcript"](state, "H1")
    positions = [
        text.index(f"ACTION (sh:bash):\ncmd {i}\n\nOUTPUT:\n{_output(i)}") for i in range(1, 13)
    ]
    assert positions == sorted(positions)
    assert MASKED not in text and "Old environment output" not in text
    assert unrecoverable("full-transcript", state, "H1") == 0


def test_masking_10_masks_outputs_older_than_the_last_ten_steps():
    state = transcript_state()
    text = BASELINES["masking-10"](state, "H1")
    assert text.count(f"OUTPUT:\n{MASKED}") == 2
    for i in (1, 2):
        assert _output(i) not in text and f"cmd {i}\n" in text  # the action stays, the output goes
    for i in range(3, 13):
        assert f"OUTPUT:\n{_output(i)}" in text
    assert unrecoverable("masking-10", state, "H1") == 2


def test_last_5_is_swe_agent_last_n_observations():
    state = transcript_state()
    text = BASELINES["last-5"](state, "H1")
    for i in range(1, 8):
        assert f"OUTPUT:\nOld environment output: ({i + 1} lines omitted)" in text
    for i in range(8, 13):
        assert f"OUTPUT:\n{_output(i)}" in text
    assert unrecoverable("last-5", state, "H1") == 7


def test_short_runs_mask_nothing():
    state = transcript_state(5)
    assert BASELINES["last-5"](state, "H1") == BASELINES["full-transcript"](state, "H1")
    assert unrecoverable("masking-10", state, "H1") == unrecoverable("last-5", state, "H1") == 0


def test_unkept_outputs_feedback_and_rows():
    state = transcript_state(2)
    rows = RowsPayload(columns=["a", "b"], rows=[[1, None], ["x", 1.5]])
    extra = [
        _evidence(3, None, query="cmd 3"),
        _evidence(4, TextPayload(language=None, text="Please give one action.")),
        _evidence(5, rows, query="select a, b"),
    ]
    state = msgspec.structs.replace(state, evidence=state.evidence + extra)
    validate_state(state)
    text = BASELINES["full-transcript"](state, "H1")
    assert "ACTION (sh:bash):\ncmd 3\n\nOUTPUT: (not kept)" in text
    assert "MESSAGE (agent:format_error):\nPlease give one action." in text
    assert 'OUTPUT:\n["a","b"]\n[1,null]\n["x",1.5]\n' in text
    # Four steps and a message, a window of one: the unkept output is not counted as lost, and
    # the message is not a step.
    assert Baseline("one", keep=1).unrecoverable(state, "H1") == 2


def test_feedback_is_neither_a_step_nor_masked():
    # Nine format-error messages after three commands: masking-10 still shows all three
    # outputs, and last-5 masks none of the messages (agents count only action outputs).
    state = transcript_state(12)
    feedback = [
        _evidence(13 + k, TextPayload(language=None, text=f"format error {k}")) for k in range(9)
    ]
    state = msgspec.structs.replace(state, evidence=state.evidence[:3] + feedback)
    state = msgspec.structs.replace(
        state,
        hypotheses=[
            msgspec.structs.replace(
                state.hypotheses[0],
                control=msgspec.structs.replace(
                    state.hypotheses[0].control, previous_result="E000003"
                ),
            )
        ],
    )
    validate_state(state)
    assert BASELINES["masking-10"](state, "H1") == BASELINES["full-transcript"](state, "H1")
    assert unrecoverable("masking-10", state, "H1") == 0
    text = BASELINES["last-5"](state, "H1")
    assert (
        all(f"format error {k}" in text for k in range(9)) and "Old environment output" not in text
    )
    # With twelve commands and the messages, masking-10 masks exactly the two oldest outputs.
    state = transcript_state(12)
    state = msgspec.structs.replace(
        state, evidence=state.evidence[:2] + feedback + state.evidence[2:]
    )
    assert BASELINES["masking-10"].masked(state) == {"E000001", "E000002"}


def test_unknown_hypothesis_and_unknown_baseline():
    with pytest.raises(SessionError) as err:
        BASELINES["masking-10"](transcript_state(2), "H9")
    assert err.value.code == "unknown_hypothesis"
    with pytest.raises(UsageError, match="available: full-transcript, masking-10, last-5"):
        unrecoverable("masking-3", transcript_state(2), "H1")


def test_compare_picks_the_baselines_up():
    from workingset.compare.engine import baseline_renderers

    renderers = baseline_renderers()
    assert list(renderers) == list(BASELINES)
    text, sections, breakpoints, cuts, reach, body, retried = renderers["last-5"](
        transcript_state(), "H1"
    )
    assert retried is None  # a baseline asks for no decision, so it is never retried
    # The body: the transcript's messages as chat blocks, one breakpoint on the last.
    sent = body("anthropic", None)
    texts = [part["text"] for message in sent["messages"] for part in message["content"]]
    assert texts == BASELINES["last-5"].messages(transcript_state(), "H1")  # type: ignore[attr-defined]
    marks = [
        part
        for message in sent["messages"]
        for part in message["content"]
        if "cache_control" in part
    ]
    assert marks == [sent["messages"][-1]["content"][-1]]
    assert reach is not None and reach.addressable == 0
    assert text == BASELINES["last-5"](transcript_state(), "H1") and sections == ()
    # one rolling breakpoint: the end of the last message, before the closing newline
    assert breakpoints == (len(text) - 1,) and cuts[-1] == len(text) - 1
    assert [text[c : c + 2] for c in cuts[:-1]] == ["\n\n"] * (len(cuts) - 1)


# --- the strategies users would pick instead (anchors) ------------------------------------------------


def _ids(*steps: int) -> set[str]:
    return {f"E{i:06d}" for i in steps}


@pytest.mark.parametrize(("n_steps", "masked"), [(5, ()), (6, ()), (8, ()), (9, range(1, 5)), (13, range(1, 5)),
                                                 (14, range(1, 10))])  # fmt: skip
def test_last_n_polling_moves_the_window_every_polling_steps(n_steps: int, masked: range):
    # SWE-agent: L = ((steps + 1) // 5) * 5 - 5 observations counted with the instance; 1 … L-1 elided.
    state = transcript_state(n_steps)
    assert BASELINES["last-5-polling-5"].masked(state) == _ids(*masked)


def test_last_n_polling_1_is_last_5():
    for n in (3, 6, 12):
        state = transcript_state(n)
        assert LastNObservations("x", n=5, polling=1).masked(state) == BASELINES["last-5"].masked(
            state
        )


def _big_state(steps: int, lines: int) -> State:
    """Like `transcript_state`, each output `lines` lines of about 8 tokens each."""
    state = transcript_state(steps)
    evidence = [msgspec.structs.replace(ev, payload=(p := TextPayload(language=None, text=f"step {k} row {{}}\n" * lines)),
                                        content_hash=content_hash(p))
                for k, ev in enumerate(state.evidence, start=1)]  # fmt: skip
    return msgspec.structs.replace(state, evidence=evidence)


def test_clear_tool_uses_clears_all_but_the_3_latest_past_the_trigger():
    small = transcript_state(8)
    assert BASELINES["clear-tool-uses"].masked(small) == set()  # far below 100,000 tokens
    rule = ClearToolUses("c", trigger=200)
    assert rule.masked(small) == _ids(1, 2, 3, 4, 5)
    assert rule.messages(small, "H1")[-1] == f"OUTPUT:\n{_output(8)}"
    assert f"OUTPUT:\n{CLEARED}" in rule.messages(small, "H1")
    # clear_at_least: nothing is cleared unless the older outputs free that many tokens
    freed = sum(count_tokens(_output(i)) - count_tokens(CLEARED) for i in range(1, 6))
    assert ClearToolUses("c", trigger=200, clear_at_least=freed).masked(small) == _ids(
        1, 2, 3, 4, 5
    )
    assert ClearToolUses("c", trigger=200, clear_at_least=freed + 1).masked(small) == set()


def test_gemini_masking_protects_the_newest_tokens_and_masks_in_batches():
    state = _big_state(8, 100)
    size = count_tokens(state.evidence[0].payload.text)
    # protect 2.5 outputs: the newest (latest turn) is skipped, the next two are protected, the
    # one crossing the boundary and all older are prunable: steps 1-5, masked once they add up
    rule = ToolOutputMasking("g", protect=int(2.5 * size), min_prunable=5 * size)
    assert rule.masked(state) == _ids(1, 2, 3, 4, 5)
    higher = ToolOutputMasking("g", protect=int(2.5 * size), min_prunable=5 * size + 1)
    assert higher.masked(state) == set()  # five prunable outputs are one token short of the batch
    assert higher.masked(_big_state(9, 100)) == _ids(
        1, 2, 3, 4, 5, 6
    )  # a turn later six are enough
    ev = state.evidence[0]
    assert rule.plan(state, "H1").replaced[ev.id] == gemini_snippet(ev, ev.payload.text)
    assert (
        BASELINES["gemini-masking"].masked(state) == set()
    )  # 8 × ~800 tokens is far below 50k + 30k


def test_gemini_masked_outputs_stay_masked_on_later_turns():
    rule = ToolOutputMasking("g", protect=1, min_prunable=1)
    earlier = rule.masked(_big_state(6, 50))
    assert earlier and earlier <= rule.masked(_big_state(9, 50))


def test_openhands_condenser_forgets_the_older_half_at_its_event_limit():
    rule = SummarizingCondenser("o", max_size=12, keep_first=2)
    # 2 head events + 2 per step: 5 steps make 12 events, 6 make 14 > 12. OpenHands keeps a tail of
    # 12 // 2 - 2 - 1 = 3 events, its forgetting end rounded up to a step boundary (index 12 of 14):
    # steps 1-5 become one summary event and step 6 stays.
    assert rule.masked(transcript_state(5)) == set()
    state = transcript_state(6)
    plan = rule.plan(state, "H1")
    assert plan.dropped == _ids(1, 2, 3, 4, 5) | {f"N{i:06d}" for i in range(1, 6)}
    assert rule.unrecoverable(state, "H1") == 5
    messages = rule.messages(state, "H1")
    assert messages[1] == plan.summary and count_tokens(plan.summary) == SUMMARY_TOKENS
    assert messages[2:] == [
        "NOTE:\nthinking 6",
        "ACTION (sh:bash):\ncmd 6",
        f"OUTPUT:\n{_output(6)}",
    ]
    # the view is head + summary + step 6 (5 events); it condenses again past 12, summary included
    assert rule.masked(transcript_state(9)) == _ids(1, 2, 3, 4, 5)
    assert rule.masked(transcript_state(10)) == _ids(*range(1, 10))


@needs_corpus
def test_summary_size_is_the_median_of_the_recorded_summaries():
    import json
    import statistics

    sizes = []
    for path in sorted(CORPUS.glob("openhands-*/events/*.json")):
        event = json.loads(path.read_bytes())
        sizes += [count_tokens(event["summary"])] if event.get("kind") == "Condensation" else []
    for path in sorted(long_run_path().glob("events/*.json")):
        event = json.loads(path.read_bytes())
        sizes += [count_tokens(event["summary"])] if event.get("kind") == "Condensation" else []
    assert len(sizes) == 9 and statistics.median(sizes) == SUMMARY_TOKENS


@pytest.mark.parametrize(
    "name", ["last-5-polling-5", "clear-tool-uses", "gemini-masking", "openhands-condenser"]
)
def test_anchors_are_pure_and_deterministic(name: str):
    state = _big_state(30, 40)
    before = msgspec.json.encode(state)
    b = BASELINES[name]
    assert b(state, "H1") == b(state, "H1") and b.body(state, "H1") == b.body(state, "H1")
    assert msgspec.json.encode(state) == before


# --- request bodies -----------------------------------------------------------------------------

FIXED = {
    agent: FixedPrompt(agent=agent, system="You are an agent.",
                       prefix=(PrefixMessage(role="user", text="Demo."), PrefixMessage(role="assistant", text="ok"),
                               PrefixMessage(role="user", text="Fix the leases.")),
                       tools=(Tool(name="bash", description="Run a command.",
                                   parameters={"type": "object", "properties": {"command": {"type": "string"}}}),))
    for agent in ("openhands", "swe-agent", "mini-swe-agent")
}  # fmt: skip


def _marks(body: dict, key: str = "cache_control") -> list[tuple[str, int, int]]:
    out = [("system", 0, k) for k, b in enumerate(body.get("system") or []) if key in b]
    for i, m in enumerate(body["messages"]):
        content = m["content"] if isinstance(m["content"], list) else []
        out += [(m["role"], i, k) for k, b in enumerate(content) if key in b]
    return out


def test_body_without_a_fixed_prompt_marks_the_last_message():
    body = BASELINES["last-5"].body(transcript_state(3), "H1")
    assert set(body) == {"messages"}
    assert body["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "TASK: Tiny\nWorkers lose leases.\n"}],
    }
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert _marks(body) == [("user", 6, 0)]
    texts = [b["text"] for m in body["messages"] for b in m["content"]]
    assert texts == BASELINES["last-5"].messages(
        transcript_state(3), "H1"
    )  # the same blocks, in order


def test_each_agent_places_its_own_breakpoints():
    state = transcript_state(3)
    bodies = {
        a: BASELINES["full-transcript"].with_fixed_prompt(f).body(state, "H1")
        for a, f in FIXED.items()
    }
    # prefix: user, assistant, user (the instance); then assistant (note, action), user (output) × 3
    n = len(bodies["openhands"]["messages"])
    assert n == 9 and bodies["openhands"]["messages"][2]["content"] == [
        {"type": "text", "text": "Fix the leases."}
    ]
    assert _marks(bodies["openhands"]) == [("system", 0, 0), ("user", 8, 0)]
    assert _marks(bodies["swe-agent"]) == [("user", 6, 0), ("user", 8, 0)]
    assert _marks(bodies["mini-swe-agent"]) == [("user", 8, 0)]
    for body in bodies.values():
        assert body["tools"] == [
            {
                "name": "bash",
                "description": "Run a command.",
                "input_schema": FIXED["openhands"].tools[0].parameters,
            }
        ]
        assert body["system"][0]["text"] == "You are an agent."


def test_openai_bodies_mark_only_the_gpt_5_6_family():
    b = BASELINES["last-5"].with_fixed_prompt(FIXED["openhands"])
    state = transcript_state(3)
    old = b.body(state, "H1", "openai", "gpt-4o")
    new = b.body(state, "H1", "openai", "gpt-5.6")
    assert old["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": "You are an agent."}],
    }
    assert _marks(old, "prompt_cache_breakpoint") == []
    assert _marks(new, "prompt_cache_breakpoint") == [("system", 0, 0), ("user", 9, 0)]
    assert new["tools"][0]["function"]["name"] == "bash"
    with pytest.raises(UsageError, match="no provider"):
        b.body(state, "H1", "gemini")


@pytest.mark.parametrize("agent", [None, "openhands", "swe-agent", "mini-swe-agent"])
@pytest.mark.parametrize("name", list(BASELINES))
def test_bodies_validate_against_the_sdk_request_types(agent: str | None, name: str):
    import anthropic.types
    import openai.types.chat

    anthropic_request, openai_request = request_validators()
    b = for_run(None if agent is None else FIXED[agent])[name]
    state = _big_state(12, 3)
    a_body = b.body(state, "H1", "anthropic")
    anthropic_request.validate_python({**a_body, "model": "claude-sonnet-4-5", "max_tokens": 1024})
    o_body = b.body(state, "H1", "openai", "gpt-5.6")
    openai_request.validate_python({**o_body, "model": "gpt-5.6"})
    # TypedDicts let unknown keys through: every key must be one the SDK types declare
    assert set(a_body) <= set(
        anthropic.types.message_create_params.MessageCreateParamsNonStreaming.__annotations__
    )
    assert set(o_body) <= set(
        openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming.__annotations__
    )
    a_keys = set(anthropic.types.TextBlockParam.__annotations__)
    o_keys = set(openai.types.chat.ChatCompletionContentPartTextParam.__annotations__)
    assert all(set(block) <= a_keys for m in a_body["messages"] for block in m["content"])
    assert all(set(block) <= a_keys for block in a_body.get("system", []))
    assert all(set(block) <= o_keys for m in o_body["messages"] for block in m["content"])
    assert len(_marks(a_body)) <= 4  # Anthropic takes at most four breakpoints
