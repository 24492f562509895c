"""compare's text fits a terminal (issue 33, item 14): no table line past 120 columns; an empty measure says why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.common import BUG17, invoke
from workingset.compare.tables import EMPTY_AVAILABILITY, WIDTH


def _wide(text: str) -> list[str]:
    """Lines wider than WIDTH, the verdict aside (one sentence a tool can grep)."""
    return [
        line for line in text.splitlines() if len(line) > WIDTH and not line.startswith("verdict")
    ]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--all", "--baselines", "--cache", "anthropic,openai-5.6", "--availability", "--sections"],
    ],
    ids=["default", "everything"],
)
def test_every_table_of_one_run_fits_120_columns(args: list[str]):
    result = invoke("compare", str(BUG17), *args)
    assert result.exit_code == 0, result.output
    assert not _wide(result.stdout)


def test_a_wide_table_keeps_its_keys_and_every_number(tmp_path: Path):
    text = invoke("compare", str(BUG17), "--all", "--baselines").stdout
    tokens = text.split("Tokens per context\n", 1)[1].split("\n\nNew tokens", 1)[0]
    groups = tokens.split("\n\n")
    assert len(groups) > 1 and all(g.startswith("context      hyp") for g in groups)
    headers = [h for g in groups for h in g.splitlines()[0].split()[2:]]
    assert "openhands-condenser" in headers and "v1" in headers


def test_many_runs_fit_120_columns(tmp_path: Path):
    for name in ("a", "b"):
        shutil.copytree(BUG17, tmp_path / name, ignore=shutil.ignore_patterns("*.py", "*.md"))
    result = invoke("compare", str(tmp_path), "--baselines", "--cache", "anthropic,openai-5.6")
    assert result.exit_code == 0, result.output
    assert not _wide(result.stdout)


def test_an_empty_availability_says_why(tmp_path: Path):
    from workingset.model.state import Budget, Case, Control, Hypothesis, State
    from workingset.runs.layout import make_stored_context, write_run

    state = State(
        analysis_id="quiet", iteration=1, budget=Budget(max_iterations=5),
        case=Case(title="A quiet case", statement="Nothing was measured yet.", opened_at="2026-06-10T20:00:00Z"),
        hypotheses=[Hypothesis(id="H1", title="t", mechanism="m", confidence=0.5, disposition="open",
                               control=Control(iterations_used=0, iteration_limit=5))],
    )  # fmt: skip
    write_run(tmp_path / "run", [make_stored_context("quiet-r0001", "v14", "H1", state)])
    text = invoke("compare", str(tmp_path / "run"), "--base", "v10", "--availability").stdout
    assert " ".join(EMPTY_AVAILABILITY.split()) in " ".join(text.split())
    full = invoke("compare", str(BUG17), "--base", "v10", "--availability").stdout
    assert "no identifier was harvested" not in full
