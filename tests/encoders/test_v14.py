"""v14: every context is at most its budget, and every evidence byte, note and decision is shown or reachable.

The text is read back with the documented conventions alone (tests/helpers/recover.py, recover14.py):
what the journal shows whole is compared with the state field by field; every other entry is
named by the index (a row or a range), and recalling it (page by page when it is paged)
gives back the whole entry.
"""

from __future__ import annotations

import json
import sys
from itertools import accumulate

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.common import ROOT
from tests.helpers.factory import HUGE, huge_state, sample_state
from tests.helpers.journal_checks import DECISION_HEAD, NOTE_HEAD, _word
from tests.helpers.recover import _spans, read_outline, v12_evidence
from tests.helpers.recover14 import paged_blocks, read_index, read_tail, sections
from tests.helpers.strategies import bound_states, growing
from tests.helpers.v13_checks import check_index_row
from workingset.compare.availability import availability
from workingset.decisions import PagedRecall, check_recall_pages, parse_decision
from workingset.encoders import get_encoder
from workingset.errors import DecisionRejected, InvalidFile
from workingset.model.state import (
    RecallSelection,
    State,
    copy_state,
    load_state,
    validate_state,
)

sys.path.insert(0, str(ROOT / "benchmarks"))
from synthetic import make_state  # noqa: E402

from tests.helpers.strategies import BUG17  # noqa: E402

BUDGETS = ["v14", "v14:budget=20000"]


def all_refs(state: State) -> list[str]:
    return ([ev.id for ev in state.evidence] + [n.id for n in state.notes]
            + [f"{h.id}/{k}" for h in state.hypotheses for k in range(1, len(h.history) + 1)])  # fmt: skip


def sorted_ids(state: State) -> dict[str, list[str]]:
    ids = {"E": sorted(ev.id for ev in state.evidence), "N": sorted(n.id for n in state.notes)}
    ids.update(
        {h.id: [f"{h.id}/{k}" for k in range(1, len(h.history) + 1)] for h in state.hypotheses}
    )
    return ids


# -- one entry, as the state holds it and as the text writes it ------------------------------------------


def expected(state: State, ref: str) -> tuple:
    if ref[0] == "E":
        ev = next(e for e in state.evidence if e.id == ref)
        capture = {k: v for k, v in msgspec.to_builtins(ev.capture).items() if k != "query"}
        return ("evidence", ev.collector, ev.iteration, ev.scope, ev.captured_at, capture, ev.capture.query,
                ev.budget.action, ev.budget.cost, msgspec.to_builtins(ev.payload))  # fmt: skip
    if ref[0] == "N":
        n = next(x for x in state.notes if x.id == ref)
        return ("note", n.hypothesis, n.iteration, n.kind, n.text)
    hid, _, k = ref.partition("/")
    row = state.hypothesis(hid).history[int(k) - 1]
    return (
        "decision",
        hid,
        row.iteration,
        row.kind,
        row.evidence_refs,
        row.verdict,
        row.confidence,
        row.text,
    )


def read_entry(state: State, ref: str, text: str) -> tuple:
    """An entry's text (whole, or its pages joined) read back as `expected` gives it."""
    if ref[0] == "E":
        entry = v12_evidence(text)[ref]
        fields = dict(entry["fields"])
        same_as = fields.pop("same_as", None)
        payload = entry["payload"]
        if same_as is not None:  # a reference to an earlier item, shown or archived: its payload
            assert same_as < ref or same_as in {e.id for e in state.evidence}
            payload = expected(state, same_as)[-1]
        capture = {k: fields.get(k) for k in expected(state, ref)[5]}
        return ("evidence", entry["collector"], entry["iteration"], entry["scope"], entry["captured_at"], capture,
                entry["query"], fields.get("action"), fields.get("cost", 0), payload)  # fmt: skip
    lines = text.split("\n")
    bodies = {start: body for start, _end, _info, body in _spans(text)}
    if ref[0] == "N":
        m = NOTE_HEAD.match(lines[0])
        assert m and m.group(1) == ref, lines[0][:80]
        return ("note", _word(m.group(2)), int(m.group(3)), _word(m.group(4)), bodies[1])
    assert lines[0] == f"{ref}:", lines[0][
        :80
    ]  # a decision row shown in the tail has its reference above it
    return decision_tuple(lines[1:], ref.partition("/")[0])


