"""Every answer kept and exported; a frozen replay reproduces an export and catches each tampering."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers.session_helpers import (
    answer_bytes,
    assess,
    conclude,
    decision,
    query,
    recall,
    result,
    state_bytes,
)
from workingset.cli.commands import app, main
from workingset.errors import DecisionRejected, WorkingsetError
from workingset.session.frozen_replay import first_difference, replay_export
from workingset.session.investigation import Investigation

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


@pytest.fixture
def export(tmp_path) -> Path:
    """A v8 analysis of several turns (rejections, a recall, queries and results, a pause) exported."""
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v8", clock=CLOCK
    ) as inv:
        r1 = inv.next_request("H1")
        for bad in (b'{"next": ', b"```json\n{}\n```", b"\xff\xfe not utf-8"):
            with pytest.raises(Exception):
                inv.submit(r1.request_id, bad)
        act = inv.submit(
            r1.request_id, json.dumps(decision(query("select count(*) from retries")), indent=2)
        ).action
        r2 = inv.next_request("H2")
        inv.record(
            act,
            result("retries: 9000", cost=0.5, query="select count(*) from retries"),
            captured_at="2026-06-10T21:05:00+02:00",
        )
        inv.submit(r2.request_id, decision(recall("E000003")))
        inv.pause()
        inv.resume()
        r3 = inv.next_request("H1")
        with pytest.raises(Exception):
            inv.submit(r3.request_id, decision(query()))  # assessment_missing
        inv.submit(r3.request_id, decision(conclude("supported", "E000007"), assess("E000007")))
        inv.export(tmp_path / "run")
    return tmp_path / "run"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def write_lines(path: Path, items: list[dict]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in items))


def test_every_answer_is_exported_verbatim_with_its_outcome(export):
    answers = lines(export / "answers.jsonl")
    assert [(a["request_id"], a["outcome"], a.get("code")) for a in answers] == [
        ("demo-r0001", "rejected", "malformed_json"),
        ("demo-r0001", "rejected", "schema_violation"),  # the fenced JSON is read, and kept fenced
        ("demo-r0001", "rejected", "malformed_json"),
        ("demo-r0001", "accepted", None),
        ("demo-r0002", "accepted", None),
        ("demo-r0003", "rejected", "assessment_missing"),
        ("demo-r0003", "accepted", None),
    ]
    assert answers[1]["answer"] == "```json\n{}\n```"
    assert answer_bytes(answers[2]) == b"\xff\xfe not utf-8" and answers[2]["encoding"] == "base64"
    assert answers[3]["answer"] == json.dumps(
        decision(query("select count(*) from retries")), indent=2
    )
    assert all(a["at"] == CLOCK() and a["message"] for a in answers if a["outcome"] == "rejected")
    # (prompt, answer) pairs: each answer names the stored context of the request it answered.
    assert all((export / f"{a['request_id']}.json").is_file() for a in answers)
    journal = lines(export / "journal.jsonl")
    assert journal[0] == {
        "format": "workingset/journal@1",
        "analysis_id": "demo",
        "encoder": "investigation_project_v8",
    }
    assert [x["kind"] for x in journal[1:]] == [
        "created",
        "request",
        "decision",
        "request",
        "record",
        "decision",
        "pause",
        "resume",
        "request",
        "decision",
        "end",
    ]
    assert journal[-1]["status"] == "completed" and journal[-1]["events"] == 17


def test_an_export_replays_to_the_same_hashes(export):
    report = replay_export(export)
    assert report.ok, report.divergence
    assert (report.events, report.requests, report.answers, report.rejected, report.results) == (
        17,
        3,
        7,
        4,
        1,
    )
    assert report.state_hash == lines(export / "journal.jsonl")[-1]["state_hash"]
    out = CliRunner().invoke(app, ["replay", str(export)])
    assert out.exit_code == 0 and "every step matches the export" in out.stdout


def tamper_answer(run: Path) -> None:
    answers = lines(run / "answers.jsonl")
    accepted = next(a for a in answers if a["outcome"] == "accepted")
    accepted["answer"] = accepted["answer"].replace("retries", "refunds")
    write_lines(run / "answers.jsonl", answers)


def tamper_result(run: Path) -> None:
    journal = lines(run / "journal.jsonl")
    record = next(x for x in journal if x.get("kind") == "record")
    record["evidence"]["payload"]["text"] = "retries: 12"
    write_lines(run / "journal.jsonl", journal)


def tamper_context(run: Path) -> None:
    path = run / "demo-r0002.json"
    ctx = json.loads(path.read_text())
    ctx["state"]["hypotheses"][1]["confidence"] = 0.9
    path.write_text(json.dumps(ctx))


def tamper_rejection(run: Path) -> None:
    answers = lines(run / "answers.jsonl")
    answers[5]["answer"] = json.dumps(
        decision(query("select 1"), assess("E000007"))
    )  # now acceptable
    write_lines(run / "answers.jsonl", answers)


def drop_an_answer(run: Path) -> None:
    answers = lines(run / "answers.jsonl")
    del answers[0]
    write_lines(run / "answers.jsonl", answers)


def edit_header(**changes):
    def tamper(run: Path) -> None:
        journal = lines(run / "journal.jsonl")
        journal[0].update(changes)
        write_lines(run / "journal.jsonl", journal)

    tamper.__name__ = "header_" + "_".join(changes)
    return tamper


def tamper_chars(run: Path) -> None:
    path = run / "demo-r0002.json"
    ctx = json.loads(path.read_text())
    ctx["rendered"]["chars"] += 1
    path.write_text(json.dumps(ctx))


def tamper_time(run: Path) -> None:
    journal = lines(run / "journal.jsonl")
    next(x for x in journal if x.get("kind") == "record")["at"] = "2026-06-10T21:00:01Z"
    write_lines(run / "journal.jsonl", journal)


def tamper_answer_bytes(run: Path) -> None:
    """The accepted answer re-indented: the same decision, other bytes."""
    answers = lines(run / "answers.jsonl")
    accepted = next(a for a in answers if a["outcome"] == "accepted")
    accepted["answer"] = json.dumps(json.loads(accepted["answer"]), indent=4)
    write_lines(run / "answers.jsonl", answers)


def tamper_rejected_bytes(run: Path) -> None:
    """A rejected answer changed so that it is refused the same way."""
    answers = lines(run / "answers.jsonl")
    answers[5]["answer"] = answers[5]["answer"].replace("select 1", "select 2")
    write_lines(run / "answers.jsonl", answers)


TAMPERINGS = [
    (edit_header(encoder="investigation_project_v7"), "journal header", None, "$.encoder", "investigation_project_v7",
     "investigation_project_v8"),
    (edit_header(analysis_id="other"), "journal header", None, "$.analysis_id", "other", "demo"),
    (edit_header(note="x"), "journal header", None, "$.note", "x", "(absent)"),
    (tamper_chars, "stored context demo-r0002.json", 8, "$.rendered.chars", None, None),
    (tamper_time, "record B000006: its record event", 9, "end.event_hashes[8]", None, None),
    (tamper_answer_bytes, "answer to demo-r0001 (accepted): its answer event", 6, "end.event_hashes[5]", None, None),
    (tamper_rejected_bytes, "answer to demo-r0003 (rejected): its answer event", 15, "end.event_hashes[14]", None, None),
    (tamper_answer, "answer to demo-r0001 (accepted): its decision event", 7, "$.decision.next.query",
     "select count(*) from retries", "select count(*) from refunds"),
    (tamper_result, "record B000006: its record event", 9, "$.evidence.content_hash", None, None),
    (tamper_context, "stored context demo-r0002.json", 8, "$.state.hypotheses[1].confidence", 0.9, 0.3),
    (tamper_rejection, "answer to demo-r0003 (rejected): its answer event", 15, "$.outcome", "rejected", "accepted"),
    (drop_an_answer, "answer to demo-r0001 (rejected): its answer event", 4, "$.seq", 4, 3),
]  # fmt: skip


@pytest.mark.parametrize(("tamper", "step", "seq", "path", "recorded", "replayed"), TAMPERINGS,
                         ids=[t[0].__name__ for t in TAMPERINGS])  # fmt: skip
def test_each_tampering_is_caught_at_its_first_divergence(
    export, tamper, step, seq, path, recorded, replayed
):
    tamper(export)
    div = replay_export(export).divergence
    assert div is not None and (div.step, div.seq, div.path) == (step, seq, path)
    if recorded is not None:
        assert (div.recorded, div.replayed) == (recorded, replayed)
    out = CliRunner().invoke(app, ["replay", str(export), "--json"])
    assert out.exit_code == 2 and "error: replay_diverged:" in out.stderr
    error = json.loads(out.stdout)["error"]  # the {"error": …} contract of every command
    assert error["code"] == "replay_diverged" and (
        error["details"]["step"],
        error["details"]["path"],
    ) == (step, path)
    assert (error["details"]["recorded"], error["details"]["replayed"]) == (
        div.recorded,
        div.replayed,
    )
    text = CliRunner().invoke(app, ["replay", str(export)])
    assert f"first divergence: {step}" in text.stdout and f"field:    {path}" in text.stdout


def test_a_broken_export_is_invalid_file(export, tmp_path):
    (export / "journal.jsonl").write_text("{not json\n")
    out = CliRunner().invoke(app, ["replay", str(export)])
    assert (
        out.exit_code == 2
        and out.stderr.startswith("error: invalid_file: ")
        and "line 1" in out.stderr
    )
    (export / "answers.jsonl").unlink()
    out = CliRunner().invoke(app, ["replay", str(export)])
    assert out.exit_code == 2 and "no answers.jsonl" in out.stderr
    out = CliRunner().invoke(app, ["replay", str(tmp_path / "nowhere")])
    assert out.exit_code == 2 and "not a directory" in out.stderr


def test_first_difference_walks_to_the_first_changed_leaf():
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("$.a[1].b", 2, 3)
    assert first_difference([1, 2], [1, 2, 3]) == ("$.length", 2, 3)
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == ("$.b", "(absent)", 2)
    assert first_difference(1, 1.0) == ("$", 1, 1.0)  # a type change is a change
    assert first_difference({"a": [1]}, {"a": [1]}) is None


def test_a_v11_export_with_a_compacted_journal_and_a_recall_replays(tmp_path):
    from tests.helpers.session_helpers import make_state
    from workingset.encoders.journal.v11 import MIN_BUDGET

    with Investigation.create(tmp_path / "s.sqlite3", make_state(limits=(20, 6, 6)), encoder=f"v11:budget={MIN_BUDGET}",
                              clock=CLOCK) as inv:  # fmt: skip
        for turn in range(6):
            req = inv.next_request("H1")
            pending = inv.state.pending_result("H1")
            applied = inv.submit(
                req.request_id,
                decision(query(f"q{turn}", source="loki"), assess(pending) if pending else None),
            )
            inv.record(applied.action, {"scope": "log", "capture": {"query": f"q{turn}", "origin": "loki"},
                                        "payload": {"kind": "text", "language": None, "text": f"{turn}" + "x" * 9000}})  # fmt: skip
        req = inv.next_request("H1")
        assert req.indexed  # the journal was compacted
        inv.submit(
            req.request_id, decision(recall(req.indexed[0]), assess(inv.state.pending_result("H1")))
        )
        inv.next_request("H1")
        inv.export(tmp_path / "run")
    report = replay_export(tmp_path / "run")
    assert (
        report.ok
        and report.requests == 8
        and lines(tmp_path / "run" / "journal.jsonl")[0]["encoder"].endswith(f"budget={MIN_BUDGET}")
    )


def test_an_answer_refused_as_too_large_keeps_only_its_head_and_replays_at_its_size():
    from workingset.errors import DecisionRejected
    from workingset.eventlog.log import AnswerEvent
    from workingset.session.frozen_replay import _answer_bytes

    err = DecisionRejected("the decision is 3,000 bytes; the limit is 1,000 bytes", code="too_large",
                           details={"path": "$", "limit": 1000})  # fmt: skip
    event = AnswerEvent.of("demo-r0001", b"{" + b"x" * 2999, err)
    assert (len(event.data()), event.size, event.code) == (1000, 3000, "too_large")
    line = json.loads(msgspec.json.encode(event))
    assert _answer_bytes(line) == b"{" + b"x" * 999 + b" " * 2000
    small = AnswerEvent.of("demo-r0001", b"{}", err)  # under the limit: kept whole
    assert small.size is None and small.data() == b"{}"
    other = AnswerEvent.of(
        "demo-r0001",
        b"{" + b"x" * 2999,
        DecisionRejected("m", code="malformed_json", details={"limit": 10}),
    )
    assert other.size is None and len(other.data()) == 3000


def test_an_analysis_created_from_a_stored_context_replays(export, tmp_path):
    """The documented way to continue a run (`init --state <stored context>`): its requests follow that one's."""
    store = str(tmp_path / "continued.sqlite3")
    with Investigation.create(
        store, (export / "demo-r0002.json").read_bytes(), encoder="v8", clock=CLOCK
    ) as inv:
        req = inv.next_request("H1")
        assert req.request_id == "demo-r0003"
        with pytest.raises(DecisionRejected):
            inv.submit(req.request_id, b"{")
        act = inv.submit(req.request_id, decision(query("select 3"))).action
        inv.record(act, result("three", query="select 3"), captured_at="2026-06-10T21:10:00Z")
        inv.next_request("H2")
        inv.export(tmp_path / "continued")
    assert lines(tmp_path / "continued" / "journal.jsonl")[1]["requests_before"] == 2
    report = replay_export(tmp_path / "continued")
    assert report.ok, report.divergence
    assert (report.requests, report.answers, report.rejected, report.results) == (2, 2, 1, 1)
    assert report.contexts[0].endswith("demo-r0003.json")


