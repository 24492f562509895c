"""The session commands of the CLI (docs/protocol.md, "Errors") through typer's CliRunner: outputs, stdin, the store option, exit codes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.helpers.session_helpers import assess, decision, query, recall, result, state_bytes
from workingset.cli.commands import app, main
from workingset.model.state import load_state

A = ["--analysis", "demo"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A store from $WORKINGSET_STORE and a state file; returns a runner bound to them."""
    monkeypatch.setenv("WORKINGSET_STORE", str(tmp_path / "store.sqlite3"))
    (tmp_path / "state.json").write_bytes(state_bytes())
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None, code: int = 0):
        res = runner.invoke(app, list(args), input=stdin)
        assert res.exit_code == code, (res.stdout, res.stderr)
        return res

    run.tmp = tmp_path
    return run


def js(res) -> dict:
    return json.loads(res.stdout)


def test_a_whole_session(env):
    out = js(env("init", "--state", str(env.tmp / "state.json"), "--encoder", "v8", "--json"))
    assert out == {
        "analysis_id": "demo",
        "encoder": "investigation_project_v8",
        "status": "active",
        "termination_reason": None,
    }

    req = js(env("next", *A, "--json"))
    assert list(req) == [
        "request_id",
        "encoder",
        "hypothesis",
        "text",
        "shown",
        "indexed",
        "chars",
        "hash",
    ]
    assert req["request_id"] == "demo-r0001" and req["chars"] == len(req["text"])

    text = env("next", *A)
    assert text.stdout == req["text"] and "demo-r0001" in text.stderr

    sub = js(
        env(
            "submit",
            *A,
            "--request",
            "demo-r0001",
            "-",
            "--json",
            stdin=json.dumps(decision(query("select 7"))),
        )
    )
    assert sub == {
        "request_id": "demo-r0001",
        "applied": "query",
        "iteration": 1,
        "status": "active",
        "action": "B000006",
    }

    (env.tmp / "result.json").write_text(json.dumps(result("seven", query="select 7")))
    rec = js(env("record", *A, "--action", "B000006", str(env.tmp / "result.json"), "--json",
                 "--captured-at", "2026-06-10T20:40:00Z"))  # fmt: skip
    assert rec == {"action": "B000006", "evidence": "E000007", "hypothesis": "H1", "status": "active",
                   "termination_reason": None}  # fmt: skip

    req2 = js(env("next", *A, "--hypothesis", "H1", "--json"))
    (env.tmp / "d.json").write_text(json.dumps(decision(recall("E000003"), assess("E000007"))))
    sub = env("submit", *A, "--request", req2["request_id"], str(env.tmp / "d.json"))
    assert sub.stdout.startswith("applied recall for demo-r0002 at iteration 2")

    show = js(env("show", *A, "--json"))
    assert list(show) == [
        "status",
        "termination_reason",
        "encoder",
        "open_request",
        "pending_actions",
        "state",
        "stage",
        "stop",
        "partial",
        "limitations",
        "usage",
    ]
    assert show["open_request"] is None and show["pending_actions"] == []
    assert (
        load_state(json.dumps(show["state"]).encode()).iteration == 2
    )  # the §3 format, as init reads it
    assert show["state"]["recall"] == {"H1": {"evidence_refs": ["E000003"], "iteration": 2}}
    assert show["state"]["evidence"][-1]["captured_at"] == "2026-06-10T20:40:00Z"
    human = env("show", *A).stdout
    assert "retry storm" in human and "recall H1: E000003" in human

    assert js(env("pause", *A, "--json"))["status"] == "paused"
    assert env("resume", *A).stdout == "analysis demo: active\n"
    env("next", *A)
    assert js(env("export", *A, "--out", str(env.tmp / "run"), "--json"))["files"][-1].endswith(
        "demo-r0003.json"
    )
    assert "3 of 3 stored contexts verified" in env("verify", str(env.tmp / "run")).stdout
    assert js(env("cancel", *A, "--json")) == {"analysis_id": "demo", "status": "cancelled", "prior_status": None,
                                               "termination_reason": "cancelled"}  # fmt: skip