def decision_tuple(lines: list[str], hid: str) -> tuple:
    m = DECISION_HEAD.match(lines[0])
    assert m and m.group(1) == hid, lines[0][:80]
    verdict = _word(m.group(5)[len(" verdict=") :]) if m.group(5) else None
    confidence = json.loads(m.group(6)[len(" confidence=") :]) if m.group(6) else None
    text = None
    if len(lines) > 1 and lines[1].startswith("```"):
        text = {start: body for start, _e, _i, body in _spans("\n".join(lines))}[1]
    return (
        "decision",
        hid,
        int(m.group(2)),
        m.group(3),
        m.group(4).split(),
        verdict,
        confidence,
        text,
    )


# -- reading a whole context back ---------------------------------------------------------------------


def journal_entries(body: str) -> tuple[dict[str, dict], list[str], list[tuple[str, list[str]]]]:
    """The journal's whole evidence entries, its whole notes' lines, its decision rows (hypothesis, lines)."""
    lines = body.split("\n")
    spans = _spans(body)
    inside = {n for start, end, _, _ in spans for n in range(start, end + 1)}
    notes, rows = [], []
    for n, line in enumerate(lines):
        if n in inside:
            continue
        if NOTE_HEAD.match(line):
            notes.append(
                "\n".join(lines[n : n + 2 + next(e - s for s, e, _, _ in spans if s == n + 1)])
            )
        elif m := DECISION_HEAD.match(line):
            end = n + 1
            if end < len(lines) and lines[end].startswith("```"):
                end = next(e for s, e, _, _ in spans if s == end) + 1
            rows.append((m.group(1), lines[n:end]))
    return (
        v12_evidence(body + "\n"),
        notes,
        rows,
    )  # a line after the last entry, as the tail gives it


def check_v14(state: State, hypothesis: str, name: str) -> dict:
    """The bound, the coverage of `shown`/`indexed`, and every entry shown whole read back; what is where."""
    enc = get_encoder(name)
    out = enc.render(state, hypothesis)
    assert out.chars == len(out.text) <= enc.budget, (name, out.chars)
    ids = [ev.id for ev in state.evidence]
    assert sorted(out.shown + out.indexed) == sorted(ids) and not set(out.shown) & set(out.indexed)
    assert (
        availability(state, out.shown, out.indexed, recall=True).gone == 0
    )  # every identifier visible or addressable
    index_text, body, tail_text = sections(out.text)
    index = read_index(index_text, sorted_ids(state)) if index_text else {"ranged": [], "evidence": {}, "notes": {},
                                                                        "decisions": {}, "pages": {}}  # fmt: skip
    archived = (
        set(index["ranged"])
        | set(index["evidence"])
        | set(index["notes"])
        | set(index["decisions"])
    )
    for eid, row in index["evidence"].items():
        check_index_row(row, next(e for e in state.evidence if e.id == eid))
    paged = paged_blocks(body)
    whole_ev, notes, rows = journal_entries(body)
    for eid in whole_ev:
        assert read_entry(state, eid, "\n".join(_entry_lines(body, eid)) + "\n") == expected(
            state, eid
        ), eid
    whole_notes = set()
    for text in notes:
        ref = text.split(" ", 1)[0]
        assert read_entry(state, ref, text) == expected(state, ref)
        whole_notes.add(ref)
    # Decision rows carry no reference: a hypothesis's rows in the journal follow its archived ones, in order.
    whole_rows = set()
    for h in state.hypotheses:
        gone = sorted(
            (r for r in archived if r.startswith(f"{h.id}/")),
            key=lambda r: int(r.partition("/")[2]),
        )
        assert gone == [f"{h.id}/{k}" for k in range(1, len(gone) + 1)], h.id
        mine = [lines for hid, lines in rows if hid == h.id]
        shown_refs = [
            f"{h.id}/{k}"
            for k in range(len(gone) + 1, len(h.history) + 1)
            if f"{h.id}/{k}" not in paged
        ]
        assert len(mine) == len(shown_refs), h.id
        for ref, lines in zip(shown_refs, mine):
            assert decision_tuple(lines, h.id) == expected(state, ref), ref
            whole_rows.add(ref)
    everywhere = [*whole_ev, *whole_notes, *whole_rows, *paged, *archived]
    assert sorted(everywhere) == sorted(all_refs(state)), "every entry is in exactly one place"
    for ref, (chars, count, first) in paged.items():
        assert count >= 2 and len(first) < chars, ref
    tail, tail_pages, tail_whole = read_tail(tail_text)
    check_tail(
        state,
        hypothesis,
        tail,
        {*whole_ev, *paged, *whole_notes} | _tail_refs(tail_pages, tail_whole),
    )
    return {
        "out": out,
        "archived": archived,
        "paged": paged,
        "index": index,
        "tail_pages": tail_pages,
    }


