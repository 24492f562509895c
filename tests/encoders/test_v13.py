"""v13: every field of every journal entry, every index row and the tail reads back from the text.

v13 is v12 with `evidence_index` rows written as evidence heads (a text field past 200
characters cut to its first 160) and a tail without empty lines: these tests parse the text
with the documented conventions alone (tests/helpers/recover.py) and compare with the state. A row's
query and other text fields are exact, or, when cut, exactly the first 160 characters of a
text of the stated length.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.common import ROOT
from tests.helpers.excerpts import EXCERPTS
from tests.helpers.factory import evidence, sample_state
from tests.helpers.real_corpus import CORPUS, CORPUS_SOURCES, needs_corpus
from tests.helpers.recover import _V12_HEAD, read_outline, v12_pairs, v13_index
from tests.helpers.strategies import pieces, texts
from tests.helpers.v13_checks import PAIR_MAX, QUERY_LINE_MAX, ROW_MAX, check_lossless
from workingset.encoders import get_encoder
from workingset.encoders.journal.v11 import MIN_BUDGET
from workingset.importers import import_trajectory
from workingset.model.state import State, TextPayload, validate_state
from workingset.runs.layout import read_run

BUG17 = [ctx for _, ctx in read_run(ROOT / "fixtures" / "bug17")]
# `long_run` (conftest.py): the 167-step OpenHands run, editor calls whose queries hold files.
BUDGETS = ["v13", "v13:budget=60000", f"v13:budget={MIN_BUDGET}"]


@pytest.mark.parametrize("name", BUDGETS)
def test_every_bug17_context_reads_back(name):
    indexed = 0
    for ctx in BUG17:
        indexed += len(check_lossless(ctx.state, ctx.hypothesis, name))
    assert indexed, "bug17 is compacted under every budget tested"


@pytest.mark.parametrize("source", list(EXCERPTS), ids=lambda p: p.name)
def test_every_imported_excerpt_reads_back(source):
    imported = import_trajectory(EXCERPTS[source][0], source)
    for state in imported.states:
        for name in ("v13", f"v13:budget={MIN_BUDGET}"):
            check_lossless(state, state.hypotheses[0].id, name)


@needs_corpus
@pytest.mark.parametrize("name", sorted(CORPUS_SOURCES))
def test_every_corpus_context_reads_back(name):
    imported = import_trajectory(CORPUS_SOURCES[name][0], CORPUS / name)
    for version in ("v13", f"v13:budget={MIN_BUDGET}"):
        for state in imported.states:
            check_lossless(state, state.hypotheses[0].id, version)


def test_every_fourth_context_of_the_kept_167_step_run_reads_back(long_run):
    assert len(long_run) == 167
    for state in [*long_run[::4], long_run[-1]]:
        for name in ("v13", f"v13:budget={MIN_BUDGET}"):
            check_lossless(state, state.hypotheses[0].id, name)


def _filled(state: State, count: int = 4) -> State:
    """`state` with `count` large items after the others, so that a small budget archives the others."""
    for k in range(count):
        n = len(state.evidence) + 1
        state.evidence.append(
            evidence(
                n,
                "H3",
                TextPayload(language="log", text=f"{k} " + "line 12 ms\n" * 800),
                query=f"filler {k}",
            )
        )
    validate_state(state)
    return state


values = st.one_of(st.none(), texts, st.sampled_from(["true", "1.5", "-3", "null", "a b", "x=y", "", "E000001", '"q"', "loki:prod\n",
                                                      "y" * 200, "y" * 201, "a=b " * 60, '"' * 230]))  # fmt: skip
long_texts = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=190, max_size=420),
    st.lists(st.sampled_from(pieces), min_size=120, max_size=260).map("".join),
)
queries = st.one_of(
    st.none(), texts, long_texts, texts.map(lambda s: '"' + s), long_texts.map(lambda s: '"' + s),
    st.sampled_from(["one plain line", " padded ", "query: x", "a\nb", '"quoted" |= x', '"', "", "x" * 200, "x" * 201,
                     "é" * 201, '"' + "a" * 250, "a\n" * 120, "\r" * 300, "\x00" * 300, "\u2028" * 201, "😀" * 205]),
)  # fmt: skip

payloads = st.one_of(  # unknown, or text to harvest identifiers from
    st.none(),
    texts.map(lambda t: TextPayload(language="log", text=t)),
    st.just(
        TextPayload(
            language=None, text="/srv/app/pool.py:42 took 1834 ms: PoolTimeoutError at 9f3c2e1a"
        )
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=queries, payload=payloads, coverage=values, snapshot=values, predicate=st.one_of(values, long_texts), verdict=values, note=texts,
       plan=st.one_of(st.none(), texts), checks=st.lists(texts, max_size=3), hid=st.sampled_from(["H1", "H2", "H3"]))  # fmt: skip
def test_awkward_values_read_back(
    query, payload, coverage, snapshot, predicate, verdict, note, plan, checks, hid
):
    state = sample_state()
    item = evidence(
        len(state.evidence) + 1, "H2", payload, query=query, coverage=coverage, predicate=predicate
    )
    item.capture.snapshot = snapshot
    state.evidence.append(item)
    state.notes[0].text = note
    row = state.hypotheses[0].history[-1]
    row.verdict, row.text = verdict, note
    control = state.hypothesis(hid).control
    control.plan, control.next_checks = plan, checks
    validate_state(state)
    check_lossless(state, hid)  # the item in the journal
    index = check_lossless(_filled(state), hid, f"v13:budget={MIN_BUDGET}")
    assert item.id in index  # and in the index


def test_the_tail_states_every_mutable_field_and_leaves_out_empty_lines():
    state = sample_state()
    tail = get_encoder("v13").render(state, "H1").text.split("\n## This turn\n", 1)[1]
    assert tail.split("\n") == [
        "iteration 9/40 · cost 2.25/12.5",
        "*H1 0.55 open 4/10 E000007 E000004,E000002",
        "H2 0.3 open 3/10 E000008",
        "H3 0.1 parked 1/4 -",
        'plan: "check pool metrics"',
        'next checks: ["pool wait time","retry counts"]',
        "budget status: E000008 unsettled, E000009 unsettled",  # E000007 is the result to assess
        "note status: answered N000003; open N000001",
        "assess: E000007",
        "",
    ]
    # Nothing to say: no line says so.
    state.hypotheses[2].control.plan = None
    state.budget.max_cost = None
    for ev in state.evidence:
        ev.budget.status = "settled" if ev.budget.action is not None else "none"
    for note in state.notes:
        note.status = None
    state.recall = {}
    tail = get_encoder("v13").render(state, "H3").text.split("\n## This turn\n", 1)[1]
    assert tail.split("\n") == [
        "iteration 9/40 · cost 2.25",
        "H1 0.55 open 4/10 E000007",
        "H2 0.3 open 3/10 E000008",
        "*H3 0.1 parked 1/4 -",
        "assess: none",
        "",
    ]
    check_lossless(state, "H3")
    # Nothing spent and no limit: no cost at all.
    state.budget.cost_used = 0.0
    tail = get_encoder("v13").render(state, "H3").text.split("\n## This turn\n", 1)[1]
    assert tail.split("\n")[0] == "iteration 9/40"
    check_lossless(state, "H3")


def long_query_state(count: int = 16, length: int = 2400) -> State:
    """The sample state and `count` items whose queries are `length` characters or more (an editor call with a file)."""
    state = sample_state()
    for k in range(count):
        query = f"SELECT {k}, " + ", ".join(f"col_{j}" for j in range(length // 8))
        payload = TextPayload(
            language="log", text=f"line {k}\n" + "ok 12 ms /srv/app/pool.py:42\n" * 100
        )
        state.evidence.append(evidence(len(state.evidence) + 1, "H2", payload, query=query))
    validate_state(state)
    return state


def _index_rows_within_bound(text: str) -> int:
    """Check that no pair of a row passes PAIR_MAX (its identifiers aside), no query line QUERY_LINE_MAX,
    and no row with a cut text ROW_MAX beyond its identifiers; return the number of rows with a cut text."""
    cut = 0
    for row in v13_index(text).values():
        lines = row["text"].split("\n")
        pairs = v12_pairs(_V12_HEAD.match(lines[0]).group(6))
        assert all(
            len(written) <= PAIR_MAX for key, (_, written) in pairs.items() if key != "ids"
        ), row["id"]
        assert len(lines) == 1 or len(lines[1]) <= QUERY_LINE_MAX, row["id"]
        if row["cut"] or row["cut_fields"]:
            ids = len(pairs["ids"][1]) + 1 if "ids" in pairs else 0
            assert len(row["text"]) - ids <= ROW_MAX, row["id"]
            cut += 1
    return cut


def test_an_index_row_of_a_cut_query_is_bounded(long_run):
    cut = 0
    for name in BUDGETS:
        cut += _index_rows_within_bound(
            get_encoder(name).render(long_run[-1], long_run[-1].hypotheses[0].id).text
        )
    for name in BUDGETS:
        for ctx in BUG17:
            cut += _index_rows_within_bound(
                get_encoder(name).render(ctx.state, ctx.hypothesis).text
            )
    for length in (201, 2400, 100_000):
        state = long_query_state(count=12, length=length)
        out = get_encoder(f"v13:budget={MIN_BUDGET}").render(state, "H1")
        cut += _index_rows_within_bound(out.text)
    assert cut > 20  # rows of cut queries were checked


@needs_corpus
def test_an_index_row_of_a_cut_query_is_bounded_on_the_corpus():
    cut = 0
    for name, (fmt, _actions) in sorted(CORPUS_SOURCES.items()):
        imported = import_trajectory(fmt, CORPUS / name)
        for state in imported.states:
            cut += _index_rows_within_bound(
                get_encoder(f"v13:budget={MIN_BUDGET}").render(state, state.hypotheses[0].id).text
            )
    assert cut


def _index_chars(out) -> int:
    """The characters of the evidence_index: the journal's block that starts with its caption."""
    return sum(len(block) for category, block in out.blocks()
               if category == "journal" and block.startswith("evidence_index (archived evidence): "))  # fmt: skip


