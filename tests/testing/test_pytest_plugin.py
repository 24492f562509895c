"""The pytest plugin: inert unless asked; one test per run that verifies, replays and compares a golden; CI's line."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers.scripted_run import main as scripted_run

ROOT = Path(__file__).parents[2]


@pytest.fixture
def runs(pytester) -> Path:
    """A folder of two runs: an export of a scripted run, and the same contexts without journal (as an import has)."""
    folder = pytester.path / "runs"
    folder.mkdir()
    scripted_run(str(pytester.path / "s.sqlite3"), str(folder / "demo"))
    plain = folder / "imported"
    plain.mkdir()
    for p in (folder / "demo").glob("*.json"):
        shutil.copy(p, plain / p.name)
    return folder


def outcome(result) -> dict[str, int]:
    return result.parseoutcomes()


def test_the_plugin_adds_nothing_unless_asked(pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    for args in ((), ("--workingset-update",)):
        result = pytester.runpytest(*args)
        assert outcome(result) == {"passed": 1}


def test_one_test_per_run_failing_without_a_golden_then_passing_once_written(pytester, runs):
    result = pytester.runpytest("--workingset-runs", "runs")
    assert outcome(result) == {"failed": 2}
    result.stdout.fnmatch_lines(["*runs/demo has no golden*--workingset-update*"])
    assert outcome(pytester.runpytest("--workingset-runs", "runs", "--workingset-update")) == {
        "passed": 2
    }
    golden = runs / "__snapshots__" / "demo.compare.txt"
    data = json.loads(golden.read_text())
    assert data["run"] == "demo" and "total" in data  # the run's name, not its path
    assert outcome(pytester.runpytest("--workingset-runs", "runs")) == {"passed": 2}
    assert outcome(pytester.runpytest("--workingset-runs", "runs", "-k", "imported")) == {
        "passed": 1,
        "deselected": 1,
    }


def pinned(pytester, runs) -> None:
    assert outcome(pytester.runpytest("--workingset-runs", "runs", "--workingset-update")) == {
        "passed": 2
    }


def test_a_changed_golden_fails_with_its_diff(pytester, runs):
    pinned(pytester, runs)
    golden = runs / "__snapshots__" / "demo.compare.txt"
    golden.write_text(re.sub(r'"tokens": (\d)', r'"tokens": 9\1', golden.read_text(), count=1))
    result = pytester.runpytest("--workingset-runs", "runs")
    assert outcome(result) == {"failed": 1, "passed": 1}
    result.stdout.fnmatch_lines(["*differs from its golden*", '-*"tokens": 9*', '+*"tokens": *'])


def test_a_changed_answer_fails_the_replay(pytester, runs):
    pinned(pytester, runs)
    path = runs / "demo" / "answers.jsonl"
    path.write_text(path.read_text().replace("select first", "select second", 1))
    result = pytester.runpytest("--workingset-runs", "runs")
    assert outcome(result) == {"failed": 1, "passed": 1}
    result.stdout.fnmatch_lines(["*runs/demo does not replay*", "*first divergence*"])


def test_a_changed_stored_context_fails_its_verification(pytester, runs):
    pinned(pytester, runs)
    path = runs / "imported" / "demo-r0001.json"
    ctx = json.loads(path.read_text())
    ctx["state"]["hypotheses"][0]["title"] += " (edited)"
    path.write_text(json.dumps(ctx))
    result = pytester.runpytest("--workingset-runs", "runs")
    assert outcome(result) == {"failed": 1, "passed": 1}
    result.stdout.fnmatch_lines(["*1 of 5 stored contexts of runs/imported do not verify*"])


def test_the_ini_option_and_the_fixture(pytester, runs):
    pinned(pytester, runs)
    pytester.makeini("[pytest]\nworkingset_runs = runs\n")
    assert outcome(pytester.runpytest()) == {"passed": 2}
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_mine="def test_demo(workingset_pin):\n"
        "    assert 'replayed' in workingset_pin('runs/demo')\n"
    )
    assert outcome(pytester.runpytest()) == {"passed": 1}


def test_the_ci_job_of_docs_testing_passes_on_pinned_runs(pytester, runs):
    pinned(pytester, runs)
    yaml = (ROOT / "docs" / "testing.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    (line,) = [x.strip() for x in yaml.splitlines() if x.strip().startswith("- run: pytest")]
    args = line.removeprefix("- run: pytest").split()
    assert "--workingset-runs" in args
    assert outcome(pytester.runpytest(*args)) == {"passed": 2}


def test_the_same_scripted_run_exports_the_same_bytes(tmp_path):
    for name in ("a", "b"):
        scripted_run(str(tmp_path / f"{name}.sqlite3"), str(tmp_path / name))
    files = {name: {p.name: p.read_bytes() for p in (tmp_path / name).iterdir()} for name in "ab"}
    assert files["a"] == files["b"] and len(files["a"]) == 7  # 5 stored contexts, journal, answers
    today = datetime.now(UTC).strftime("%Y-%m-%d").encode()
    assert not [name for name, data in files["a"].items() if today in data]  # no wall time anywhere