def test_init_reads_stdin_and_a_stored_context(env):
    env("init", "--state", "-", stdin=state_bytes().decode())
    env("next", *A)
    env("export", *A, "--out", str(env.tmp / "run"))
    ctx = json.loads((env.tmp / "run" / "demo-r0001.json").read_text())
    ctx["state"]["analysis_id"] = "again"
    (env.tmp / "ctx.json").write_text(json.dumps(ctx))
    assert "created analysis again" in env("init", "--state", str(env.tmp / "ctx.json")).stdout
    assert (
        js(env("next", "--analysis", "again", "--json"))["request_id"] == "again-r0002"
    )  # numbered on


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["init", "--state", "{STATE}"], "analysis_exists"),
        (["init", "--state", "{STATE}", "--encoder", "v0"], "unknown_encoder"),
        (["init", "--state", "{TMP}/missing.json"], "invalid_file"),
        (["show", "--analysis", "nope"], "unknown_analysis"),
        (["next", *A, "--hypothesis", "H9"], "unknown_hypothesis"),
        (["submit", *A, "--request", "demo-r0009", '{"next": {}}'], "stale_request"),
        (["submit", *A, "--request", "demo-r0001", "{nope"], "malformed_json"),
        (
            [
                "submit",
                *A,
                "--request",
                "demo-r0001",
                '{"next": {"kind": "recall", "evidence_refs": []}}',
            ],
            "recall_count",
        ),
        (["record", *A, "--action", "B000001", "{TMP}/state.json"], "unknown_action"),
        (["resume", *A], "invalid_transition"),
    ],
)
def test_errors_exit_2_with_one_line_and_a_json_object(env, args, code):
    env("init", "--state", str(env.tmp / "state.json"), "--encoder", "v8")
    env("next", *A)
    args = [
        a.replace("{STATE}", str(env.tmp / "state.json")).replace("{TMP}", str(env.tmp))
        for a in args
    ]
    res = env(*args, code=2)
    assert res.stderr.startswith(f"error: {code}: ") and res.stderr.count("\n") == 1
    res = env(*args, "--json", code=2)
    err = js(res)["error"]
    assert err["code"] == code and set(err) == {"code", "message", "details"}


