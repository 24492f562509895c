"""The per-turn API over a real store (SQLite and PostgreSQL): every rejection leaves the store untouched, every turn persists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import BUG17
from tests.helpers.session_helpers import (
    ANALYSIS,
    answer_events,
    assess,
    conclude,
    db_dump,
    decision,
    make_state,
    query,
    recall,
    result,
    state_bytes,
)  # fmt: skip
from workingset.encoders import DEFAULT_ENCODER
from workingset.errors import WorkingsetError
from workingset.runs.layout import read_run, verify_context
from workingset.session.investigation import Investigation

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


def make(store: str, encoder: str = "v8", **kw) -> Investigation:
    return Investigation.create(store, state_bytes(**kw), encoder=encoder, clock=CLOCK)


def files(store: str) -> dict[str, bytes]:
    """The SQLite file and its WAL byte for byte (PostgreSQL: nothing; `db_dump` compares its rows)."""
    if store.startswith("postgresql://"):
        return {}
    return {p: Path(p).read_bytes() for p in (store, store + "-wal") if os.path.exists(p)}


def code_of(fn, *args, **kw) -> WorkingsetError:
    with pytest.raises(WorkingsetError) as info:
        fn(*args, **kw)
    return info.value


@pytest.fixture
def pending(store):
    """A v8 analysis whose open request is for H1, with H1's previous result E000007 unsettled."""
    inv = make(store)
    r1 = inv.next_request("H1")
    applied = inv.submit(r1.request_id, decision(query("select * from retries")))
    inv.record(applied.action, result("retry count 9000", query="select * from retries"))
    r2 = inv.next_request("H1")
    assert r2.shown == ["E000007"] and "E000001" in r2.indexed
    yield inv, r2.request_id
    inv.close()


REJECTIONS = [
    ("malformed_json", b'{"next": '),
    ("malformed_json", b"[]"),
    ("schema_violation", decision(recall("E000001", "E1"), assess("E000007"))),
    ("schema_violation", {"assessment": assess("E000007"), "next": query(), "extra": True}),
    (
        "recall_count",
        decision(recall("E000001", "E000002", "E000003", "E000004", "E000005"), assess("E000007")),
    ),
    ("recall_count", decision(recall(), assess("E000007"))),
    ("recall_duplicate", decision(recall("E000001", "E000001"), assess("E000007"))),
    ("unknown_evidence", decision(recall("E000001", "E000099", "E000098"), assess("E000007"))),
    ("recall_not_retained", decision(recall("E000001", "E000004"), assess("E000007"))),
    ("assessment_missing", decision(query())),
    ("assessment_mismatch", decision(query(), assess("E000001"))),
    (
        "ungrounded_reference",
        decision(conclude("supported", "E000007", "E000001", "E000002"), assess("E000007")),
    ),
]


@pytest.mark.parametrize(
    ("code", "bad"), REJECTIONS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(REJECTIONS)]
)
def test_a_rejected_decision_changes_nothing_and_the_request_stays_open(store, pending, code, bad):
    inv, rid = pending
    before_dump, before_answers, before_show = (
        db_dump(store, answers=False),
        answer_events(store),
        inv.show(),
    )
    raw = (
        bad if isinstance(bad, bytes) else json.dumps(bad, indent=1).encode()
    )  # kept byte for byte
    err = code_of(inv.submit, rid, raw)
    assert err.code == code
    # Every row but the kept answer is identical: state, status, open request, index tables.
    assert db_dump(store, answers=False) == before_dump
    (kept,) = answer_events(store)[len(before_answers) :]
    assert kept == {"analysis": "demo", "at": CLOCK(), "request_id": rid, "answer": raw.decode(), "outcome": "rejected",
                    "code": code, "message": err.message, **({"details": err.details} if err.details else {})}  # fmt: skip
    after = inv.show()
    assert after == before_show and after.open_request == rid
    # The corrected answer is then accepted.
    applied = inv.submit(rid, decision(recall("E000001", "E000002"), assess("E000007")))
    assert applied.applied == "recall" and applied.request_id == rid


def test_rejection_details_name_ids_and_suggest_recall(pending):
    inv, rid = pending
    err = code_of(
        inv.submit, rid, decision(recall("E000099", "E000001", "E000098"), assess("E000007"))
    )
    assert err.details["ids"] == ["E000099", "E000098"]
    err = code_of(
        inv.submit, rid, decision(conclude("refuted", "E000002", "E000003"), assess("E000007"))
    )
    assert err.details["ids"] == ["E000002", "E000003"] and "recall" in err.message


