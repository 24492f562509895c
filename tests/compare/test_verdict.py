"""The verdict line (`compare.verdict.decide`): ties, the best other baseline, baselines that never fired (issue 33, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import BUG17, invoke
from workingset.compare.engine import DEFAULT_LABEL
from workingset.compare.verdict import cheapest, decide


def test_a_tie_names_every_strategy_that_ties():
    line = cheapest(
        {"full-transcript": 10.0, "v14": 10.0, "masking-10": 10.0, "last-5": 12.0},
        "full-transcript",
        "m",
    )
    assert line.startswith(
        "full-transcript, v14 and masking-10 tie as cheapest at 10.0 full-price tokens (m)"
    )
    assert "last-5, the next, costs 20.0% more" in line
    other = cheapest({"full-transcript": 20.0, "v14": 10.0, "v10": 10.0}, "full-transcript", "m")
    assert (
        other.startswith("v14 and v10 tie as cheapest")
        and "50.0% less than full-transcript" in other
    )


def test_the_verdict_names_the_best_other_baseline_and_the_idle_ones():
    costs = {
        "full-transcript": 100.0,
        "v14": 60.0,
        "masking-10": 80.0,
        "last-5": 90.0,
        "clear-tool-uses": 100.0,
    }
    line = decide(costs, "full-transcript", "m", idle=["clear-tool-uses"])
    assert line.startswith("v14 is cheapest: 40.0% less than full-transcript")
    assert "; the best other baseline, masking-10, costs 80.0" in line
    assert line.endswith("; clear-tool-uses never fires on this run (the same as full-transcript)")


def test_bug17_verdict_says_which_baselines_never_fired():
    line = next(
        x for x in invoke("compare", str(BUG17)).stdout.splitlines() if x.startswith("verdict")
    )
    assert "clear-tool-uses, gemini-masking and openhands-condenser never fire on this run" in line


def test_many_runs_any_base_rows_and_verdict_billed_by_the_first_cache_model(tmp_path: Path):
    """Several runs: `--base full-transcript` works, each run's row and the verdict use the first --cache model."""
    import shutil

    for name in ("a", "b"):
        shutil.copytree(BUG17, tmp_path / name, ignore=shutil.ignore_patterns("*.py", "*.md"))
    args = (str(tmp_path), "--base", "full-transcript", "--baselines", "--cache", "anthropic,ideal")
    result = invoke("compare", *args)
    assert result.exit_code == 0, result.output
    data = json.loads(invoke("compare", *args, "--json").stdout)
    bill = data["aggregate"]["models"]["anthropic"]
    assert data["aggregate"]["base"] == "full-transcript"
    assert data["aggregate"]["rows"][0]["idle"] == [
        "clear-tool-uses",
        "gemini-masking",
        "openhands-condenser",
    ]
    text = result.stdout
    assert "Each run (cost model anthropic;" in text
    each = text.split("Each run (cost model anthropic;", 1)[
        1
    ]  # its column groups, each keyed by the run
    row = " ".join(line for line in each.splitlines() if line.startswith(str(tmp_path / "a")))
    ratio = bill[DEFAULT_LABEL]["total"] / bill["full-transcript"]["total"]
    assert f"{ratio:.3f}x" in row and "idle" in row
    verdict = text.splitlines()[-1]
    assert verdict.startswith(f"verdict over 2 runs: {DEFAULT_LABEL} is cheapest: ")
    assert (
        f"{bill[DEFAULT_LABEL]['total']:,.1f} against {bill['full-transcript']['total']:,.1f}"
        in verdict
    )
    assert (
        "billed under the anthropic cache model" in verdict
        and f"{DEFAULT_LABEL} is the cheapest on every run" in verdict
    )
