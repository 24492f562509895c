"""`workingset calibrate`: OpenHands' requests rebuilt and billed beside the recorded bill."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from tests.helpers.common import invoke, long_run_path
from tests.helpers.real_corpus import CORPUS
from workingset.compare import billing, wire
from workingset.compare.calibrate import (
    BASH_LIMIT,
    TRUNCATE_NOTICE,
    calibrate,
    read_calls,
    truncate,
)

SYSTEM = "You are a careful agent. " * 300  # over the 1,024-token cache minimum on its own
TOOLS = [{"type": "function", "function": {"name": "execute_bash", "description": "Run a command.",
                                           "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]  # fmt: skip
TASK = "Fix the bug in parse()."


def _action(n: int, command: str, thought: str = "") -> dict:
    arguments = json.dumps({"command": command})
    return {"kind": "ActionEvent", "id": f"a{n}", "timestamp": f"2025-09-25T11:00:0{n}", "source": "agent",
            "thought": [{"type": "text", "text": thought}] if thought else [],
            "action": {"kind": "ExecuteBashAction", "command": command}, "tool_name": "execute_bash",
            "tool_call_id": f"toolu_{n}", "llm_response_id": f"r{n}",
            "tool_call": {"index": 0, "function": {"arguments": arguments, "name": "execute_bash"},
                          "id": f"toolu_{n}", "type": "function"}}  # fmt: skip


def _observation(n: int, output: str, exit_code: int = 0) -> dict:
    return {"kind": "ObservationEvent", "id": f"o{n}", "timestamp": f"2025-09-25T11:00:0{n}", "source": "environment",
            "tool_name": "execute_bash", "tool_call_id": f"toolu_{n}", "action_id": f"a{n}",
            "observation": {"kind": "ExecuteBashObservation", "output": output, "command": "x", "error": False,
                            "timeout": False, "metadata": {"exit_code": exit_code, "working_dir": "/repo",
                                                           "py_interpreter_path": "", "prefix": "",
                                                           "suffix": f"\n[The command completed with exit code {exit_code}.]"}}}  # fmt: skip


def _usage(n: int, prompt: int, read: int, write: int) -> dict:
    return {"model": "anthropic/claude-sonnet-4-20250514", "prompt_tokens": prompt, "completion_tokens": 10,
            "cache_read_tokens": read, "cache_write_tokens": write, "response_id": f"r{n}"}  # fmt: skip


def write_run(
    root: Path, events: list[dict], usages: list[dict] | None, costs: bool = True
) -> Path:
    (root / "events").mkdir(parents=True)
    for i, event in enumerate(events):
        (root / "events" / f"event-{i:05d}-{event['id']}.json").write_text(json.dumps(event))
    if usages is not None:
        metrics = {"token_usages": usages,
                   "costs": [{"cost": 0.01, "timestamp": 1758790800.0 + 10 * i} for i in range(len(usages))] if costs else [],
                   "response_latencies": [{"latency": 2.0, "response_id": u["response_id"]} for u in usages]}  # fmt: skip
        base = {"agent": {"kind": "Agent", "llm": {"model": "anthropic/claude-sonnet-4-20250514"}},
                "stats": {"service_to_metrics": {"default": metrics}}}  # fmt: skip
        (root / "base_state.json").write_text(json.dumps(base))
    return root


def events() -> list[dict]:
    return [
        {"kind": "SystemPromptEvent", "id": "s", "timestamp": "2025-09-25T11:00:00", "source": "agent",
         "system_prompt": {"cache_prompt": False, "type": "text", "text": SYSTEM}, "tools": TOOLS},
        {"kind": "MessageEvent", "id": "m", "timestamp": "2025-09-25T11:00:00", "source": "user",
         "llm_message": {"role": "user", "content": [{"cache_prompt": False, "type": "text", "text": TASK}]}},
        _action(1, "ls", "Look first."), _observation(1, "a.py\nb.py"),
        _action(2, "cat a.py"), _observation(2, "def parse(): ...", 1),
        {"kind": "Condensation", "id": "c", "timestamp": "2025-09-25T11:00:05", "source": "environment",
         "forgotten_event_ids": ["a1", "o1"], "summary": "Listed the files.", "summary_offset": 2},
        _action(3, "pytest"),
    ]  # fmt: skip


USAGES = [_usage(1, 2000, 0, 10), _usage(2, 2100, 2000, 60), _usage(3, 2150, 2050, 30)]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "conv", events(), USAGES)


def _result(text: str, cache: bool) -> dict:
    block = {
        "type": "tool_result",
        "tool_use_id": text[0],
        "content": [{"type": "text", "text": text[1]}],
    }
    return {**block, "cache_control": {"type": "ephemeral"}} if cache else block


def test_bodies_follow_openhands_and_litellm(run: Path):
    name, model, calls = read_calls(run)
    assert (name, model, [c.response_id for c in calls]) == (
        "conv",
        "anthropic/claude-sonnet-4-20250514",
        ["r1", "r2", "r3"],
    )
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    tools = [
        {
            "name": "execute_bash",
            "description": "Run a command.",
            "input_schema": TOOLS[0]["function"]["parameters"],
        }
    ]
    # The first call: the task alone, marked as the last user message.
    assert calls[0].body == {
        "tools": tools,
        "system": system,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": TASK, "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }
    ls = "a.py\nb.py\n[The command completed with exit code 0.]\n[Current working directory: /repo]\n[Command finished with exit code 0]"
    assert calls[1].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": TASK}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Look first."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "execute_bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [_result(("toolu_1", ls), cache=True)]},
    ]  # fmt: skip
    # After the condensation: the first two events kept, the summary at offset 2, the forgotten pair gone.
    cat = "def parse(): ...\n[The command completed with exit code 1.]\n[Current working directory: /repo]\n[Command finished with exit code 1]"
    assert calls[2].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": TASK}, {"type": "text", "text": "Listed the files."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "execute_bash", "input": {"command": "cat a.py"}}]},
        {"role": "user", "content": [_result(("toolu_2", cat), cache=True)]},
    ]  # fmt: skip
    assert [c.sent_at for c in calls] == [
        1758790798.0,
        1758790808.0,
        1758790818.0,
    ]  # cost time minus latency


def _tokens(body: dict) -> billing.Prompt:
    return wire.to_prompt(wire.body_blocks(body, "anthropic"))


def test_json_sets_the_bill_beside_the_model(run: Path):
    result = invoke("calibrate", str(run), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    _, _, calls = read_calls(run)
    sizes = [len(_tokens(c.body).tokens) for c in calls]
    system_end = _tokens(calls[0].body).breakpoints[0]
    # Call 1 writes its whole prompt; call 2 reads it and writes the rest; call 3's history was
    # condensed after the task, so call 2's entry is no prefix of it and call 1's is the longest.
    assert sizes[0] > system_end
    predicted = [{"uncached": 0, "read": 0, "written": sizes[0]},
                 {"uncached": 0, "read": sizes[0], "written": sizes[1] - sizes[0]},
                 {"uncached": 0, "read": sizes[0], "written": sizes[2] - sizes[0]}]  # fmt: skip
    recorded = [{"uncached": 2000, "cache_read": 0, "cache_write": 10}, {"uncached": 100, "cache_read": 2000, "cache_write": 60},
                {"uncached": 100, "cache_read": 2050, "cache_write": 30}]  # fmt: skip
    assert out["calls"] == [
        {"call": i + 1, "recorded": r, "predicted": p}
        for i, (r, p) in enumerate(zip(recorded, predicted))
    ]
    assert out["run"] == "conv" and out["model"] == "anthropic"
    assert out["tokenizer_ratio"] == round((2010 + 2160 + 2180) / sum(sizes), 4)
    assert out["totals"]["recorded"] == {"uncached": 2200, "cache_read": 4050, "cache_write": 100}
    assert out["totals"]["predicted"] == {
        k: sum(p[k] for p in predicted) for k in ("uncached", "read", "written")
    }
    assert out["totals"]["calls"] == 3


def test_text_table_names_each_call(run: Path):
    result = invoke("calibrate", str(run))
    assert result.exit_code == 0, result.output
    assert "conv: 3 calls of anthropic/claude-sonnet-4-20250514" in result.output
    assert "calls (" in result.output.splitlines()[-1]


def test_warm_start_reads_the_fixed_prefix_on_the_first_call(run: Path):
    cold, warm = calibrate(run), calibrate(run, warm=True)
    _, _, calls = read_calls(run)
    system_end = _tokens(calls[0].body).breakpoints[0]
    assert cold.rows[0].predicted.read == 0
    assert warm.rows[0].predicted.read == system_end
    assert [r.predicted for r in warm.rows[1:]] == [r.predicted for r in cold.rows[1:]]


def test_truncate_keeps_head_and_tail():
    text = "h" * 40_000 + "t" * 40_000
    out = truncate(text, BASH_LIMIT)
    room = BASH_LIMIT - len(TRUNCATE_NOTICE)
    assert (
        len(out) == BASH_LIMIT
        and out == text[: room - room // 2] + TRUNCATE_NOTICE + text[-(room // 2) :]
    )
    assert truncate("short", BASH_LIMIT) == "short"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda p: write_run(p, events(), None), "no_usage"),  # no base_state.json
        (lambda p: write_run(p, events(), []), "no_usage"),
        (
            lambda p: write_run(p, events(), [_usage(1, 5, 9, 0)]),
            "invalid_file",
        ),  # reads beyond prompt_tokens
        (
            lambda p: write_run(p, events(), [{**_usage(1, 5, 0, 0), "prompt_tokens": "5"}]),
            "invalid_file",
        ),
        (
            lambda p: write_run(p, events(), [_usage(9, 5, 0, 0)]),
            "invalid_file",
        ),  # a call that produced no event
        (lambda p: write_run(p, events()[1:], USAGES), "invalid_file"),  # no system prompt event
        (lambda p: p.mkdir() or p, "invalid_file"),  # not an OpenHands directory
    ],
)
def test_errors_are_one_line_with_a_code(tmp_path: Path, make, code: str):
    path = make(tmp_path / "conv")
    result = invoke("calibrate", str(path), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == code
    assert "Traceback" not in result.output


def test_malformed_event_file_is_invalid_file(run: Path):
    next((run / "events").glob("event-00002-*")).write_text("{not json")
    result = invoke("calibrate", str(run))
    assert result.exit_code == 2 and "error: invalid_file:" in result.stderr


# -- hostile runs: every wrong type is invalid_file with its path, never a Python error -------------------


def _metrics_run(root: Path, change) -> Path:
    path = write_run(root, events(), USAGES)
    base = json.loads((path / "base_state.json").read_text())
    change(base["stats"]["service_to_metrics"]["default"])
    (path / "base_state.json").write_text(json.dumps(base))
    return path


def _event_run(root: Path, index: int, change) -> Path:
    evs = copy.deepcopy(events())  # TOOLS is shared
    change(evs[index])
    return write_run(root, evs, USAGES)


def _set(*path, value):
    def change(obj):
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return change


# index in `events()`: 0 system prompt, 1 task, 2/4/7 actions, 3/5 observations, 6 condensation
HOSTILE_RUNS = {
    "token-usages-a-dict": lambda p: _metrics_run(p, _set("token_usages", value={"a": 1})),
    "token-usages-a-number": lambda p: _metrics_run(p, _set("token_usages", value=5)),
    "token-usages-a-string": lambda p: _metrics_run(p, _set("token_usages", value="abc")),
    "costs-a-number": lambda p: _metrics_run(p, _set("costs", value=7)),
    "latencies-a-number": lambda p: _metrics_run(p, _set("response_latencies", value=7)),
    "latencies-a-dict": lambda p: _metrics_run(p, _set("response_latencies", value={"r1": 2})),
    "timestamp-10**400": lambda p: _metrics_run(p, _set("costs", 0, "timestamp", value=10**400)),
    "latency-10**400": lambda p: _metrics_run(p, _set("response_latencies", 0, "latency", value=10**400)),
    "latency-id-a-list": lambda p: _metrics_run(p, _set("response_latencies", 0, "response_id", value=[1])),
    "tools-items-strings": lambda p: _event_run(p, 0, _set("tools", value=["x"])),
    "tool-function-a-string": lambda p: _event_run(p, 0, _set("tools", 0, "function", value="x")),
    "llm-message-a-string": lambda p: _event_run(p, 1, _set("llm_message", value="hi")),
    "message-content-a-number": lambda p: _event_run(p, 1, _set("llm_message", "content", value=5)),
    "extended-content-a-number": lambda p: _event_run(p, 1, _set("extended_content", value=5)),
    "thought-a-number": lambda p: _event_run(p, 2, _set("thought", value=5)),
    "tool-call-a-string": lambda p: _event_run(p, 2, _set("tool_call", value="x")),
    "tool-call-function-a-list": lambda p: _event_run(p, 2, _set("tool_call", "function", value=[1])),
    "arguments-a-number": lambda p: _event_run(p, 2, _set("tool_call", "function", "arguments", value=5)),
    "tool-call-id-a-list": lambda p: _event_run(p, 2, _set("tool_call_id", value=["x"])),
    "event-id-a-dict": lambda p: _event_run(p, 3, _set("id", value={"a": 1})),
    "observation-a-string": lambda p: _event_run(p, 3, _set("observation", value="x")),
    "metadata-a-string": lambda p: _event_run(p, 3, _set("observation", "metadata", value="x")),
    "output-a-list": lambda p: _event_run(p, 3, _set("observation", "output", value=["x"])),
    "exit-code-10**400": lambda p: _event_run(p, 3, _set("observation", "metadata", "exit_code", value=10**400)),
    "suffix-a-number": lambda p: _event_run(p, 5, _set("observation", "metadata", "suffix", value=5)),
    "forgotten-ids-a-number": lambda p: _event_run(p, 6, _set("forgotten_event_ids", value=5)),
    "forgotten-id-a-list": lambda p: _event_run(p, 6, _set("forgotten_event_ids", value=[["a1"]])),
    "summary-a-number": lambda p: _event_run(p, 6, _set("summary", value=5)),
    "summary-offset-a-string": lambda p: _event_run(p, 6, _set("summary_offset", value="2")),
    "summary-offset-10**400": lambda p: _event_run(p, 6, _set("summary_offset", value=10**400)),
}  # fmt: skip


@pytest.mark.parametrize("name", HOSTILE_RUNS, ids=str)
def test_a_hostile_run_is_invalid_file_with_its_path(tmp_path: Path, name: str):
    path = HOSTILE_RUNS[name](tmp_path / "conv")
    result = invoke("calibrate", str(path), "--json")
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_file" and error["details"]["path"].startswith("$")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_a_response_logged_twice_is_one_call(tmp_path: Path):
    once = calibrate(write_run(tmp_path / "a", events(), USAGES))
    twice = write_run(tmp_path / "b", events(), [*USAGES[:2], USAGES[1], *USAGES[2:]])
    again = calibrate(twice)
    assert len(again.rows) == len(once.rows) == len(USAGES)
    assert again.to_json()["totals"] == once.to_json()["totals"]


# -- the real runs ------------------------------------------------------------------------------------

REAL = ["openhands-v1-sonnet4-astropy-14309", "openhands-v1-sonnet4-matplotlib-24570"]


def _real(name: str, tmp_path: Path) -> Path:
    if name.endswith("pylint-167"):
        return long_run_path()
    path = CORPUS / name
    if not path.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the corpus run {path} is absent")
        pytest.skip(f"the corpus run {path} is absent")
    return path


@pytest.mark.slow  # corpus: the real runs and the 167-step run
@pytest.mark.parametrize("name", [*REAL, "openhands-v1-sonnet4-pylint-167"])
def test_real_runs_bill_every_recorded_call(name: str, tmp_path: Path):
    path = _real(name, tmp_path)
    base = json.loads((path / "base_state.json").read_text())
    metrics = base["stats"]["service_to_metrics"]["default"]
    out = calibrate(path).to_json()
    assert len(out["calls"]) == len(metrics["token_usages"])
    # The recorded side is the run's own accumulated usage: prompt_tokens = reads + uncached.
    total = metrics["accumulated_token_usage"]
    rec = out["totals"]["recorded"]
    assert rec["uncached"] + rec["cache_read"] == total["prompt_tokens"]
    assert (rec["cache_read"], rec["cache_write"]) == (
        total["cache_read_tokens"],
        total["cache_write_tokens"],
    )
    # Each recorded read is the previous call's reads plus writes (writes come on top of
    # prompt_tokens), except where a condensation cut the history or on the first call.
    usages = metrics["token_usages"]
    chained = sum(
        u["cache_read_tokens"] == p["cache_read_tokens"] + p["cache_write_tokens"]
        for p, u in zip(usages, usages[1:])
    )
    condensations = len(
        base["stats"]["service_to_metrics"].get("condenser", {}).get("token_usages", [])
    )
    assert chained == len(usages) - 1 - condensations
    assert (
        1.0 < out["tokenizer_ratio"] < 1.3
    )  # Claude's tokenizer counts more tokens than cl100k_base
