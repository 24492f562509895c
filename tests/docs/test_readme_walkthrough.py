"""The README's CLI walk-through runs as written (issue 33, item 14): the venv activated, every file it names there."""

from __future__ import annotations

import shlex
import shutil

from tests.helpers.common import ROOT, invoke


def _walkthrough(page: str) -> list[str]:
    """The commands of the page's shell block that starts an analysis with `workingset init`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    block = next(b.split("```", 1)[0] for b in text.split("```sh\n")[1:] if "workingset init" in b)
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_walkthrough_runs_as_written(tmp_path, monkeypatch):
    lines = _walkthrough("README.md")
    assert lines[0] == "source .venv/bin/activate"  # `workingset` is the venv's command
    shutil.copytree(ROOT / "encodings", tmp_path / "encodings")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKINGSET_STORE", raising=False)
    for line in lines[1:]:
        for command in line.split("&&"):
            args = shlex.split(command)
            assert args[0] == "workingset", line
            for arg in args[1:]:
                if arg.endswith(".json") and not arg.startswith("runs/"):
                    assert (ROOT / arg).is_file(), (
                        f"{arg}, named by the README, is not in the repository"
                    )
            result = invoke(*args[1:])
            assert result.exit_code == 0, f"{command}: {result.output}"
    assert (tmp_path / "runs" / "demo" / "answers.jsonl").is_file()


def test_sessions_page_names_only_files_that_exist():
    for line in _walkthrough("docs/sessions.md"):
        for arg in shlex.split(line.replace("|", " ")):
            if arg.endswith(".json") and "/" in arg and not arg.startswith("runs/"):
                assert (ROOT / arg).is_file(), arg
            assert arg != "decision.json" and arg != "result.json", line
