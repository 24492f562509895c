"""What the v15 and v16 tests share: a context's check (bound, read back, addressable) and a state with used names."""

from __future__ import annotations

import msgspec
import msgspec.structs

from tests.helpers.factory import evidence, sample_state
from tests.helpers.recover14 import read_index, sections
from tests.helpers.recover15 import v15_evidence
from tests.helpers.recover16 import v16_evidence
from workingset.encoders import get_encoder
from workingset.model.state import State, TextPayload


def check(state: State, hid: str, name: str):
    """Render, and check the bound, the shown/indexed split and every whole entry against the state."""
    enc = get_encoder(name)
    out = enc.render(state, hid)
    assert out.chars == len(out.text) <= enc.budget
    assert sorted(out.shown + out.indexed) == sorted(ev.id for ev in state.evidence)
    by_id = {ev.id: ev for ev in state.evidence}
    read = (v16_evidence if enc.version >= 16 else v15_evidence)(out.text)
    for eid, entry in read.items():
        ev = by_id[eid]
        capture = {
            k: v
            for k, v in msgspec.to_builtins(ev.capture).items()
            if k != "query" and v is not None
        }
        fields = dict(entry["fields"])
        got = {k: fields.pop(k) for k in list(fields) if k in msgspec.structs.asdict(ev.capture)}
        assert (entry["collector"], entry["iteration"], entry["scope"], entry["captured_at"]) == (
            ev.collector, ev.iteration, ev.scope, ev.captured_at), eid  # fmt: skip
        assert got == capture and entry["query"] == ev.capture.query, eid
        assert (
            fields.get("action") == ev.budget.action and fields.get("cost", 0) == ev.budget.cost
        ), eid
        if "same_as" not in fields:
            assert entry["payload"] == msgspec.to_builtins(ev.payload), eid
    check_addressable(state, out.text, enc)
    return out, read


def check_addressable(state: State, text: str, enc) -> None:
    """Every note and decision row is in view (whole or paged), named by the index (a row or a range) once, or one
    the format does not write (v15: a query row without text; v16: also a neutral assessment without text)."""
    index_text, body, tail = sections(text)
    ids = {"E": sorted(ev.id for ev in state.evidence), "N": sorted(n.id for n in state.notes)}
    ids.update(
        {h.id: [f"{h.id}/{k}" for k in range(1, len(h.history) + 1)] for h in state.hypotheses}
    )
    index = (
        read_index(index_text, ids)
        if index_text
        else {"count": 0, "ranged": [], "evidence": {}, "notes": {}, "decisions": {}}
    )
    named = [*index["ranged"], *index["evidence"], *index["notes"], *index["decisions"]]
    assert len(named) == len(set(named)) == index["count"]
    shown = body + "\n" + tail
    for note in state.notes:
        assert note.id in named or f"\n{note.id} " in "\n" + shown, note.id
    for h in state.hypotheses:
        for k, row in enumerate(h.history, 1):
            ref = f"{h.id}/{k}"
            if ref in named or not enc.format_of(state).writes_row(row):  # a row not written
                continue
            assert enc.entry_text(state, ref) in shown or f"{ref} paged: " in shown, ref


def used_state(name_in_query: bool) -> State:
    """Outputs of 3,000 characters, one naming `pool_wait_ms` early; every second query names it, or none does."""
    state = sample_state()
    state.evidence.clear()
    state.hypotheses[0].history.clear()
    state.recall.clear()
    for i in range(1, 41):
        text = ("pool_wait_ms rose to 900\n" if i == 2 else "") + f"line {i}\n" * 400
        query = "grep pool_wait_ms app.log" if (i % 2 == 0 and name_in_query) else f"select {i}"
        state.evidence.append(
            evidence(i, "H1", TextPayload(language="log", text=text), query=query)
        )
        state.evidence[-1].iteration = i
    state.iteration = 40
    return state
