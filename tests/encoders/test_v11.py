"""v11, v12 and v13: append-only journal, bounded by its context budget, lossless, with recall."""

from __future__ import annotations

import msgspec
import pytest

from tests.helpers.common import ROOT
from tests.helpers.recover import evidence_payloads, table_after, v13_index
from tests.helpers.session_helpers import assess, decision, make_state, query, recall
from workingset import Investigation, render
from workingset.encoders import get_encoder
from workingset.encoders.journal.v11 import DEFAULT_BUDGET, MIN_BUDGET
from workingset.errors import UnknownEncoder
from workingset.runs.layout import read_run

BUG17 = read_run(ROOT / "fixtures" / "bug17")
BUDGETS = [
    f"{v}{b}" for v in ("v11", "v12", "v13") for b in ("", ":budget=60000", f":budget={MIN_BUDGET}")
]


def _renders(name: str):
    return [get_encoder(name).render(ctx.state, ctx.hypothesis) for _, ctx in BUG17]


@pytest.mark.parametrize("name", BUDGETS)
def test_every_item_is_shown_in_full_or_indexed_on_every_bug17_context(name):
    for (_, ctx), out in zip(BUG17, _renders(name)):
        by_id = {ev.id: ev for ev in ctx.state.evidence}
        recovered = evidence_payloads(out.text)
        assert sorted(recovered) == sorted(out.shown)
        for eid, payload in recovered.items():
            assert payload == msgspec.to_builtins(by_id[eid].payload), eid
        assert sorted(out.shown + out.indexed) == sorted(by_id)
        if out.indexed and name.startswith(
            "v13"
        ):  # rows as heads, a text past 200 characters cut to 160
            index = v13_index(out.text)
            assert set(out.indexed) <= set(index)
            shown = lambda v: v[:160] if isinstance(v, str) and len(v) > 200 else v  # noqa: E731
            for eid, row in index.items():
                capture = msgspec.to_builtins(by_id[eid].capture)
                query = capture.pop("query")
                assert {k: row["fields"].get(k) for k in capture} == {
                    k: shown(v) for k, v in capture.items()
                }, eid
                assert row["query"] == shown(query), eid
        elif out.indexed:
            columns, rows = table_after(out.text, "evidence_index")
            assert set(out.indexed) <= {r[0] for r in rows}
            for row in rows:
                ev = by_id[row[0]]
                assert row[5:15] == list(msgspec.structs.astuple(ev.capture))


@pytest.mark.parametrize("name", BUDGETS)
def test_the_journal_is_append_only_between_compactions(name):
    outs = _renders(name)
    appended = 0
    for before, after in zip(outs, outs[1:]):
        prefix = before.text[: before.stable_ends()[-1]]
        same_epoch = _compactions(before) == _compactions(after)
        assert after.text.startswith(prefix) == same_epoch or not same_epoch
        appended += same_epoch
        if same_epoch:
            assert after.text.startswith(prefix)
    if get_encoder(name).budget >= 60000:
        assert appended >= len(outs) // 2  # compactions are rare


def _compactions(out) -> str:
    """What changes exactly at a compaction: the number of archived items the index caption states."""
    caption = "evidence_index (archived evidence): "
    return out.text.split(caption, 1)[1].split(" ", 1)[0] if caption in out.text else "0"


def test_the_preamble_is_the_same_for_every_analysis_and_budget():
    a = render(BUG17[0][1].state, BUG17[0][1].hypothesis, "v11")
    import json

    from workingset.model.state import load_state

    b = get_encoder("v11:budget=60000").render(load_state(json.dumps(make_state()).encode()), "H1")
    assert a.text[: a.stable_ends()[0]] == b.text[: b.stable_ends()[0]]
    assert a.stable_sections == ("preamble", "case", "journal") and len(a.stable_ends()) == 3


@pytest.mark.parametrize(
    "name", ["v11", "v11:budget=60000", "v12", "v12:budget=60000", "v13", "v13:budget=60000"]
)
def test_bug17_stays_within_the_budget(name):
    budget = get_encoder(name).budget
    assert max(out.chars for out in _renders(name)) <= budget


@pytest.mark.parametrize("version", ["v11", "v12", "v13"])
def test_a_small_budget_compacts_and_the_tail_shows_archived_working_set_items(version):
    outs = _renders(f"{version}:budget={MIN_BUDGET}")
    last_ctx, last = BUG17[-1][1], outs[-1]
    assert last.indexed and _compactions(last) != "0"
    unsettled = {ev.id for ev in last_ctx.state.evidence if ev.budget.status == "unsettled"}
    assert unsettled <= set(last.shown)


def test_encoder_options():
    assert (
        get_encoder("v11").budget == DEFAULT_BUDGET
        and get_encoder("v11").name == "investigation_project_v11"
    )
    enc = get_encoder("investigation_project_v11:budget=60000")
    assert enc.budget == 60000 and enc.name == "investigation_project_v11:budget=60000"
    assert get_encoder(enc.name) is enc
    for bad in (
        "v11:budget=1",
        "v11:budget=x",
        "v11:size=60000",
        "v11:budget=060000x",
        "v10:budget=60000",
    ):
        with pytest.raises(UnknownEncoder):
            get_encoder(bad)


