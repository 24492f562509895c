"""Hypothesis strategies of awkward texts, payloads and whole states, shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.helpers.factory import evidence, sample_state
from workingset.model.state import RecallSelection, RowsPayload, TextPayload, validate_state

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
