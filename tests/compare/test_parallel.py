"""`compare --jobs` and `--summary`: the same numbers as one process, totals alone on request."""

from __future__ import annotations

import json

import pytest

from tests.helpers.common import BUG17, invoke

pytestmark = pytest.mark.slow  # cross-process: worker processes


def _json(*args: str) -> dict:
    result = invoke("compare", str(BUG17), "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_jobs_give_exactly_the_numbers_of_one_process():
    one = _json("--all", "--baselines", "--sections")
    assert _json("--all", "--baselines", "--sections", "--jobs", "3") == one
    assert _json("--all", "--baselines", "--sections", "--jobs", "2", "--no-token-cache") == one
    billed = _json("--all", "--baselines", "--cache", "ideal,anthropic,openai", "--availability")
    assert (
        _json(
            "--all",
            "--baselines",
            "--cache",
            "ideal,anthropic,openai",
            "--availability",
            "--jobs",
            "2",
        )
        == billed
    )


def test_summary_prints_the_totals_only():
    full = invoke("compare", str(BUG17), "--all", "--baselines").stdout
    short = invoke("compare", str(BUG17), "--all", "--baselines", "--summary").stdout
    totals = full[full.index("Totals") :]
    # the totals table is two column groups at 120 columns (22 strategies); the per-context tables are gone
    assert short.endswith(totals) and len(short.splitlines()) < 60 < len(full.splitlines()) / 4
    assert "bug17-r0001" in full and "bug17-r0001" not in short
    data = _json("--all", "--summary")
    assert "contexts" not in data and data["total"] == _json("--all")["total"]


def test_jobs_below_one_is_a_usage_error():
    result = invoke("compare", str(BUG17), "--jobs", "0")
    assert result.exit_code == 2 and "error: usage_error:" in result.stderr
