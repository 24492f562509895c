"""The bug17 stored run: 18 valid, consistent stored contexts carrying every texture case.

These tests pin the fixture's structure, not its prose: they load every file, check that
each turn extends the one before, look for each kind of material the encoders must cope
with, re-render with the frozen encoder, and rebuild the run byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys

import msgspec
import pytest

from tests.helpers.common import BUG17 as RUN
from workingset.encoders import render
from workingset.model.state import RowsPayload, TextPayload, load_stored_context

FILES = sorted(RUN.glob("*.json"))


@pytest.fixture(scope="module")
def contexts():
    return [load_stored_context(p.read_bytes(), str(p)) for p in FILES]


@pytest.fixture(scope="module")
def final(contexts):
    return contexts[-1].state


def _evidence_sans_status(e) -> bytes:
    """An evidence item without its budget status, the one field a later turn may change."""
    raw = msgspec.to_builtins(e)
    raw["budget"].pop("status")
    return msgspec.json.encode(raw, order="sorted")


def test_eighteen_files_named_by_request(contexts):
    assert len(FILES) == 18
    for i, (path, ctx) in enumerate(zip(FILES, contexts), start=1):
        assert ctx.request_id == f"bug17-r{i:04d}"
        assert path.name == f"{ctx.request_id}.json"
        assert ctx.format == "workingset/stored-context@1"
        assert ctx.encoder == "investigation_project_v7"
        assert ctx.state.analysis_id == "bug17"
        assert ctx.rendered is not None


def test_each_state_extends_the_previous(contexts):
    for before, after in zip(contexts, contexts[1:]):
        a, b = before.state, after.state
        assert b.iteration == a.iteration + 1
        assert b.budget.cost_used >= a.budget.cost_used
        assert len(b.evidence) >= len(a.evidence)
        for old, new in zip(a.evidence, b.evidence):
            assert _evidence_sans_status(old) == _evidence_sans_status(new), old.id
            assert (old.budget.status, new.budget.status) in {
                ("none", "none"),
                ("unsettled", "unsettled"),
                ("unsettled", "settled"),
                ("settled", "settled"),
            }
        assert len(b.notes) >= len(a.notes)
        for old, new in zip(a.notes, b.notes):
            assert (old.id, old.hypothesis, old.kind, old.text) == (
                new.id,
                new.hypothesis,
                new.kind,
                new.text,
            )
            assert old.status == new.status or (old.status, new.status) == ("open", "answered")
        for ha, hb in zip(a.hypotheses, b.hypotheses):
            assert ha.id == hb.id and ha.title == hb.title and ha.mechanism == hb.mechanism
            assert hb.history[: len(ha.history)] == ha.history
            assert hb.control.iterations_used >= ha.control.iterations_used
        assert a.case == b.case


def test_ids_are_sequential(final):
    assert [e.id for e in final.evidence] == [
        f"E{i:06d}" for i in range(1, len(final.evidence) + 1)
    ]
    assert [n.id for n in final.notes] == [f"N{i:06d}" for i in range(1, len(final.notes) + 1)]
    actions = [e.budget.action for e in final.evidence if e.budget.action is not None]
    assert actions == [f"B{i:06d}" for i in range(1, len(actions) + 1)]
    assert all((e.budget.action is None) == (e.budget.status == "none") for e in final.evidence)


def test_selected_hypothesis_is_open_and_owes_an_assessment_for_its_last_result(contexts):
    for ctx in contexts:
        h = ctx.state.hypothesis(ctx.hypothesis)
        assert h.disposition == "open"
        prev = h.control.previous_result
        if prev is not None:
            assert next(e for e in ctx.state.evidence if e.id == prev).budget.status == "unsettled"


def test_settled_results_were_assessed_by_their_collector(final):
    for e in final.evidence:
        assessed = [
            entry
            for entry in final.hypothesis(e.collector).history
            if entry.kind == "assessment" and entry.evidence_refs == [e.id]
        ]
        assert len(assessed) == (1 if e.budget.status == "settled" else 0), e.id


def test_interrupted_before_any_diagnosis(contexts):
    for ctx in contexts:
        for h in ctx.state.hypotheses:
            assert h.disposition in {"open", "parked"}
            assert 0.0 < h.confidence < 0.6
            assert all(entry.kind != "conclude" for entry in h.history)
    dispositions = [h.disposition for h in contexts[-1].state.hypotheses]
    assert 4 <= len(dispositions) <= 5 and dispositions.count("parked") <= 1


def test_several_hypotheses_wait_on_unsettled_results_at_once(contexts):
    most = max(
        len({e.collector for e in c.state.evidence if e.budget.status == "unsettled"})
        for c in contexts
    )
    assert most >= 2
    assert (
        len({e.collector for e in contexts[-1].state.evidence if e.budget.status == "unsettled"})
        >= 2
    )


def test_not_retained_payload_is_null_not_empty(final):
    missing = [e for e in final.evidence if e.payload is None]
    assert missing and all(e.content_hash is None for e in missing)
    assert any(e.capture.item_count for e in missing)


def test_real_empty_result(final):
    assert any(
        isinstance(e.payload, RowsPayload) and e.payload.rows == [] and e.capture.item_count == 0
        for e in final.evidence
    )


def test_identical_payloads_captured_twice(final):
    by_hash: dict[str, list[str]] = {}
    for e in final.evidence:
        if e.content_hash is not None:
            by_hash.setdefault(e.content_hash, []).append(e.id)
    assert any(len(ids) >= 2 for ids in by_hash.values())


def test_truncated_result_paged_to_eof(final):
    firsts = [
        e
        for e in final.evidence
        if e.capture.page == 1
        and e.capture.truncated
        and e.capture.next_cursor
        and e.capture.eof is False
    ]
    assert firsts
    first = firsts[0]
    assert any(
        e.capture.query == first.capture.query
        and e.capture.page == 2
        and e.capture.eof is True
        and e.capture.next_cursor is None
        and e.collector == first.collector
        for e in final.evidence
    )


def test_backtick_runs_in_text_payloads(final):
    texts = [e.payload.text for e in final.evidence if isinstance(e.payload, TextPayload)]
    assert any("````" in t for t in texts)
    code = [
        e.payload.text
        for e in final.evidence
        if e.scope == "code" and isinstance(e.payload, TextPayload)
    ]
    assert any("```" in t for t in code)


def test_scopes_languages_and_origins(final):
    scopes = {e.scope for e in final.evidence}
    assert scopes == {"query_result", "log", "code", "metric", "document", "feedback"}
    code_langs = {
        e.payload.language for e in final.evidence if e.scope == "code" and e.payload is not None
    }
    assert {"python", "go", "yaml"} <= code_langs
    assert any(e.scope == "log" and e.payload.language == "log" for e in final.evidence)
    assert all(isinstance(e.payload, RowsPayload) for e in final.evidence if e.scope == "metric")
    feedback = [e for e in final.evidence if e.scope == "feedback"]
    assert feedback and all(e.capture.query is None and e.budget.status == "none" for e in feedback)
    assert any(e.capture.origin.startswith("review:") for e in feedback)
    origins = {e.capture.origin.split(":")[0] for e in final.evidence}
    assert {"loki", "postgres", "prometheus", "github"} <= origins
    sql = [
        e for e in final.evidence if e.capture.origin.startswith("postgres:") and e.capture.query
    ]
    assert sql and all(e.capture.query.lstrip().upper().startswith("SELECT") for e in sql)
    assert all(
        e.capture.coverage for e in final.evidence if e.scope in {"query_result", "log", "metric"}
    )


def test_rows_carry_every_scalar_kind(final):
    cells = [
        c
        for e in final.evidence
        if isinstance(e.payload, RowsPayload)
        for row in e.payload.rows
        for c in row
    ]
    kinds = {type(c) for c in cells}
    assert {type(None), bool, int, float, str} <= kinds


def test_notes_questions_and_entities(final):
    assert any(n.hypothesis is None for n in final.notes)
    assert len({n.hypothesis for n in final.notes if n.hypothesis is not None}) >= 4
    statuses = {n.status for n in final.notes if n.kind == "question"}
    assert statuses == {"open", "answered"}
    kinds = {ent.kind for ent in final.case.entities}
    assert {"service", "host", "table", "dashboard"} <= kinds
    assert final.recall  # a recall selection made earlier survives later turns


def test_recorded_render_matches_encoder(contexts):
    total = 0
    for ctx in contexts:
        out = render(ctx.state, ctx.hypothesis, ctx.encoder)
        assert (out.chars, out.hash) == (ctx.rendered.chars, ctx.rendered.hash), ctx.request_id
        total += out.chars
    assert total >= 1_000_000
    assert contexts[-1].rendered.chars >= 80_000


def test_rebuild_reproduces_committed_bytes(tmp_path):
    # A different hash seed than this process: the builder must not depend on set or dict order.
    env = dict(os.environ, PYTHONHASHSEED="1717")
    subprocess.run(
        [sys.executable, str(RUN / "build.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        env=env,
    )
    rebuilt = sorted(tmp_path.glob("*.json"))
    assert [p.name for p in rebuilt] == [p.name for p in FILES]
    for committed, fresh in zip(FILES, rebuilt):
        assert fresh.read_bytes() == committed.read_bytes(), committed.name