def _leaves(value, path=()):
    """Every (path, leaf) of plain JSON: the places one edit can go."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def _edited(value):
    """Another value of the same type (a string gains a space, so an answer keeps its meaning; a number grows)."""
    if isinstance(value, bool) or value is None:
        return not value if isinstance(value, bool) else "x"
    if isinstance(value, (int, float)):
        return value + 1
    return value + " "


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_edit_of_an_export_fails_its_replay(export, tmp_path_factory, data):
    """An export is evidence: one edited leaf anywhere in it (journal, answers, a stored context) fails the replay."""
    run = tmp_path_factory.mktemp("edited") / "run"
    shutil.copytree(export, run)
    name = data.draw(st.sampled_from(sorted(p.name for p in run.iterdir())), label="file")
    docs = lines(run / name) if name.endswith(".jsonl") else [json.loads((run / name).read_text())]
    places = [(i, path, leaf) for i, doc in enumerate(docs) for path, leaf in _leaves(doc)]
    i, path, leaf = data.draw(st.sampled_from(places), label="leaf")
    node = docs[i]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _edited(leaf)
    if name.endswith(".jsonl"):
        write_lines(run / name, docs)
    else:
        (run / name).write_text(json.dumps(docs[0]))
    try:
        report = replay_export(run)
    except (
        WorkingsetError
    ) as err:  # an edit that makes the export unreadable is refused with its code
        assert err.code in ("invalid_file", "unknown_encoder"), err
        return
    assert not report.ok, (name, i, path)


# -- a tampered answers.jsonl: one error line from every command that reads it ------------------------
# `replay`, `requests`, `compare` and `report` read it through one function (`io.limits.jsonl_lines`):
# the same size cap (`max_file_bytes`), the same nesting bound and duplicate-key check, per line.

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
    export, tmp_path, capsys, monkeypatch, tamper, command
):
    monkeypatch.delenv("WORKINGSET_MAX_FILE_BYTES", raising=False)
    run = export
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
