"""Claims bound to bytes: spans in a conclusion, checked against the request's payloads and replayed."""

from __future__ import annotations

import hashlib
import json

import msgspec
import pytest

from tests.helpers.session_helpers import conclude, decision, make_state, recalled, state_bytes
from workingset.encoders import ENCODERS, get_encoder
from workingset.encoders.v08 import V8
from workingset.errors import DecisionRejected
from workingset.model.spans import canonical_text, make_span, quote_span
from workingset.model.state import load_state
from workingset.session.frozen_replay import replay_export
from workingset.session.investigation import Investigation

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731


class CitingV8(V8):
    """A test version: v8 with spans switched on, as a future version (v11) will declare."""

    version = 99
    supports_spans = True


@pytest.fixture
def citing(monkeypatch):
    monkeypatch.setitem(ENCODERS, 99, CitingV8())
    return "v99"


def span(eid: str, data: bytes, start: int, end: int, digest: str | None = None) -> dict:
    return {
        "evidence_ref": eid,
        "start": start,
        "end": end,
        "sha256": digest or hashlib.sha256(data[start:end]).hexdigest(),
    }


STATE = load_state(state_bytes())
LOG = canonical_text(STATE.evidence[1].payload)
ROWS = canonical_text(STATE.evidence[0].payload)


def test_canonical_text_is_what_tables_and_code_blocks_show():
    assert LOG == b"20:01 ERROR retry budget exceeded\n20:02 WARN ``` fence"
    assert ROWS == b'["order_id","status","amount"]\n[1,"paid",9.5]\n[2,"failed",null]\n'
    text = get_encoder("v10").render(STATE, "H1").text
    assert ROWS.decode().rstrip("\n") in text and LOG.decode() in text
    s = quote_span(STATE, "E000001", '[2,"failed",null]')
    assert (s.start, s.end) == (len(ROWS) - 18, len(ROWS) - 1) and s == make_span(
        STATE, "E000001", s.start, s.end
    )
    for bad in (lambda: quote_span(STATE, "E000001", "absent"), lambda: make_span(STATE, "E000004", 0, 1),
                lambda: make_span(STATE, "E000002", 5, 5), lambda: make_span(STATE, "E000099", 0, 1)):  # fmt: skip
        with pytest.raises(ValueError):
            bad()


def test_frozen_versions_have_no_spans_and_refuse_them():
    """v1–v14 have none; v15's conclusions quote, and the quotes become spans (tests/model/test_quotes.py)."""
    for enc in ENCODERS.values():
        assert "spans" not in json.dumps(enc.decision_schema)
        assert enc.supports_spans is (enc.version >= 15)


SPAN_REJECTIONS = [
    ("span_not_shown", lambda: span("E000003", b"x", 0, 1), "not shown in full"),
    ("span_not_shown", lambda: span("E000004", b"x", 0, 1), "not retained"),
    ("span_not_shown", lambda: span("E000099", b"x", 0, 1), "not evidence"),
    ("span_out_of_range", lambda: span("E000002", LOG, 10, len(LOG) + 1), "bytes of E000002"),
    ("span_out_of_range", lambda: span("E000002", LOG, 7, 7), "non-empty"),
    ("span_mismatch", lambda: span("E000002", LOG, 0, 5, "0" * 64), "SHA-256"),
    (
        "schema_violation",
        lambda: {**span("E000002", LOG, 0, 5), "sha256": "ABC"},
        "$.next.spans[1].sha256",
    ),
]


@pytest.mark.parametrize(
    ("code", "make", "says"),
    SPAN_REJECTIONS,
    ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(SPAN_REJECTIONS)],
)
def test_a_bad_span_rejects_the_decision(tmp_path, citing, code, make, says):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder=citing, clock=CLOCK
    ) as inv:
        rid = recalled(inv, "E000002")
        before = inv.show()
        answer = decision(
            {**conclude("supported", "E000002"), "spans": [span("E000002", LOG, 6, 11), make()]}
        )
        with pytest.raises(DecisionRejected) as info:
            inv.submit(rid, answer)
        assert info.value.code == code and says in info.value.message
        assert inv.show() == before


def test_a_valid_span_is_accepted_kept_and_replayed(tmp_path, citing):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder=citing, clock=CLOCK
    ) as inv:
        assert "spans" in json.dumps(get_encoder(citing).decision_schema)
        rid = recalled(inv, "E000002", "E000001")
        cited = [
            span("E000002", LOG, 6, 11),
            msgspec.to_builtins(quote_span(inv.state, "E000001", '"failed"')),
        ]
        assert LOG[6:11] == b"ERROR"
        assert (
            inv.submit(
                rid, decision({**conclude("supported", "E000002", "E000001"), "spans": cited})
            ).status
            == "completed"
        )
        inv.export(tmp_path / "run")
    journal = [json.loads(x) for x in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    assert [x["decision"]["next"].get("spans") for x in journal if x.get("kind") == "decision"] == [
        None,
        cited,
    ]
    assert replay_export(tmp_path / "run").ok
    # The replay checks the span again: a digest changed in the kept answer no longer matches.
    answers = (tmp_path / "run" / "answers.jsonl").read_text().replace(cited[0]["sha256"], "0" * 64)
    (tmp_path / "run" / "answers.jsonl").write_text(answers)
    div = replay_export(tmp_path / "run").divergence
    assert (div.path, div.recorded, div.replayed) == ("$.outcome", "accepted", "rejected")


def test_spans_under_a_version_without_them_are_a_schema_violation(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), make_state(), encoder="v10", clock=CLOCK
    ) as inv:
        req = inv.next_request("H1")
        with pytest.raises(DecisionRejected) as info:
            inv.submit(
                req.request_id,
                decision(
                    {**conclude("supported", "E000002"), "spans": [span("E000002", LOG, 0, 5)]}
                ),
            )
        assert (
            info.value.code == "schema_violation" and "unknown field `spans`" in info.value.message
        )
