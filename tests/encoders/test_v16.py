"""v16: v15's working set on v14's share and page, with compact heads (issue 32; encodings/v16.md).

Every context is within its budget and reads back with the documented conventions alone
(`tests/helpers/recover16.py` undoes the compact heads, then v15's reader reads every field):
tests/encoders/test_v15.py checks v15 and v16 alike on the sample state, bug17, the 167-step run
and generated states. Here: the compact rules write exactly what they say; the share and the page
are v14's; a kept walk gives a fresh walk's bytes.
"""

from __future__ import annotations

from tests.helpers.factory import evidence, sample_state
from tests.helpers.journal15 import used_state
from tests.helpers.recover14 import sections
from tests.helpers.recover16 import NUMBERED, expand
from tests.helpers.strategies import growing
from workingset.encoders import get_encoder
from workingset.encoders.journal.v16 import KEEP, Walk16
from workingset.encoders.journal.walk15 import walk15
from workingset.model.state import HistoryEntry, TextPayload, copy_state

BUDGETS = ["v16", "v16:budget=20000"]


def test_compact_heads_write_what_their_rules_say():
    state = sample_state()  # opened 2026-06-10; every item's action is B and its digits (numbered)
    state.evidence[1].captured_at = "2026-06-11T08:00:00Z"  # another day: written whole
    state.evidence[2].budget.action = None  # no action in a numbered analysis: action=null
    state.evidence[3].budget.action = "B999999"  # another action: written
    text = get_encoder("v16").render(state, "H1").text
    assert f"\n{NUMBERED}\n" in text
    heads = {
        line.split(" ", 1)[0]: line for line in sections(text)[1].split("\n") if line[:1] == "E"
    }
    first, second, third, fourth = (heads[ev.id] for ev in state.evidence[:4])
    assert first.startswith("E000001 #1 20:01:00Z") and "action=" not in first
    assert second.startswith("E000002 #2 2026-06-11T08:00:00Z")
    assert "action=null" in third and "action=B999999" in fourth
    # v15 writes the same items with their dates and actions
    v15 = get_encoder("v15").render(state, "H1").text
    assert "E000001 #1 2026-06-10T20:01:00Z" in v15 and "action=B000001" in v15
    # read back: the expanded heads are v15's
    assert "E000001 #1 2026-06-10T20:01:00Z" in expand(text)


def test_actions_not_numbered_are_written_as_v15_writes_them():
    state = sample_state()
    state.evidence[0].budget.action = "deploy-7"  # the first item's action is not its number
    text = get_encoder("v16").render(state, "H1").text
    assert f"\n{NUMBERED}\n" not in text
    assert "action=deploy-7" in text and "action=B000002" in text


def test_a_neutral_assessment_without_text_is_not_written_and_is_still_recalled():
    state = sample_state()
    h = state.hypotheses[0]
    h.history.append(
        HistoryEntry(iteration=9, kind="assessment", evidence_refs=["E000007"], verdict="neutral")
    )
    ref = f"H1/{len(h.history)}"
    enc = get_encoder("v16")
    text = enc.render(state, "H1").text
    assert "H1 #9 assessment" not in sections(text)[1]
    assert enc.entry_text(state, ref).startswith("H1 #9 assessment E000007")
    h.history[-1] = HistoryEntry(iteration=9, kind="assessment", evidence_refs=["E000007"], verdict="neutral",
                                 text="no change")  # fmt: skip
    assert "H1 #9 assessment" in sections(enc.render(state, "H1").text)[1]


def test_every_parameter_follows_a_released_rule():
    for budget in (20_000, 100_000, 1_000_000):
        v14, v16 = get_encoder(f"v14:budget={budget}"), get_encoder(f"v16:budget={budget}")
        assert v16.page_size == v14.page_size  # v14's page
        assert (v16.tail_reserve, v16.case_room) == (v14.tail_reserve, v14.case_room)
    assert KEEP == Walk16.keep == (1, 3)  # v14's share


def test_a_compaction_keeps_what_a_later_query_used_within_a_third():
    enc = get_encoder("v16:budget=40000")
    state = used_state(True)
    room = enc.journal_limit(enc.case_text(state))
    plan = walk15(state, room, enc.page_size, enc.format_of(state), enc.case_text(state), Walk16)
    assert plan.compactions and "E000002" in plan.shown_refs  # kept by its use at iteration 40
    assert plan.last_use["E000002"] == 40
    v15 = walk15(state, room, enc.page_size, enc.format_of(state), enc.case_text(state))
    assert len(plan.body) < len(v15.body)  # a third kept, not two thirds


def test_a_kept_walk_gives_the_fresh_walk_on_every_turn():
    from benchmarks.synthetic import make_state

    full = make_state(2_000)
    for name in BUDGETS[
        1:
    ]:  # the small budget compacts most (at the default: tests/encoders/test_kept_walks.py)
        enc = get_encoder(name)
        journal = enc.new_journal(full)
        for state in growing(full, 30):
            assert enc.render(state, "H1", journal=journal) == enc.render(
                copy_state(state), "H1"
            ), name


def test_an_entry_over_v14s_page_is_paged():
    state = sample_state()
    state.evidence.append(
        evidence(len(state.evidence) + 1, "H1", TextPayload(language="log", text="y" * 4_500))
    )
    text = get_encoder("v16").render(state, "H1").text
    assert f"{state.evidence[-1].id} paged:" in text
