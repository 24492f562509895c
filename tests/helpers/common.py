"""Paths and the in-process CLI every test folder uses: the repository, bug17, the encoder versions."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workingset.cli.commands import app
from workingset.encoders import ENCODERS

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = TESTS / "data"  # the trimmed public trajectories (tests/data/README.md)
BUG17 = ROOT / "fixtures" / "bug17"
BENCHMARKS = ROOT / "benchmarks"
VERSIONS = sorted(ENCODERS)
# The 167-step OpenHands run kept in the repository (benchmarks/data/SOURCES.md).
LONG_RUN = BENCHMARKS / "data" / "openhands-v1-sonnet4-pylint-167.tar.xz"
# The test that checks a published section (tests/docs/test_results.py); conftest.py runs it last and starts
# its checks when collection is done.
SECTION_TEST = "test_deterministic_section_reproduces_exactly"

# A fixed, plain terminal, so that CLI output (tables, no colour, no progress bar) is stable.
CLI_ENV = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}


def invoke(*args: str):
    """Run the CLI in-process with a fixed terminal width."""
    return CliRunner().invoke(app, list(args), env=CLI_ENV, terminal_width=200)
