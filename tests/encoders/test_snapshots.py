"""Frozen output: one readable text snapshot per encoder version × context.

A changed snapshot of a released version is a bug, not an update: stored requests
rendered with it could no longer be reproduced. `pytest --snapshot-update` writes new ones
(for a new version only).
"""

from __future__ import annotations

import pytest

from tests.helpers.common import BUG17, VERSIONS
from tests.helpers.factory import sample_state
from workingset.encoders import ENCODERS
from workingset.runs.layout import load_context_file

BUG17_TURNS = (
    "bug17-r0001",
    "bug17-r0009",
    "bug17-r0018",
)  # the first, a middle and the last context


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
@pytest.mark.parametrize("hypothesis", ["H1", "H2"])
def test_sample_state(snapshot_txt, version, hypothesis):
    assert ENCODERS[version].render(sample_state(), hypothesis).text.encode("utf-8") == snapshot_txt


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
@pytest.mark.parametrize("turn", BUG17_TURNS)
def test_bug17(snapshot_txt, version, turn):
    ctx = load_context_file(BUG17 / f"{turn}.json")
    assert ENCODERS[version].render(ctx.state, ctx.hypothesis).text.encode("utf-8") == snapshot_txt
