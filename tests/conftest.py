"""Shared fixtures: every encoder version, the sample state, the bug17 run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workingset.encoders import ENCODERS

ROOT = Path(__file__).resolve().parents[1]
BUG17 = ROOT / "fixtures" / "bug17"
VERSIONS = sorted(ENCODERS)

# The public trajectories beside the project, or where $WORKINGSET_CORPUS points (read-only;
# tests skip where they are absent).
CORPUS = Path(os.environ.get("WORKINGSET_CORPUS") or ROOT.parent / "shared" / "corpus" / "raw")
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the trajectory corpus is not at {CORPUS}")
CORPUS_SOURCES = {  # name -> (format, agent actions)
    "sweagent-gpt4-pydicom-1458.traj": ("swe-agent", 12),
    "mini-v2-deepseek-sqlfluff-1625.traj.json": ("mini-swe-agent", 48),
    "mini-v1-gemini3pro-pylint-6386.traj.json": ("mini-swe-agent", 54),
    "openhands-v1-sonnet4-astropy-14309": ("openhands", 51),
    "openhands-v1-sonnet4-matplotlib-24570": ("openhands", 44),
}


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Keep the on-disk caches (token counts, vocabularies) of the test run out of the user's."""
    os.environ["WORKINGSET_CACHE_DIR"] = str(tmp_path_factory.mktemp("workingset-cache"))


@pytest.fixture(params=VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def encoder(request):
    """Each test using this runs once per encoder version (the shared invariants)."""
    return ENCODERS[request.param]
