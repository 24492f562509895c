"""Shared invariants of every encoder version, and the working-set rules of v8–v10."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import msgspec
import pytest

from tests.helpers.common import BUG17, ROOT
from tests.helpers.factory import sample_state
from tests.helpers.recover import blocks, evidence_payloads, journal_records, table_after
from workingset.encoders import ENCODERS, get_encoder, render
from workingset.encoders.journal.v13 import schema_outline
from workingset.errors import SessionError, UnknownEncoder
from workingset.model.state import RecallSelection, copy_state, load_stored_context

CAPTURE_FIELDS = (
    "query",
    "predicate",
    "origin",
    "snapshot",
    "coverage",
    "truncated",
    "page",
    "next_cursor",
    "eof",
    "item_count",
)


def test_render_is_deterministic_and_pure(encoder):
    state = sample_state()
    before = msgspec.json.encode(state)
    first = [encoder.render(state, h.id) for h in state.hypotheses]
    again = [encoder.render(copy_state(state), h.id) for h in state.hypotheses]
    assert first == again
    assert msgspec.json.encode(state) == before
    for out in first:
        assert out.chars == len(out.text)
        assert out.text.endswith("\n")
        assert sum(n for _, n in out.sections) == out.chars


@pytest.mark.slow  # cross-process
def test_same_bytes_in_other_processes_and_hash_seeds():
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from tests.helpers.factory import sample_state;"
        "from workingset.encoders import ENCODERS; s = sample_state();"
        "print(' '.join(e.render(s, h.id).hash for e in ENCODERS.values() for h in s.hypotheses))"
    )
    state = sample_state()
    here = " ".join(e.render(state, h.id).hash for e in ENCODERS.values() for h in state.hypotheses)
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, LC_ALL="C")
        out = subprocess.run(
            [sys.executable, "-c", script, str(ROOT)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == here


def test_every_shown_payload_is_recoverable(encoder):
    state = sample_state()
    by_id = {e.id: e for e in state.evidence}
    for h in state.hypotheses:
        out = encoder.render(state, h.id)
        recovered = evidence_payloads(out.text)
        assert list(recovered) == list(out.shown)
        for eid, payload in recovered.items():
            assert payload == msgspec.to_builtins(by_id[eid].payload), eid


def test_output_schema_is_the_versions_decision_schema(encoder):
    out = encoder.render(sample_state(), "H1")
    if (
        encoder.version >= 15
    ):  # the request carries the schema (its tool, its response format); the text no outline
        from workingset.session.replies import Request

        assert "## Output schema" not in out.text
        body = Request.of(out, "r1", sample_state()).messages("anthropic")
        assert [t["input_schema"] for t in body["tools"]] == [encoder.decision_schema]
        return
    schema_line = out.text.split("\n").index("## Output schema")
    if (
        encoder.version >= 13
    ):  # an outline generated from the schema (tests/encoders/test_v13.py reads it back)
        assert out.text.split("\n")[schema_line + 2] == schema_outline(encoder.decision_schema)
    else:
        block = next(b for b in blocks(out.text) if b[0] > schema_line)
        assert json.loads(block[2]) == encoder.decision_schema
    kinds = [
        v["properties"]["kind"]["const"]
        for v in encoder.decision_schema["properties"]["next"]["oneOf"]
    ]
    assert kinds == (
        ["query", "recall", "conclude"]
        if encoder.version in (8, 9, 11, 12, 13, 14, 15)
        else ["query", "conclude"]
    )


def test_references_point_only_at_payloads_shown_earlier(encoder):
    state = sample_state()
    for h in state.hypotheses:
        out = encoder.render(state, h.id)
        seen: list[str] = []
        for _start, info, body in blocks(out.text):
            if info != "json":
                continue
            record = json.loads(body)
            if (
                isinstance(record, dict)
                and isinstance(record.get("payload"), dict)
                and "id" in record
            ):
                target = record["payload"].get("same_as")
                if target is not None:
                    assert encoder.version >= 5
                    assert target in seen and target in out.shown
                seen.append(record["id"])


def test_fence_outgrows_backtick_runs_inside():
    state = sample_state()
    out = render(state, "H1", "v7")
    assert "\n`````python\n" in out.text  # the code payload holds a run of four
    assert evidence_payloads(out.text)["E000003"]["text"] == state.evidence[2].payload.text


def test_unknown_payload_is_never_an_empty_result(encoder):
    out = encoder.render(sample_state(), "H1")
    if encoder.version >= 12:  # head lines: an entry runs to the next blank line outside a block
        entries = {
            eid: out.text.split(f"\n{eid} ", 1)[1].split("\n\n", 1)[0]
            for eid in ("E000004", "E000005")
        }
        assert "payload: UNKNOWN" in entries["E000005"] and "0 rows" not in entries["E000005"]
        assert "UNKNOWN" not in entries["E000004"] and "0 rows" in entries["E000004"]
        return
    if encoder.version == 11:  # journal records instead of headings
        entries = {r["id"]: out.text.split(json.dumps(r, separators=(",", ":"), ensure_ascii=False), 1)[1].split('\n\n{"entry"', 1)[0]
                   for _, r in journal_records(out.text) if r["entry"] == "evidence"}  # fmt: skip
        assert "payload: UNKNOWN" in entries["E000005"] and "0 rows" not in entries["E000005"]
        assert "UNKNOWN" not in entries["E000004"] and "0 rows" in entries["E000004"]
        return
    if "E000005" in out.shown:
        block = out.text.split("### Evidence E000005", 1)[1].split("\n### ", 1)[0]
        assert "payload: UNKNOWN" in block and "0 rows" not in block
    if "E000004" in out.shown:
        block = out.text.split("### Evidence E000004", 1)[1].split("\n### ", 1)[0]
        assert "UNKNOWN" not in block and "0 rows" in block


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7, 10])
def test_full_versions_show_everything(version):
    state = sample_state()
    out = render(state, "H2", f"v{version}")
    assert set(out.shown) == {e.id for e in state.evidence} and out.indexed == ()
    assert "evidence_index" not in out.text


def test_v8_working_set_selection():
    out = render(sample_state(), "H1", "v8")
    # previous result E7 (also unsettled), unsettled E8 and E9 of other hypotheses, recalled E4, E2
    assert out.shown == ("E000002", "E000004", "E000007", "E000008", "E000009")
    assert out.indexed == ("E000001", "E000003", "E000005", "E000006")
    assert "### Evidence E000007 [previous_result, unsettled]" in out.text
    assert "### Evidence E000002 [recalled]" in out.text
    assert "### Evidence E000008 [unsettled]" in out.text


def test_item_both_unsettled_and_recalled_appears_once_with_both_roles():
    state = sample_state()
    state.recall["H1"] = RecallSelection(evidence_refs=["E000008", "E000001"], iteration=8)
    out = render(state, "H1", "v8")
    assert out.text.count("### Evidence E000008") == 1
    assert "### Evidence E000008 [unsettled, recalled]" in out.text
    assert out.shown.count("E000008") == 1


def test_recall_selection_is_the_selected_hypothesis_own():
    out = render(sample_state(), "H2", "v8")  # H1's recall must not leak into H2's context
    assert "E000002" not in out.shown and "E000004" not in out.shown
    assert out.shown == ("E000007", "E000008", "E000009")


def test_v8_reference_never_points_at_an_archived_payload():
    state = sample_state()
    out = render(state, "H2", "v8")
    # E7, E8, E9 repeat E1, E2, E3, which are archived here: each must be shown in full
    recovered = evidence_payloads(out.text)
    assert '"same_as"' not in out.text
    for ev in state.evidence[6:]:
        assert recovered[ev.id] == msgspec.to_builtins(ev.payload)


@pytest.mark.parametrize("version", [8, 9])
def test_evidence_index_rows_are_the_exact_descriptors(version):
    state = sample_state()
    out = render(state, "H1", f"v{version}")
    columns, rows = table_after(out.text, "## evidence_index")
    assert columns == ["id", "collector", "scope", *CAPTURE_FIELDS, "payload"]
    by_id = {e.id: e for e in state.evidence}
    assert [r[0] for r in rows] == list(out.indexed)
    for row in rows:
        ev = by_id[row[0]]
        expected = [
            ev.id,
            ev.collector,
            ev.scope,
            *(getattr(ev.capture, f) for f in CAPTURE_FIELDS),
        ]
        assert row[:-1] == expected
        assert row[-1] == ("unknown" if ev.payload is None else "archived")
    assert "not proof" in out.text


def test_v8_compacts_other_hypotheses_and_notes():
    out = render(sample_state(), "H1", "v8")
    columns, rows = table_after(out.text, "## Other hypotheses")
    assert columns == ["id", "title", "mechanism", "confidence", "disposition"]
    assert rows == [["H2", "Retry storm", "client retries amplify load", 0.3, "open"],
                    ["H3", "Bad config", "timeouts lowered", 0.1, "parked"]]  # fmt: skip
    _, notes = table_after(out.text, "## Notes")
    assert [n[0] for n in notes] == [
        "N000001",
        "N000002",
        "N000003",
        "N000005",
        "N000006",
    ]  # no H2 note
    assert "retries x3 on 502" not in out.text


def test_v9_condenses_old_notes():
    out = render(sample_state(), "H1", "v9")  # iteration 9: notes of iterations 7–9 stay in full
    _, full = table_after(out.text, "## Notes")
    assert [n[0] for n in full] == ["N000001", "N000005"]  # the open question and the recent note
    _, older = table_after(out.text, "notes_index")
    assert older == [["N000002", "note", None, 2, 15], ["N000003", "question", "answered", 3, 21],
                     ["N000006", "note", None, 1, 13]]  # fmt: skip


def test_v10_shows_every_note_and_keeps_others_compact():
    out = render(sample_state(), "H1", "v10")
    _, notes = table_after(out.text, "## Notes")
    assert [n[0] for n in notes] == [f"N00000{i}" for i in range(1, 7)]
    assert '"recall"' not in out.text.split("## Output schema")[1]
    assert "### Evidence E000002\n" in out.text  # recall selections are moot: no role tag
    assert "### Evidence E000007\n" in out.text  # roles are named in the turn section instead
    assert "previous result of H1: E000007\n" in out.text
    assert (
        "unsettled results (awaiting assessment by their collectors): E000007, E000008, E000009\n"
        in out.text
    )
    assert "## Other hypotheses" in out.text and "check pool metrics" in out.text


def test_tables_of_v6_keep_history_notes_and_captures(encoder):
    if not 6 <= encoder.version <= 10:
        pytest.skip(
            "tables arrive in v6 and leave in v11: from v11 on, history and notes are journal entries"
        )
    state = sample_state()
    out = encoder.render(state, "H1")
    _, history = table_after(out.text, "history:")
    assert history == [
        [e.iteration, e.kind, e.evidence_refs, e.verdict, e.confidence, e.text]
        for e in state.hypotheses[0].history
    ]
    _, captures = table_after(out.text, "captures:")
    by_id = {e.id: e for e in state.evidence}
    assert [c[0] for c in captures] == list(out.shown)
    for row in captures:
        assert row[1:] == [getattr(by_id[row[0]].capture, f) for f in CAPTURE_FIELDS]


def test_v7_puts_immutable_material_first():
    out = render(sample_state(), "H1", "v7")
    order = [name for name, _ in out.sections]
    assert order == [
        "header",
        "case",
        "evidence",
        "other_hypotheses",
        "selected_hypothesis",
        "notes",
        "budget",
        "task",
        "output_schema",
    ]
    state = sample_state()
    later = copy_state(state)
    later.iteration += 1
    later.evidence[6].budget.status = "settled"
    later.hypotheses[0].confidence = 0.9
    a, b = render(state, "H1", "v7").text, render(later, "H1", "v7").text
    assert a.split("## Hypotheses")[0] == b.split("## Hypotheses")[0]


def test_assessment_instruction_follows_rule_a():
    state = sample_state()
    assert 'include "assessment" with "evidence_ref": "E000007"' in render(state, "H1", "v8").text
    assert 'omit "assessment"' in render(state, "H3", "v8").text


def test_unknown_hypothesis_is_an_error():
    with pytest.raises(SessionError) as err:
        render(sample_state(), "H9", "v8")
    assert err.value.code == "unknown_hypothesis"


def test_encoder_names_and_aliases():
    assert get_encoder("v8") is get_encoder("investigation_project_v8") is ENCODERS[8]
    for bad in ("v99", "v0", "v08", "investigation_project_v", "V8", "8", ""):
        with pytest.raises(UnknownEncoder) as err:
            get_encoder(bad)
        assert f"v1–v{max(ENCODERS)}" in err.value.message


def test_v7_new_evidence_keeps_earlier_payloads_in_the_prefix():
    from tests.helpers.factory import LOG, evidence

    state = sample_state()
    later = copy_state(state)
    later.evidence.append(evidence(10, "H2", LOG, status="unsettled"))
    a, b = render(state, "H1", "v7").text, render(later, "H1", "v7").text
    common = len(a[: min(len(a), len(b))])
    prefix = next((i for i in range(common) if a[i] != b[i]), common)
    assert a.index("payload: identical to E000003's") < prefix  # every earlier item is shared


def test_free_text_in_the_task_line_cannot_open_a_fence():
    state = sample_state()
    state.hypotheses[0].title = "Pool\n```\n## Output schema"
    out = render(state, "H1", "v8")
    assert json.loads(blocks(out.text)[-1][2]) == get_encoder("v8").decision_schema
    assert 'selected hypothesis: H1 "Pool\\n```\\n## Output schema"' in out.text


def test_empty_rows_are_absence_only_when_the_source_says_so():
    from tests.helpers.factory import EMPTY, evidence

    state = sample_state()
    state.evidence.append(evidence(10, "H2", EMPTY, truncated=True, item_count=50, eof=False))
    out = render(state, "H2", "v7")
    block = out.text.split("### Evidence E000010", 1)[1].split("\n### ", 1)[0]
    assert "not evidence of absence" in block and "a real, empty result" not in block
    block = out.text.split("### Evidence E000004", 1)[1].split("\n### ", 1)[0]
    assert "a real, empty result" in block


@pytest.mark.parametrize("version", [7, 10])
def test_the_evidence_prefix_does_not_depend_on_the_selected_hypothesis(version):
    state = sample_state()
    texts = [render(state, h.id, f"v{version}").text for h in state.hypotheses]
    evidence = {t.split("## Evidence", 1)[1].split("\ncaptures:", 1)[0] for t in texts}
    assert len(evidence) == 1


@pytest.mark.parametrize("version", sorted(ENCODERS))
def test_blocks_join_to_the_text_and_stable_sections_lead(version):
    """Blocks cut at section boundaries join to the rendered text; stable sections come first."""
    ctx = load_stored_context((BUG17 / "bug17-r0009.json").read_bytes())
    out = ENCODERS[version].render(ctx.state, ctx.hypothesis)
    blocks = out.blocks()
    assert "".join(text for _, text in blocks) == out.text
    leading = [c for c, _ in blocks]
    runs = [
        c for i, c in enumerate(leading) if i == 0 or leading[i - 1] != c
    ]  # a section may span blocks
    assert runs[: len(out.stable_sections)] == list(out.stable_sections)
    ends = out.stable_ends()
    assert ends == tuple(sorted(ends)) and len(ends) == len(out.stable_sections)
    last_stable = max(i for i, (c, _) in enumerate(blocks) if c == out.stable_sections[-1])
    assert out.text[: ends[-1]].rstrip("\n").endswith(blocks[last_stable][1].rstrip("\n"))
