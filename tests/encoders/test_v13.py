"""v13: every field of every journal entry, every index row and the tail reads back from the text.

v13 is v12 with `evidence_index` rows written as evidence heads (a text field past 200
characters cut to its first 160) and a tail without empty lines: these tests parse the text
with the documented conventions alone (tests/recover.py) and compare with the state. A row's
query and other text fields are exact, or, when cut, exactly the first 160 characters of a
text of the stated length.
"""

from __future__ import annotations

import json
import re
import tarfile

import msgspec
import pytest
from conftest import CORPUS, CORPUS_SOURCES, ROOT, needs_corpus
from factory import evidence, sample_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from journal_checks import check_entries
from recover import _V12_HEAD, v12_pairs, v13_evidence, v13_index, v13_tail
from test_importers_excerpts import EXCERPTS
from test_render_properties import pieces, texts

from workingset.encoders import get_encoder
from workingset.encoders.v11 import MIN_BUDGET
from workingset.importers import import_trajectory
from workingset.model.harvest import harvest
from workingset.model.state import Evidence, State, TextPayload, validate_state
from workingset.runs.layout import read_run

BUG17 = [ctx for _, ctx in read_run(ROOT / "fixtures" / "bug17")]
# The 167-step OpenHands run kept in the repository (benchmarks/data/SOURCES.md): editor calls whose queries hold files.
LONG_RUN = ROOT / "benchmarks" / "data" / "openhands-v1-sonnet4-pylint-167.tar.xz"
BUDGETS = ["v13", "v13:budget=60000", f"v13:budget={MIN_BUDGET}"]
# The documented cut: a query longer than WHOLE characters shows its first EXCERPT.
WHOLE, EXCERPT = 200, 160
# A query line at most: `query~N: ` and a JSON string of 160 characters, each escaped in 6 at most.
QUERY_LINE_MAX = len("query~100000000: ") + 2 + 6 * EXCERPT
# A `key=value` pair of a row at most, the identifiers aside: a cut text, as the query line.
PAIR_MAX = len("next_cursor~100000000=") + 2 + 6 * EXCERPT
# An index row of a cut text is at most ROW_MAX characters beyond its identifiers (bounded by harvest's caps).
ROW_MAX = 1_500


def check_index_row(row: dict, ev: Evidence) -> None:
    """Every field of an archived item reads back from its row; its query whole, or its first 160 characters."""
    eid = ev.id
    assert (row["collector"], row["iteration"], row["scope"], row["captured_at"]) == (
        ev.collector, ev.iteration, ev.scope, ev.captured_at), eid  # fmt: skip
    fields, cut = dict(row["fields"]), dict(row["cut_fields"])
    capture = {k: v for k, v in msgspec.to_builtins(ev.capture).items() if k != "query"}
    for k, v in capture.items():
        if isinstance(v, str) and len(v) > WHOLE:
            assert (fields.pop(k), cut.pop(k)) == (v[:EXCERPT], len(v)), (eid, k)
        else:
            assert fields.pop(k, None) == v, (eid, k)
    assert cut == {}, eid  # only a long text is cut
    assert (fields.pop("action", None), fields.pop("cost", 0)) == (
        ev.budget.action,
        ev.budget.cost,
    ), eid
    assert fields.pop("payload") == ("unknown" if ev.payload is None else "archived"), eid
    assert fields.pop("ids", []) == harvest(ev.payload), eid
    assert fields == {}, eid  # nothing else, and nothing read twice
    query = ev.capture.query
    if query is None:
        assert row["query"] is None, eid
    elif len(query) <= WHOLE:
        assert (row["query"], row["query_chars"], row["cut"]) == (query, len(query), False), eid
    else:
        assert (row["query"], row["query_chars"], row["cut"]) == (
            query[:EXCERPT],
            len(query),
            True,
        ), eid
        assert len(row["text"].split("\n")[1]) <= QUERY_LINE_MAX, eid


def check_tail(state: State, hypothesis: str, out, index: dict[str, dict]) -> dict:
    """Every field "This turn" states reads back: budgets, each hypothesis's control, statuses, recalled items, the task."""
    tail = v13_tail(out.text)
    b = state.budget
    assert (tail["iteration"], tail["max_iterations"], tail["cost_used"], tail["max_cost"]) == (
        state.iteration, b.max_iterations, b.cost_used, b.max_cost)  # fmt: skip
    assert tail["selected"] == hypothesis
    assert tail["hypotheses"] == [{
        "id": x.id, "confidence": x.confidence, "disposition": x.disposition,
        "iterations_used": x.control.iterations_used, "iteration_limit": x.control.iteration_limit,
        "previous_result": x.control.previous_result,
        "recalled": state.recall[x.id].evidence_refs if x.id in state.recall else None,
    } for x in state.hypotheses]  # fmt: skip
    h = state.hypothesis(hypothesis)
    assert (tail["plan"], tail["next_checks"]) == (h.control.plan, h.control.next_checks)
    assert sorted(tail["budget_status"].items()) == sorted(  # the result to assess read back from `assess:`
        (ev.id, ev.budget.status) for ev in state.evidence
        if ev.budget.status != ("settled" if ev.budget.action is not None else "none"))  # fmt: skip
    by_status: dict[str, list[str]] = {}
    for note in state.notes:
        if note.status is not None:
            by_status.setdefault(note.status, []).append(note.id)
    assert list(tail["note_status"].items()) == sorted(
        by_status.items()
    )  # statuses in order, IDs in note order
    assert tail["assess"] == state.pending_result(hypothesis)
    # The tail shows archived items only, each in full; every other item shown is in the journal.
    assert set(tail["shown"]) <= set(index) and sorted(tail["shown"]) == tail["shown"]
    return tail


