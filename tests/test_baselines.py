"""The comparison baselines: transcript rendering, masking windows and unrecoverable counts."""

from __future__ import annotations

import msgspec
import pytest

from workingset.baselines import BASELINES, MASKED, Baseline, unrecoverable
from workingset.errors import SessionError, UsageError
from workingset.hashing import content_hash
from workingset.model import (
    Budget, Capture, Case, Control, Evidence, EvidenceBudget, Hypothesis, Note, RowsPayload,
    State, TextPayload, validate_state,
)  # fmt: skip


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


def test_registry_names_the_three_baselines():
    assert list(BASELINES) == ["full-transcript", "masking-10", "last-5"]


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
    positions = [text.index(f"ACTION (sh:bash):\ncmd {i}\n\nOUTPUT:\n{_output(i)}") for i in range(1, 13)]
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
    feedback = [_evidence(13 + k, TextPayload(language=None, text=f"format error {k}")) for k in range(9)]
    state = msgspec.structs.replace(state, evidence=state.evidence[:3] + feedback)
    state = msgspec.structs.replace(state, hypotheses=[msgspec.structs.replace(
        state.hypotheses[0], control=msgspec.structs.replace(state.hypotheses[0].control, previous_result="E000003"))])
    validate_state(state)
    assert BASELINES["masking-10"](state, "H1") == BASELINES["full-transcript"](state, "H1")
    assert unrecoverable("masking-10", state, "H1") == 0
    text = BASELINES["last-5"](state, "H1")
    assert all(f"format error {k}" in text for k in range(9)) and "Old environment output" not in text
    # With twelve commands and the messages, masking-10 masks exactly the two oldest outputs.
    state = transcript_state(12)
    state = msgspec.structs.replace(state, evidence=state.evidence[:2] + feedback + state.evidence[2:])
    assert BASELINES["masking-10"].masked(state) == {"E000001", "E000002"}


def test_unknown_hypothesis_and_unknown_baseline():
    with pytest.raises(SessionError) as err:
        BASELINES["masking-10"](transcript_state(2), "H9")
    assert err.value.code == "unknown_hypothesis"
    with pytest.raises(UsageError, match="available: full-transcript, masking-10, last-5"):
        unrecoverable("masking-3", transcript_state(2), "H1")


def test_compare_picks_the_baselines_up():
    from workingset.bench import baseline_renderers

    renderers = baseline_renderers()
    assert list(renderers) == list(BASELINES)
    text, sections, breakpoints, cuts, reach, body = renderers["last-5"](transcript_state(), "H1")
    # The body: the transcript's messages as chat blocks, one breakpoint on the last.
    sent = body("anthropic", None)
    texts = [part["text"] for message in sent["messages"] for part in message["content"]]
    assert texts == BASELINES["last-5"].messages(transcript_state(), "H1")  # type: ignore[attr-defined]
    marks = [part for message in sent["messages"] for part in message["content"] if "cache_control" in part]
    assert marks == [sent["messages"][-1]["content"][-1]]
    assert reach is not None and reach.addressable == 0
    assert text == BASELINES["last-5"](transcript_state(), "H1") and sections == ()
    # one rolling breakpoint: the end of the last message, before the closing newline
    assert breakpoints == (len(text) - 1,) and cuts[-1] == len(text) - 1
    assert [text[c : c + 2] for c in cuts[:-1]] == ["\n\n"] * (len(cuts) - 1)
