"""Hypothesis strategies of awkward texts, payloads and whole states, shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.helpers.common import ROOT
from tests.helpers.factory import evidence, sample_state
from workingset.model.state import (
    HistoryEntry,
    RecallSelection,
    RowsPayload,
    State,
    TextPayload,
    copy_state,
    validate_state,
)
from workingset.runs.layout import read_run

# Text that stresses fences: backtick runs, newlines of every kind, fence-like lines, unicode.
pieces = [
    "`",
    "```",
    "````",
    "\n",
    "\r",
    "\r\n",
    " ",
    "~",
    "#",
    "a",
    "é",
    "\u2028",
    "\t",
    "### Evidence E000001",
    '"',
    "\\",
]
tricky = st.lists(st.sampled_from(pieces), max_size=20).map("".join)
texts = st.one_of(tricky, st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False), texts,
)  # fmt: skip


@st.composite
def payloads(draw):
    kind = draw(st.sampled_from(["none", "rows", "text"]))
    if kind == "none":
        return None
    if kind == "text":
        return TextPayload(
            language=draw(st.one_of(st.none(), st.sampled_from(["python", "log", "a b", "x`y"]))),
            text=draw(texts),
        )
    width = draw(st.integers(0, 4))
    columns = draw(st.lists(texts, min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(scalars, min_size=width, max_size=width), max_size=4))
    return RowsPayload(columns=columns, rows=rows)


@st.composite
def states(draw):
    state = sample_state()
    items = draw(st.lists(payloads(), min_size=1, max_size=7))
    extra = []
    for offset, payload in enumerate(items, start=len(state.evidence) + 1):
        collector = draw(st.sampled_from(["H1", "H2", "H3"]))
        status = draw(st.sampled_from(["settled", "unsettled", "none"]))
        query = draw(st.one_of(st.none(), texts))
        extra.append(
            evidence(
                offset,
                collector,
                payload,
                status=status,
                query=query,
                coverage=draw(st.one_of(st.none(), texts)),
            )
        )
    state.evidence.extend(draw(st.permutations(extra)))
    ids = [e.id for e in state.evidence]
    picked = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4, unique=True))
    state.recall = {"H1": RecallSelection(evidence_refs=picked, iteration=8)}
    state.hypotheses[0].control.previous_result = draw(st.sampled_from(ids))
    validate_state(state)
    return state


@st.composite
def bound_states(draw):
    """Random states (test_render_properties) with more and larger entries: long outputs, queries, notes, decisions."""
    state = draw(states())
    n = len(state.evidence)
    for k in range(draw(st.integers(0, 40))):
        size = draw(st.sampled_from([10, 900, 3_000, 25_000, 120_000]))
        text = draw(st.sampled_from(["x", "`", "```\n", "é\u2028", "line 12 ms\n"])) * size
        query = draw(st.sampled_from([None, "q", "select " + "c, " * 2_000]))
        state.evidence.append(
            evidence(
                n + k + 1,
                "H2",
                TextPayload(language="log", text=text),
                query=query,
                status="unsettled",
            )
        )
        state.evidence[-1].captured_at = "2026-06-10T21:00:00Z"
    for h in state.hypotheses:
        for _j in range(draw(st.integers(0, 30))):
            h.history.append(HistoryEntry(iteration=9, kind="assessment", evidence_refs=[state.evidence[0].id],
                                                verdict="neutral", confidence=0.5, text="y" * draw(st.sampled_from([1, 500, 9_000]))))  # fmt: skip
    validate_state(state)
    return state


def growing(full: State, steps: int):
    """One state object that grows, turn by turn, into `full`: each turn appends the entries of its iterations."""
    state = copy_state(full)
    sources = [(state.evidence, list(state.evidence)), (state.notes, list(state.notes)),
               *((h.history, list(h.history)) for h in state.hypotheses)]  # fmt: skip
    for target, _ in sources:
        target.clear()
    last = max(x.iteration for _, whole in sources for x in whole)
    for turn in range(1, steps + 1):
        upto = last * turn // steps
        for target, whole in sources:
            target.extend(x for x in whole[len(target) :] if x.iteration <= upto)
        yield state


BUG17 = [ctx for _, ctx in read_run(ROOT / "fixtures" / "bug17")]
