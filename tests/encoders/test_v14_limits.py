"""v14's documented limit (issue 30, item 15): a plan or next checks past a page is cut, and no recall reaches the rest.

encodings/v14.md ("What v14 cannot show") and docs/encoders.md state it; this test holds them to it.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.factory import sample_state
from workingset.encoders import get_encoder
from workingset.encoders.journal.v13 import EXCERPT
from workingset.model.state import ENTRY_REF, PAGE_REF

ROOT = Path(__file__).resolve().parents[2]


def test_a_plan_past_a_page_is_cut_to_its_first_160_characters():
    enc = get_encoder("v14")
    state = sample_state()
    plan = "".join(f"step {i}: check the pool. " for i in range(400))
    state.hypotheses[0].control.plan = plan
    state.hypotheses[0].control.next_checks = [f"check {i}" * 50 for i in range(20)]
    text = enc.render(state, "H1").text
    assert EXCERPT == 160 and len(plan) > enc.page_size  # type: ignore[attr-defined]
    line = next(line for line in text.splitlines() if line.startswith("plan~"))
    assert line.startswith(f'plan~{len(plan)}: "{plan[:EXCERPT]}')
    assert plan[EXCERPT : EXCERPT + 40] not in text
    assert any(line.startswith("next checks~") for line in text.splitlines())
    # No reference of v14's recall names a plan: only notes, decision rows, the case, evidence.
    assert "plan" not in ENTRY_REF + PAGE_REF


def test_the_limit_is_documented():
    v14 = (ROOT / "encodings" / "v14.md").read_text(encoding="utf-8")
    encoders = (ROOT / "docs" / "encoders.md").read_text(encoding="utf-8")
    assert "What v14 cannot show: a long plan or next checks" in v14
    assert "One limit of v14 (issue 30)" in encoders
