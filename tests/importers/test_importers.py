"""Importers against the real corpus: step mapping, byte-exact outputs, flags, states.

The corpus lives beside the repository (`../shared/corpus/`) and is never copied in; these
tests read the raw sources with the standard `json` module as an independent check. Cases the
corpus lacks (several tool calls in one reply, a history-only SWE-agent file) use the small
public excerpts in `tests/data/` (sources in its README).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from tests.helpers.real_corpus import CORPUS, needs_corpus
from tests.helpers.real_corpus import CORPUS_SOURCES as SOURCES
from workingset.errors import InvalidFile, UsageError
from workingset.importers import FORMATS, import_trajectory, write_import
from workingset.model.state import TextPayload

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def imported():
    """Every corpus trajectory imported once for the whole module."""
    return {name: import_trajectory(fmt, CORPUS / name) for name, (fmt, _) in SOURCES.items()}


def _raw(name: str):
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def _events(name: str) -> list[dict]:
    files = sorted((CORPUS / name / "events").glob("event-*.json"))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def _actions(im) -> list:
    return [e for e in im.states[-1].evidence if e.scope != "feedback"]


def test_the_registry_lists_three_formats():
    assert list(FORMATS) == ["swe-agent", "mini-swe-agent", "openhands"]


@needs_corpus
@pytest.mark.parametrize("name", list(SOURCES))
def test_one_state_per_action_each_after_k_steps(imported, name):
    im = imported[name]
    assert len(im.states) == SOURCES[name][1]
    for k, state in enumerate(im.states, start=1):
        actions = [e for e in state.evidence if e.scope != "feedback"]
        assert state.iteration == k and len(actions) == k
        h1 = state.hypotheses[0]
        assert [h.id for h in state.hypotheses] == ["H1"] and h1.confidence == 0.5
        assert h1.control.previous_result == actions[-1].id and h1.control.iterations_used == k
        assert [e.budget.status for e in actions] == ["settled"] * (k - 1) + ["unsettled"]
        assessed = [r for r in h1.history if r.kind == "assessment"]
        assert [r.evidence_refs for r in assessed] == [[e.id] for e in actions[:-1]]
        assert {r.verdict for r in assessed} <= {"neutral"} and {
            r.confidence for r in h1.history
        } == {None}
        assert all(n.iteration <= k for n in state.notes) and all(
            e.iteration <= k for e in state.evidence
        )
        assert [e.id for e in state.evidence] == [
            f"E{i:06d}" for i in range(1, len(state.evidence) + 1)
        ]


@needs_corpus
@pytest.mark.parametrize("name", list(SOURCES))
def test_import_is_deterministic(imported, name):
    again = import_trajectory(SOURCES[name][0], CORPUS / name)
    assert msgspec.json.encode(again.states) == msgspec.json.encode(imported[name].states)


@needs_corpus
def test_swe_agent_commands_outputs_and_thoughts_are_the_source_bytes(imported):
    name = "sweagent-gpt4-pydicom-1458.traj"
    im, raw = imported[name], _raw(name)
    actions = _actions(im)
    for ev, step in zip(actions, raw["trajectory"], strict=True):
        assert ev.capture.query == step["action"]  # trailing newline included
        assert ev.payload == TextPayload(language=None, text=step["observation"])
        assert ev.capture.truncated is None and ev.capture.coverage is None
    assert [n.text for n in im.states[-1].notes] == [s["thought"] for s in raw["trajectory"]]
    assert actions[10].payload.text == ""  # `rm` printed nothing: kept as an empty output
    assert [e.capture.origin for e in actions[:5]] == [
        "swe-agent:create", "swe-agent:edit", "swe-agent:bash", "swe-agent:find_file", "swe-agent:open",
    ]  # fmt: skip
    case = im.states[-1].case
    assert case.title == "Pixel Representation attribute should be optional for pixel data handler"
    assert case.opened_at == "1970-01-01T00:00:00Z"
    assert f"ISSUE:\n{case.statement}\n\nINSTRUCTIONS:\n" in raw["history"][2]["content"]


@needs_corpus
def test_mini_v2_tool_calls_exit_codes_and_submission(imported):
    name = "mini-v2-deepseek-sqlfluff-1625.traj.json"
    im, raw = imported[name], _raw(name)
    calls = [m for m in raw["messages"] if m["role"] == "assistant"]
    tools = {m["tool_call_id"]: m for m in raw["messages"] if m["role"] == "tool"}
    actions = _actions(im)
    assert (
        im.analysis == "sqlfluff__sqlfluff-1625"
        and im.states[0].case.title == "sqlfluff__sqlfluff-1625"
    )
    for ev, msg in zip(actions, calls, strict=True):
        action = msg["extra"]["actions"][0]
        assert ev.capture.query == action["command"] and ev.capture.origin == "mini-swe-agent:bash"
        tool = tools.get(action["tool_call_id"])
        if tool is None:  # the submit call is answered by the exit message, the submission
            assert ev.payload.text == raw["messages"][-1]["content"] and ev.capture.coverage is None
            continue
        assert (
            ev.payload.text == tool["content"]
        )  # what the model saw, <returncode> wrapper included
        assert ev.capture.coverage == f"exit_code={tool['extra']['returncode']}"
        assert ev.capture.truncated is False
    assert sum(e.budget.cost for e in actions) == pytest.approx(
        raw["info"]["model_stats"]["instance_cost"]
    )
    assert im.states[-1].budget.max_iterations == 250 and im.states[-1].budget.max_cost == 3.0
    assert im.states[0].case.opened_at == "2026-04-13T07:11:06.240646Z"
    task = raw["messages"][1]["content"]
    assert task.startswith(
        "<pr_description>\nConsider the following PR description:\n"
        + im.states[0].case.statement
        + "\n</pr_description>"
    )


@needs_corpus
def test_mini_v1_text_actions_truncation_and_format_error(imported):
    name = "mini-v1-gemini3pro-pylint-6386.traj.json"
    im, raw = imported[name], _raw(name)
    msgs = raw["messages"]
    state = im.states[-1]
    actions = _actions(im)
    replies = [(m, msgs[i + 1]) for i, m in enumerate(msgs) if m["role"] == "assistant"
               and len(re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.DOTALL)) == 1]  # fmt: skip
    for ev, (reply, answer) in zip(actions, replies, strict=True):
        assert (
            ev.capture.query
            == re.findall(r"```bash\s*\n(.*?)\n```", reply["content"], re.DOTALL)[0].strip()
        )
        assert ev.payload.text == answer["content"]
    elided = [e.id for e in actions if "<elided_chars>" in e.payload.text]
    assert len(elided) == 5 and elided == [e.id for e in actions if e.capture.truncated]
    assert all(e.capture.truncated is False for e in actions[:-1] if e.id not in elided)
    assert actions[-1].capture.truncated is None and actions[-1].payload.text.startswith(
        "diff --git"
    )
    [feedback] = [e for e in state.evidence if e.scope == "feedback"]
    assert (
        feedback.capture.origin == "mini-swe-agent:format_error" and feedback.capture.query is None
    )
    assert feedback.budget.status == "none" and feedback.payload.text.startswith(
        "Please always provide EXACTLY ONE action"
    )
    assert any(
        n.text.count("```bash") == 2 for n in state.notes
    )  # the reply with two actions, whole
    assert state.budget.cost_used == pytest.approx(raw["info"]["model_stats"]["instance_cost"])


@needs_corpus
@pytest.mark.parametrize(
    "name", ["openhands-v1-sonnet4-astropy-14309", "openhands-v1-sonnet4-matplotlib-24570"]
)
def test_openhands_pairs_actions_with_observations(imported, name):
    im, events = imported[name], _events(name)
    answers = {e["action_id"]: e["observation"] for e in events if e["kind"] == "ObservationEvent"}
    actions = _actions(im)
    source = [e for e in events if e["kind"] == "ActionEvent"]
    for ev, action in zip(actions, source, strict=True):
        obs = answers[action["id"]]
        text = obs.get("output", obs.get("content", obs.get("message")))
        assert ev.payload.text == text
        assert ev.capture.origin == f"openhands:{action['tool_name']}"
        if action["action"]["kind"] == "ExecuteBashAction":
            assert ev.capture.query == action["action"]["command"]
            assert ev.capture.coverage == f"exit_code={obs['metadata']['exit_code']}"
        else:
            assert ev.capture.query == action["tool_call"]["function"]["arguments"]
        assert ev.capture.truncated is (True if "<response clipped><NOTE>" in text else None)
        assert (
            ev.captured_at
            == events[[e["id"] for e in events].index(action["id"])]["timestamp"] + "+02:00"
        )
    assert im.states[0].case.opened_at == events[0]["timestamp"] + "+02:00"
    assert im.trajectory.remarks[-1].startswith("Condensation")
    base = json.loads((CORPUS / name / "base_state.json").read_text())
    services = base["stats"]["service_to_metrics"]
    assert set(services) == {"default", "condenser"}  # the condenser's own model call counts too
    assert im.states[-1].budget.cost_used == pytest.approx(
        sum(m["accumulated_cost"] for m in services.values())
    )
    assert sum(e.budget.cost for e in actions) == pytest.approx(
        services["default"]["accumulated_cost"]
    )
    task = next(e for e in events if e["kind"] == "MessageEvent")["llm_message"]["content"][0][
        "text"
    ]
    assert f"<issue_description>\n{im.states[0].case.statement}\n</issue_description>" in task


@needs_corpus
def test_openhands_clipped_outputs_are_marked(imported):
    actions = _actions(imported["openhands-v1-sonnet4-astropy-14309"])
    assert [e.capture.truncated for e in actions].count(True) == 2


@needs_corpus
def test_analysis_override_and_invalid_ids():
    name = "sweagent-gpt4-pydicom-1458.traj"
    im = import_trajectory("swe-agent", CORPUS / name, analysis="pydicom-1458")
    assert im.states[0].analysis_id == "pydicom-1458" and im.request_id(3) == "pydicom-1458-r0003"
    with pytest.raises(UsageError, match="analysis ID"):
        import_trajectory("swe-agent", CORPUS / name, analysis="Bad ID")
    with pytest.raises(UsageError, match="available: swe-agent, mini-swe-agent, openhands"):
        import_trajectory("langchain", CORPUS / name)


@needs_corpus
def test_wrong_format_for_the_file_is_named():
    with pytest.raises(InvalidFile, match="use the format mini-swe-agent"):
        import_trajectory("swe-agent", CORPUS / "mini-v2-deepseek-sqlfluff-1625.traj.json")
    with pytest.raises(InvalidFile, match="OpenHands V1 conversation .*; use the format openhands"):
        import_trajectory("mini-swe-agent", CORPUS / "openhands-v1-sonnet4-astropy-14309")
    with pytest.raises(InvalidFile, match="SWE-agent trajectory .*; use the format swe-agent"):
        import_trajectory("openhands", CORPUS / "sweagent-gpt4-pydicom-1458.traj")


@needs_corpus
def test_write_import_refuses_a_directory_with_stored_contexts(imported, tmp_path: Path):
    im = imported["sweagent-gpt4-pydicom-1458.traj"]
    paths = write_import(im, tmp_path / "run", layout="contexts")
    expected = [f"sweagent-gpt4-pydicom-1458-r{k:04d}.json" for k in range(1, 13)]
    assert [p.name for p in paths] == [
        "fixed-prompt.json",
        *expected,
    ]  # the agent's fixed prompt goes with the run
    with pytest.raises(UsageError, match="already holds .json files"):
        write_import(im, tmp_path / "run")
    assert [p.name for p in write_import(im, tmp_path / "packed")] == ["run.json"]
    with pytest.raises(UsageError, match="already holds .json files"):
        write_import(im, tmp_path / "packed", layout="contexts")


# --- cases the corpus lacks, on public excerpts in tests/data/ -------------------------------

MINI_23 = DATA / "mini-swe-agent-2.3-astropy-12907.excerpt.traj.json"
SWE_HISTORY = DATA / "swe-agent-function_calling_simple.excerpt.traj"


def _write(tmp_path: Path, raw: dict, name: str = "variant.traj.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return path


def _merge_replies(raw: dict, first: int, second: int) -> dict:
    """Replies `first` and `second` as one reply with both tool calls, as 2.3 writes parallel calls.

    The merged reply keeps the first reply's text, response and timestamp and the sum of both
    costs; the second reply is dropped and the tool answers stay where they are.
    """
    msgs = [dict(m) for m in raw["messages"]]
    a, b = msgs[first], msgs[second]
    a["tool_calls"] = a["tool_calls"] + b["tool_calls"]
    a["extra"] = dict(a["extra"], actions=a["extra"]["actions"] + b["extra"]["actions"],
                      cost=a["extra"]["cost"] + b["extra"]["cost"])  # fmt: skip
    return dict(raw, messages=[m for i, m in enumerate(msgs) if i != second])


def test_mini_2_3_excerpt_imports_each_call_with_its_output():
    raw = json.loads(MINI_23.read_text(encoding="utf-8"))
    im = import_trajectory("mini-swe-agent", MINI_23)
    actions = _actions(im)
    calls = [m for m in raw["messages"] if m["role"] == "assistant"]
    tools = {m["tool_call_id"]: m for m in raw["messages"] if m["role"] == "tool"}
    assert [e.capture.query for e in actions] == [
        m["extra"]["actions"][0]["command"] for m in calls
    ]
    for ev, msg in zip(actions[:-1], calls, strict=False):
        tool = tools[msg["tool_calls"][0]["id"]]
        assert ev.payload.text == tool["content"] and ev.capture.coverage == "exit_code=0"
    assert actions[-1].payload.text == raw["messages"][-1]["content"]  # the submission, from `exit`
    assert (
        im.trajectory.agent == "mini-swe-agent 2.3.0"
        and im.trajectory.model == "deepseek/deepseek-chat"
    )
    assert im.trajectory.remarks == ()


def test_mini_reply_with_two_tool_calls_is_two_actions_each_with_its_output(tmp_path: Path):
    raw = json.loads(MINI_23.read_text(encoding="utf-8"))
    merged = _merge_replies(raw, 2, 4)  # two calls in one reply, their tool answers after it
    first, second = merged["messages"][2]["extra"]["actions"]
    tools = {m["tool_call_id"]: m for m in merged["messages"] if m["role"] == "tool"}
    im = import_trajectory("mini-swe-agent", _write(tmp_path, merged))
    actions = _actions(im)
    assert len(im.states) == 3 and [e.capture.query for e in actions[:2]] == [
        first["command"],
        second["command"],
    ]
    for ev, action in zip(actions[:2], (first, second), strict=True):
        tool = tools[action["tool_call_id"]]
        assert ev.payload.text == tool["content"]
        assert ev.capture.coverage == f"exit_code={tool['extra']['returncode']}"
    assert actions[0].captured_at != actions[1].captured_at  # each output's own arrival time
    assert (
        actions[0].budget.cost == pytest.approx(merged["messages"][2]["extra"]["cost"])
        and actions[1].budget.cost == 0
    )
    assert len(im.states[-1].notes) == 2  # the merged reply's text once, the submit reply's once
    assert im.states[-1].budget.cost_used == pytest.approx(
        sum(m["extra"]["cost"] for m in raw["messages"] if m["role"] == "assistant")
    )


def test_mini_tool_answers_are_matched_by_call_id_not_position(tmp_path: Path):
    raw = _merge_replies(json.loads(MINI_23.read_text(encoding="utf-8")), 2, 4)
    reply = raw["messages"][2]
    reply["extra"]["actions"] = reply["extra"]["actions"][
        ::-1
    ]  # parsed actions listed in the other order
    tool_msgs = [m for m in raw["messages"] if m["role"] == "tool"]
    order = [m for m in raw["messages"] if m["role"] != "tool"]
    raw["messages"] = order[:3] + tool_msgs[::-1] + order[3:]  # and the answers too
    im = import_trajectory("mini-swe-agent", _write(tmp_path, raw))
    by_id = {m["tool_call_id"]: m["content"] for m in tool_msgs}
    for ev, call in zip(_actions(im)[:2], reply["tool_calls"], strict=True):
        assert ev.capture.query == json.loads(call["function"]["arguments"])["command"]
        assert ev.payload.text == by_id[call["id"]]


def test_mini_submission_goes_to_the_call_that_submitted(tmp_path: Path):
    raw = json.loads(MINI_23.read_text(encoding="utf-8"))
    msgs = raw["messages"]
    # The submit call first, then another call in the same reply: mini-swe-agent stops at the
    # submission, so no tool message answers either; the exit message follows.
    submit, other = msgs[6], msgs[4]
    reply = dict(submit, tool_calls=submit["tool_calls"] + other["tool_calls"],
                 extra=dict(submit["extra"], actions=submit["extra"]["actions"] + other["extra"]["actions"]))  # fmt: skip
    raw["messages"] = msgs[:4] + [reply, msgs[7]]
    im = import_trajectory("mini-swe-agent", _write(tmp_path, raw))
    actions = _actions(im)
    assert [e.capture.query for e in actions[1:]] == [
        submit["extra"]["actions"][0]["command"],
        other["extra"]["actions"][0]["command"],
    ]
    assert actions[1].payload.text == msgs[7]["content"]
    assert (
        actions[2].payload is None and actions[2].content_hash is None
    )  # its output was never kept


def test_mini_format_label_that_disagrees_with_the_messages_is_reported(tmp_path: Path):
    raw = json.loads(MINI_23.read_text(encoding="utf-8"))
    right = import_trajectory("mini-swe-agent", MINI_23)
    raw["trajectory_format"] = "mini-swe-agent-1"  # as some 2.x builds label tool-call runs
    im = import_trajectory("mini-swe-agent", _write(tmp_path, raw))
    assert msgspec.json.encode(im.states) == msgspec.json.encode(right.states)
    assert im.trajectory.remarks == (
        "trajectory_format 'mini-swe-agent-1' disagrees with the messages; read as tool calls, as the messages hold",
    )
    raw["trajectory_format"] = (
        "mini-swe-agent-2"  # a version this importer has not seen: read by shape
    )
    assert len(import_trajectory("mini-swe-agent", _write(tmp_path, raw)).states) == 3


def test_swe_agent_history_only_file_is_read_from_history():
    raw = json.loads(SWE_HISTORY.read_text(encoding="utf-8"))
    im = import_trajectory("swe-agent", SWE_HISTORY)
    history = raw["history"]
    steps = [(m, history[i + 1]) for i, m in enumerate(history) if m["role"] == "assistant"]
    actions = _actions(im)
    assert len(im.states) == 3
    for ev, (msg, answer) in zip(actions, steps, strict=True):
        assert ev.capture.query == msg["action"]
        assert ev.capture.origin == f"swe-agent:{msg['tool_calls'][0]['function']['name']}"
        assert ev.payload.text == answer["content"]  # as the model saw it, prompt suffix included
    assert [n.text for n in im.states[-1].notes] == [m["thought"] for m, _ in steps]
    assert im.states[0].case.title == "SyntaxError: invalid syntax"
    assert f"ISSUE:\n{im.states[0].case.statement}\n\nINSTRUCTIONS:\n" in history[1]["content"]
    assert im.trajectory.remarks[0].startswith("no `trajectory` in the source")
    with pytest.raises(InvalidFile, match="use the format swe-agent"):
        import_trajectory("mini-swe-agent", SWE_HISTORY)


def test_swe_agent_1x_step_shape_reads_like_0x(tmp_path: Path):
    # SWE-agent 1.x steps carry `state` as an object and `execution_time`, and history content
    # as text parts (shape as in princeton-nlp/SWE-agent's 1.x replay trajectories).
    raw = {
        "environment": "main",
        "trajectory": [{"action": "python reproduce.py", "observation": "344", "response": "Run it.", "thought": "Run it.",
                        "execution_time": 0.33, "state": {"open_file": "/testbed/reproduce.py", "working_dir": "/testbed"}}],
        "history": [{"role": "system", "content": "SETTING: …", "agent": "main", "message_type": "system_prompt"},
                    {"role": "user", "content": [{"type": "text", "text": "<pr_description>\nTimeDelta rounds down\n</pr_description>\nFix it."}],
                     "agent": "main", "message_type": "observation"}],
        "info": {"swe_agent_version": "1.0.1", "model_stats": {"instance_cost": 0.5}},
    }  # fmt: skip
    im = import_trajectory("swe-agent", _write(tmp_path, raw, "x.traj"))
    [ev] = _actions(im)
    assert (
        ev.capture.query == "python reproduce.py"
        and ev.payload.text == "344"
        and ev.capture.origin == "swe-agent:bash"
    )
    assert (
        im.states[0].case.statement == "TimeDelta rounds down"
        and im.trajectory.agent == "SWE-agent 1.0.1"
    )


# --- the agent's fixed prompt, kept with the run ---------------------------------------------------


@needs_corpus
def test_fixed_prompt_is_what_the_source_recorded(imported):
    swe = imported["sweagent-gpt4-pydicom-1458.traj"].trajectory
    raw = json.loads((CORPUS / "sweagent-gpt4-pydicom-1458.traj").read_bytes())["history"]
    assert swe.fixed_prompt.agent == "swe-agent" and swe.fixed_prompt.system == raw[0]["content"]
    assert [(m.role, m.text) for m in swe.fixed_prompt.prefix] == [
        (m["role"], m["content"]) for m in raw[1:3]
    ]  # demo, instance
    oh = imported["openhands-v1-sonnet4-astropy-14309"].trajectory.fixed_prompt
    first = json.loads(
        sorted((CORPUS / "openhands-v1-sonnet4-astropy-14309" / "events").glob("*.json"))[
            0
        ].read_bytes()
    )
    assert oh.agent == "openhands" and oh.system == first["system_prompt"]["text"]
    assert [t.name for t in oh.tools] == [t["function"]["name"] for t in first["tools"]] and len(
        oh.tools
    ) == 7
    mini = imported["mini-v1-gemini3pro-pylint-6386.traj.json"].trajectory.fixed_prompt
    msgs = json.loads((CORPUS / "mini-v1-gemini3pro-pylint-6386.traj.json").read_bytes())[
        "messages"
    ]
    assert mini.system == msgs[0]["content"] and [m.text for m in mini.prefix] == [
        msgs[1]["content"]
    ]


@needs_corpus
@pytest.mark.parametrize("layout", ["run", "contexts"])
def test_fixed_prompt_round_trips_through_the_run(imported, tmp_path: Path, layout: str):
    from workingset.runs.layout import convert_run, read_fixed_prompt, read_run

    im = imported["openhands-v1-sonnet4-astropy-14309"]
    write_import(im, tmp_path / "a", layout=layout)
    assert read_fixed_prompt(tmp_path / "a") == im.trajectory.fixed_prompt
    assert len(read_run(tmp_path / "a")) == len(im.states)  # the fixed prompt is no stored context
    convert_run(tmp_path / "a", tmp_path / "b")  # the other layout
    assert read_fixed_prompt(tmp_path / "b") == im.trajectory.fixed_prompt


def test_runs_without_a_fixed_prompt_read_as_none_and_a_damaged_one_fails(tmp_path: Path):
    from workingset.runs.layout import convert_run, read_fixed_prompt, read_run

    fixture = (
        Path(__file__).parents[2] / "fixtures" / "bug17"
    )  # stored-context files, no fixed prompt
    assert read_fixed_prompt(fixture) is None
    convert_run(fixture, tmp_path / "packed", "run")
    assert read_fixed_prompt(tmp_path / "packed") is None
    data = json.loads((tmp_path / "packed" / "run.json").read_bytes())
    data["fixed_prompt"] = {"agent": "claude-code"}
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(InvalidFile, match=r"fixed_prompt\.agent"):
        read_run(tmp_path)
    with pytest.raises(InvalidFile, match=r"fixed_prompt\.agent"):
        read_fixed_prompt(tmp_path)