def _entry_lines(body: str, eid: str) -> list[str]:
    """The lines of the whole evidence entry `eid` in the journal body: its head to the end of its payload."""
    lines = body.split("\n")
    spans = _spans(body)
    inside = {n for start, end, _, _ in spans for n in range(start, end + 1)}
    start = next(
        n for n, line in enumerate(lines) if n not in inside and line.startswith(eid + " ")
    )
    end = start + 1
    while end < len(lines) and (end in inside or lines[end] != ""):
        end += 1
    return lines[start:end]


def _tail_refs(pages: dict, whole: str) -> set[str]:
    refs = set(pages) | set(v12_evidence(whole)) if whole else set(pages)
    return refs | {line.split(" ", 1)[0] for line in whole.split("\n") if NOTE_HEAD.match(line)}


def check_tail(state: State, hypothesis: str, tail: dict, in_view: set[str]) -> None:
    """The tail's fields: budgets, every hypothesis's control, the statuses of what the context shows, the task."""
    b = state.budget
    assert (tail["iteration"], tail["max_iterations"], tail["cost_used"], tail["max_cost"]) == (
        state.iteration, b.max_iterations, b.cost_used, b.max_cost)  # fmt: skip
    assert tail["selected"] == hypothesis
    assert tail["hypotheses"] == [{
        "id": x.id, "confidence": x.confidence, "disposition": x.disposition,
        "iterations_used": x.control.iterations_used, "iteration_limit": x.control.iteration_limit,
        "previous_result": x.control.previous_result,
        "recalled": [*state.recall[x.id].evidence_refs, *state.recall[x.id].entries] if x.id in state.recall else None,
    } for x in state.hypotheses]  # fmt: skip
    h = state.hypothesis(hypothesis)
    assert (tail["plan"], tail["next_checks"]) == (h.control.plan, h.control.next_checks)
    pending = state.pending_result(hypothesis)
    statuses = {ev.id: ev.budget.status for ev in state.evidence
                if (ev.id in in_view or ev.id == pending)
                and ev.budget.status != ("settled" if ev.budget.action is not None else "none")}  # fmt: skip
    assert tail["budget_status"] == statuses
    by_status: dict[str, list[str]] = {}
    for note in state.notes:
        if note.status is not None and note.id in in_view:
            by_status.setdefault(note.status, []).append(note.id)
    assert list(tail["note_status"].items()) == sorted(by_status.items())
    assert tail["assess"] == pending