def test_v13s_index_is_smaller_than_v12s_where_queries_are_long():
    state = long_query_state()
    v12, v13 = (get_encoder(f"{v}:budget={MIN_BUDGET}").render(state, "H1") for v in ("v12", "v13"))
    assert v13.indexed == v12.indexed and len(v13.indexed) > 10  # the same items archived
    assert _index_chars(v13) * 4 < _index_chars(v12)
    assert v13.chars < v12.chars
    # On bug17 (queries up to 304 characters) too, wherever both archived the same items.
    last = BUG17[-1]
    v12, v13 = (
        get_encoder(f"{v}:budget={MIN_BUDGET}").render(last.state, last.hypothesis)
        for v in ("v12", "v13")
    )
    assert v13.indexed == v12.indexed and _index_chars(v13) < _index_chars(v12)


def test_v13s_index_is_smaller_than_v12s_on_the_kept_167_step_run(long_run):
    """Where v12's index alone outgrew the default budget (editor calls whose queries hold files)."""
    last = long_run[-1]
    for budget in ("", f":budget={MIN_BUDGET}"):
        v12, v13 = (
            get_encoder(v + budget).render(last, last.hypotheses[0].id) for v in ("v12", "v13")
        )
        assert (
            len(v13.indexed) > 100
            and _index_chars(v13) * 2 < _index_chars(v12)
            and v13.chars < v12.chars
        )
        assert _index_chars(v12) > 120_000  # v12's index alone is past the default budget


