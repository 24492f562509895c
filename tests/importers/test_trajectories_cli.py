"""`workingset import` through typer's CliRunner: every corpus trajectory, and bad sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.common import invoke
from tests.helpers.real_corpus import CORPUS, needs_corpus
from tests.helpers.real_corpus import CORPUS_SOURCES as SOURCES
from workingset.encoders import DEFAULT_ENCODER


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Every corpus trajectory imported once through the CLI."""
    if not CORPUS.is_dir():
        pytest.skip(f"the trajectory corpus is not at {CORPUS}")
    root = tmp_path_factory.mktemp("imported")
    out = {}
    for name, (fmt, _) in SOURCES.items():
        result = invoke("import", fmt, str(CORPUS / name), "--out", str(root / name), "--json")
        assert result.exit_code == 0, result.output
        out[name] = root / name
    return out


@needs_corpus
@pytest.mark.parametrize("name", list(SOURCES))
def test_import_then_verify(runs, name):
    assert [p.name for p in runs[name].iterdir()] == [
        "run.json"
    ]  # the default layout: one run file
    result = invoke("verify", str(runs[name]), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] and {c["status"] for c in report["contexts"]} == {"ok"}
    assert len(report["contexts"]) == SOURCES[name][1]
    # An import records the default encoder unless told (docs/import.md).
    assert {c["encoder"] for c in report["contexts"]} == {DEFAULT_ENCODER}


@needs_corpus
@pytest.mark.parametrize("name", list(SOURCES))
def test_a_run_file_is_smaller_than_its_source(runs, name):
    source = CORPUS / name
    size = (
        sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
        if source.is_dir()
        else source.stat().st_size
    )
    assert (runs[name] / "run.json").stat().st_size <= 1.5 * size


@needs_corpus
def test_import_reports_what_it_wrote(tmp_path: Path):
    name = "openhands-v1-sonnet4-matplotlib-24570"
    result = invoke(
        "import",
        "openhands",
        str(CORPUS / name),
        "--out",
        str(tmp_path / "r"),
        "--analysis",
        "hpacker",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        f"imported 44 steps of {CORPUS / name} as analysis hpacker into"
    )
    assert "note: Condensation: every forgotten event is imported in full" in result.stderr
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["run.json"]
    result = invoke(
        "import",
        "openhands",
        str(CORPUS / name),
        "--out",
        str(tmp_path / "c"),
        "--analysis",
        "hpacker",
        "--layout",
        "contexts",
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "c" / "hpacker-r0001.json").is_file() and (
        tmp_path / "c" / "hpacker-r0044.json"
    ).is_file()


@needs_corpus
def test_render_an_imported_context(runs):
    run = runs["sweagent-gpt4-pydicom-1458.traj"]
    result = invoke(
        "render", str(run), "--encoder", "v8", "--request", "sweagent-gpt4-pydicom-1458-r0003"
    )
    assert result.exit_code == 0, result.output
    assert (
        "python reproduce_bug.py\\n" in result.stdout
    )  # E000003's query, in the index or its capture
    assert (
        "AttributeError: Unable to convert the pixel data" in result.stdout
    )  # the previous result, in full