def recall_entry(state: State, hypothesis: str, name: str, ref: str) -> str:
    """Recall `ref` (every page of it) through the tail and return its whole text, read from the contexts."""
    enc = get_encoder(name)

    def with_recall(page: int) -> str:
        s = copy_state(state)
        s.recall[hypothesis] = RecallSelection(
            evidence_refs=[ref] if ref[0] == "E" else [], entries=[] if ref[0] == "E" else [ref],
            pages=[f"{ref}:{page}"] if page > 1 else [], iteration=s.iteration)  # fmt: skip
        validate_state(s)
        out = enc.render(s, hypothesis)
        assert out.chars <= enc.budget
        return out.text

    text = with_recall(1)
    _index, body, tail_text = sections(text)
    _tail, pages, whole = read_tail(tail_text)
    paged = paged_blocks(body)
    if ref in paged:  # page 1 is the journal's
        chars, count, first = paged[ref]
        parts = [first]
    elif ref in pages:
        _page, count, chars, first = pages[ref]
        parts = [first]
    else:  # shown whole in the tail
        lines = whole.split("\n")
        start = next(
            n for n, line in enumerate(lines) if line.startswith(ref + " ") or line == f"{ref}:"
        )
        end = start + 1
        inside = {n for s, e, _, _ in _spans(whole) for n in range(s, e + 1)}
        while end < len(lines) and (end in inside or not (
                v12_evidence(lines[end]) or NOTE_HEAD.match(lines[end]) or lines[end].endswith(":"))):  # fmt: skip
            end += 1
        return "\n".join(lines[start:end])
    for k in range(2, count + 1):
        _t, pages, _w = read_tail(sections(with_recall(k))[2])
        assert pages[ref][:3] == (k, count, chars), ref
        parts.append(pages[ref][3])
    joined = "".join(parts)
    assert len(joined) == chars, ref
    return joined


def check_reachable(state: State, hypothesis: str, name: str, refs: list[str]) -> None:
    for ref in refs:
        assert read_entry(state, ref, recall_entry(state, hypothesis, name, ref)) == expected(
            state, ref
        ), ref


# -- the bound ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUDGETS)
def test_an_output_larger_than_the_budget_is_paged_and_every_page_recalled(name):
    state = huge_state()
    big = state.evidence[-2].id
    for hid in ("H1", "H2", "H3"):
        seen = check_v14(state, hid, name)
        where = seen["paged"].get(big) or seen["index"]["pages"].get(big)
        assert where, (
            "the huge output is paged in the journal or an archived row with its page count"
        )
    if (
        name == "v14"
    ):  # every page, recalled one by one, joins back to the whole entry (about 220 pages)
        check_reachable(state, "H1", name, [big])
    v13, v13_budget = get_encoder("v13").render(state, "H1"), get_encoder("v13").budget
    assert v13.chars > HUGE > 8 * v13_budget  # v13 shows it whole, as issue 22 reports


def test_a_page_recall_of_the_huge_output_reads_back_at_the_small_budget():
    """At 20,000 characters a page is 960 characters: recall three of them, check each is a slice of the entry."""
    state = huge_state()
    big = state.evidence[-2].id
    enc = get_encoder("v14:budget=20000")
    full = enc.entry_text(state, big)
    for page in (2, 400, enc.page_count(state, big)):
        s = copy_state(state)
        s.recall["H1"] = RecallSelection(evidence_refs=[big], pages=[f"{big}:{page}"], iteration=9)
        _t, pages, _w = read_tail(sections(enc.render(s, "H1").text)[2])
        got_page, count, chars, text = pages[big]
        assert (got_page, count, chars) == (
            page,
            enc.page_count(state, big),
            len(full),
        ) and text in full


@pytest.mark.soak  # 40 s; benchmarks/v14_bound.py's section, checked in every run, bounds the same state
def test_a_100000_item_state_is_within_the_budget_and_its_index_names_every_id():
    state = make_state(100_000)
    out = get_encoder("v14").render(state, "H1")
    assert out.chars <= 100_000
    assert sorted(out.shown + out.indexed) == sorted(ev.id for ev in state.evidence)
    index_text, _body, _tail = sections(out.text)
    index = read_index(index_text, sorted_ids(state))
    archived = (
        set(index["ranged"])
        | set(index["evidence"])
        | set(index["notes"])
        | set(index["decisions"])
    )
    assert (
        len(archived) == index["count"] > 240_000
    )  # evidence, notes and decisions, named by ranges and rows
    assert {ev.id for ev in state.evidence} <= archived | set(out.shown)


@pytest.mark.parametrize("name", BUDGETS)
def test_every_context_of_the_kept_167_step_run_is_within_its_budget(long_run, name):
    enc = get_encoder(name)
    assert len(long_run) == 167
    sizes = [enc.render(state, state.hypotheses[0].id).chars for state in long_run]
    assert max(sizes) <= enc.budget
    for state in long_run[::8] + [long_run[-1]]:
        check_v14(state, state.hypotheses[0].id, name)


