"""Invalid files are rejected on load with `invalid_file` and the JSON path, through the CLI."""

from __future__ import annotations

import json

import msgspec
import pytest

from tests.helpers.factory import sample_state
from workingset.cli.commands import main
from workingset.model.hashing import canonical_json, content_hash
from workingset.model.state import load_state, load_state_or_context
from workingset.runs.layout import make_stored_context


def stored() -> dict:
    return msgspec.to_builtins(make_stored_context("sample-r0001", "v7", "H1", sample_state()))


def set_path(doc: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


CASES = [
    # (what, JSON path to change, new value, path expected in the error)
    ("unknown key", "state.case.titel", "typo", "$.state.case"),
    ("naive timestamp", "state.case.opened_at", "2026-06-10T20:15:00", "$.state.case.opened_at"),
    (
        "impossible date",
        "state.evidence.0.captured_at",
        "2026-02-30T20:15:00Z",
        "$.state.evidence[0].captured_at",
    ),
    ("malformed hypothesis ID", "state.hypotheses.1.id", "h2", "$.state.hypotheses[1].id"),
    ("malformed evidence ID", "state.evidence.0.id", "E12", "$.state.evidence[0].id"),
    ("malformed analysis ID", "state.analysis_id", "Bug 17", "$.state.analysis_id"),
    ("dangling collector", "state.evidence.2.collector", "H7", "$.state.evidence[2].collector"),
    (
        "dangling previous result",
        "state.hypotheses.0.control.previous_result",
        "E000099",
        "$.state.hypotheses[0].control.previous_result",
    ),
    (
        "dangling history reference",
        "state.hypotheses.0.history.0.evidence_refs",
        ["E000404"],
        "$.state.hypotheses[0].history[0].evidence_refs[0]",
    ),
    ("dangling note hypothesis", "state.notes.1.hypothesis", "H8", "$.state.notes[1].hypothesis"),
    (
        "dangling recall ID",
        "state.recall.H1.evidence_refs",
        ["E000002", "E000777"],
        "$.state.recall.H1.evidence_refs[1]",
    ),
    (
        "recall of five",
        "state.recall.H1.evidence_refs",
        ["E000001", "E000002", "E000003", "E000004", "E000006"],
        "$.state.recall.H1.evidence_refs",
    ),
    ("empty recall", "state.recall.H1.evidence_refs", [], "$.state.recall.H1.evidence_refs"),
    (
        "repeated recall ID",
        "state.recall.H1.evidence_refs",
        ["E000002", "E000002"],
        "$.state.recall.H1.evidence_refs[1]",
    ),
    (
        "recall of unknown hypothesis",
        "state.recall.H9",
        {"evidence_refs": ["E000001"], "iteration": 1},
        "$.state.recall.H9",
    ),
    (
        "hash of another payload",
        "state.evidence.0.content_hash",
        content_hash({"kind": "text", "language": None, "text": ""}),
        "$.state.evidence[0].content_hash",
    ),
    (
        "hash without payload",
        "state.evidence.4.content_hash",
        "xxh3-128:" + "0" * 32,
        "$.state.evidence[4].content_hash",
    ),
    (
        "confidence above 1",
        "state.hypotheses.0.confidence",
        1.5,
        "$.state.hypotheses[0].confidence",
    ),
    ("unknown scope", "state.evidence.0.scope", "trace", "$.state.evidence[0].scope"),
    (
        "unknown payload kind",
        "state.evidence.1.payload",
        {"kind": "html", "text": "x"},
        "$.state.evidence[1].payload.kind",
    ),
    ("wrong format tag", "format", "workingset/stored-context@2", "$.format"),
    ("selected hypothesis absent", "hypothesis", "H9", "$.hypothesis"),
    ("duplicate evidence ID", "state.evidence.1.id", "E000001", "$.state.evidence[1].id"),
]


@pytest.mark.parametrize("what,path,value,where", CASES, ids=[c[0] for c in CASES])
def test_invalid_file_names_the_path(tmp_path, capsys, what, path, value, where):
    doc = stored()
    set_path(doc, path, value)
    file = tmp_path / "ctx.json"
    file.write_bytes(msgspec.json.encode(doc))
    assert main(["render", str(file), "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: invalid_file: ") and err.count("\n") == 1
    assert "Traceback" not in err + out
    error = json.loads(out)["error"]
    assert error["code"] == "invalid_file"
    assert error["details"]["path"] == where, error["message"]
    assert where in error["message"]


@pytest.mark.parametrize(
    "raw,where",
    [(b"{not json", "$"), (b"[1, 2]", "$"), (b'{"format": NaN}', "$"), (b"", "$")],
    ids=["not json", "not an object", "NaN", "empty"],
)
def test_unparseable_files(tmp_path, capsys, raw, where):
    file = tmp_path / "bad.json"
    file.write_bytes(raw)
    assert main(["render", str(file)]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("error: invalid_file: ") and "Traceback" not in err


def test_integers_must_fit_in_64_bits():
    doc = stored()
    doc["state"]["evidence"][0]["payload"]["rows"][0][2] = 2**64
    doc["state"]["evidence"][0]["content_hash"] = content_hash(
        doc["state"]["evidence"][0]["payload"]
    )
    with pytest.raises(Exception) as err:
        load_state_or_context(msgspec.json.encode(doc))
    assert err.value.code == "invalid_file"
    assert err.value.details["path"] == "$.state.evidence[0].payload.rows[0][2]"


def test_missing_file_and_directory(capsys, tmp_path):
    assert main(["render", str(tmp_path / "absent.json")]) == 2
    assert main(["verify", str(tmp_path / "absent")]) == 2
    assert main(["verify", str(tmp_path)]) == 2  # exists, but holds no stored context
    _, err = capsys.readouterr()
    assert err.count("error: invalid_file: ") == 3


def test_usage_errors_follow_the_contract(capsys):
    assert main(["render"]) == 2
    assert main(["render", "x.json", "--no-such-flag", "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines()[0].startswith("error: usage_error: ")
    assert json.loads(out)["error"]["code"] == "usage_error"


def test_key_order_does_not_matter_and_hash_is_canonical():
    doc = stored()["state"]
    reordered = json.loads(json.dumps(doc, sort_keys=True))
    reversed_keys = json.loads(json.dumps({k: doc[k] for k in reversed(list(doc))}))
    a = load_state(json.dumps(reordered).encode())
    b = load_state(json.dumps(reversed_keys).encode())
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    payload = doc["evidence"][0]["payload"]
    assert canonical_json(payload).startswith(b'{"columns":')
    assert doc["evidence"][0]["content_hash"] == content_hash(payload)


def test_bare_state_or_stored_context():
    doc = stored()
    a = load_state_or_context(msgspec.json.encode(doc))
    b = load_state_or_context(msgspec.json.encode(doc["state"]))
    assert msgspec.json.encode(a) == msgspec.json.encode(b)


def test_lone_surrogates_are_invalid_even_in_states_built_in_python():
    from workingset.model.state import validate_state

    state = sample_state()
    state.notes[0].text = "x\ud800"
    with pytest.raises(Exception) as err:
        validate_state(state)
    assert err.value.code == "invalid_file" and err.value.details["path"] == "$.notes[0].text"


@pytest.mark.parametrize(
    "stamp", ["2026-06-10t20:15:00z", "2016-12-31T23:59:60Z", "2026-06-10T20:15:00.123456789+05:30"]
)
def test_rfc3339_forms_are_accepted_and_kept_verbatim(stamp):
    doc = stored()
    doc["state"]["case"]["opened_at"] = stamp
    state = load_state_or_context(msgspec.json.encode(doc))
    assert state.case.opened_at == stamp
