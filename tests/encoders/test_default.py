"""v16 is the default (issue 32; v14 was, from issue 22): new analyses and the decision schema use it unless told,
and so do imports.

Every other version stays selectable by name, and a run recorded with another encoder keeps
it: its contexts verify as they were written.
"""

from __future__ import annotations

import json

from tests.helpers.common import BUG17, invoke
from tests.helpers.excerpts import MINI_1X
from tests.helpers.session_helpers import state_bytes
from workingset import DEFAULT_ENCODER, Investigation, json_schema
from workingset.importers import import_trajectory, write_import
from workingset.runs.layout import read_run

DEFAULT = "investigation_project_v16"


def test_the_default_is_v16():
    assert DEFAULT_ENCODER == DEFAULT
    assert json_schema("decision") == json_schema("decision", "v16")
    assert json_schema("decision") != json_schema("decision", "v10")


def test_new_analyses_use_the_default_unless_told(tmp_path):
    with Investigation.create(str(tmp_path / "a.sqlite3"), state_bytes()) as inv:
        assert inv.show().encoder == DEFAULT
        assert inv.next_request().encoder == DEFAULT
    with Investigation.create(str(tmp_path / "b.sqlite3"), state_bytes(), encoder="v10") as inv:
        assert inv.next_request().encoder == "investigation_project_v10"


def test_init_uses_the_default_unless_told(tmp_path):
    (tmp_path / "state.json").write_bytes(state_bytes())
    store = str(tmp_path / "s.sqlite3")
    res = invoke("init", "--state", str(tmp_path / "state.json"), "--store", store, "--json")
    assert res.exit_code == 0, res.output
    res = invoke("next", "--analysis", "demo", "--store", store, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["encoder"] == DEFAULT


def test_imports_record_the_default_unless_told(tmp_path):
    # Imports use the default encoder as new analyses do (docs/import.md); --encoder v7 records v7.
    imported = import_trajectory("mini-swe-agent", MINI_1X)
    write_import(imported, tmp_path / "lib")
    assert {ctx.encoder for _, ctx in read_run(tmp_path / "lib")} == {DEFAULT}
    res = invoke("import", "mini-swe-agent", str(MINI_1X), "--out", str(tmp_path / "cli"))
    assert res.exit_code == 0, res.output
    res = invoke("import", "mini-swe-agent", str(MINI_1X), "--out", str(tmp_path / "v7"),
                 "--encoder", "v7")  # fmt: skip
    assert res.exit_code == 0, res.output
    for run, encoder in (("cli", DEFAULT), ("v7", "investigation_project_v7")):
        res = invoke("verify", str(tmp_path / run), "--json")
        assert res.exit_code == 0, res.output
        assert {c["encoder"] for c in json.loads(res.stdout)["contexts"]} == {encoder}


def test_a_run_recorded_with_another_encoder_still_verifies():
    res = invoke("verify", str(BUG17), "--json")
    assert res.exit_code == 0, res.output
    assert DEFAULT not in {c["encoder"] for c in json.loads(res.stdout)["contexts"]}