@pytest.mark.parametrize("name", BUDGETS)
def test_every_bug17_context_reads_back_and_every_archived_entry_is_reachable(name):
    archived = 0
    for ctx in BUG17:
        seen = check_v14(ctx.state, ctx.hypothesis, name)
        archived += len(seen["archived"])
    assert archived, "bug17 is compacted under every budget tested"
    last = BUG17[-1]
    seen = check_v14(last.state, last.hypothesis, name)
    refs = sorted(seen["archived"] | set(seen["paged"]))
    sample = (
        [r for r in refs if r[0] == "E"][:3]
        + [r for r in refs if r[0] == "N"][:2]
        + [r for r in refs if r[0] == "H"][:2]
    )
    assert len(sample) == 7
    check_reachable(last.state, last.hypothesis, name, sample)


@pytest.mark.slow  # fuzz: generated states with up to 40 outputs of up to 120,000 characters
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    state=bound_states(),
    hid=st.sampled_from(["H1", "H2", "H3"]),
    name=st.sampled_from(BUDGETS + ["v14:budget=31000"]),
)
def test_random_states_are_within_the_budget_and_read_back(state, hid, name):
    before = msgspec.json.encode(state)
    seen = check_v14(state, hid, name)
    assert get_encoder(name).render(copy_state(state), hid) == seen["out"]  # pure and deterministic
    assert msgspec.json.encode(state) == before  # rendering changes nothing


# -- the recall decision's pages ----------------------------------------------------------------------


def _recall(**next_fields) -> bytes:
    return json.dumps({"next": {"kind": "recall", **next_fields}}).encode()


def test_a_v14_recall_names_entries_and_pages_and_older_versions_reject_them():
    decision = parse_decision(_recall(evidence_refs=["E000001"], entries=["N000001", "H1/2"], pages=["E000001:3"]),
                              supports_recall=True, supports_pages=True)  # fmt: skip
    assert isinstance(decision.next, PagedRecall) and decision.next.pages == ["E000001:3"]
    for data in (
        _recall(evidence_refs=["E000001"], pages=["E000001:2"]),
        _recall(evidence_refs=[], entries=["N000001"]),
    ):
        with pytest.raises(DecisionRejected) as err:
            parse_decision(data, supports_recall=True)  # v8–v13: their schema forbids the keys
        assert err.value.code == "schema_violation"
    for data, code in [(_recall(evidence_refs=[]), "recall_count"),
                       (_recall(evidence_refs=["E000001", "E000002", "E000003"], entries=["N000001", "case"]), "recall_count"),
                       (_recall(evidence_refs=["E000001"], entries=["case", "case"]), "recall_duplicate"),
                       (_recall(evidence_refs=["E000001"], pages=["E000001:0"]), "schema_violation"),
                       (_recall(evidence_refs=["E000001"], entries=["H1/0"]), "schema_violation")]:  # fmt: skip
        with pytest.raises(DecisionRejected) as err:
            parse_decision(data, supports_recall=True, supports_pages=True)
        assert err.value.code == code, data


def test_an_unknown_page_or_entry_rejects_the_whole_decision():
    state = huge_state()
    big = state.evidence[-2].id
    enc = get_encoder("v14")
    count = enc.page_count(state, big)
    assert count > 200
    ok = parse_decision(
        _recall(evidence_refs=[big], pages=[f"{big}:{count}"]),
        supports_recall=True,
        supports_pages=True,
    )
    check_recall_pages(ok, state, enc.page_count)
    for data, code in [(_recall(evidence_refs=[big], pages=[f"{big}:{count + 1}"]), "recall_page"),
                       (_recall(evidence_refs=[big], pages=["E000001:2"]), "recall_page"),  # a page of an entry not recalled
                       (_recall(evidence_refs=["E000001"], pages=["E000001:2"]), "recall_page"),  # a one-page entry
                       (_recall(evidence_refs=[], entries=["N000999"]), "recall_entry"),
                       (_recall(evidence_refs=[], entries=["H1/99"]), "recall_entry")]:  # fmt: skip
        decision = parse_decision(data, supports_recall=True, supports_pages=True)
        with pytest.raises(DecisionRejected) as err:
            check_recall_pages(decision, state, enc.page_count)
        assert err.value.code == code, data