def test_the_default_store_is_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("WORKINGSET_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "state.json").write_bytes(state_bytes())
    res = CliRunner().invoke(app, ["init", "--state", "state.json"])
    assert res.exit_code == 0 and (tmp_path / ".workingset" / "store.sqlite3").exists()
    other = tmp_path / "elsewhere.sqlite3"
    res = CliRunner().invoke(app, ["init", "--state", "state.json", "--store", str(other)])
    assert res.exit_code == 0 and other.exists()


def test_a_corrupt_store_is_exit_2_without_a_traceback(env):
    (env.tmp / "junk.sqlite3").write_text("junk " * 100)
    res = env("show", *A, "--store", str(env.tmp / "junk.sqlite3"), code=2)
    assert res.stderr.startswith("error: store_corrupt: ") and "Traceback" not in res.stderr


def test_a_missing_option_is_a_usage_error(capsys):
    assert main(["submit", "--analysis", "demo", "-"]) == 2
    assert capsys.readouterr().err.startswith("error: usage_error: ")


def test_the_cli_on_a_postgresql_store_by_option_and_by_environment(env, pg_server, monkeypatch):
    url = pg_server.database()
    out = js(env("init", "--state", str(env.tmp / "state.json"), "--store", url, "--json"))
    assert out["analysis_id"] == "demo" and out["status"] == "active"
    monkeypatch.setenv("WORKINGSET_STORE", url)
    req = js(env("next", *A, "--json"))
    assert req["request_id"] == "demo-r0001"
    assert js(env("show", *A, "--json"))["open_request"] == "demo-r0001"
    pg_server.drop(url)


def test_the_unix_socket_url_form_of_the_readme_works(env, pg_server):
    url = (
        pg_server.database()
    )  # postgresql://postgres@/db?host=/socket/dir: the server listens on no TCP port
    assert url.startswith("postgresql://postgres@/") and "?host=/" in url
    with_port = url + "&port=5432"  # the server's socket file is .s.PGSQL.5432
    assert (
        js(env("init", "--state", str(env.tmp / "state.json"), "--store", with_port, "--json"))[
            "status"
        ]
        == "active"
    )
    assert js(env("show", *A, "--store", with_port, "--json"))["status"] == "active"
    assert (
        js(env("show", *A, "--store", url + "&port=1", "--json", code=2))["error"]["code"]
        == "store_unavailable"
    )
    pg_server.drop(url)


def test_an_unreachable_postgresql_store_is_one_line_and_exit_2(env, tmp_path):
    pytest.importorskip("psycopg")
    res = env(
        "show", *A, "--store", f"postgresql://u:secret@/nothing?host={tmp_path}", "--json", code=2
    )
    assert (
        res.stderr.startswith("error: store_unavailable: ")
        and "secret" not in res.stderr + res.stdout
    )
    assert js(res)["error"]["code"] == "store_unavailable"


# Hostile `--store` URLs: (URL, code). No message or detail echoes a password, and libpq's
# multi-line messages come out as one clean line.
HOSTILE_STORES = [
    ("postgresql://u@/nothing?host={tmp}&password=hunter2", "store_unavailable"),
    ("postgresql://u:hunter2@/nothing?host={tmp}", "store_unavailable"),
    (
        "postgresql://u:hun@ter2@/nothing?host={tmp}",
        "usage_error",
    ),  # a raw @: refused, never echoed
    ("postgresql://u:hun@ter2@127.0.0.1:1/db", "usage_error"),  # libpq would resolve host "ter2@…"
    ("postgresql://u@/nothing?host={tmp}&sslpassword=hunter2", "store_unavailable"),
    ("postgres://u:hunter2@/nothing?host={tmp}&password=hunter2", "store_unavailable"),
    ("mysql://u:hunter2@host/db", "usage_error"),
    ("postgresql://u:hunter2@/db?bogus=1", "usage_error"),
    ("postgresql://u@/db%zz", "usage_error"),
    ("postgresql://u:hunter2%zz@/db", "usage_error"),
    ("postgresql://u@/db?password=hunter2%zz", "usage_error"),
    # libpq connection strings are PostgreSQL stores, their passwords never echoed
    ("host={tmp} dbname=nothing user=u password=hunter2", "store_unavailable"),
    ("host={tmp} dbname=nothing password='hun ter2' user=u", "store_unavailable"),
    ("dbname=nothing host={tmp} sslpassword=hunter2", "store_unavailable"),
]


@pytest.mark.parametrize("url, code", HOSTILE_STORES)
def test_a_store_url_never_echoes_its_password_and_a_malformed_one_is_a_usage_error(
    env, tmp_path, url, code
):
    pytest.importorskip("psycopg")
    res = env("show", *A, "--store", url.format(tmp=tmp_path), "--json", code=2)
    error = js(res)["error"]
    assert error["code"] == code
    for said in (res.stdout, res.stderr):
        assert "hunter2" not in said and "ter2" not in said
    assert (
        "\t" not in error["message"]
        and "\n" not in error["message"]
        and "  " not in error["message"]
    )
    assert res.stderr.startswith(f"error: {code}: ") and res.stderr.count("\n") == 1


def test_a_one_character_password_hides_itself_and_nothing_else(env, tmp_path):
    pytest.importorskip("psycopg")
    res = env("show", *A, "--store", "postgresql://u:o@127.0.0.1:1/db", "--json", code=2)
    message = js(res)["error"]["message"]
    assert js(res)["error"]["code"] == "store_unavailable"
    assert "connection" in message and "c***nn" not in message  # before: every "o" became ***
    assert "u:***@" in message and ":o@" not in message


def test_a_connection_string_opens_a_postgresql_store(tmp_path, pg_server):
    from workingset import Investigation
    from workingset.store.postgres import PostgresStore

    url = pg_server.database()
    database, host = url.split("/")[3].split("?")[0], url.split("host=")[1]
    conninfo = f"host={host} dbname={database} user=postgres"
    inv = Investigation.create(conninfo, load_state(state_bytes()))
    assert isinstance(inv.store, PostgresStore) and inv.show().status == "active"
    inv.close()
    assert not (tmp_path / conninfo).exists()  # not taken for a SQLite file name
    pg_server.drop(url)


def test_show_has_six_columns_and_export_counts_one_stored_context(env):
    env("init", "--state", str(env.tmp / "state.json"))
    req = js(env("next", *A, "--json"))
    (env.tmp / "d.json").write_text(json.dumps(decision(query())))
    action = js(
        env("submit", *A, "--request", req["request_id"], str(env.tmp / "d.json"), "--json")
    )["action"]
    lines = env("show", *A).stdout.split("\n")
    header = next(n for n, line in enumerate(lines) if line.startswith("id "))
    assert lines[header].split() == [
        "id",
        "title",
        "disposition",
        "confidence",
        "iterations",
        "previous",
    ]
    rule = lines[header + 1]  # tabulate's rule: one dash run per column, no empty last one
    assert len(rule.split()) == 6 and rule == rule.rstrip()
    assert all(line == line.rstrip() for line in lines[header : header + 5])
    assert "pending actions:" in lines and any(
        line.split()[:2] == [action, "H1"] for line in lines if line.strip()
    )
    out = env("export", *A, "--out", str(env.tmp / "run")).stdout
    assert out == f"wrote 1 stored context, journal.jsonl and answers.jsonl to {env.tmp / 'run'}\n"
    assert env("verify", str(env.tmp / "run")).stdout.endswith("1 of 1 stored context verified\n")