@pytest.mark.parametrize("version", ["v11", "v12", "v13"])
def test_a_session_recalls_archived_evidence_and_exports_verifiable_contexts(tmp_path, version):
    big = "x" * 9000
    state = make_state(limits=(20, 6, 6))
    with Investigation.create(
        tmp_path / "s.sqlite3", state, encoder=f"{version}:budget={MIN_BUDGET}"
    ) as inv:
        for turn in range(6):
            req = inv.next_request("H1")
            pending = inv.state.pending_result("H1")
            answer = decision(
                query(f"q{turn}", source="loki"), assessment=assess(pending) if pending else None
            )
            applied = inv.submit(req.request_id, answer)
            inv.record(applied.action, {"scope": "log", "capture": {"query": f"q{turn}", "origin": "loki"},
                                        "payload": {"kind": "text", "language": None, "text": f"{turn}{big}"}})  # fmt: skip
        req = inv.next_request("H1")
        assert req.indexed, "the journal was compacted"
        target = req.indexed[0]
        applied = inv.submit(
            req.request_id,
            decision(recall(target), assessment=assess(inv.state.pending_result("H1"))),
        )
        assert applied.applied == "recall"
        req = inv.next_request("H1")
        assert target in req.shown and target not in req.indexed
        shown = f'"id":"{target}"' if version == "v11" else f"\n{target} H1 #"
        assert shown in req.text.split("## This turn", 1)[1]
        paths = inv.export(tmp_path / "run")
    from workingset.runs.layout import load_context_file, verify_context

    assert all(verify_context(str(p), load_context_file(p)).status == "ok" for p in paths)


def _grow_in_place(target, source) -> None:
    """Append to `target`'s lists what `source` has beyond them, as a session's kept state grows."""
    target.evidence.extend(source.evidence[len(target.evidence) :])
    target.notes.extend(source.notes[len(target.notes) :])
    for mine, theirs in zip(target.hypotheses, source.hypotheses):
        mine.history.extend(theirs.history[len(mine.history) :])
        mine.control, mine.confidence, mine.disposition = (
            theirs.control,
            theirs.confidence,
            theirs.disposition,
        )
    target.recall, target.iteration, target.budget = source.recall, source.iteration, source.budget
    for ev, theirs in zip(target.evidence, source.evidence):
        ev.budget = theirs.budget


@pytest.mark.parametrize("name", BUDGETS)
def test_a_kept_journal_renders_exactly_what_a_fresh_walk_renders(name):
    from workingset.model.state import copy_state

    enc = get_encoder(name)
    state = copy_state(BUG17[0][1].state)
    journal = enc.new_journal(state)
    for _, ctx in BUG17:
        _grow_in_place(state, ctx.state)
        kept = enc.render(state, ctx.hypothesis, journal=journal)
        assert kept == enc.render(state, ctx.hypothesis)
    # A state that is not an extension (another analysis, an edited list) is walked afresh.
    other = copy_state(BUG17[5][1].state)
    assert enc.render(other, "H1", journal=journal) == enc.render(other, "H1")
    state.evidence[3] = copy_state(state).evidence[3]
    assert enc.render(state, "H1", journal=journal) == enc.render(state, "H1")


def test_a_result_recorded_late_is_walked_afresh_and_lands_in_order():
    from workingset.model.state import copy_state

    enc = get_encoder("v11")
    final = BUG17[-1][1].state
    state = copy_state(final)
    late = state.evidence.pop(
        -3
    )  # recorded after later decisions, with its query's earlier iteration
    journal = enc.new_journal(state)
    enc.render(state, "H1", journal=journal)
    state.evidence.append(late)
    assert enc.render(state, "H1", journal=journal) == enc.render(state, "H1")


@pytest.mark.parametrize("version", ["v11", "v12", "v13"])
def test_an_import_writes_contexts_that_verify_byte_exact(tmp_path, version):
    from tests.helpers.common import invoke

    data = ROOT / "tests" / "data"
    source = next(
        p
        for p in sorted(data.iterdir())
        if p.name.startswith("mini-swe-agent") and p.suffix == ".json"
    )
    out = tmp_path / "run"
    res = invoke(
        "import",
        "mini-swe-agent",
        str(source),
        "--out",
        str(out),
        "--encoder",
        f"{version}:budget=20000",
        "--json",
    )
    assert res.exit_code == 0, res.output
    import json

    assert json.loads(res.stdout)["encoder"] == f"investigation_project_{version}:budget=20000"
    verdicts = json.loads(invoke("verify", str(out), "--json").stdout)
    assert verdicts["ok"] and all(v["status"] == "ok" for v in verdicts["contexts"])
    bad = invoke(
        "import", "mini-swe-agent", str(source), "--out", str(tmp_path / "x"), "--encoder", "v99"
    )
    assert bad.exit_code == 2 and "unknown_encoder" in bad.stderr and not (tmp_path / "x").exists()
