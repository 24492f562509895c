"""The real trajectories beside the project (`../shared/corpus/raw`), and the mark of the tests that need them.

They are public runs fetched from their sources, read-only and never committed here (fetched
data is not vendored into the repository): where they are absent, the tests that need them
skip, naming the missing corpus. `$WORKINGSET_CORPUS` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.common import ROOT

CORPUS = Path(os.environ.get("WORKINGSET_CORPUS") or ROOT.parent / "shared" / "corpus" / "raw")
MISSING = f"the trajectory corpus is not at {CORPUS} (../shared/corpus/raw, or $WORKINGSET_CORPUS)"
_absent = pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)


def needs_corpus(test):
    """Mark a test that reads the corpus: `slow`, and skipped, naming the corpus, where it is absent."""
    return pytest.mark.slow(_absent(test))


CORPUS_SOURCES = {  # name -> (format, agent actions)
    "sweagent-gpt4-pydicom-1458.traj": ("swe-agent", 12),
    "mini-v2-deepseek-sqlfluff-1625.traj.json": ("mini-swe-agent", 48),
    "mini-v1-gemini3pro-pylint-6386.traj.json": ("mini-swe-agent", 54),
    "openhands-v1-sonnet4-astropy-14309": ("openhands", 51),
    "openhands-v1-sonnet4-matplotlib-24570": ("openhands", 44),
}
