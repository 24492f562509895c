"""Paths and the in-process CLI every test folder uses: the repository, bug17, the encoder versions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks._data import CORPUS_ALL, LONG_RUNS
from workingset.cli.commands import app
from workingset.encoders import ENCODERS

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = TESTS / "data"  # the trimmed public trajectories (tests/data/README.md)
BUG17 = ROOT / "fixtures" / "bug17"
BENCHMARKS = ROOT / "benchmarks"
VERSIONS = sorted(ENCODERS)
# The 167-step OpenHands run, an entry of the corpus stored in ../shared/corpus/all (or `$WORKINGSET_CORPUS_ALL`),
# where the benchmarks read it.
LONG_RUN = CORPUS_ALL / LONG_RUNS[0]
# The test that checks a published section (tests/docs/test_results.py); conftest.py runs it last and starts
# its checks when collection is done.
SECTION_TEST = "test_deterministic_section_reproduces_exactly"

# A fixed, plain terminal, so that CLI output (tables, no colour, no progress bar) is stable.
CLI_ENV = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}


def long_run_path() -> Path:
    """The 167-step run's directory; where it is absent the test skips, and fails under CI=true (CI has it)."""
    if not LONG_RUN.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the 167-step run {LONG_RUN} is absent (../shared/corpus/all)")
        pytest.skip(
            f"the 167-step run {LONG_RUN} is absent (../shared/corpus/all, or $WORKINGSET_CORPUS_ALL)"
        )
    return LONG_RUN


def invoke(*args: str):
    """Run the CLI in-process with a fixed terminal width."""
    return CliRunner().invoke(app, list(args), env=CLI_ENV, terminal_width=200)
