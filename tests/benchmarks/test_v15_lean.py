"""benchmarks/v15_lean.py: v15 measured with leaner entries, and released v15 untouched before and after."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import v15_lean  # noqa: E402 (benchmarks/ is put on the path just above)

from tests.helpers.common import BUG17  # noqa: E402
from workingset.encoders import get_encoder  # noqa: E402
from workingset.model.state import load_stored_context  # noqa: E402


def test_a_lean_head_leaves_out_the_capture_time_action_and_cost_only():
    text = (
        'E000004 #4 2026-04-10T03:36:31.474514Z coverage="exit_code=1" action=B000004 cost=0.00012026\n'
        "query: cat setup.py\n```\ncost=1 action=x 2026-04-10T03:36:31.474514Z\n```"
    )
    lean = v15_lean.lean_head(text, "2026-04-10T03:36:31.474514Z")
    head, rest = lean.split("\n", 1)
    assert head == 'E000004 #4 coverage="exit_code=1"'
    assert rest == text.split("\n", 1)[1]  # the query and payload as they were


def test_inside_v15_writes_lean_and_after_it_writes_as_released():
    ctx = load_stored_context((BUG17 / "bug17-r0018.json").read_bytes())
    enc = get_encoder("v15")
    released = enc.render(ctx.state, ctx.hypothesis).text
    with v15_lean.lean("v15"):
        lean = enc.render(ctx.state, ctx.hypothesis).text
        assert enc.page_size == enc.budget // 10
    with v15_lean.lean("v14"):
        assert enc.page_size == get_encoder("v14").page_size
        paged = enc.render(ctx.state, ctx.hypothesis).text
    after = enc.render(ctx.state, ctx.hypothesis).text
    assert after == released and enc.page_size == enc.budget // 10
    newest = ctx.state.evidence[
        -1
    ]  # shown in the journal: its head is lean there (the index keeps full heads)
    assert f"\n{newest.id} #{newest.iteration} {newest.captured_at}" in released
    assert f"\n{newest.id} #{newest.iteration} {newest.captured_at}" not in lean
    assert f"\n{newest.id} #{newest.iteration}" in lean and len(lean) < len(released)
    assert paged != lean


def test_the_variants_are_v15_keeps_shares_with_each_page_and_two_compact_ones():
    lean = [(share, page) for share, page, entries in v15_lean.VARIANTS if entries == "lean"]
    assert sorted(lean) == sorted(
        (share, page) for share in v15_lean.SHARES for page in ("v15", "v14")
    )
    assert [v for v in v15_lean.VARIANTS if v[2] == "compact"] == [((2, 3), "v15", "compact"),
                                                                    ((1, 3), "v14", "compact")]  # fmt: skip
    assert v15_lean._label(((1, 3), "v14", "lean")) == "v15 lean, keep 1/3, v14's page"


class _Ev:
    def __init__(self, id: str, captured_at: str, action: str | None):
        self.id, self.captured_at = id, captured_at
        self.budget = type("B", (), {"action": action})()


def test_a_compact_head_writes_what_its_rules_let_a_reader_undo():
    ev = _Ev("E000004", "2026-04-10T03:36:31.474514Z", "B000004")
    text = f"E000004 #4 {ev.captured_at} action=B000004 cost=0.00012026\nquery: ls"
    assert (
        v15_lean.compact_head(text, ev, "2026-04-10", True)
        == "E000004 #4 03:36:31.474514Z cost=0.00012026\nquery: ls"
    )
    # another day than the case's, actions not numbered like the evidence, or another number: written as they are
    assert v15_lean.compact_head(text, ev, "2026-04-09", False) == text
    other = _Ev("E000004", ev.captured_at, "B000009")
    odd = text.replace("action=B000004", "action=B000009")
    assert "action=B000009" in v15_lean.compact_head(odd, other, "2026-04-10", True)


def test_a_compact_journal_leaves_out_neutral_assessment_rows_without_confidence_or_text_only():
    from workingset.model.state import HistoryEntry

    row = lambda **k: HistoryEntry(iteration=2, **k)  # noqa: E731
    assert not v15_lean.compact_row(
        row(kind="assessment", evidence_refs=["E000001"], verdict="neutral")
    )
    assert not v15_lean.compact_row(row(kind="query", evidence_refs=["E000002"]))
    assert v15_lean.compact_row(
        row(kind="assessment", evidence_refs=["E000001"], verdict="neutral", confidence=0.5)
    )
    assert v15_lean.compact_row(
        row(kind="assessment", evidence_refs=["E000001"], verdict="supports")
    )
    assert v15_lean.compact_row(
        row(kind="assessment", evidence_refs=["E000001"], verdict="neutral", text="why")
    )


def test_compact_entries_are_written_inside_only():
    from workingset.encoders.journal import v15

    ctx = load_stored_context((BUG17 / "bug17-r0018.json").read_bytes())
    enc = get_encoder("v15")
    released = enc.render(ctx.state, ctx.hypothesis).text
    with v15_lean.lean("v14", "compact"):
        assert type(enc.format_of(ctx.state)).__name__ == "Compact"
        compact = enc.render(ctx.state, ctx.hypothesis).text
    assert enc.render(ctx.state, ctx.hypothesis).text == released
    assert type(enc.format_of(ctx.state)) is v15.V15Format
    newest = ctx.state.evidence[-1]
    clock = newest.captured_at.partition("T")[2]
    assert (
        f"\n{newest.id} #{newest.iteration} {clock}" in compact
    )  # bug17 runs within its opening day


def test_against_v14_names_the_variants_that_show_more_for_less_or_the_cheapest():
    def row(view: int, bill: float) -> dict:
        return {"use": {"used": 100, "in_view": view, "steps": 10, "steps_needing_recall": 0},
                "bill": {m: bill for m in v15_lean.MODELS}}  # fmt: skip

    names = [v15_lean._label(v) for v in v15_lean.VARIANTS]
    better = {
        "v14": row(90, 70.0),
        v15_lean.TRANSCRIPT: row(100, 100.0),
        **{n: row(80, 90.0) for n in names},
    }
    better[names[0]] = row(92, 69.0)
    assert v15_lean.against_v14("the 1 runs", [better]).startswith(
        f"on the 1 runs, {names[0]} shows at least"
    )
    worse = {**better, names[0]: row(92, 71.0)}
    said = v15_lean.against_v14("bug17", [worse])
    assert said.startswith("on bug17, no variant shows as much as v14 for no more (the cheapest, ")
    assert f"{names[0]}, 0.710x against v14's 0.700x" in said