@needs_corpus
def test_compare_all_with_baselines(runs):
    result = invoke(
        "compare", str(runs["sweagent-gpt4-pydicom-1458.traj"]), "--all", "--baselines", "--json"
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    for strategy in ("v7", "v8", "v10", "full-transcript", "masking-10", "last-5"):
        assert f'"{strategy}"' in text


@needs_corpus
def test_compare_a_mini_run(runs):
    result = invoke("compare", str(runs["mini-v2-deepseek-sqlfluff-1625.traj.json"]))
    assert result.exit_code == 0, result.output
    assert "sqlfluff__sqlfluff-1625-r0048" in result.stdout


# -- the public excerpts in tests/data/, as a new user would run them --------------------------

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    ("fmt", "name", "steps"),
    [
        ("mini-swe-agent", "mini-swe-agent-2.3-astropy-12907.excerpt.traj.json", 3),
        ("swe-agent", "swe-agent-function_calling_simple.excerpt.traj", 3),
    ],
)  # fmt: skip
def test_excerpts_import_verify_and_compare(tmp_path: Path, fmt: str, name: str, steps: int):
    out = tmp_path / "run"
    result = invoke("import", fmt, str(DATA / name), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"imported {steps} steps of {DATA / name}")
    assert [p.name for p in out.iterdir()] == ["run.json"]
    result = invoke("verify", str(out), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"], result.output
    assert len(json.loads(result.stdout)["contexts"]) == steps
    result = invoke("compare", str(out), "--all", "--baselines")
    assert result.exit_code == 0, result.output
    assert "full-transcript" in result.stdout and "last-5" in result.stdout


# -- bad sources: one line `error: invalid_file: …`, exit 2, no traceback -------------------


def _rejects(args: list[str], *needles: str) -> dict:
    result = invoke(*args, "--json")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # never a crash
    [line] = result.stderr.splitlines()
    assert line.startswith("error: invalid_file: ")
    for needle in needles:
        assert needle in line
    return json.loads(result.stdout)["error"]


@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent"])
def test_not_json(tmp_path: Path, fmt: str):
    src = tmp_path / "broken.traj"
    src.write_text('{"trajectory": [', encoding="utf-8")
    error = _rejects(["import", fmt, str(src), "--out", str(tmp_path / "out")], "not valid JSON")
    assert error["details"] == {"file": str(src), "path": "$"}
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("fmt", "body", "path", "needle"),
    [
        ("swe-agent", "[1, 2]", "$", "Expected `object`"),
        ("swe-agent", '{"history": []}', "$", "no `trajectory` list, and `history` holds no agent actions"),
        ("swe-agent", '{"history": [{"role": "user", "content": "fix it"}, {"role": "assistant", "action": 3}]}', "$.history[1].action", "Expected `str`"),
        ("swe-agent", '{"trajectory": [{"action": "ls\\n"}]}', "$.trajectory[0]", "`observation`"),
        ("swe-agent", '{"trajectory": [{"action": 3, "observation": ""}]}', "$.trajectory[0].action", "Expected `str`"),
        ("swe-agent", '{"trajectory": []}', "$.trajectory", "no steps"),
        ("mini-swe-agent", '{"messages": "hi"}', "$.messages", "Expected `array`"),
        ("mini-swe-agent", '{"messages": [{"content": "x"}]}', "$.messages[0]", "`role`"),
        ("mini-swe-agent", '{"trajectory_format": "other", "messages": []}', "$.trajectory_format", "not a mini-swe-agent"),
        ("mini-swe-agent", '{"messages": [{"role": "system", "content": "s"}]}', "$.messages", "no task message"),
        ("mini-swe-agent", '{"messages": [{"role": "user", "content": "fix it"}]}', "$", "no agent actions"),
        ("mini-swe-agent", '{"trajectory": [], "history": []}', "$", "use the format swe-agent"),
    ],
)  # fmt: skip
def test_wrong_shapes_name_the_json_path(tmp_path: Path, fmt, body, path, needle):
    src = tmp_path / "bad.json"
    src.write_text(body, encoding="utf-8")
    error = _rejects(["import", fmt, str(src), "--out", str(tmp_path / "out")], needle)
    assert error["code"] == "invalid_file" and error["details"]["path"] == path


def test_openhands_empty_and_broken_directories(tmp_path: Path):
    empty = tmp_path / "conv"
    empty.mkdir()
    _rejects(
        ["import", "openhands", str(empty), "--out", str(tmp_path / "o1")], "no events/ folder"
    )
    (empty / "events").mkdir()
    _rejects(
        ["import", "openhands", str(empty), "--out", str(tmp_path / "o2")],
        "no event-NNNNN-*.json files",
    )
    (empty / "events" / "event-00000-a.json").write_text(
        '{"kind": "MessageEvent"', encoding="utf-8"
    )
    error = _rejects(
        ["import", "openhands", str(empty), "--out", str(tmp_path / "o3")],
        "event-00000-a.json",
        "not valid JSON",
    )
    assert error["details"]["file"].endswith("event-00000-a.json")
    (empty / "events" / "event-00000-a.json").write_text(
        '{"kind": "ActionEvent", "id": "x", "timestamp": "2025-01-01T00:00:00"}', encoding="utf-8"
    )
    error = _rejects(["import", "openhands", str(empty), "--out", str(tmp_path / "o4")], "`action`")
    assert error["details"]["path"] == "$"


def test_missing_source(tmp_path: Path):
    _rejects(
        ["import", "swe-agent", str(tmp_path / "nope.traj"), "--out", str(tmp_path / "o")],
        "no such file",
    )


def test_unknown_format_lists_the_valid_ones(tmp_path: Path):
    result = invoke("import", "autogpt", str(tmp_path), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "error: usage_error: no trajectory format 'autogpt'; available: swe-agent, mini-swe-agent, openhands"
    )