def test_old_recall_selections_load_and_new_ones_are_checked():
    state = sample_state()
    doc = msgspec.to_builtins(state)
    assert "entries" not in json.dumps(doc["recall"]) or doc["recall"]
    for sel in doc["recall"].values():  # a state written before v14: no entries, no pages
        sel.pop("entries", None)
        sel.pop("pages", None)
    loaded = load_state(msgspec.json.encode(doc))
    assert all(sel.entries == [] and sel.pages == [] for sel in loaded.recall.values())
    for sel, why in [(RecallSelection(evidence_refs=[], entries=["N000999"], iteration=1), "unknown entry"),
                     (RecallSelection(evidence_refs=["E000001"], pages=["E000002:2"], iteration=1), "does not recall"),
                     (RecallSelection(evidence_refs=[], iteration=1), "1 to 4")]:  # fmt: skip
        bad = copy_state(state)
        bad.recall["H1"] = sel
        with pytest.raises(InvalidFile, match=why):
            validate_state(bad)


# -- the rules and the preamble -------------------------------------------------------------------------


def test_every_parameter_follows_its_stated_rule():
    for budget in (20_000, 100_000, 1_000_000):
        enc = get_encoder("v14" if budget == 100_000 else f"v14:budget={budget}")
        assert enc.budget == budget and enc.tail_reserve == max(6_000, budget // 4)
        assert enc.page_size == (enc.tail_reserve - enc.tail_reserve // 5) // 5
        assert (
            5 * enc.page_size + enc.tail_reserve // 5 <= enc.tail_reserve
        )  # five pages and the lines fit the reserve
    assert (
        get_encoder("v14").budget == 200_000 // 4 * 2
    )  # a quarter of a 200k-token window at 2 characters a token
    assert get_encoder("v14").name == "investigation_project_v14"


def test_the_preamble_states_each_convention_once_and_is_the_same_under_every_budget():
    a, b = get_encoder("v14"), get_encoder("v14:budget=20000")
    assert a.preamble == b.preamble
    for phrase in ("paged: N chars, K pages; page 1:", "`A..B` names every ID", "(hypothesis H<n>'s k-th decision)", "pages: [\"REF:page\"]",
                   "`REF page P/K, N chars:`", "of the evidence this context shows", "note statuses of the notes it shows",
                   "shown or archived", "Lines with nothing to list are left out"):  # fmt: skip
        assert a.preamble.count(phrase) == 1, phrase


# -- the journal only grows between compactions; the case is paged past its room ------------------------


def test_between_two_compactions_the_journal_only_grows(long_run):
    """Consecutive contexts of a run: while the index is the same, the last journal is a prefix of the next one."""
    for name in BUDGETS:
        enc = get_encoder(name)
        rewrites, previous = 0, None
        for state in long_run:
            index, body, _tail = sections(enc.render(state, state.hypotheses[0].id).text)
            if previous is not None:
                if index == previous[0]:
                    assert body.startswith(previous[1]), name
                else:
                    rewrites += 1
            previous = (index, body)
        assert 0 < rewrites < len(long_run) // 4, (
            name,
            rewrites,
        )  # a compaction now and then, not every turn


def test_a_case_longer_than_its_room_is_paged_and_recalled():
    state = sample_state()
    state.case.statement = "Intermittent 502s on /checkout since 20:00. " * 700
    validate_state(state)
    enc = get_encoder("v14:budget=20000")
    out = enc.render(state, "H1")
    assert out.chars <= enc.budget
    case = out.text.split("\n## Journal\n", 1)[0].split("\n## Case\n", 1)[1]
    first = paged_blocks(case)["case"]
    full = enc.full_case_text(state)
    parts = [first[2]]
    for k in range(2, first[1] + 1):
        s = copy_state(state)
        s.recall["H1"] = RecallSelection(
            evidence_refs=[], entries=["case"], pages=[f"case:{k}"], iteration=9
        )
        page_out = enc.render(s, "H1")
        assert page_out.chars <= enc.budget
        parts.append(read_tail(sections(page_out.text)[2])[1]["case"][3])
    assert "".join(parts) == full and first[0] == len(full)


# -- a session: a page recall is validated against the request's encoder, stored, replayed ----------------


def test_a_session_recalls_a_page_and_refuses_an_unknown_one(tmp_path):
    from tests.helpers.session_helpers import db_dump
    from workingset.session.investigation import Investigation

    state = huge_state(60_000)
    for ev in state.evidence:  # nothing to assess: a recall alone is a valid answer
        ev.budget.status = "settled" if ev.budget.action is not None else "none"
    state.recall = {}
    validate_state(state)
    big = state.evidence[-2].id
    store = str(tmp_path / "v14.db")
    inv = Investigation.create(store, msgspec.json.encode(state), encoder="v14:budget=20000",
                               clock=lambda: "2026-06-10T21:00:00Z")  # fmt: skip
    req = inv.next_request()
    assert req.chars <= 20_000 and req.spec()["budget"] == 20_000
    count = get_encoder("v14:budget=20000").page_count(state, big)
    before = db_dump(store, answers=False)
    for bad, code in [({"evidence_refs": [big], "pages": [f"{big}:{count + 1}"]}, "recall_page"),
                      ({"evidence_refs": [], "entries": ["N000777"]}, "recall_entry")]:  # fmt: skip
        with pytest.raises(DecisionRejected) as err:
            inv.submit(req.request_id, {"next": {"kind": "recall", **bad}})
        assert err.value.code == code
    assert db_dump(store, answers=False) == before  # a rejected decision changes nothing
    applied = inv.submit(req.request_id, {"next": {"kind": "recall", "evidence_refs": [big], "entries": ["N000001"],
                                                   "pages": [f"{big}:{count}"]}})  # fmt: skip
    assert applied.applied == "recall"
    again = Investigation.open(
        store, state.analysis_id, clock=lambda: "2026-06-10T21:00:00Z"
    )  # replayed from the log
    nxt = again.next_request(req.hypothesis)
    assert (
        f"\n{big} page {count}/{count}, " in nxt.text and "\nN000001 null #1 question\n" in nxt.text
    )
    assert nxt.chars <= 20_000


def test_a_state_whose_fixed_parts_pass_the_budget_is_refused_with_a_code():
    """Thousands of hypotheses: one tail line each, which no walk can shrink; v14 refuses rather than pass its budget."""
    from workingset.errors import TooLarge

    state = sample_state()
    template = state.hypotheses[2]
    for k in range(4, 1_000):
        state.hypotheses.append(msgspec.structs.replace(template, id=f"H{k}", history=[]))
    validate_state(state)
    before = msgspec.json.encode(state)
    with pytest.raises(TooLarge) as err:
        get_encoder("v14:budget=20000").render(state, "H1")
    assert err.value.code == "too_large" and err.value.details["budget"] == 20_000
    assert msgspec.json.encode(state) == before
    assert (
        get_encoder("v14:budget=200000").render(state, "H1").chars <= 200_000
    )  # a larger budget holds them


def test_the_output_schema_outline_reads_back_to_the_decision_schema():
    encoder = get_encoder("v14")
    lines = encoder.preamble.split("\n")
    assert lines[-3:-1] == ["## Output schema", "`?`: optional key; no other keys."]
    schema, end = read_outline(lines[-1])
    assert end == len(lines[-1])
    assert schema == {
        k: v for k, v in encoder.decision_schema.items() if k not in ("$schema", "title")
    }


def test_a_kept_walk_gives_the_fresh_walk_on_every_turn():
    """The session keeps v14's walk between turns (`new_journal`); every render is byte for byte a fresh one's."""
    full = make_state(3_000)
    for name in BUDGETS:
        enc = get_encoder(name)
        journal = enc.new_journal(full)
        walks = set()
        for state in growing(full, 40):
            kept = enc.render(state, "H1", journal=journal)
            assert kept == enc.render(copy_state(state), "H1"), name
            walks.add(id(journal.w))
        assert len(walks) == 1, "every turn resumed the same walk"
    # A state that is not an extension of the last one is walked afresh, with the same result.
    enc = get_encoder("v14:budget=20000")
    journal = enc.new_journal(huge_state())
    for state in [make_state(n) for n in (10, 40, 41, 80)] + [huge_state(), make_state(120)]:
        assert enc.render(state, "H1", journal=journal) == enc.render(state, "H1")


def test_a_kept_walk_holds_a_status_only_copy_and_walks_afresh_on_any_other_change():
    """An item replaced by a copy with another budget status (an import's next step) resumes the walk; any other change walks afresh."""
    enc = get_encoder("v14:budget=20000")
    full = make_state(600)
    journal = enc.new_journal(full)
    states = list(growing(full, 12))[:6]
    for state in states[:-1]:
        enc.render(state, "H1", journal=journal)
    state = states[-1]
    first = journal.w
    archived = journal.w.archived_ev[0].id  # an archived item and one the journal shows
    shown = next(ev.id for ev in journal.plan_.shown)
    for eid in (archived, shown):
        at = next(i for i, ev in enumerate(state.evidence) if ev.id == eid)
        ev = state.evidence[at]
        status = "unsettled" if ev.budget.status != "unsettled" else "settled"
        state.evidence[at] = msgspec.structs.replace(
            ev, budget=msgspec.structs.replace(ev.budget, status=status)
        )
    kept = enc.render(state, "H1", journal=journal)
    assert journal.w is first, "a status-only copy resumes the walk"
    assert kept == enc.render(copy_state(state), "H1")  # the tail states the copy's status
    # Another field changed (the action, which the entry's head writes): a fresh walk, same bytes.
    at = next(i for i, ev in enumerate(state.evidence) if ev.id == shown)
    ev = state.evidence[at]
    state.evidence[at] = msgspec.structs.replace(
        ev, budget=msgspec.structs.replace(ev.budget, action=None)
    )
    kept = enc.render(state, "H1", journal=journal)
    assert journal.w is not first
    assert kept == enc.render(copy_state(state), "H1")


def test_the_walk_counts_what_it_shows_after_every_feed():
    """The walk's sizes are those of the texts and rows it shows, paged entries and ranged rows included.

    The walk finds compactions and ranges by bisecting running sizes, so a size counted wrong
    (a paged row's `pages=`) moves them without breaking the journal's form: check the counts.
    """
    full = make_state(3_000)  # at 20,000 characters, a page is 960: most payloads are paged
    for name in BUDGETS:
        enc = get_encoder(name)
        journal = enc.new_journal(full)
        for state in [*growing(full, 7), full]:
            enc.render(state, "H1", journal=journal)
            w = journal.w
            assert w.size == sum(len(text) + 2 for text in w.texts[w.cursor :]), name
            assert w.row_ends == [0, *accumulate(len(row) + 1 for row in w.rows)], name
            assert w.rows_size == w.row_ends[w.cursor] - w.row_ends[w.span_cursor], name
            assert w.compactions and w.span_cursor and w.pages, name
            assert all(not text for text in w.texts[: w.cursor]), name


def test_same_as_names_an_entry_above_it_when_the_state_lists_items_out_of_order():
    """A later item listed first, with the payload of an earlier one: the earlier (in journal order) is written whole."""
    state = sample_state()
    first = next(
        ev for ev in state.evidence if ev.payload is not None and ev.iteration < state.iteration
    )
    late = msgspec.structs.replace(first, id="E000099", iteration=first.iteration + 1)
    shuffled = msgspec.structs.replace(state, evidence=[late, *state.evidence])
    text = get_encoder("v14").render(shuffled, "H1").text
    assert (
        f"same_as={first.id}" not in text.split(first.id, 1)[0]
    )  # nothing points at it before it is written
    assert text.index(first.id) < text.index("E000099")
    assert "same_as=E000099" not in text


@pytest.mark.parametrize(
    "field, ref", [("entries", "case\n"), ("entries", "N000001\n"), ("pages", "E000001:1\n")]
)
def test_a_recall_reference_with_a_trailing_newline_is_refused(field, ref):
    answer = {"next": {"kind": "recall", "evidence_refs": [], field: [ref]}}
    with pytest.raises(DecisionRejected) as err:
        parse_decision(json.dumps(answer).encode(), supports_recall=True, supports_pages=True)
    assert err.value.code == "schema_violation"
