"""v15: a working set. What the analysis used stays in view; entries are whole up to a page; lean heads.

Every context is within its budget; every evidence ID is shown or named by the index; what
the journal shows whole reads back field by field with the documented conventions alone
(tests/helpers/recover15.py: the case's `evidence defaults:` line and each head's differing
fields); a paged entry's pages join back to it; a kept walk gives the fresh walk's bytes.
"""

from __future__ import annotations

import msgspec
import msgspec.structs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.factory import HUGE, evidence, huge_state, sample_state
from tests.helpers.journal15 import check, used_state
from tests.helpers.recover14 import read_tail, sections
from tests.helpers.recover15 import defaults
from tests.helpers.strategies import BUG17, bound_states, growing
from workingset.encoders import get_encoder
from workingset.encoders.journal.base import render_kept
from workingset.encoders.journal.v15 import PAGE_SHARE
from workingset.encoders.journal.walk15 import walk15
from workingset.model.state import HistoryEntry, RecallSelection, TextPayload, copy_state

BUDGETS = ["v15", "v15:budget=20000"]
BY_USE = [
    *BUDGETS,
    "v16",
    "v16:budget=20000",
]  # v16 is v15's walk on v14's share and page: the same checks


@pytest.mark.parametrize("name", BY_USE)
def test_sample_and_bug17_contexts_are_bounded_and_read_back(name):
    for h in sample_state().hypotheses:
        check(sample_state(), h.id, name)
    for ctx in BUG17:
        check(ctx.state, ctx.hypothesis, name)


@pytest.mark.slow  # fuzz: generated states with up to 40 outputs of up to 120,000 characters
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(state=bound_states(), hid=st.sampled_from(["H1", "H2", "H3"]), name=st.sampled_from(BY_USE))
def test_random_states_are_within_the_budget_and_read_back(state, hid, name):
    before = msgspec.json.encode(state)
    out, _ = check(state, hid, name)
    assert get_encoder(name).render(copy_state(state), hid) == out
    assert msgspec.json.encode(state) == before


@pytest.mark.parametrize("name", BY_USE)
def test_every_context_of_the_kept_167_step_run_is_bounded_and_reads_back(long_run, name):
    for state in long_run[::6] + [long_run[-1]]:
        check(state, state.hypotheses[0].id, name)


def test_an_output_larger_than_the_budget_is_paged_and_its_pages_join_back():
    state = huge_state()
    big = state.evidence[-2].id
    enc = get_encoder("v15:budget=20000")
    full = enc.entry_text(state, big)
    assert len(full) > HUGE
    pages = []
    for page in range(1, enc.page_count(state, big) + 1):
        s = copy_state(state)
        s.recall["H1"] = RecallSelection(evidence_refs=[big], pages=[f"{big}:{page}"], iteration=9)
        text = enc.render(s, "H1").text
        assert len(text) <= enc.budget
        if page == 1:
            continue
        _t, tail_pages, _w = read_tail(sections(text)[2])
        pages.append(tail_pages[big][3])
        if page > 3:
            break
    assert all(p in full for p in pages)


def test_an_entry_is_whole_up_to_a_page_of_a_tenth_of_the_budget():
    state = sample_state()
    n = len(state.evidence)
    for k, size in enumerate((4_500, 9_000, 12_000), start=1):
        state.evidence.append(
            evidence(n + k, "H1", TextPayload(language="log", text="y" * size), status="unsettled")
        )
        state.evidence[-1].iteration = 9
    v14, v15 = get_encoder("v14").render(state, "H1"), get_encoder("v15").render(state, "H1")
    assert get_encoder("v15").page_size == 100_000 // PAGE_SHARE == 10_000
    ids = [ev.id for ev in state.evidence[-3:]]
    assert all(f"{eid} paged:" in v14.text for eid in ids)  # v14 pages each at 4,000
    assert f"{ids[0]} paged:" not in v15.text and f"{ids[1]} paged:" not in v15.text
    assert f"{ids[2]} paged:" in v15.text


def test_a_compaction_keeps_what_a_later_query_used_and_archives_by_last_use():
    enc = get_encoder("v15:budget=40000")
    room = enc.journal_limit(enc.case_text(used_state(True)))
    used = walk15(
        used_state(True),
        room,
        enc.page_size,
        enc.format_of(used_state(True)),
        enc.case_text(used_state(True)),
    )
    unused = walk15(
        used_state(False),
        room,
        enc.page_size,
        enc.format_of(used_state(False)),
        enc.case_text(used_state(False)),
    )
    assert used.compactions and unused.compactions
    assert (
        "E000002" in used.shown_refs and "E000002" not in unused.shown_refs
    )  # kept by its use at iteration 40
    assert used.last_use["E000002"] == 40  # the last query naming it
    v14 = get_encoder("v14:budget=40000").render(used_state(True), "H1")
    assert "E000002" in v14.indexed  # v14 archives by age


