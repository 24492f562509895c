"""v15's quotes: a conclusion quotes the evidence it rests on; the library binds each quote to a span, keeps it, replays it."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.helpers.session_helpers import conclude, decision, recalled, state_bytes
from workingset.decisions import QuotingConclude, bind_quotes, parse_decision
from workingset.errors import DecisionRejected
from workingset.model.spans import canonical_text
from workingset.model.state import load_state
from workingset.session.frozen_replay import replay_export
from workingset.session.investigation import Investigation

CLOCK = lambda: "2026-06-10T21:00:00Z"  # noqa: E731
STATE = load_state(state_bytes())
LOG = canonical_text(STATE.evidence[1].payload)
ROWS = canonical_text(STATE.evidence[0].payload)


def quoting(*quotes: tuple[str, str], refs: tuple[str, ...] = ("E000002",)) -> dict:
    return decision({**conclude("supported", *refs),
                     "quotes": [{"evidence_ref": e, "quote": q} for e, q in quotes]})  # fmt: skip


def test_a_quote_becomes_the_span_of_its_first_occurrence():
    parsed = parse_decision(json.dumps(quoting(("E000002", "ERROR"), ("E000001", '[2,"failed",null]'))).encode(),
                            supports_recall=True, supports_pages=True, supports_quotes=True)  # fmt: skip
    assert isinstance(parsed.next, QuotingConclude)
    bound = bind_quotes(parsed, STATE)
    spans = bound.next.spans  # type: ignore[union-attr]
    assert [(s.evidence_ref, s.start, s.end) for s in spans] == [
        ("E000002", LOG.index(b"ERROR"), LOG.index(b"ERROR") + 5),
        ("E000001", len(ROWS) - 18, len(ROWS) - 1),
    ]
    assert spans[0].sha256 == hashlib.sha256(b"ERROR").hexdigest()
    # Versions without quotes refuse the key, as a schema violation.
    with pytest.raises(DecisionRejected) as info:
        parse_decision(
            json.dumps(quoting(("E000002", "ERROR"))).encode(),
            supports_recall=True,
            supports_pages=True,
        )
    assert info.value.code == "schema_violation"


def test_a_valid_quote_is_accepted_kept_as_a_span_and_replayed(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v15", clock=CLOCK
    ) as inv:
        rid = recalled(inv, "E000002")
        assert inv.submit(rid, quoting(("E000002", "retry budget exceeded"))).status == "completed"
        inv.export(tmp_path / "run")
    journal = [json.loads(x) for x in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    spans = [x["decision"]["next"].get("spans") for x in journal if x.get("kind") == "decision"][-1]
    at = LOG.index(b"retry budget exceeded")
    assert spans == [{"evidence_ref": "E000002", "start": at, "end": at + 21,
                      "sha256": hashlib.sha256(b"retry budget exceeded").hexdigest()}]  # fmt: skip
    assert replay_export(tmp_path / "run").ok
    # The replay binds the kept answer's quote again: an altered quote is refused, so the replay diverges.
    answers = (tmp_path / "run" / "answers.jsonl").read_text()
    (tmp_path / "run" / "answers.jsonl").write_text(
        answers.replace("retry budget exceeded", "retry budget exceeded!")
    )
    div = replay_export(tmp_path / "run").divergence
    assert (div.path, div.recorded, div.replayed) == ("$.outcome", "accepted", "rejected")


@pytest.mark.parametrize(
    ("quote", "code", "says"),
    [
        (("E000002", "no such words"), "quote_not_found", "does not hold it"),
        (("E000004", "anything"), "quote_not_found", "not retained"),
        (("E000099", "anything"), "unknown_evidence", "not evidence"),
        (("E000002", ""), "schema_violation", "$.next.quotes[0].quote"),
    ],
)
def test_a_bad_quote_rejects_the_decision_and_changes_nothing(tmp_path, quote, code, says):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v15", clock=CLOCK
    ) as inv:
        rid = recalled(inv, "E000002")
        before = inv.show()
        with pytest.raises(DecisionRejected) as info:
            inv.submit(rid, quoting(quote))
        assert info.value.code == code and says in info.value.message, info.value.message
        assert inv.show() == before


def test_v15_strict_openai_schema_is_stable_and_what_it_allows_parses():
    import jsonschema

    from workingset.encoders import get_encoder
    from workingset.providers import strict_schema

    frozen = get_encoder("v15").decision_schema
    strict = strict_schema(frozen, None, stable=True)
    jsonschema.Draft202012Validator.check_schema(strict)
    assert strict == strict_schema(frozen, "E000004", stable=True)  # the same whatever rule A wants
    quoted = {
        **conclude("supported", "E000002"),
        "quotes": [{"evidence_ref": "E000002", "quote": "ERROR"}],
    }
    paged = {"kind": "recall", "evidence_refs": ["E000002"], "entries": [], "pages": []}
    for nxt in (quoted, {**conclude("refuted", "E000001"), "quotes": []}, paged):
        sample = {"assessment": None, "notes": [], "next": nxt}
        jsonschema.validate(sample, strict)
        parsed = parse_decision(json.dumps(sample).encode(), supports_recall=True, supports_pages=True,
                                null_assessment=True, supports_quotes=True)  # fmt: skip
        bound = bind_quotes(parsed, STATE)
        assert len(getattr(bound.next, "spans", ())) == len(nxt.get("quotes", ()))
    with pytest.raises(jsonschema.ValidationError):  # strict mode requires every key, quotes too
        jsonschema.validate(
            {"assessment": None, "notes": [], "next": conclude("refuted", "E000001")}, strict
        )