def test_stale_request_answered_or_unknown(store, pending):
    inv, rid = pending
    before = db_dump(store, answers=False)
    for stale in ("demo-r0001", "demo-r0099", "other-r0001"):
        err = code_of(inv.submit, stale, decision(query(), assess("E000007")))
        assert err.code == "stale_request"
    assert db_dump(store, answers=False) == before
    assert [(a["request_id"], a["code"]) for a in answer_events(store)[-3:]] == [
        ("demo-r0001", "stale_request"),
        ("demo-r0099", "stale_request"),
        ("other-r0001", "stale_request"),
    ]
    inv.submit(rid, decision(query(), assess("E000007")))
    assert code_of(inv.submit, rid, decision(query(), assess("E000007"))).code == "stale_request"


def test_analysis_closed_while_paused_and_after_completion(store, pending):
    inv, rid = pending
    inv.pause()
    before = db_dump(store, answers=False)
    assert code_of(inv.submit, rid, decision(query(), assess("E000007"))).code == "analysis_closed"
    assert code_of(inv.next_request).code == "analysis_closed"
    assert db_dump(store, answers=False) == before
    assert answer_events(store)[-1]["code"] == "analysis_closed"
    inv.resume()
    assert inv.show().open_request == rid
    applied = inv.submit(rid, decision(conclude("supported", "E000007"), assess("E000007")))
    assert (applied.status, inv.show().termination_reason) == ("completed", "root_cause_found")
    assert code_of(inv.submit, rid, decision(query())).code == "analysis_closed"


