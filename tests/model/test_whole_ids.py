"""IDs, hashes and times match the whole string (issue 23.1), and a legacy analysis they no longer admit can be closed.

Python's `$` also matches before a final newline, so `^demo$` let `"demo\\n"` in: such an
analysis initialised, then every call said `store_corrupt` for good. The patterns now end in
`$(?!\\n)`, the same in Python and in the JSON Schemas `workingset schema` prints.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from jsonschema import Draft202012Validator

from tests.helpers.os_helpers import cli
from tests.helpers.session_helpers import make_state, state_bytes
from tests.helpers.store_sql import execute, query
from workingset.errors import InvalidFile
from workingset.model.state import load_start
from workingset.session.investigation import Investigation
from workingset.session.schemas import json_schema


def CLOCK():
    return "2026-06-10T21:00:00Z"


LEGACY = "demo\n"


def test_create_refuses_an_analysis_id_with_a_trailing_newline(store):
    with pytest.raises(InvalidFile) as err:
        Investigation.create(store, state_bytes(analysis=LEGACY), clock=CLOCK)
    assert err.value.details["path"] == "$.analysis_id"


def test_init_refuses_it_with_invalid_file(tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(state_bytes(analysis=LEGACY))
    res = cli(
        "init", "--state", str(path), "--store", str(tmp_path / "s.sqlite3"), "--json"
    ).rejected("invalid_file")
    assert res.error["details"]["path"] == "$.analysis_id"
    assert (
        not (tmp_path / "s.sqlite3").exists()
        or query(str(tmp_path / "s.sqlite3"), "SELECT * FROM analyses") == []
    )


def _set(doc: dict, path: str, value: object) -> dict:
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return doc


CASES = [
    ("hypotheses.0.id", "H1\n", "$.hypotheses[0].id"),
    ("evidence.0.id", "E000001\n", "$.evidence[0].id"),
    ("evidence.0.collector", "H1\n", "$.evidence[0].collector"),
    ("evidence.0.budget.action", "B000001\n", "$.evidence[0].budget.action"),
    ("notes.0.id", "N000001\n", "$.notes[0].id"),
    (
        "evidence.1.content_hash",
        None,
        "$.evidence[1].content_hash",
    ),  # filled below: the real hash + "\n"
    ("evidence.0.captured_at", "2026-06-10T20:15:00Z\n", "$.evidence[0].captured_at"),
]


@pytest.mark.parametrize("path,value,where", CASES, ids=[c[0] for c in CASES])
def test_a_state_file_with_a_trailing_newline_in_an_id_is_refused(path, value, where):
    doc = make_state()
    if value is None:
        value = doc["evidence"][1]["content_hash"] + "\n"
    with pytest.raises(InvalidFile) as err:
        load_start(json.dumps(_set(doc, path, value)).encode(), "state.json")
    assert err.value.details["path"] == where
    # The exported schema says the same to a JSON Schema validator (ECMA-262 and Python alike).
    assert not Draft202012Validator(json_schema("state")).is_valid(doc)
    assert Draft202012Validator(json_schema("state")).is_valid(make_state())


def _legacy_store(store: str) -> None:
    """`demo` with an open request, copied by hand to an analysis `"demo\\n"`, as a release before this one stored it."""
    with Investigation.create(store, state_bytes(), encoder="v8", clock=CLOCK) as inv:
        inv.next_request("H1")
    # Every row of `demo` again under the legacy ID, the IDs inside the events' JSON too ("demo\n" there).
    execute(store, "INSERT INTO analyses SELECT ?, encoder, status, prior_status, termination_reason, created_at"
                   " FROM analyses WHERE analysis_id = 'demo'", (LEGACY,))  # fmt: skip
    execute(store, "INSERT INTO events SELECT ?, seq, kind, at, replace(data, '\"demo', '\"demo\\n')"
                   " FROM events WHERE analysis_id = 'demo'", (LEGACY,))  # fmt: skip
    execute(store, "INSERT INTO requests SELECT ?, number + 100, ? || substr(request_id, 5), hypothesis, encoder,"
                   " manifest, chars, hash, state_seq, status FROM requests WHERE analysis_id = 'demo'",
            (LEGACY, LEGACY))  # fmt: skip
    execute(store, "UPDATE requests SET status = 'abandoned' WHERE analysis_id = 'demo'")


def test_a_legacy_analysis_can_still_be_cancelled_and_exported_as_stored(store, tmp_path):
    _legacy_store(store)
    s = ["--analysis", LEGACY, "--store", store]
    # It cannot be rendered or shown: its stored IDs fail today's checks.
    assert cli("show", *s, "--json").rejected("store_corrupt")
    refused = cli("export", *s, "--out", str(tmp_path / "checked"), "--json").rejected(
        "store_corrupt"
    )
    assert "--as-stored" in refused.error["message"]
    # But it can be closed, and what is stored can be read out.
    out = cli("cancel", *s, "--json")
    assert out.code == 0, out.err
    assert json.loads(out.out)["status"] == "cancelled"
    assert query(store, "SELECT status FROM analyses WHERE analysis_id = 'demo\n'") == [
        ("cancelled",)
    ]
    assert query(store, "SELECT status FROM requests WHERE analysis_id = 'demo\n'") == [
        ("abandoned",)
    ]
    assert query(store, "SELECT kind FROM events WHERE analysis_id = 'demo\n' ORDER BY seq") == [
        ("created",), ("request",), ("cancel",)]  # fmt: skip
    assert cli("cancel", *s, "--json").rejected("analysis_closed")
    res = cli("export", *s, "--as-stored", "--out", str(tmp_path / "stored"), "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out) == {"analysis_id": LEGACY, "files": [], "as_stored": True}
    journal = [
        msgspec.json.decode(line)
        for line in (tmp_path / "stored" / "journal.jsonl").read_bytes().splitlines()
    ]
    assert journal[0] == {
        "format": "workingset/journal@1",
        "analysis_id": LEGACY,
        "encoder": "investigation_project_v8",
    }
    assert [x["kind"] for x in journal[1:]] == ["created", "request", "cancel", "end"]
    assert (
        journal[1]["state"]["analysis_id"] == LEGACY and journal[2]["request_id"] == "demo\n-r0001"
    )
    assert all(
        ev["payload"] is not None for ev in journal[1]["state"]["evidence"] if ev["content_hash"]
    )
    assert journal[-1] == {"kind": "end", "events": 3, "status": "cancelled", "termination_reason": "cancelled",
                           "state_hash": None}  # fmt: skip
    # The healthy analysis beside it was never touched.
    with Investigation.open(store, "demo") as inv:
        assert inv.show().status == "active"
