"""Availability: identifiers of earlier evidence that a context shows, can recall, or has lost."""

from __future__ import annotations

import pytest

from tests.helpers.common import BUG17
from workingset import render
from workingset.compare.availability import Availability, availability
from workingset.compare.baselines import BASELINES
from workingset.encoders import get_encoder
from workingset.model.harvest import harvest
from workingset.model.state import TextPayload
from workingset.runs.layout import read_run


def test_harvest_keeps_exact_identifiers_in_order_and_capped():
    text = ('File "/repo/astropy/io/registry/base.py", line 313\nIndexError: tuple index out of range\n'
            "commit 3f57d5c1a, p95 4180 ms, 12.5% errors, deadbeef 1234567, see src/x/L031.py:42")  # fmt: skip
    found = harvest(TextPayload(language=None, text=text))
    assert found == ["/repo/astropy/io/registry/base.py", "IndexError", "3f57d5c1a", "4180 ms", "12.5%",
                     "src/x/L031.py:42"]  # fmt: skip
    assert harvest(None) == []
    many = " ".join(f"E{i}Error" for i in range(20))
    assert len(harvest(TextPayload(language=None, text=many))) == 8


def test_counts_follow_shown_indexed_and_recall():
    _, ctx = read_run(BUG17)[-1]
    state = ctx.state
    everything = [ev.id for ev in state.evidence]
    full = availability(state, everything, [], recall=False)
    assert full.total > 0 and full.visible == full.total
    half = everything[: len(everything) // 2]
    rest = everything[len(everything) // 2 :]
    with_recall = availability(state, half, rest, recall=True)
    without = availability(state, half, rest, recall=False)
    assert with_recall.visible == without.visible and with_recall.addressable == without.gone > 0
    assert with_recall.share("reachable") == 1.0 and without.share("gone") > 0
    assert (full + with_recall).total == 2 * full.total
    assert Availability().share("visible") is None


@pytest.mark.parametrize("version", ["v11", "v12", "v13"])
def test_v11_to_v13_keep_every_identifier_reachable_and_masking_loses_some(version):
    run = read_run(BUG17)
    enc = get_encoder(f"{version}:budget=20000")
    masking = BASELINES["masking-10"]
    lost = 0
    for _, ctx in run:
        out = enc.render(ctx.state, ctx.hypothesis)
        counts = availability(ctx.state, out.shown, out.indexed, recall=enc.supports_recall)
        assert counts.gone == 0 and counts.addressable + counts.visible == counts.total
        masked = masking.masked(ctx.state)
        lost += availability(
            ctx.state, [e.id for e in ctx.state.evidence if e.id not in masked], [], recall=False
        ).gone
    assert lost > 0
    assert render(
        run[-1][1].state, run[-1][1].hypothesis, f"{version}:budget=20000"
    ).indexed  # the small budget archives


def test_compare_reports_availability_beside_cost():
    import json

    from tests.helpers.common import invoke

    data = json.loads(invoke("compare", str(BUG17), "--base", "v10", "--candidate", "v11", "--baselines",
                             "--availability", "--json").stdout)  # fmt: skip
    avail = data["availability"]
    assert avail["v11"]["min_reachable_share"] == 1.0 and avail["v10"]["total"]["gone"] == 0
    assert (
        avail["masking-10"]["min_reachable_share"] < 1.0
        and avail["masking-10"]["total"]["gone"] > 0
    )
    assert len(avail["v11"]["contexts"]) == len(data["contexts"])
    text = invoke(
        "compare", str(BUG17), "--base", "v10", "--candidate", "v11", "--availability"
    ).stdout
    assert "Availability (identifiers harvested" in text and "lowest reachable %" in text
    assert "availability" not in json.loads(invoke("compare", str(BUG17), "--json").stdout)