@pytest.mark.parametrize("encoder", ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v10"])
def test_recall_is_refused_by_versions_without_it(store, encoder):
    inv = make(store, encoder)
    req = inv.next_request()
    before = db_dump(store, answers=False)
    err = code_of(inv.submit, req.request_id, decision(recall("E000001")))
    assert err.code == "recall_unsupported"
    assert db_dump(store, answers=False) == before and inv.show().open_request == req.request_id
    assert inv.submit(req.request_id, decision(query())).applied == "query"


@pytest.mark.parametrize("encoder", ["v8", "v9"])
def test_recall_is_accepted_by_v8_and_v9(store, encoder):
    inv = make(store, encoder)
    req = inv.next_request()
    assert inv.submit(req.request_id, decision(recall("E000003"))).applied == "recall"
    assert "E000003" in inv.next_request(req.hypothesis).shown


# -- the recall lifecycle, across real process restarts -----------------------------------------


def cli(store: str, *args: str, stdin: str | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-m", "workingset.cli", *args, "--store", store, "--json"], input=stdin,
                          capture_output=True, text=True, check=False)  # fmt: skip
    out = json.loads(proc.stdout)
    assert (proc.returncode == 0) == ("error" not in out), proc.stderr
    return out


@pytest.mark.slow  # cross-process: every step a new CLI process
def test_recall_lifecycle_across_process_restarts(store, tmp_path):
    state_file = tmp_path / "state.json"
    state_file.write_bytes(state_bytes())
    a = ["--analysis", ANALYSIS]
    cli(store, "init", "--state", str(state_file), "--encoder", "v8")

    # Process 1..: H1 recalls two archived items; one whose payload was not retained is refused.
    r1 = cli(store, "next", *a, "--hypothesis", "H1")
    assert {"E000003", "E000005"} <= set(r1["indexed"])
    refused = cli(
        store,
        "submit",
        *a,
        "--request",
        r1["request_id"],
        json.dumps(decision(recall("E000003", "E000004"))),
    )
    assert refused["error"]["code"] == "recall_not_retained" and refused["error"]["details"][
        "ids"
    ] == ["E000004"]
    assert cli(store, "submit", *a, "--request", r1["request_id"], "-",
               stdin=json.dumps(decision(recall("E000003", "E000005"))))["applied"] == "recall"  # fmt: skip

    # Another hypothesis takes a turn with a query, and its result is recorded.
    r2 = cli(store, "next", *a)
    assert r2["hypothesis"] == "H2"
    sub = cli(
        store,
        "submit",
        *a,
        "--request",
        r2["request_id"],
        json.dumps(decision(query("select * from refunds"))),
    )
    rec = cli(
        store,
        "record",
        *a,
        "--action",
        sub["action"],
        json.dumps(result("refund rows", query="select * from refunds")),
    )
    assert rec["evidence"] == "E000007"

    # After the restarts, the selection survived and its payloads are in H1's next context in full.
    show = cli(store, "show", *a)
    assert show["state"]["recall"]["H1"]["evidence_refs"] == ["E000003", "E000005"]
    r3 = cli(store, "next", *a, "--hypothesis", "H1")
    assert r3["shown"][:2] == ["E000003", "E000005"] or {"E000003", "E000005"} <= set(r3["shown"])
    assert "def retry(n):" in r3["text"] and "E000003" not in r3["indexed"]

    # A repeat recall replaces the selection.
    cli(store, "submit", *a, "--request", r3["request_id"], json.dumps(decision(recall("E000001"))))
    r4 = cli(store, "next", *a, "--hypothesis", "H1")
    assert "E000001" in r4["shown"] and "E000003" not in r4["shown"] and "E000003" in r4["indexed"]

    # A query clears it.
    cli(store, "submit", *a, "--request", r4["request_id"], json.dumps(decision(query())))
    show = cli(store, "show", *a)
    assert "H1" not in show["state"]["recall"]
    assert show["pending_actions"] == ["B000007"]
    assert show["state"]["iteration"] == 4 and show["status"] == "active"


def test_reopening_restores_everything(store):
    inv = make(store, max_cost=10.0)
    r = inv.next_request("H1")
    inv.submit(r.request_id, decision(recall("E000002")))
    r = inv.next_request("H2")
    act = inv.submit(r.request_id, decision(query())).action
    r = inv.next_request("H3")
    inv.submit(r.request_id, decision(query()))
    inv.record(act, result(cost=2.5))
    open_req = inv.next_request("H1")
    before = inv.show()
    inv.close()
    with Investigation.open(store, ANALYSIS) as again:
        after = again.show()
        assert after == before
        assert after.open_request == open_req.request_id and [
            p.hypothesis for p in after.pending_actions
        ] == ["H3"]
        assert (
            after.state.recall["H1"].evidence_refs == ["E000002"]
            and after.state.budget.cost_used == 2.5
        )
        assert again.next_request() == open_req


# -- limits and termination ---------------------------------------------------------------------------


def test_iteration_limit_ends_a_recall_loop_with_budget_exhausted(store):
    inv = make(store, max_iterations=4)
    for i in range(4):
        req = inv.next_request("H1")
        applied = inv.submit(
            req.request_id, decision(recall(f"E00000{i + 1 + (i == 3)}"))
        )  # E000004 is unknown
    assert applied.status == "completed" and applied.iteration == 4
    show = inv.show()
    assert (show.status, show.termination_reason) == ("completed", "budget_exhausted")
    assert show.state.hypothesis("H1").control.iterations_used == 4
    assert code_of(inv.next_request).code == "analysis_closed"


def test_hypothesis_limits_end_in_inconclusive_human_review(store):
    inv = make(store, limits=(2, 1, 0))
    for _ in range(2):
        req = inv.next_request("H1")
        inv.submit(req.request_id, decision(recall("E000001")))
    assert code_of(inv.next_request, "H1").code == "hypothesis_unavailable"
    assert code_of(inv.next_request, "H3").code == "hypothesis_unavailable"
    req = inv.next_request()
    assert req.hypothesis == "H2"
    applied = inv.submit(req.request_id, decision(query()))
    assert applied.status == "active"  # H2's query is pending: not over yet
    rec = inv.record(applied.action, result())
    assert (rec.status, rec.termination_reason) == ("completed", "inconclusive_human_review")


def test_cost_exhausted_by_a_recorded_result(store):
    inv = make(store, max_cost=1.0)
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    rec = inv.record(act, result(cost=1.25))
    assert (rec.status, rec.termination_reason) == ("completed", "budget_exhausted")
    assert inv.show().state.budget.cost_used == 1.25


def test_conclusions_and_root_cause(store):
    inv = make(store, "v10")
    req = inv.next_request("H2")
    inv.submit(req.request_id, decision(conclude("refuted", "E000003")))
    assert code_of(inv.next_request, "H2").code == "hypothesis_unavailable"
    req = inv.next_request()
    assert req.hypothesis == "H1"
    applied = inv.submit(req.request_id, decision(conclude("supported", "E000001", "E000002")))
    assert (applied.status, inv.show().termination_reason) == ("completed", "root_cause_found")
    h = inv.state.hypothesis("H1")
    assert h.disposition == "supported" and h.history[-1].text == "because"


# -- requests ----------------------------------------------------------------------------------


def test_next_returns_the_open_request_and_refuses_another_hypothesis(store):
    inv = make(store)
    req = inv.next_request()
    assert inv.next_request() == req and inv.next_request(req.hypothesis) == req
    assert code_of(inv.next_request, "H2").code == "request_open"
    assert [r.request_id for r in inv.requests()] == ["demo-r0001"]


def test_next_errors(store):
    inv = make(store, limits=(6, 6, 0))
    assert code_of(inv.next_request, "H7").code == "unknown_hypothesis"
    assert code_of(inv.next_request, "H3").code == "hypothesis_unavailable"
    for hid in ("H1", "H2"):
        req = inv.next_request(hid)
        inv.submit(req.request_id, decision(query()))
    assert code_of(inv.next_request, "H1").code == "hypothesis_busy"
    assert code_of(inv.next_request).code == "hypothesis_busy"


def test_the_request_manifest_is_persisted(store):
    inv = make(store)
    req = inv.next_request()
    (row,) = inv.requests()
    assert (row.request_id, row.hypothesis, row.encoder, row.status) == (
        req.request_id,
        "H1",
        "investigation_project_v8",
        "open",
    )
    assert (list(row.shown), list(row.indexed), row.chars, row.hash) == (
        req.shown,
        req.indexed,
        req.chars,
        req.hash,
    )
    assert len(req.text) == req.chars


# -- record ------------------------------------------------------------------------------------


def test_record_creates_sequential_unsettled_evidence(store):
    inv = make(store)
    acts = []
    for hid in ("H1", "H2"):
        req = inv.next_request(hid)
        acts.append(inv.submit(req.request_id, decision(query())).action)
    assert acts == ["B000006", "B000007"]
    second = inv.record(acts[1], result("two"), captured_at="2026-06-10T20:30:00+02:00")
    first = inv.record(acts[0], result("one"))
    assert (second.evidence, first.evidence) == ("E000007", "E000008")
    s = inv.state
    e7, e8 = s.evidence[-2:]
    assert (e7.collector, e7.budget.action, e7.budget.status, e7.iteration) == (
        "H2",
        "B000007",
        "unsettled",
        2,
    )
    assert e7.captured_at == "2026-06-10T20:30:00+02:00" and e8.captured_at == CLOCK()
    assert (
        e7.content_hash.startswith("xxh3-128:")
        and s.hypothesis("H1").control.previous_result == "E000008"
    )
    # The next context for H1 requires assessing it.
    req = inv.next_request("H1")
    assert code_of(inv.submit, req.request_id, decision(query())).code == "assessment_missing"


def test_record_errors_change_nothing(store):
    inv = make(store)
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    before = db_dump(store)
    assert code_of(inv.record, "B000999", result()).code == "unknown_action"
    assert (
        code_of(inv.record, act, {"scope": "query_result", "capture": {"origin": "x"}}).code
        == "invalid_file"
    )
    bad_rows = {**result(), "payload": {"kind": "rows", "columns": ["a", "b"], "rows": [[1]]}}
    err = code_of(inv.record, act, bad_rows)
    assert err.code == "invalid_file" and err.details["path"] == "$.payload.rows[0]"
    assert code_of(inv.record, act, {**result(), "cost": -1}).code == "invalid_file"
    # A result is of the query its action decided: same origin (the source) and the same query text.
    for field, bad in (
        ("query", result(query="select 2")),
        ("origin", result(origin="pg:replica")),
    ):
        err = code_of(inv.record, act, bad)
        assert err.code == "result_mismatch" and err.details["path"] == f"$.capture.{field}"
    assert code_of(inv.record, act, result(), captured_at="2026-06-10 20:00").code == "usage_error"
    assert db_dump(store) == before
    inv.record(act, result())
    assert code_of(inv.record, act, result()).code == "unknown_action"


def test_record_while_paused_but_not_after_cancel(store):
    inv = make(store)
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    inv.pause()
    assert inv.record(act, result()).status == "paused"
    req = inv.resume() and inv.next_request("H2")
    act = inv.submit(req.request_id, decision(query())).action
    inv.cancel()
    assert code_of(inv.record, act, result()).code == "analysis_closed"


def test_null_payload_is_recorded_as_unknown(store):
    inv = make(store)
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    inv.record(act, {**result(), "payload": None})
    ev = inv.state.evidence[-1]
    assert ev.payload is None and ev.content_hash is None


# -- lifecycle ---------------------------------------------------------------------------------


def test_pause_resume_cancel_transitions(store):
    inv = make(store)
    req = inv.next_request()
    p = inv.pause()
    assert (p.status, p.prior_status) == ("paused", "active")
    assert code_of(inv.pause).code == "invalid_transition"
    assert inv.resume().status == "active"
    assert code_of(inv.resume).code == "invalid_transition"
    assert inv.next_request() == req
    c = inv.cancel()
    assert (c.status, c.termination_reason) == ("cancelled", "cancelled")
    show = inv.show()
    assert show.open_request is None and [r.status for r in inv.requests()] == ["abandoned"]
    for op in (inv.pause, inv.resume, inv.cancel, inv.next_request):
        assert code_of(op).code == "analysis_closed"


def test_resume_evaluates_the_termination_policy(store):
    inv = make(store, max_cost=1.0)
    req = inv.next_request()
    act = inv.submit(req.request_id, decision(query())).action
    inv.pause()
    inv.record(act, result(cost=5))
    assert inv.show().status == "paused"
    r = inv.resume()
    assert (r.status, r.termination_reason) == ("completed", "budget_exhausted")


def test_fail_is_terminal_and_distinct_from_inconclusive(store):
    inv = make(store)
    f = inv.fail("the model endpoint is gone")
    assert (f.status, f.termination_reason) == ("failed", "failed")


# -- create / open ----------------------------------------------------------------------------


def test_create_and_open_errors(store, tmp_path):
    make(store).close()
    assert code_of(make, store).code == "analysis_exists"
    assert code_of(make, store, "v99", analysis="other").code == "unknown_encoder"
    assert code_of(Investigation.create, store, b'{"analysis_id": "x"}').code == "invalid_file"
    assert code_of(Investigation.open, store, "nope").code == "unknown_analysis"
    missing = str(tmp_path / "missing.sqlite3")
    assert code_of(Investigation.open, missing, "demo").code == "unknown_analysis"
    assert not os.path.exists(missing)


def test_create_from_a_stored_context_and_an_already_finished_state(store, tmp_path):
    inv = make(store)
    req = inv.next_request()
    inv.export(tmp_path / "run")
    ctx_bytes = (tmp_path / "run" / f"{req.request_id}.json").read_bytes()
    raw = json.loads(ctx_bytes)
    raw["state"]["analysis_id"] = "copy"
    with Investigation.create(store, json.dumps(raw).encode()) as copy:
        # No encoder named: the default.
        assert copy.show().encoder == DEFAULT_ENCODER and copy.show().status == "active"
        # Its requests continue the numbering of the context it was created from (demo-r0001).
        assert copy.next_request().request_id == "copy-r0002"
    with Investigation.open(
        store, "copy"
    ) as again:  # a new process: the numbering comes from the log
        again.submit("copy-r0002", decision(query()))
        assert again.next_request("H2").request_id == "copy-r0003"
    done = make_state(analysis="done")
    done["hypotheses"][0]["disposition"] = "supported"
    with Investigation.create(store, done) as finished:
        assert (finished.show().status, finished.show().termination_reason) == (
            "completed",
            "root_cause_found",
        )


def test_export_writes_a_run_that_verifies(store, tmp_path):
    inv = make(store)
    for hid in ("H1", "H2", "H1"):
        req = inv.next_request(hid)
        applied = inv.submit(
            req.request_id, decision(recall("E000005") if hid == "H1" else query())
        )
        if applied.action:
            inv.record(applied.action, result())
    inv.next_request("H3")
    paths = inv.export(tmp_path / "run")
    assert [p.name for p in paths] == [f"demo-r000{i}.json" for i in range(1, 5)]
    run = read_run(tmp_path / "run")
    assert [verify_context(str(p), c).status for p, c in run] == ["ok"] * 4
    # Each file holds the state its request was rendered from, not the latest one.
    assert [c.state.iteration for _, c in run] == [0, 1, 2, 3]
    assert len(run[2][1].state.evidence) == 7 and run[1][1].state.evidence[-1].id == "E000006"


def test_a_session_continues_from_the_last_bug17_context(store, tmp_path):
    with Investigation.create(
        store, (BUG17 / "bug17-r0018.json").read_bytes(), encoder="v8", clock=CLOCK
    ) as inv:
        start = inv.state
        req = inv.next_request()
        assert req.request_id == "bug17-r0019"  # after the context's bug17-r0018, not -r0001 again
        pending = start.pending_result(req.hypothesis)
        assert pending is None or pending in req.shown
        archived = req.indexed[0]
        applied = inv.submit(
            req.request_id,
            decision(recall(archived), assess(pending, "neutral", 0.4) if pending else None),
        )
        assert applied.iteration == start.iteration + 1
        assert archived in inv.next_request(req.hypothesis).shown
        run = read_run(Path(inv.export(tmp_path / "run")[0]).parent)
        assert [verify_context(str(p), c).status for p, c in run] == ["ok", "ok"]
