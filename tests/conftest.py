"""Shared fixtures: every encoder version, the sample state, the bug17 run."""

from __future__ import annotations

from pathlib import Path

import pytest

from workingset.encoders import ENCODERS

ROOT = Path(__file__).resolve().parents[1]
BUG17 = ROOT / "fixtures" / "bug17"
VERSIONS = sorted(ENCODERS)


@pytest.fixture(params=VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def encoder(request):
    """Each test using this runs once per encoder version (the shared invariants)."""
    return ENCODERS[request.param]
