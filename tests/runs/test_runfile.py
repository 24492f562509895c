"""The run file (`workingset/run@1`): exact round trips, both layouts everywhere, linear size, damage."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.helpers.common import BUG17
from tests.helpers.excerpts import EXCERPTS, MINI_1X, OPENHANDS
from workingset.cli.commands import app
from workingset.errors import InvalidFile, UsageError, WorkingsetError
from workingset.importers import import_trajectory, write_import
from workingset.runs.layout import convert_run, pick_context, read_run
from workingset.runs.runfile import RUN_FORMAT, pack, unpack

ENV = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV, terminal_width=200)


def _contexts(run: Path) -> list:
    return [ctx for _, ctx in read_run(run)]


@pytest.mark.parametrize("source", list(EXCERPTS), ids=lambda p: p.name)
def test_every_imported_run_round_trips_exactly(source: Path, tmp_path: Path):
    im = import_trajectory(EXCERPTS[source][0], source)
    write_import(im, tmp_path / "files", layout="contexts")
    write_import(im, tmp_path / "packed")
    assert msgspec.json.encode(_contexts(tmp_path / "packed")) == msgspec.json.encode(
        _contexts(tmp_path / "files")
    )
    assert _contexts(tmp_path / "packed" / "run.json") == _contexts(
        tmp_path / "packed"
    )  # the file itself reads too


def test_bug17_round_trips_through_convert_both_ways(tmp_path: Path):
    assert convert_run(BUG17, tmp_path / "packed")[0] == "run"
    assert convert_run(tmp_path / "packed", tmp_path / "back")[0] == "contexts"
    for name in sorted(p.name for p in BUG17.glob("*.json")):
        assert (tmp_path / "back" / name).read_bytes() == (
            BUG17 / name
        ).read_bytes()  # byte for byte


def test_payloads_and_records_are_stored_once(tmp_path: Path):
    im = import_trajectory("openhands", OPENHANDS)
    write_import(im, tmp_path / "run")
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    payloads = {e.content_hash for e in im.states[-1].evidence if e.payload is not None}
    assert payloads <= set(run["objects"])  # keyed by the hash the evidence already carries
    texts = [
        v["text"]
        for v in run["objects"].values()
        if isinstance(v, dict) and v.get("kind") == "text"
    ]
    assert len(texts) == len(set(texts)) == len(payloads)
    # each context adds what is new: the last step's unsettled item and the previous one settled
    last = run["contexts"][-1]["state"]["evidence"]
    assert (
        last["keep"] == len(im.states[-2].evidence) - 1
        and len(last["add"]) == len(im.states[-1].evidence) - last["keep"]
    )


def test_a_run_file_costs_the_last_state_plus_a_small_skeleton_per_turn():
    # Every record of an imported run is in its last state (or is the unsettled version of
    # an item settled there): the run file is that state plus each turn's skeleton.
    im = import_trajectory("mini-swe-agent", MINI_1X)
    from workingset.importers import ENCODER, HYPOTHESIS
    from workingset.runs.layout import make_stored_context

    ctx = [
        make_stored_context(im.request_id(k), ENCODER, HYPOTHESIS, s)
        for k, s in enumerate(im.states, 1)
    ]
    last = len(msgspec.json.encode(ctx[-1]))
    assert len(pack(ctx)) <= last + 2500 * len(ctx)
    assert (
        sum(len(msgspec.json.encode(c)) for c in ctx) > 2 * last
    )  # what the stored-context layout costs


def test_verify_compare_and_render_read_both_layouts(tmp_path: Path):
    convert_run(BUG17, tmp_path / "packed")
    for run in (str(BUG17), str(tmp_path / "packed"), str(tmp_path / "packed" / "run.json")):
        result = invoke("verify", run)
        assert result.exit_code == 0 and result.stdout.endswith(
            "18 of 18 stored contexts verified\n"
        ), result.output
    a = invoke("compare", str(BUG17), "--all", "--json")
    b = invoke("compare", str(tmp_path / "packed"), "--all", "--json")
    assert json.loads(a.stdout)["total"] == json.loads(b.stdout)["total"]
    first = sorted(BUG17.glob("*.json"))[0]
    request = json.loads(first.read_text(encoding="utf-8"))["request_id"]
    single = invoke("render", str(first))
    packed = invoke("render", str(tmp_path / "packed"), "--request", request)
    assert single.exit_code == packed.exit_code == 0 and single.stdout == packed.stdout


def test_render_of_a_run_needs_a_known_request(tmp_path: Path):
    convert_run(BUG17, tmp_path / "packed")
    with pytest.raises(UsageError, match="is a run: name the context"):
        pick_context(tmp_path / "packed")
    with pytest.raises(UsageError, match=r"no request 'x' in .*\(18 contexts\)"):
        pick_context(tmp_path / "packed", "x")
    result = invoke("render", str(tmp_path / "packed"), "--request", "nope")
    assert result.exit_code == 2 and result.stderr.startswith(
        "error: usage_error: no request 'nope'"
    )


def test_convert_cli_and_its_refusals(tmp_path: Path):
    result = invoke("convert", str(BUG17), "--out", str(tmp_path / "p"))
    assert result.exit_code == 0 and "as layout run" in result.stdout, result.output
    assert (
        invoke("convert", str(tmp_path / "p"), "--out", str(tmp_path / "p")).exit_code == 2
    )  # not into a run
    result = invoke("convert", str(BUG17), "--out", str(tmp_path / "q"), "--layout", "zip")
    assert result.exit_code == 2 and "available: run, contexts" in result.stderr
    (tmp_path / "p" / "extra.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InvalidFile, match="holds both a run file"):
        read_run(tmp_path / "p")


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (lambda r: r.update(format="workingset/run@9"), "not a run file"),
        (lambda r: r["objects"].clear(), "no object"),
        (lambda r: r["contexts"][1]["state"]["evidence"].update(keep=999), "keeps 999 entries"),
        (lambda r: r["contexts"][0]["state"].update(notes=[1]), "expected {keep, add}"),
        (lambda r: r["contexts"][0]["state"].pop("hypotheses"), "state skeleton"),
        (lambda r: r.update(extra=1), "not a run file"),
    ],
)  # fmt: skip
def test_damaged_run_files_are_invalid_file(tmp_path: Path, damage, needle):
    convert_run(BUG17, tmp_path / "p")
    path = tmp_path / "p" / "run.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    damage(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InvalidFile, match=needle):
        read_run(tmp_path / "p")
    assert raw.get("format", RUN_FORMAT)


def test_a_changed_record_fails_validation_like_a_stored_context(tmp_path: Path):
    convert_run(BUG17, tmp_path / "p")
    path = tmp_path / "p" / "run.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    text = next(
        k for k, v in raw["objects"].items() if isinstance(v, dict) and v.get("kind") == "text"
    )
    raw["objects"][text]["text"] += "tampered"
    with pytest.raises(InvalidFile, match="content hash"):
        unpack(json.dumps(raw).encode(), "run.json")


def test_a_run_file_is_held_to_the_input_limits_once_and_each_context_to_the_size_limit(
    tmp_path: Path, monkeypatch
):
    convert_run(BUG17, tmp_path / "p")
    data = (tmp_path / "p" / "run.json").read_bytes()
    twice = data.replace(
        b'"format":', b'"format":"x","format":', 1
    )  # a key given twice is refused, never collapsed
    with pytest.raises(InvalidFile, match="gives the key 'format' twice"):
        unpack(twice, "run.json")
    # A payload shared by many items is stored once in the run file but repeated in its context.
    ctx = _contexts(BUG17)[0]
    big = max(ctx.state.evidence, key=lambda e: len(msgspec.json.encode(e.payload)))
    copies = [msgspec.structs.replace(big, id=f"E{900000 + k:06d}") for k in range(30)]
    ctx = msgspec.structs.replace(
        ctx, state=msgspec.structs.replace(ctx.state, evidence=[*ctx.state.evidence, *copies])
    )
    packed, size = pack([ctx]), len(msgspec.json.encode(ctx))
    assert len(packed) < size
    assert unpack(packed, "run.json") == [ctx]
    monkeypatch.setenv("WORKINGSET_MAX_FILE_BYTES", str(len(packed)))
    with pytest.raises(WorkingsetError) as caught:
        unpack(packed, "run.json")
    assert caught.value.code == "too_large" and "context 1" in str(caught.value)