def test_a_recalled_item_is_written_again_at_the_journals_end_and_stays_in_view():
    state = used_state(False)
    enc = get_encoder("v15:budget=40000")
    assert "E000002" in enc.render(state, "H1").indexed
    state.hypotheses[0].history.append(
        HistoryEntry(iteration=41, kind="recall", evidence_refs=["E000002"])
    )
    state.iteration = 41
    out = enc.render(state, "H1")
    assert "E000002" in out.shown and "pool_wait_ms rose to 900" in sections(out.text)[1]
    assert sections(out.text)[1].rstrip().endswith("```")  # the copy closes the journal
    assert "E000002" in sections(out.text)[0]  # its index row stays: the index only grows


def test_lean_heads_and_rows():
    state = used_state(True)
    state.hypotheses[0].history.append(
        HistoryEntry(iteration=40, kind="query", evidence_refs=["E000040"])
    )
    text = get_encoder("v15").render(state, "H1").text
    assert defaults(text) == {
        "collector": "H1",
        "scope": "query_result",
        "origin": "postgres:orders",
        "language": "log",
    }
    assert "\nE000040 #40 " in text and "origin=" not in sections(text)[1]
    assert "H1 #40 query" not in text  # a query row without text is not written
    assert (
        get_encoder("v15").entry_text(state, "H1/1") == "H1 #40 query E000040"
    )  # and still recalled


def test_a_kept_walk_gives_the_fresh_walk_on_every_turn():
    from benchmarks.synthetic import make_state

    full = make_state(2_000)
    for name in BUDGETS:
        enc = get_encoder(name)
        journal = enc.new_journal(full)
        walks = set()
        for state in growing(full, 30):
            assert enc.render(state, "H1", journal=journal) == enc.render(
                copy_state(state), "H1"
            ), name
            walks.add(id(journal.w))
        assert len(walks) <= 2, (
            "the turns resumed the walk (a new one only when the evidence defaults appear)"
        )


def test_a_walk_kept_from_before_the_first_item_starts_over_once_and_resumes(monkeypatch):
    """A session keeps the walk its first turn made, before any evidence; the first item brings the case's
    `evidence defaults:` line (a new case and room), so the kept journal starts over once, then resumes."""
    from benchmarks.synthetic import make_state
    from workingset.encoders.journal import walk15 as walk15_module

    walks = []
    start = walk15_module.Walk15.__init__

    def counted(self, *args, **kwargs):
        walks.append(self)
        start(self, *args, **kwargs)

    full = make_state(2_000)
    for name in BUDGETS:
        enc = get_encoder(name)
        kept: dict = {}
        empty = copy_state(full)
        for target in (empty.evidence, empty.notes, *(h.history for h in empty.hypotheses)):
            target.clear()
        render_kept(enc, empty, "H1", kept)
        journal = kept[enc.name]
        states = [copy_state(state) for state in growing(full, 30)]
        fresh = [enc.render(state, "H1") for state in states]
        monkeypatch.setattr(walk15_module.Walk15, "__init__", counted)
        walks.clear()
        kept_renders = [render_kept(enc, state, "H1", kept) for state in growing(full, 30)]
        monkeypatch.undo()
        assert kept_renders == fresh, name
        assert kept[enc.name] is journal, name
        assert len(walks) == 1, (
            f"{name}: one start-over when the first item came, then every turn resumed"
        )


def test_between_two_compactions_the_journal_only_grows(long_run):
    enc = get_encoder("v15")
    before = None
    rewrites = 0
    for state in long_run:
        journal = sections(enc.render(state, state.hypotheses[0].id).text)[:2]
        if before is not None and not (
            journal[0] == before[0] and journal[1].startswith(before[1])
        ):
            rewrites += 1
        before = journal
    assert 0 < rewrites < len(long_run) // 4


def test_every_parameter_follows_its_stated_rule():
    for budget in (20_000, 100_000, 1_000_000):
        enc = get_encoder(f"v15:budget={budget}")
        assert enc.page_size == budget // 10
        assert enc.tail_reserve == max(6_000, budget // 4) and enc.case_room == budget // 8
    assert get_encoder("v15").budget == get_encoder("v14").budget == 100_000


def test_a_recall_of_a_later_page_shows_it_in_the_tail_and_writes_no_copy():
    state = sample_state()
    n = len(state.evidence) + 1
    state.evidence.append(evidence(n, "H1", TextPayload(language="log", text="z\n" * 15_000)))
    state.evidence[-1].iteration = 9
    ref = state.evidence[-1].id
    state.hypotheses[0].history.append(
        HistoryEntry(iteration=10, kind="recall", evidence_refs=[ref])
    )
    state.recall["H1"] = RecallSelection(evidence_refs=[ref], pages=[f"{ref}:2"], iteration=10)
    state.iteration = 10
    text = get_encoder("v15").render(state, "H1").text
    _index, body, tail = sections(text)
    assert body.count(f"{ref} paged: ") == 1  # page 1 in the journal once: no copy of it
    assert f"{ref} page 2/" in tail
