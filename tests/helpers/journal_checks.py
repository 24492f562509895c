"""The journal entries of v12 and later read back from a context: every shown evidence item, note and decision row.

v12's journal entries are the journal entries of every later version (v13 changes its index,
preamble and tail, not its entries), so their tests share this check. It reads the text with
the documented conventions alone (`recover.py`'s parsers and the heads below).
"""

from __future__ import annotations

import json
import re

import msgspec

from tests.helpers.recover import _spans, v12_evidence
from workingset.encoders import get_encoder
from workingset.model.state import State

NOTE_HEAD = re.compile(r"^(N[0-9]{6}) (\S+) #([0-9]+) (\S+)$")
DECISION_HEAD = re.compile(
    r"^(H\S*) #([0-9]+) (query|recall|assessment|conclude)((?: E[0-9]{6})*)( verdict=\S.*?)?( confidence=\S+)?$"
)


def _word(value: str):
    return json.loads(value) if value.startswith('"') or value == "null" else value


def journal_text(text: str) -> str:
    return text.split("\n## Journal\n", 1)[1].split("\n## This turn\n", 1)[0]


def check_entries(state: State, out, shown: dict[str, dict]) -> None:
    """Every evidence item shown in full (journal or tail), note and decision reads back (as in v12)."""
    by_id = {ev.id: ev for ev in state.evidence}
    assert sorted(shown) == sorted(out.shown)
    for eid, entry in shown.items():
        ev = by_id[eid]
        fields = dict(entry["fields"])
        same_as = fields.pop("same_as", None)
        assert same_as is None or same_as in shown
        assert (entry["collector"], entry["iteration"], entry["scope"], entry["captured_at"]) == (
            ev.collector, ev.iteration, ev.scope, ev.captured_at)  # fmt: skip
        capture = {k: v for k, v in msgspec.to_builtins(ev.capture).items() if k != "query"}
        assert {k: fields.get(k) for k in capture} == capture, eid
        assert entry["query"] == ev.capture.query, eid
        assert (fields.get("action"), fields.get("cost", 0)) == (ev.budget.action, ev.budget.cost)
        assert entry["payload"] == msgspec.to_builtins(ev.payload), eid
    journal = journal_text(out.text)
    inside = {n for start, end, _, _ in _spans(journal) for n in range(start, end + 1)}
    lines = journal.split("\n")
    body_at = {start: body for start, _end, _info, body in _spans(journal)}
    notes, rows = [], []
    for n, line in enumerate(lines):
        if n in inside:
            continue
        if m := NOTE_HEAD.match(line):
            notes.append(
                (m.group(1), _word(m.group(2)), int(m.group(3)), _word(m.group(4)), body_at[n + 1])
            )
        elif m := DECISION_HEAD.match(line):
            verdict = _word(m.group(5)[len(" verdict=") :]) if m.group(5) else None
            confidence = json.loads(m.group(6)[len(" confidence=") :]) if m.group(6) else None
            text = (
                body_at.get(n + 1)
                if n + 1 < len(lines) and lines[n + 1].startswith("```")
                else None
            )
            rows.append(
                (
                    m.group(1),
                    int(m.group(2)),
                    m.group(3),
                    m.group(4).split(),
                    verdict,
                    confidence,
                    text,
                )
            )
    assert sorted(notes) == sorted(
        (x.id, x.hypothesis, x.iteration, x.kind, x.text) for x in state.notes
    )
    expected = [(h.id, r.iteration, r.kind, r.evidence_refs, r.verdict, r.confidence, r.text)
                for h in state.hypotheses for r in h.history]  # fmt: skip
    assert sorted(rows, key=repr) == sorted(expected, key=repr)


def v12_lossless(state: State, hypothesis: str, name: str = "v12") -> None:
    """Every shown evidence item, note and decision row of `state` reads back from the v12 text."""
    out = get_encoder(name).render(state, hypothesis)
    check_entries(state, out, v12_evidence(out.text))
