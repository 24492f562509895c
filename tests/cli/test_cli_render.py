"""`workingset render` and `workingset verify` on good and tampered runs."""

from __future__ import annotations

import json

import msgspec
import pytest

from tests.helpers.factory import sample_state
from workingset.cli.commands import main
from workingset.encoders import render
from workingset.model.state import dump_json
from workingset.runs.layout import make_stored_context, write_run


@pytest.fixture
def run_dir(tmp_path):
    state = sample_state()
    write_run(tmp_path, [make_stored_context(f"sample-r{n:04d}", f"v{v}", h, state)
                         for n, (v, h) in enumerate([(7, "H1"), (8, "H2"), (10, "H1")], start=1)])  # fmt: skip
    return tmp_path


def test_render_prints_the_exact_text(run_dir, capsysbinary):
    assert main(["render", str(run_dir / "sample-r0002.json")]) == 0
    out = capsysbinary.readouterr().out.decode("utf-8")
    assert out == render(sample_state(), "H2", "v8").text


def test_render_json_with_another_encoder(run_dir, capsys):
    assert (
        main(
            [
                "render",
                str(run_dir / "sample-r0002.json"),
                "--encoder",
                "investigation_project_v9",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"encoder", "hypothesis", "text", "shown", "indexed", "chars", "hash"}
    expected = render(sample_state(), "H2", "v9")
    assert doc["encoder"] == "investigation_project_v9" and doc["hash"] == expected.hash
    assert doc["shown"] == list(expected.shown) and doc["indexed"] == list(expected.indexed)
    assert doc["chars"] == len(doc["text"])


def test_verify_passes_on_a_good_run(run_dir, capsys):
    assert main(["verify", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 stored contexts verified" in out
    assert main(["verify", str(run_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and [c["status"] for c in doc["contexts"]] == ["ok", "ok", "ok"]


def test_verify_lists_a_mismatch_with_its_diff(run_dir, capsys):
    path = run_dir / "sample-r0002.json"
    doc = msgspec.json.decode(path.read_bytes())
    doc["encoder"] = "investigation_project_v9"  # rendered by v8, labelled v9
    path.write_bytes(msgspec.json.encode(doc))
    tampered = run_dir / "sample-r0003.json"
    doc = msgspec.json.decode(tampered.read_bytes())
    doc["state"]["case"]["title"] = "Edited afterwards"
    tampered.write_bytes(msgspec.json.encode(doc))

    assert main(["verify", str(run_dir)]) == 2
    out, err = capsys.readouterr()
    assert (
        err.startswith("error: hash_mismatch: 2 of 3 stored contexts")
        and "sample-r0002, sample-r0003" in err
    )
    assert "the recorded hash is what investigation_project_v8 renders" in out
    assert "no encoder version reproduces the recorded hash" in out
    assert "chars: recorded" in out


def test_verify_reports_unrecorded_contexts_without_failing(run_dir, capsys):
    ctx = make_stored_context("sample-r0004", "v7", "H1", sample_state())
    (run_dir / "sample-r0004.json").write_bytes(
        dump_json(msgspec.structs.replace(ctx, rendered=None))
    )
    assert main(["verify", str(run_dir)]) == 0
    assert "unrecorded" in capsys.readouterr().out
