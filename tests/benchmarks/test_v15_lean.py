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


def test_the_variants_are_v15_keeps_shares_with_each_page():
    assert len(v15_lean.VARIANTS) == 6
    assert {share for share, _ in v15_lean.VARIANTS} == set(v15_lean.SHARES)
    assert v15_lean._label(((1, 3), "v14")) == "v15 lean, keep 1/3, v14's page"
