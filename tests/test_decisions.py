"""The decision union and its validation (docs/protocol.md, "Decisions"), without a store: every code, and the order that picks it."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.session_helpers import assess, conclude, decision, make_state, query, recall
from workingset.decisions import Conclude, Query, Recall, check_decision, parse_decision
from workingset.encoders import ENCODERS
from workingset.errors import DecisionRejected
from workingset.model.state import load_state


def _parse(d: object, supports_recall: bool = True):
    data = d if isinstance(d, bytes) else json.dumps(d).encode()
    return parse_decision(data, supports_recall=supports_recall)


def _code(d: object, supports_recall: bool = True) -> DecisionRejected:
    with pytest.raises(DecisionRejected) as info:
        _parse(d, supports_recall)
    return info.value


def test_the_three_kinds_decode_to_their_structs():
    assert isinstance(_parse(decision(query())).next, Query)
    assert isinstance(_parse(decision(recall("E000001"))).next, Recall)
    assert isinstance(_parse(decision(conclude("refuted", "E000001"))).next, Conclude)
    d = _parse(decision(query(), assess("E000001"), [{"kind": "question", "text": "why?"}]))
    assert d.assessment.verdict == "supports" and d.notes[0].kind == "question"


@pytest.mark.parametrize("data", [b"{", b"", b"nope", b"[1, 2]", b'"text"', b"42", b"null", b"NaN"])
def test_malformed_json(data):
    err = _code(data)
    assert err.code == "malformed_json"


@pytest.mark.parametrize(
    ("d", "path"),
    [
        ({"next": recall("E000001", "E000002", "E2")}, "$.next.evidence_refs[2]"),
        (
            {"next": {"kind": "query", "source": "s", "query": "q", "purpose": "p", "extra": 1}},
            "$.next",
        ),
        ({"next": {"kind": "guess"}}, "$.next.kind"),
        ({"next": {"source": "s"}}, "$.next"),
        ({}, "$"),
        ({"next": query(), "assessment": None}, "$.assessment"),
        (
            {"next": query(), "assessment": {**assess("E000001"), "confidence": 1.5}},
            "$.assessment.confidence",
        ),
        (
            {"next": query(), "assessment": {**assess("E000001"), "verdict": "maybe"}},
            "$.assessment.verdict",
        ),
        ({"next": query(), "notes": [{"kind": "note", "text": "t"}] * 9}, "$.notes"),
        ({"next": query(), "notes": [{"kind": "todo", "text": "t"}]}, "$.notes[0].kind"),
        ({"next": conclude("supported")}, "$.next.evidence_refs"),
        ({"next": conclude("open", "E000001")}, "$.next.disposition"),
        ({"next": query(), "nxt": 1}, "$"),
    ],
)
def test_schema_violation_names_the_json_path(d, path):
    err = _code(d)
    assert err.code == "schema_violation"
    assert err.details["path"] == path
    assert err.message.endswith(f"at {path}")


@pytest.mark.parametrize("version", [v for v, enc in ENCODERS.items() if not enc.supports_recall])
def test_recall_under_a_version_without_it_is_recall_unsupported(version):
    supports = ENCODERS[version].supports_recall
    # Even a recall that would also break the schema or the count reports the more specific code.
    for d in ({"next": recall("E000001")}, {"next": recall(*[f"E00000{i}" for i in range(1, 7)])},
              {"next": {"kind": "recall", "evidence_refs": "E1", "x": 1}}):  # fmt: skip
        assert _code(d, supports).code == "recall_unsupported"


def test_versions_with_recall_are_exactly_v8_v9_and_v11_to_v16():
    assert sorted(v for v, enc in ENCODERS.items() if enc.supports_recall) == [
        8,
        9,
        11,
        12,
        13,
        14,
        15,
        16,
    ]


@pytest.mark.parametrize("n", [0, 5, 6])
def test_recall_count(n):
    err = _code({"next": recall(*[f"E{i:06d}" for i in range(1, n + 1)])})
    assert err.code == "recall_count" and err.details["count"] == n


def test_recall_duplicate_lists_the_repeated_ids():
    err = _code({"next": recall("E000001", "E000002", "E000001", "E000002")})
    assert err.code == "recall_duplicate" and err.details["ids"] == ["E000001", "E000002"]


# -- checks against the analysis --------------------------------------------------------


def _state(**kw):
    return load_state(json.dumps(make_state(**kw)).encode())


def _pending_state():
    """H1's previous result E000002 is unsettled."""
    raw = make_state()
    raw["evidence"][1]["budget"]["status"] = "unsettled"
    raw["hypotheses"][0]["control"]["previous_result"] = "E000002"
    return load_state(json.dumps(raw).encode())


ALL = tuple(f"E{i:06d}" for i in range(1, 7))


def _check(d, state=None, shown=ALL, hid="H1", supports_recall=True):
    check_decision(_parse(d), state or _state(), hypothesis_id=hid, request_id="demo-r0001", shown=shown,
                   supports_recall=supports_recall)  # fmt: skip


def _check_code(*args, **kw) -> DecisionRejected:
    with pytest.raises(DecisionRejected) as info:
        _check(*args, **kw)
    return info.value


