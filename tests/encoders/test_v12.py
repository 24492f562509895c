"""v12: every field of every journal entry and of the tail reads back exactly from the text.

v12 writes heads of positional fields and `key=value` pairs instead of keyed JSON records,
and queries and decision texts raw instead of JSON-escaped: these tests parse the text with
the documented conventions alone (tests/helpers/recover.py) and compare with the state.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.common import ROOT
from tests.helpers.excerpts import EXCERPTS
from tests.helpers.factory import evidence, sample_state
from tests.helpers.journal_checks import v12_lossless
from tests.helpers.real_corpus import CORPUS, CORPUS_SOURCES, needs_corpus
from tests.helpers.strategies import texts
from workingset.encoders import get_encoder
from workingset.encoders.journal.v11 import MIN_BUDGET
from workingset.importers import import_trajectory
from workingset.model.state import validate_state
from workingset.runs.layout import read_run

BUG17 = [ctx for _, ctx in read_run(ROOT / "fixtures" / "bug17")]


@pytest.mark.parametrize("name", ["v12", "v12:budget=60000", f"v12:budget={MIN_BUDGET}"])
def test_every_bug17_context_reads_back(name):
    for ctx in BUG17:
        v12_lossless(ctx.state, ctx.hypothesis, name)


@pytest.mark.parametrize("source", list(EXCERPTS), ids=lambda p: p.name)
def test_every_imported_excerpt_reads_back(source):
    imported = import_trajectory(EXCERPTS[source][0], source)
    for state in imported.states:
        v12_lossless(state, state.hypotheses[0].id)


@needs_corpus
@pytest.mark.parametrize("name", sorted(CORPUS_SOURCES))
def test_every_corpus_context_reads_back(name):
    imported = import_trajectory(CORPUS_SOURCES[name][0], CORPUS / name)
    for version in ("v12", f"v12:budget={MIN_BUDGET}"):
        for state in imported.states:
            v12_lossless(state, state.hypotheses[0].id, version)


values = st.one_of(
    st.none(),
    texts,
    st.sampled_from(
        ["true", "1.5", "-3", "null", "a b", "x=y", "", "E000001", '"q"', "loki:prod\n", "true\n"]
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.one_of(st.none(), texts, st.sampled_from(["one plain line", " padded ", "query: x", "a\nb"])),
       coverage=values, snapshot=values, verdict=values, note=texts)  # fmt: skip
def test_awkward_values_read_back(query, coverage, snapshot, verdict, note):
    state = sample_state()
    item = evidence(len(state.evidence) + 1, "H2", None, query=query, coverage=coverage)
    item.capture.snapshot = snapshot
    state.evidence.append(item)
    state.notes[0].text = note
    row = state.hypotheses[0].history[-1]
    row.verdict, row.text = verdict, note
    validate_state(state)
    v12_lossless(state, "H1")


def test_the_tail_states_every_mutable_field():
    state = sample_state()
    tail = get_encoder("v12").render(state, "H1").text.split("\n## This turn\n", 1)[1]
    lines = tail.split("\n")
    for h in state.hypotheses:
        recalled = state.recall.get(h.id)
        expected = (f"{h.id} {json.dumps(h.confidence)} {h.disposition} {h.control.iterations_used}/"
                    f"{h.control.iteration_limit} {h.control.previous_result or '-'} "
                    f"{','.join(recalled.evidence_refs) if recalled else '-'}")  # fmt: skip
        assert expected in lines
    b = state.budget
    assert lines[0].startswith(
        f"iteration {state.iteration} of {b.max_iterations} · cost used {json.dumps(b.cost_used)}"
    )
    for ev in state.evidence:
        default = "settled" if ev.budget.action is not None else "none"
        assert (f"{ev.id} {ev.budget.status}" in tail) == (ev.budget.status != default)
    for note in state.notes:
        if note.status is not None:
            assert re.search(rf"note status: .*{note.status} [^;]*{note.id}", tail)


def test_v12_is_smaller_than_v11_where_it_changes_and_in_what_it_writes():
    """The tail, the preamble and the journal of bug17's last context, in characters."""
    last = BUG17[-1]
    v11, v12 = (get_encoder(v).render(last.state, last.hypothesis) for v in ("v11", "v12"))

    def part(out, name):
        return sum(n for category, n in out.chunks if category == name)

    for name in ("preamble", "tail"):
        assert part(v12, name) < part(v11, name), name
    assert part(v12, "journal") < part(v11, "journal")
