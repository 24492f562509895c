"""Every importer on the trimmed real trajectories in `tests/data/` (a fresh clone tests them all).

The excerpts are whole objects of public runs (sources in `tests/data/README.md`); the checks
read them with the standard `json` module as an independent reference. Variants of the
metadata (a SWE-agent 1.x `replay_config`, OpenHands runs without metrics or never finished)
are built from them in a temporary directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.helpers.excerpts import (
    EXCERPTS,
    MINI_1X,
    MINI_2X,
    OPENHANDS,
    SWE_0X,
)
from workingset.errors import InvalidFile
from workingset.importers import import_trajectory, write_import
from workingset.runs.layout import read_run, verify_context


def _actions(im) -> list:
    return [e for e in im.states[-1].evidence if e.scope != "feedback"]


def _write(tmp_path: Path, raw: object, name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return path


def _openhands_copy(tmp_path: Path) -> Path:
    out = tmp_path / "conv"
    shutil.copytree(OPENHANDS, out)
    for p in out.rglob("*.json"):
        p.chmod(0o644)
    return out


def _edit_json(path: Path, change) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


@pytest.mark.parametrize("source", list(EXCERPTS), ids=lambda p: p.name)
def test_each_excerpt_imports_verifies_and_is_deterministic(source: Path, tmp_path: Path):
    fmt, steps = EXCERPTS[source]
    im = import_trajectory(fmt, source)
    assert len(im.states) == steps and len(_actions(im)) == steps
    assert msgspec.json.encode(import_trajectory(fmt, source).states) == msgspec.json.encode(
        im.states
    )
    write_import(im, tmp_path / "run")
    verdicts = [verify_context(str(p), ctx) for p, ctx in read_run(tmp_path / "run")]
    assert [v.status for v in verdicts] == ["ok"] * steps


def test_swe_agent_0x_outputs_are_the_source_bytes():
    raw = json.loads(SWE_0X.read_text(encoding="utf-8"))
    im = import_trajectory("swe-agent", SWE_0X)
    for ev, step in zip(_actions(im), raw["trajectory"], strict=True):
        assert ev.capture.query == step["action"] and ev.payload.text == step["observation"]
    assert [e.capture.origin for e in _actions(im)] == [
        "swe-agent:create", "swe-agent:bash", "swe-agent:find_file", "swe-agent:bash", "swe-agent:submit",
    ]  # fmt: skip
    assert im.trajectory.model is None and im.analysis == "swe-agent-0.x-pydicom-1458.excerpt"


def test_swe_agent_1x_replay_config_gives_model_instance_and_limits(tmp_path: Path):
    raw = json.loads(SWE_0X.read_text(encoding="utf-8"))
    config = {
        "env": {"deployment": {"type": "docker"}},
        "agent": {"name": "main", "model": {"name": "claude-3-7-sonnet-20250219", "per_instance_cost_limit": 2.5,
                                            "total_cost_limit": 0.0, "per_instance_call_limit": 75, "temperature": 0.0}},
        "problem_statement": {"type": "swe_bench", "id": "pydicom__pydicom-1458"},
    }  # fmt: skip
    raw.update(
        environment="pydicom__pydicom-1458", replay_config=json.dumps(config)
    )  # 1.x writes it as a JSON string
    raw["info"]["swe_agent_version"] = "1.0.1"
    im = import_trajectory("swe-agent", _write(tmp_path, raw, "run.traj"))
    state = im.states[-1]
    assert (
        im.trajectory.model == "claude-3-7-sonnet-20250219"
        and state.case.entities[0].source == im.trajectory.model
    )
    assert im.analysis == "pydicom__pydicom-1458" and state.case.title == "pydicom__pydicom-1458"
    assert state.budget.max_iterations == 75 and state.budget.max_cost == 2.5
    # No problem-statement ID: the environment names the instance; no call limit: the step count.
    config["problem_statement"] = {"type": "text"}
    config["agent"]["model"]["per_instance_call_limit"] = 0
    raw["replay_config"] = config  # an object is read the same way
    im = import_trajectory("swe-agent", _write(tmp_path, raw, "run.traj"))
    assert im.analysis == "pydicom__pydicom-1458" and im.states[-1].budget.max_iterations == 5
    assert any("no call limit" in r for r in im.trajectory.remarks)
    raw.update(
        replay_config="opaque replay config", environment="docker"
    )  # not JSON; a deployment, not an instance
    im = import_trajectory("swe-agent", _write(tmp_path, raw, "run.traj"))
    assert (
        im.analysis == "run"
        and im.trajectory.model is None
        and im.states[-1].budget.max_cost is None
    )
    assert any(r.startswith("replay_config is not a JSON object") for r in im.trajectory.remarks)


def test_mini_1x_format_error_and_elided_output():
    im = import_trajectory("mini-swe-agent", MINI_1X)
    [feedback] = [e for e in im.states[-1].evidence if e.scope == "feedback"]
    assert feedback.capture.origin == "mini-swe-agent:format_error"
    assert [e.capture.truncated for e in _actions(im)] == [False, True, False, None]


def test_mini_2x_format_error_marked_in_the_file_without_the_reply(tmp_path: Path):
    # mini-swe-agent 2.x does not keep a reply without a tool call; the feedback it sends
    # says what it is in `extra.interrupt_type`.
    raw = json.loads(MINI_2X.read_text(encoding="utf-8"))
    error = {"role": "user", "content": "No tool calls found in the response. Every response MUST include at least one tool call.",
             "extra": {"interrupt_type": "FormatError"}}  # fmt: skip
    raw["messages"].insert(4, error)  # after a tool answer, where the lost reply was
    im = import_trajectory("mini-swe-agent", _write(tmp_path, raw, "m.traj.json"))
    [feedback] = [e for e in im.states[-1].evidence if e.scope == "feedback"]
    assert (
        feedback.capture.origin == "mini-swe-agent:format_error"
        and feedback.payload.text == error["content"]
    )
    error["extra"]["interrupt_type"] = "UserInterruption"
    im = import_trajectory("mini-swe-agent", _write(tmp_path, raw, "m.traj.json"))
    assert [e.capture.origin for e in im.states[-1].evidence if e.scope == "feedback"] == [
        "mini-swe-agent:user_interruption"
    ]


def test_openhands_excerpt_charges_calls_that_answer_no_action():
    im = import_trajectory("openhands", OPENHANDS)
    base = json.loads((OPENHANDS / "base_state.json").read_text(encoding="utf-8"))
    total = sum(m["accumulated_cost"] for m in base["stats"]["service_to_metrics"].values())
    assert im.states[-1].budget.cost_used == pytest.approx(total)
    assert any("condenser" in r and "answer no action" in r for r in im.trajectory.remarks)
    assert not any("did not finish" in r for r in im.trajectory.remarks)


def test_openhands_events_folder_is_named_after_its_conversation(tmp_path: Path):
    conv = _openhands_copy(tmp_path)
    assert import_trajectory("openhands", conv / "events").analysis == "conv"
    nested = tmp_path / "abc123" / "event_service"
    shutil.copytree(conv, nested)
    assert import_trajectory("openhands", nested / "events").analysis == "abc123"


def test_openhands_without_metrics_or_base_state_says_costs_are_unknown(tmp_path: Path):
    conv = _openhands_copy(tmp_path)
    _edit_json(conv / "base_state.json", lambda b: b.pop("stats"))
    im = import_trajectory("openhands", conv)
    assert im.states[-1].budget.cost_used == 0
    assert any("records no model calls" in r for r in im.trajectory.remarks)
    # and without the calls' Unix times the naive event times have no known offset
    assert any("taken as UTC" in r for r in im.trajectory.remarks)
    assert im.states[0].case.opened_at.endswith("Z")
    (conv / "base_state.json").unlink()
    im = import_trajectory("openhands", conv)
    assert (
        any(r.startswith("no base_state.json") for r in im.trajectory.remarks)
        and im.trajectory.model is None
    )


def test_openhands_unfinished_conversation_is_flagged(tmp_path: Path):
    conv = _openhands_copy(tmp_path)
    _edit_json(conv / "base_state.json", lambda b: b.update(agent_status="idle"))
    for p in (conv / "events").glob("event-0010[34]-*.json"):
        p.unlink()  # the finish action and its answer
    im = import_trajectory("openhands", conv)
    assert (
        "the conversation did not finish: no finish action, agent_status 'idle'"
        in im.trajectory.remarks
    )


def test_openhands_single_file_event_list_is_read_like_the_directory(tmp_path: Path):
    conv = import_trajectory("openhands", OPENHANDS)
    events = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((OPENHANDS / "events").glob("event-*.json"))
    ]
    for event in events:  # the flattened tool_call of later SDK builds
        call = event.get("tool_call")
        if call:
            event["tool_call"] = {
                "id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
                "origin": "completion",
            }
    im = import_trajectory("openhands", _write(tmp_path, events, "traj_astropy.json"))
    assert [e.capture.query for e in _actions(im)] == [e.capture.query for e in _actions(conv)]
    assert [e.payload for e in _actions(im)] == [e.payload for e in _actions(conv)]
    assert im.analysis == "traj_astropy" and any(
        r.startswith("no base_state.json") for r in im.trajectory.remarks
    )


V0_EVENTS = [  # the shape of legacy OpenHands (V0) `traj_*.json` files
    {"id": 0, "timestamp": "2025-01-01T10:00:00", "source": "user", "message": "Fix the bug", "action": "message", "args": {"content": "Fix the bug"}},
    {"id": 1, "timestamp": "2025-01-01T10:00:05", "source": "agent", "message": "Running command: ls", "action": "run", "args": {"command": "ls"}},
    {"id": 2, "timestamp": "2025-01-01T10:00:06", "source": "agent", "message": "Command finished", "cause": 1, "observation": "run", "content": "a.py", "extras": {"command": "ls"}},
]  # fmt: skip


@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent", "openhands"])
def test_openhands_v0_event_list_is_refused_saying_what_it_is(fmt: str, tmp_path: Path):
    with pytest.raises(
        InvalidFile, match="an OpenHands V0 event list .*workingset reads OpenHands V1"
    ):
        import_trajectory(fmt, _write(tmp_path, V0_EVENTS, "traj_x.json"))


@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent", "openhands"])
def test_a_json_string_is_refused_saying_what_it_is(fmt: str, tmp_path: Path):
    log = "ConversationStateUpdate(key=agent_status, value=idle)\nActionEvent (agent)\n  Action: ExecuteBashAction\n"
    with pytest.raises(InvalidFile, match="one JSON string, not a trajectory"):
        import_trajectory(fmt, _write(tmp_path, log, "traj_x.json"))


WRONG = [
    (src, fmt)
    for src, (right, _) in EXCERPTS.items()
    for fmt in ("swe-agent", "mini-swe-agent", "openhands")
    if fmt != right
]


@pytest.mark.parametrize(("source", "fmt"), WRONG, ids=[f"{p.name}-as-{f}" for p, f in WRONG])
def test_a_wrong_format_names_the_right_one_in_every_direction(source: Path, fmt: str):
    right = EXCERPTS[source][0]
    with pytest.raises(InvalidFile, match=f"not the format {fmt}; use the format {right}"):
        import_trajectory(fmt, source)


@pytest.mark.parametrize(
    "part", ["base_state.json", "events/event-00001-01e64b12-a4a2-4c9f-84a0-87bca8f989be.json"]
)
def test_a_part_of_an_openhands_conversation_says_to_give_the_directory(part: str):
    with pytest.raises(
        InvalidFile, match="import the conversation directory with the format openhands"
    ):
        import_trajectory("openhands", OPENHANDS / part)
