"""A tampered export's `answers.jsonl` gives every command that reads it one code, never a traceback.

`replay`, `requests`, `compare` and `report` read it through one function (`io.limits.jsonl_lines`):
the same size cap (`max_file_bytes`), the same nesting bound and duplicate-key check, per line.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.eventlog.test_replay import export  # noqa: F401  (the fixture)
from workingset.cli.commands import main

DEPTH = 100_000


def deep_line(run):
    path = run / "answers.jsonl"
    path.write_text(path.read_text() + "[" * DEPTH + "]" * DEPTH + "\n")


def deep_answer(run):
    path = run / "answers.jsonl"
    items = [json.loads(x) for x in path.read_text().splitlines()]
    items[0]["details"] = {"a": json.loads("[" * 200 + "]" * 200)}
    path.write_text("".join(json.dumps(x) + "\n" for x in items))


def bad_base64(run):
    path = run / "answers.jsonl"
    items = [json.loads(x) for x in path.read_text().splitlines()]
    items[0].update(encoding="base64", answer="!!not base64@@")
    path.write_text("".join(json.dumps(x) + "\n" for x in items))


def too_long(run):
    # Past the file cap (here set just above the export's other files, as a 1 GB file passes the default 256 MiB).
    biggest = max(p.stat().st_size for p in run.iterdir())
    os.environ["WORKINGSET_MAX_FILE_BYTES"] = str(biggest + 10_000)
    path = run / "answers.jsonl"
    items = [json.loads(x) for x in path.read_text().splitlines()]
    items[0]["message"] += " " * (
        biggest + 20_000
    )  # still a valid answer line: only its length is wrong
    path.write_text("".join(json.dumps(x) + "\n" for x in items))


TAMPERS = {
    "deep-line": deep_line,
    "deep-answer-field": deep_answer,
    "bad-base64": bad_base64,
    "too-long": too_long,
}
COMMANDS = {
    "replay": lambda run, tmp: ["replay", str(run)],
    "requests": lambda run, tmp: ["requests", str(run), "--strategy", "v8"],
    "compare": lambda run, tmp: ["compare", str(run)],
    "report": lambda run, tmp: ["report", str(run), "--out", str(tmp / "r.html")],
}


@pytest.mark.parametrize("tamper", TAMPERS, ids=str)
@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_a_tampered_answers_file_is_one_error_line(
    request, tmp_path, capsys, monkeypatch, tamper, command
):
    monkeypatch.delenv("WORKINGSET_MAX_FILE_BYTES", raising=False)
    run = request.getfixturevalue("export")
    try:
        TAMPERS[tamper](run)
        capsys.readouterr()
        code = main(COMMANDS[command](run, tmp_path))
    finally:
        os.environ.pop("WORKINGSET_MAX_FILE_BYTES", None)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert err.split(":")[1].strip() in {"invalid_file", "too_large", "replay_diverged"}