def check_lossless(state: State, hypothesis: str, name: str = "v13") -> dict[str, dict]:
    """Every journal entry, index row and tail field of `state` reads back from the v13 text; the index rows."""
    out = get_encoder(name).render(state, hypothesis)
    by_id = {ev.id: ev for ev in state.evidence}
    check_entries(state, out, v13_evidence(out.text))
    index = v13_index(out.text)
    tail = check_tail(state, hypothesis, out, index)
    # The index holds every archived item: those not shown, and those the tail shows in full this turn.
    assert set(index) == set(out.indexed) | set(tail["shown"])
    assert not set(out.indexed) & set(out.shown) and sorted(out.shown + out.indexed) == sorted(
        by_id
    )
    for eid, row in index.items():
        check_index_row(row, by_id[eid])
    return index


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


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """The kept 167-step run's states, imported from the archive unpacked into a temporary directory."""
    into = tmp_path_factory.mktemp("long-run")
    with tarfile.open(LONG_RUN) as archive:
        archive.extractall(into, filter="data")
    return import_trajectory("openhands", into / LONG_RUN.name.removesuffix(".tar.xz")).states


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


def _read_outline(text: str, at: int = 0) -> tuple[dict, int]:
    """Parse one value of a schema outline (the documented grammar) from `at`; return (schema, end)."""
    parts, at = [], at
    while True:
        part, at = _read_alternative(text, at)
        parts.append(part)
        if not text.startswith(" | ", at):
            break
        at += 3
    return (parts[0] if len(parts) == 1 else {"oneOf": parts}), at


def _read_alternative(text: str, at: int) -> tuple[dict, int]:
    decoder = json.JSONDecoder()
    if text[at] == "{":
        schema: dict = {
            "type": "object",
            "additionalProperties": False,
            "required": [],
            "properties": {},
        }
        at += 1
        while text[at] != "}":
            key, at = decoder.raw_decode(text, at)
            optional = text[at] == "?"
            at += optional
            assert text.startswith(": ", at)
            schema["properties"][key], at = _read_outline(text, at + 2)
            if not optional:
                schema["required"].append(key)
            at += 2 if text.startswith(", ", at) else 0
        if not schema["required"]:
            del schema["required"]
        return schema, at + 1
    if text[at] == "[":
        items, at = _read_outline(text, at + 1)
        assert text[at] == "]"
        schema, at = {"type": "array", "items": items}, at + 1
        if m := re.compile(r" (?:(\d+) to (\d+)|at least (\d+)|at most (\d+))(, distinct)?").match(
            text, at
        ):
            low, high = m.group(1) or m.group(3), m.group(2) or m.group(4)
            schema.update({k: int(v) for k, v in (("minItems", low), ("maxItems", high)) if v})
            if m.group(5):
                schema["uniqueItems"] = True
            at = m.end()
        return schema, at
    if text[at] == '"':
        values = []
        while True:
            value, at = decoder.raw_decode(text, at)
            values.append(value)
            if (
                text[at : at + 1] != "|"
                or text.startswith("| ", at)
                or text.startswith(" | ", at - 1)
            ):
                break
            at += 1
        return ({"const": values[0]} if len(values) == 1 else {"enum": values}), at
    if text.startswith("string", at):
        m = re.compile(r"string(?: (\^\S*?\$)(?=[,}\]]| |$))?").match(text, at)
        return (
            {"type": "string", "pattern": m.group(1)} if m.group(1) else {"type": "string"}
        ), m.end()
    m = re.compile(r"number(?: ([0-9.]+)\.\.([0-9.]+))?").match(text, at)
    assert m, text[at : at + 40]
    schema = {"type": "number"}
    if m.group(1):
        schema.update(minimum=json.loads(m.group(1)), maximum=json.loads(m.group(2)))
    return schema, m.end()


def test_the_output_schema_outline_reads_back_to_the_decision_schema():
    """The preamble's outline is the whole schema: parsed back, it is the JSON Schema less its `$schema` and title."""
    encoder = get_encoder("v13")
    lines = encoder.preamble.split("\n")
    assert lines[-3:-1] == ["## Output schema", "`?`: optional key; no other keys."]
    schema, end = _read_outline(lines[-1])
    assert end == len(lines[-1])
    expected = {k: v for k, v in encoder.decision_schema.items() if k not in ("$schema", "title")}
    assert schema == expected


def test_an_outline_refuses_what_it_cannot_write():
    from workingset.encoders.v13 import schema_outline

    for schema in ({"type": "string", "format": "date"}, {"type": "object", "properties": {}, "additionalProperties": True},
                   {"type": "object", "properties": {}}, {"enum": ["only"]}, {"type": "integer"},
                   {"type": "number", "minimum": 0}, {"type": "number", "pattern": "^x$"},
                   {"type": "string", "pattern": "^a b$"}, {"type": "string", "pattern": "^a$|^b$"},
                   {"type": "object", "properties": {}, "additionalProperties": False, "required": ["x"]}):  # fmt: skip
        with pytest.raises(ValueError):
            schema_outline(schema)