def test_the_case_and_the_journal_entries_are_v12s():
    """v13 changes the index, the preamble, the tail and the default budget; the case and the entries are v12's,
    byte for byte (compared where neither compacts: the preambles' lengths differ, so the journals' room does)."""
    for ctx in BUG17:
        v12, v13 = (
            get_encoder(f"{v}:budget=100000000").render(ctx.state, ctx.hypothesis)
            for v in ("v12", "v13")
        )
        assert v13.indexed == v12.indexed == ()
        (case12, *journal12), (case13, *journal13) = (
            [block for category, block in out.blocks() if category in ("case", "journal")]
            for out in (v12, v13)
        )
        assert case13 == case12 and journal13 == journal12


def test_v13s_tail_is_smaller_than_v12s_on_every_bug17_context():
    """The tail, billed uncached every turn: v13 leaves out the lines that would say "none" (same budget as v12's)."""
    for ctx in BUG17:
        v12, v13 = (
            get_encoder(v).render(ctx.state, ctx.hypothesis) for v in ("v12", "v13:budget=120000")
        )
        assert sum(n for c, n in v13.chunks if c == "tail") < sum(
            n for c, n in v12.chunks if c == "tail"
        )


def test_the_plain_name_is_a_budget_of_100000_characters():
    """v13 chose its own default budget; v11's and v12's stay 120,000, and a name keeps its budget when re-rendered."""
    assert (get_encoder("v13").budget, get_encoder("v12").budget, get_encoder("v11").budget) == (
        100_000,
        120_000,
        120_000,
    )
    assert get_encoder("v13:budget=100000").name == "investigation_project_v13"
    assert get_encoder("v13:budget=120000").name == "investigation_project_v13:budget=120000"
    assert get_encoder("v12:budget=100000").name == "investigation_project_v12:budget=100000"
    assert (
        "\ncontext budget: 100000 characters\n"
        in get_encoder("v13").render(BUG17[0].state, BUG17[0].hypothesis).text
    )


# -- the output schema's outline reads back to the schema ---------------------------------------------


def test_the_output_schema_outline_reads_back_to_the_decision_schema():
    """The preamble's outline is the whole schema: parsed back, it is the JSON Schema less its `$schema` and title."""
    encoder = get_encoder("v13")
    lines = encoder.preamble.split("\n")
    assert lines[-3:-1] == ["## Output schema", "`?`: optional key; no other keys."]
    schema, end = read_outline(lines[-1])
    assert end == len(lines[-1])
    expected = {k: v for k, v in encoder.decision_schema.items() if k not in ("$schema", "title")}
    assert schema == expected


def test_an_outline_refuses_what_it_cannot_write():
    from workingset.encoders.journal.v13 import schema_outline

    for schema in ({"type": "string", "format": "date"}, {"type": "object", "properties": {}, "additionalProperties": True},
                   {"type": "object", "properties": {}}, {"enum": ["only"]}, {"type": "integer"},
                   {"type": "number", "minimum": 0}, {"type": "number", "pattern": "^x$"},
                   {"type": "string", "pattern": "^a b$"}, {"type": "string", "pattern": "^a$|^b$"},
                   {"type": "object", "properties": {}, "additionalProperties": False, "required": ["x"]}):  # fmt: skip
        with pytest.raises(ValueError):
            schema_outline(schema)