def test_unknown_evidence_lists_every_unknown_id_from_every_citation():
    err = _check_code(
        decision(conclude("refuted", "E000001", "E000099", "E000098"), assess("E000097")),
        _pending_state(),
    )
    assert err.code == "unknown_evidence"
    assert err.details["ids"] == ["E000097", "E000099", "E000098"]
    assert all(i in err.message for i in ("E000097", "E000098", "E000099"))
    assert _check_code(decision(recall("E000001", "E000042"))).details["ids"] == ["E000042"]


def test_rule_a_assessment_missing():
    err = _check_code(decision(query()), _pending_state())
    assert err.code == "assessment_missing" and err.details["expected"] == "E000002"


def test_rule_a_assessment_mismatch_names_the_pending_result():
    err = _check_code(decision(query(), assess("E000001")), _pending_state())
    assert err.code == "assessment_mismatch" and err.details["expected"] == "E000002"


def test_rule_a_an_assessment_without_a_pending_result_is_a_violation():
    err = _check_code(decision(query(), assess("E000001")))
    assert err.code == "assessment_mismatch" and err.details["expected"] is None


def test_rule_a_other_hypotheses_pending_results_do_not_count():
    _check(decision(query()), _pending_state(), hid="H2")


def test_rule_g_ungrounded_reference_lists_ids_and_suggests_recall():
    err = _check_code(
        decision(conclude("supported", "E000001", "E000003", "E000004")), shown=("E000001",)
    )
    assert err.code == "ungrounded_reference"
    assert err.details["ids"] == ["E000003", "E000004"]
    assert "recall" in err.message and "E000003" in err.message and "E000004" in err.message


def test_rule_g_covers_the_assessment_but_not_recall():
    err = _check_code(decision(query(), assess("E000002")), _pending_state(), shown=("E000001",))
    assert err.code == "ungrounded_reference" and err.details["ids"] == ["E000002"]
    _check(decision(recall("E000003", "E000005")), shown=())


def test_rule_g_without_recall_does_not_suggest_it():
    err = _check_code(
        decision(conclude("refuted", "E000003")), shown=("E000001",), supports_recall=False
    )
    assert err.code == "ungrounded_reference" and "recall" not in err.message


def test_the_most_specific_code_wins():
    # Unknown IDs are reported before rule A and rule G, rule A before rule G.
    assert (
        _check_code(decision(conclude("refuted", "E000077")), _pending_state(), shown=()).code
        == "unknown_evidence"
    )
    assert (
        _check_code(decision(conclude("refuted", "E000003")), _pending_state(), shown=()).code
        == "assessment_missing"
    )


# -- property: decoding never fails any other way -------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["next", "kind", "assessment", "notes", "evidence_refs", "source", "query", "purpose", "text", "x"]), inner, max_size=5),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(value=_json, supports_recall=st.booleans())
def test_any_json_decodes_or_is_rejected_with_a_stable_code(value, supports_recall):
    try:
        parse_decision(msgspec.json.encode(value), supports_recall=supports_recall)
    except DecisionRejected as err:
        assert err.code in {
            "malformed_json",
            "schema_violation",
            "recall_unsupported",
            "recall_count",
            "recall_duplicate",
        }


INVALID_VALUES = [
    ({"next": {"kind": "search"}}, True, "$.next.kind", "expected one of: query, recall, conclude"),
    ({"next": {"kind": "search"}}, False, "$.next.kind", "expected one of: query, conclude"),
    (decision(query(), {**assess("E000001"), "verdict": "confirms"}), True, "$.assessment.verdict",
     "expected one of: inconclusive, neutral, refutes, supports"),
    (decision(conclude("open", "E000001")), True, "$.next.disposition", "expected one of: inconclusive, refuted, supported"),
    (decision(query(), notes=[{"kind": "todo", "text": "t"}]), True, "$.notes[0].kind", "expected one of: note, question"),
]  # fmt: skip


@pytest.mark.parametrize(("d", "with_recall", "path", "listed"), INVALID_VALUES)
def test_an_invalid_enum_value_lists_the_valid_ones(d, with_recall, path, listed):
    err = _code(d, with_recall)
    assert err.code == "schema_violation" and err.details["path"] == path and listed in err.message


@pytest.mark.parametrize(("data", "says"), [
    (b"", "the answer is empty: expected one JSON object"),
    (b" \n", "the answer is empty"),
    (b"Here it is:\n```json\n{}\n```\nDone.", "looks like Markdown with a code fence"),
    (b"```json\n{\"next\": \n```", "truncated) inside its ```json fence; expected one JSON object"),
    (b"```json\n{\"next\": {}", "looks like Markdown with a code fence"),
    (b'Sure: {"next": {}}', "text before its JSON object"),
    (b"[1]", "expected one JSON object such as"),
])  # fmt: skip
def test_malformed_json_says_what_it_looks_like_and_what_is_expected(data, says):
    err = _code(data)
    assert err.code == "malformed_json" and says in err.message


def test_a_state_file_names_the_valid_scopes_and_payload_kinds():
    from workingset.errors import InvalidFile

    raw = make_state()
    raw["evidence"][0]["scope"] = "logs"
    with pytest.raises(InvalidFile) as info:
        load_state(json.dumps(raw).encode())
    assert (
        "expected one of: code, document, feedback, log, metric, query_result" in info.value.message
    )
    raw = make_state()
    raw["evidence"][0]["payload"]["kind"] = "table"
    with pytest.raises(InvalidFile) as info:
        load_state(json.dumps(raw).encode())
    assert (
        "expected one of: rows, text" in info.value.message
        and info.value.details["path"] == "$.evidence[0].payload.kind"
    )
