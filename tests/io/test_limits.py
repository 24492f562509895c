"""The input limits (`workingset.io.limits`): nesting, repeated keys, sizes, bounded reads, number ranges."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers.session_helpers import assess, decision, make_state, query, result, state_bytes
from workingset.cli.commands import app
from workingset.errors import DecisionRejected, InvalidFile, TooLarge, UsageError, WorkingsetError
from workingset.io import limits
from workingset.io.limits import (
    MAX_COST,
    MAX_COUNT,
    Limits,
    check_json,
    duplicate_key,
    nesting_depth,
    read_bounded,
    skeleton,
)
from workingset.model.state import load_state, validate_state
from workingset.session.investigation import Investigation

# Strings that stress the byte scan: brackets, braces, colons, quotes and backslashes inside strings.
tricky = st.text(alphabet='[]{}:,"\\ab\n\u00e9', max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    tricky,
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky, inner, max_size=4),
                      max_leaves=30)  # fmt: skip


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=values, indent=st.sampled_from([None, 1]))
def test_nesting_depth_is_exact_whatever_the_strings_hold(value, indent):
    data = json.dumps(value, indent=indent).encode()
    depth = _depth(value)
    assert nesting_depth(data, 100) >= depth  # never under
    assert nesting_depth(data, 0) == min(depth, 1)  # counted up to the limit + 1
    if depth > 1:
        assert nesting_depth(data, depth - 1) == depth  # exact once past the fast path
    assert skeleton(data).count(b":") == _keys(value)


def _keys(value) -> int:
    if isinstance(value, dict):
        return len(value) + sum(_keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(_keys(v) for v in value)
    return 0


def _with_repeat(value, target: list, key: str) -> str:
    """JSON text of `value` where the object at path `target` gives `key` a second time (as its last key)."""
    if isinstance(value, dict):
        parts = [f"{json.dumps(k)}:{_with_repeat(v, target[1:] if target and target[0] == k else None, key)}"
                 for k, v in value.items()]  # fmt: skip
        if target == []:
            parts.append(f"{json.dumps(key)}:0")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_with_repeat(v, target[1:] if target and target[0] == i else None, key)
                              for i, v in enumerate(value)) + "]"  # fmt: skip
    return json.dumps(value)


def _objects(value, path=()):
    if isinstance(value, dict):
        yield path, value
        for k, v in value.items():
            yield from _objects(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _objects(v, path + (i,))


def _json_path(path) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


@settings(max_examples=300, deadline=None)
@given(value=values, data=st.data())
def test_a_repeated_key_is_found_with_its_path_and_none_otherwise(value, data):
    walk_max = limits._WALK_MAX
    limits._WALK_MAX = data.draw(
        st.sampled_from([walk_max, 0])
    )  # both ways of counting the decoded keys
    try:
        assert duplicate_key(json.dumps(value).encode()) is None
        objects = [(p, o) for p, o in _objects(value) if o]
        if not objects:
            return
        path, obj = data.draw(st.sampled_from(objects))
        key = data.draw(st.sampled_from(sorted(obj)))
        text = _with_repeat(value, list(path), key).encode()
        assert duplicate_key(text) == (key, _json_path(path))
    finally:
        limits._WALK_MAX = walk_max


def test_the_check_names_the_limit_and_the_code_of_each_kind():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(InvalidFile, match="deeper than 64 levels") as e:
        check_json(deep, "file", "f.json")
    assert e.value.details["limit"] == 64
    with pytest.raises(DecisionRejected, match="deeper than 64") as e:
        check_json(b'{"next":' * 10_000 + b"1" + b"}" * 10_000, "decision", "<decision>")
    assert e.value.code == "schema_violation"
    with pytest.raises(DecisionRejected) as e:
        check_json(b'{"next": 1, "next": 2}', "decision", "<decision>")
    assert e.value.code == "schema_violation" and e.value.details == {"path": "$", "key": "next"}
    small = Limits(max_result_bytes=10)
    with pytest.raises(TooLarge, match="WORKINGSET_MAX_RESULT_BYTES") as e:
        check_json(b"[" + b"1," * 10 + b"1]", "result", "r.json", small)
    assert e.value.code == "too_large" and e.value.details["limit"] == 10
    with pytest.raises(DecisionRejected) as e:
        check_json(b" " * 2_000_000, "decision", "<decision>")
    assert e.value.code == "too_large"
    check_json(b"[" * 64 + b"]" * 64, "file", "f")  # exactly the limit is fine


def test_limits_come_from_the_environment_and_bad_values_are_usage_errors():
    assert Limits.current({}) == Limits()
    assert Limits.current({"WORKINGSET_MAX_DEPTH": "10", "WORKINGSET_MAX_DECISION_BYTES": "4_096"}) == Limits(
        max_depth=10, max_decision_bytes=4096)  # fmt: skip
    for bad in ("ten", "0", "-5", "1e3", str(2**60)):
        with pytest.raises(UsageError, match="WORKINGSET_MAX_FILE_BYTES"):
            Limits.current({"WORKINGSET_MAX_FILE_BYTES": bad})
    with pytest.raises(UsageError, match="1 to 500"):
        Limits(max_depth=501)


def test_reading_stops_one_byte_past_the_limit():
    class Endless(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buf):
            buf[:] = b"\0" * len(buf)
            return len(buf)

    with pytest.raises(DecisionRejected, match="more than 100 bytes") as e:
        read_bounded(
            io.BufferedReader(Endless()), "decision", "<stdin>", Limits(max_decision_bytes=100)
        )
    assert e.value.code == "too_large"
    with pytest.raises(TooLarge, match="more than 100 bytes"):
        read_bounded(io.BufferedReader(Endless()), "file", "f", Limits(max_file_bytes=100))
    assert (
        read_bounded(io.BytesIO(b"x" * 100), "decision", "<stdin>", Limits(max_decision_bytes=100))
        == b"x" * 100
    )


def test_dev_zero_and_oversized_inputs_are_refused_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_STORE", str(tmp_path / "s.sqlite3"))
    monkeypatch.setenv("WORKINGSET_MAX_FILE_BYTES", "1000000")
    runner = CliRunner()
    huge = tmp_path / "huge.json"
    with open(
        huge, "wb"
    ) as fh:  # sparse: 1 GB that takes no disk, and would take memory if read whole
        fh.truncate(1 << 30)
    res = runner.invoke(app, ["init", "--state", str(huge), "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "too_large"
    assert "1,000,000 bytes (WORKINGSET_MAX_FILE_BYTES)" in res.stderr
    # A device is no file: refused before it is read (an endless stdin is `too_large`, below).
    res = runner.invoke(app, ["init", "--state", "/dev/zero", "--json"])
    error = json.loads(res.stdout)["error"]
    assert res.exit_code == 2 and (error["code"], error["details"]["reason"]) == (
        "invalid_file",
        "not_regular_file",
    )
    (tmp_path / "state.json").write_bytes(state_bytes())
    assert runner.invoke(app, ["init", "--state", str(tmp_path / "state.json")]).exit_code == 0
    runner.invoke(app, ["next", "--analysis", "demo"])
    monkeypatch.setenv("WORKINGSET_MAX_DECISION_BYTES", "100")
    big = json.dumps(decision(query("x" * 200)))
    for args, stdin in ((["-"], big), ([big], None)):
        res = runner.invoke(
            app, ["submit", "--analysis", "demo", "--request", "demo-r0001", *args], input=stdin
        )
        assert res.exit_code == 2 and res.stderr.startswith("error: too_large: "), res.stderr
    import subprocess
    import sys

    with open(
        "/dev/zero", "rb"
    ) as zero:  # an endless stdin: read up to the limit + 1 byte, then refused
        res = subprocess.run([sys.executable, "-m", "workingset.cli", "submit", "--analysis", "demo", "--request",
                              "demo-r0001", "-"], stdin=zero, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert res.returncode == 2 and res.stderr.startswith(
        "error: too_large: the decision is more than 100 bytes"
    )
    monkeypatch.setenv("WORKINGSET_MAX_DEPTH", "abc")
    res = runner.invoke(app, ["show", "--analysis", "demo"])
    assert res.exit_code == 0  # reading needs no input limits
    res = runner.invoke(
        app, ["submit", "--analysis", "demo", "--request", "demo-r0001", "-"], input="{}"
    )
    assert (
        res.exit_code == 2
        and "error: usage_error: WORKINGSET_MAX_DEPTH must be an integer" in res.stderr
    )


# -- number ranges ---------------------------------------------------------------------------------


def _state(**changes):
    s = make_state(max_cost=100.0)
    for path, value in changes.items():
        node = s
        *parents, last = path.split("__")
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value
    return json.dumps(s).encode()


@pytest.mark.parametrize("path, value", [
    ("iteration", 2**63 - 5), ("iteration", MAX_COUNT + 1), ("iteration", 2**70), ("budget__max_iterations", 2**64),
    ("budget__cost_used", 1.7e308), ("budget__max_cost", MAX_COST * 10), ("budget__cost_used", -1.0),
    ("hypotheses__0__control__iteration_limit", 2**63), ("hypotheses__0__confidence", 1e300),
    ("evidence__0__budget__cost", 1e13), ("evidence__0__capture__page", -(2**53) - 1), ("evidence__0__capture__item_count", 2**60),
    ("notes__0__iteration", MAX_COUNT + 1),
])  # fmt: skip
def test_every_count_and_cost_of_a_state_has_a_range(path, value):
    with pytest.raises(InvalidFile) as e:
        load_state(_state(**{path: value}))
    assert e.value.details["path"] == "$." + ".".join(
        f"[{p}]" if p.isdigit() else p for p in path.split("__")
    ).replace(".[", "[")


def test_the_largest_counts_and_costs_are_accepted_and_a_turn_does_not_overflow(tmp_path):
    data = _state(iteration=MAX_COUNT - 2, budget__max_iterations=MAX_COUNT, budget__cost_used=MAX_COST,
                  budget__max_cost=None, hypotheses__0__control__iteration_limit=MAX_COUNT)  # fmt: skip
    with Investigation.create(tmp_path / "s.sqlite3", data) as inv:
        req = inv.next_request("H1")
        applied = inv.submit(req.request_id, decision(query()))
        assert applied.iteration == MAX_COUNT - 1 and applied.status == "active"
        with pytest.raises(InvalidFile, match="past 1e\\+12") as e:
            inv.record(applied.action, result(cost=0.5))
        assert e.value.details["path"] == "$.cost"
        inv.record(applied.action, result(cost=0.0))
        req = inv.next_request("H1")
        applied = inv.submit(
            req.request_id, decision(query(), assess(inv.state.pending_result("H1")))
        )
        assert applied.iteration == MAX_COUNT and applied.status == "completed"
        assert inv.show().state.budget.cost_used == MAX_COST


def test_costs_cannot_add_up_past_the_range(tmp_path):
    """Two results of 1.7e308 made cost_used infinite and the analysis unreadable; now the first is refused."""
    with Investigation.create(tmp_path / "s.sqlite3", state_bytes()) as inv:
        for cost, ok in ((1.7e308, False), (6e11, True), (6e11, False), (4e11, True)):
            req = inv.next_request()
            pending = inv.state.pending_result(req.hypothesis)
            applied = inv.submit(
                req.request_id, decision(query(), assess(pending) if pending else None)
            )
            try:
                inv.record(applied.action, result(cost=cost))
            except InvalidFile as err:
                assert not ok and err.details["path"] == "$.cost"
                inv.record(applied.action, result(cost=0.0))
            else:
                assert ok
        assert inv.show().state.budget.cost_used == 1e12
    with Investigation.open(tmp_path / "s.sqlite3", "demo") as again:
        assert again.show().state.budget.cost_used == 1e12
        again.export(tmp_path / "run")


def test_numbers_of_states_and_results_built_in_python_are_checked_too(tmp_path):
    state = load_state(state_bytes())
    state.hypotheses[0].confidence = math.nan
    with pytest.raises(InvalidFile, match=r"hypotheses\[0\]\.confidence"):
        validate_state(state)
    state.hypotheses[0].confidence = 0.5
    state.budget.cost_used = math.inf
    with pytest.raises(InvalidFile, match="cost_used"):
        Investigation.create(tmp_path / "s.sqlite3", state)
    with Investigation.create(tmp_path / "s.sqlite3", state_bytes()) as inv:
        applied = inv.submit(inv.next_request().request_id, decision(query()))
        for bad in (
            dict(result(), cost=math.inf),
            dict(result(), cost=-0.5),
            dict(result(), cost=2e12),
        ):
            with pytest.raises(InvalidFile):
                inv.record(applied.action, bad)
        with pytest.raises(DecisionRejected) as e:
            inv.submit("demo-r0002", '{"next": "\ud800"}')
        assert e.value.code in ("malformed_json", "stale_request")


@pytest.mark.parametrize("price", ["inf", "nan", "-inf", "-0.5", "1e9"])
@pytest.mark.parametrize("flag", ["--cached-price", "--write-price"])
def test_cache_prices_must_be_finite_and_in_range(flag, price):
    res = CliRunner().invoke(app, ["compare", "fixtures/bug17", flag, price])
    assert res.exit_code == 2 and res.stderr.startswith(
        f"error: usage_error: {flag} must be a number from 0 to 1000"
    )


def test_a_wrong_decision_code_does_not_depend_on_which_key_repeats(tmp_path):
    with Investigation.create(tmp_path / "s.sqlite3", state_bytes()) as inv:
        rid = inv.next_request().request_id
        for text in ('{"next": {"kind": "query", "source": "a", "query": "b", "purpose": "c"}, "next": {"kind": "conclude"}}',
                     '{"next": {"kind": "conclude"}, "next": {"kind": "query", "source": "a", "query": "b", "purpose": "c"}}',
                     '{"next": {"kind": "query", "kind": "query", "source": "a", "query": "b", "purpose": "c"}}'):  # fmt: skip
            with pytest.raises(WorkingsetError) as e:
                inv.submit(rid, text)
            assert e.value.code == "schema_violation" and "twice" in e.value.message


def test_submit_inputs_that_crashed_the_cli_are_refused(tmp_path, monkeypatch):
    """The submit inputs read from a file, stdin or the argument that gave tracebacks: each is now exit 2 with a code."""
    monkeypatch.setenv("WORKINGSET_STORE", str(tmp_path / "s.sqlite3"))
    (tmp_path / "state.json").write_bytes(state_bytes())
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--state", str(tmp_path / "state.json")]).exit_code == 0
    assert runner.invoke(app, ["next", "--analysis", "demo"]).exit_code == 0
    (tmp_path / "deep.json").write_bytes(b'{"next":' * 10_000 + b"1" + b"}" * 10_000)
    cases = [
        (
            [str(tmp_path / "deep.json")],
            None,
            "schema_violation",
        ),  # nested 10,000 deep, from a file
        (["-"], "[" * 100_000, "schema_violation"),  # from stdin
        (['{"next": "\udcff"}'], None, "malformed_json"),  # an argument that is not valid UTF-8
        (['{"next": "\ud800"}'], None, "malformed_json"),  # a lone surrogate
        (["a\0b.json"], None, "invalid_file"),  # a NUL byte in the path
        (["\udcff.json"], None, "invalid_file"),  # a path that is not valid UTF-8
    ]
    for args, stdin, code in cases:
        res = runner.invoke(
            app,
            ["submit", "--analysis", "demo", "--request", "demo-r0001", *args, "--json"],
            input=stdin,
        )
        assert res.exit_code == 2, (args[0][:20], res.exception)
        assert json.loads(res.stdout)["error"]["code"] == code, (args[0][:20], res.stdout)


def test_a_closed_stdin_is_a_usage_error(tmp_path):
    import subprocess
    import sys

    cmd = f'"{sys.executable}" -m workingset.cli submit --store "{tmp_path}/s.sqlite3" --analysis demo --request demo-r0001 - <&-'
    res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.startswith("error: usage_error: stdin is closed"), (
        res.stderr
    )


@pytest.mark.parametrize("costs", [(9e11, 9e11), (1e300,)])
def test_an_import_whose_costs_pass_the_cost_range_is_invalid_file(tmp_path, costs):
    """Costs that add up past 1e12 (or one that alone does) refuse the trajectory, naming cost_used; no run is written."""
    from pathlib import Path

    src = json.loads(
        (
            Path(__file__).parents[1]
            / "data"
            / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"
        ).read_text()
    )
    replies = [m for m in src["messages"] if m["role"] == "assistant"]
    assert len(replies) >= len(costs)
    for msg in replies:
        msg.setdefault("extra", {})["cost"] = 0.0
    for msg, cost in zip(replies, costs):
        msg["extra"]["cost"] = cost
    (tmp_path / "t.json").write_text(json.dumps(src))
    res = CliRunner().invoke(
        app,
        [
            "import",
            "mini-swe-agent",
            str(tmp_path / "t.json"),
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert res.exit_code == 2, res.exception
    error = json.loads(res.stdout)["error"]
    assert (
        error["code"] == "invalid_file"
        and "cost_used" in error["message"]
        and "1e+12" in error["message"]
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent"])
def test_importers_refuse_deep_and_repeated_keys_in_a_trajectory(tmp_path, fmt):
    runner = CliRunner()
    cases = {
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "repeat.json": b'{"messages": [], "messages": []}',
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        res = runner.invoke(
            app,
            ["import", fmt, str(tmp_path / name), "--out", str(tmp_path / f"out-{name}"), "--json"],
        )
        assert res.exit_code == 2, res.exception
        error = json.loads(res.stdout)["error"]
        assert error["code"] == "invalid_file" and (
            "deeper than 64" in error["message"] or "twice" in error["message"]
        )
        assert not (tmp_path / f"out-{name}").exists()


def test_replay_refuses_a_journal_line_nested_deep_or_giving_a_key_twice(tmp_path):
    with Investigation.create(tmp_path / "s.sqlite3", state_bytes()) as inv:
        inv.next_request()
        inv.export(tmp_path / "run")
    journal = tmp_path / "run" / "journal.jsonl"
    good = journal.read_bytes()
    for bad in (b"[" * 100_000 + b"]" * 100_000, b'{"kind": "x", "kind": "y"}'):
        journal.write_bytes(good + bad + b"\n")
        res = CliRunner().invoke(app, ["replay", str(tmp_path / "run"), "--json"])
        assert res.exit_code == 2, res.exception
        assert json.loads(res.stdout)["error"]["code"] == "invalid_file"


# -- a too large answer through the CLI is kept as the API keeps it (issue 23.2) --------------------


def _kept_answers(store: str) -> list[bytes]:
    from tests.helpers.store_sql import query as sql

    return [
        row[0].encode()
        for row in sql(store, "SELECT data FROM events WHERE kind = 'answer' ORDER BY seq")
    ]


def _api_keeps(tmp_path, answer: bytes, env_limit: int | None) -> tuple[list[bytes], str]:
    lim = Limits(max_decision_bytes=env_limit) if env_limit else None
    store = str(tmp_path / "api.sqlite3")
    with Investigation.create(
        store, state_bytes(), clock=lambda: "2026-06-10T21:00:00Z", limits=lim
    ) as inv:
        rid = inv.next_request("H1").request_id
        with pytest.raises(DecisionRejected) as err:
            inv.submit(rid, answer)
    return _kept_answers(store), err.value.message


@pytest.mark.parametrize("how", ["file", "stdin"])
@pytest.mark.parametrize(
    "env_limit", [None, 5000], ids=["default limit", "WORKINGSET_MAX_DECISION_BYTES"]
)
def test_the_cli_keeps_a_too_large_answer_as_the_api_does(tmp_path, monkeypatch, how, env_limit):
    from tests.helpers.os_helpers import cli_process

    answer = json.dumps(
        decision(query("x" * 2_000_000 if env_limit is None else "y" * 9000))
    ).encode()
    kept, message = _api_keeps(tmp_path, answer, env_limit)
    event = json.loads(kept[0])
    limit = env_limit or limits.MiB
    assert (len(event["answer"]), event["size"], event["code"]) == (limit, len(answer), "too_large")
    store = str(tmp_path / "cli.sqlite3")
    env = {"WORKINGSET_STORE": store}
    if env_limit:
        env["WORKINGSET_MAX_DECISION_BYTES"] = str(env_limit)
    monkeypatch.setenv("WORKINGSET_STORE", store)
    (tmp_path / "state.json").write_bytes(state_bytes())
    (tmp_path / "answer.json").write_bytes(answer)
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--state", str(tmp_path / "state.json")]).exit_code == 0
    assert runner.invoke(app, ["next", "--analysis", "demo", "--hypothesis", "H1"]).exit_code == 0
    args = ["submit", "--analysis", "demo", "--request", "demo-r0001", "--json"]
    if how == "file":
        res = cli_process(*args, str(tmp_path / "answer.json"), env=env)
    else:
        with open(tmp_path / "answer.json", "rb") as fh:
            res = cli_process(*args, "-", stdin=fh.fileno(), env=env)
    assert res.code == 2 and json.loads(res.out)["error"] == {
        "code": "too_large",
        "message": message,
        "details": {"path": "$", "limit": limit, "setting": "WORKINGSET_MAX_DECISION_BYTES"},
    }
    got = [json.loads(x) for x in _kept_answers(store)]
    assert got == [
        event
    ]  # the same head, size, code, message and details (the time is the clock's)
