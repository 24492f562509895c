"""Write the trimmed corpus trajectories in this folder from the corpus (run from the repo root).

    python tests/data/make_excerpts.py ../shared/corpus/raw

Each excerpt keeps whole JSON objects of its source (messages, steps, event files) and drops
the rest; the choice is below and in README.md. Run again after changing a choice; the
output is deterministic (`json.dumps(indent=2)`, keys in source order).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _dump(value: object, path: Path) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def swe_agent_0x(raw: Path) -> None:
    """Steps 0, 2, 3, 10 and 11 (create, a traceback, find_file, an empty output, submit)."""
    src = json.loads((raw / "sweagent-gpt4-pydicom-1458.traj").read_text(encoding="utf-8"))
    keep = [0, 2, 3, 10, 11]
    history = src["history"]
    # history: system, demo, task, then (assistant, observation) per step from index 3
    picked = [history[0], history[2]] + [
        history[i] for k in keep for i in (3 + 2 * k, 4 + 2 * k) if i < len(history)
    ]
    out = dict(src, trajectory=[src["trajectory"][k] for k in keep], history=picked)
    _dump(out, HERE / "swe-agent-0.x-pydicom-1458.excerpt.traj")


def _mini_info(info: dict) -> dict:
    """`info` with the config cut to what the importer reads."""
    config = info["config"]
    agent = {
        k: config["agent"][k]
        for k in ("instance_template", "step_limit", "cost_limit")
        if k in config["agent"]
    }
    return dict(info, config={"agent": agent, "model": config["model"]})


def mini_1x(raw: Path) -> None:
    """Task, 4 replies with their answers (an elided output, the two-action reply and its format error), submit."""
    src = json.loads((raw / "mini-v1-gemini3pro-pylint-6386.traj.json").read_text(encoding="utf-8"))
    msgs = src["messages"]
    keep = [0, 1, 2, 3, 12, 13, 100, 101, 102, 103, 110, 111]
    _dump(
        dict(src, info=_mini_info(src["info"]), messages=[msgs[i] for i in keep]),
        HERE / "mini-swe-agent-1.15-pylint-6386.excerpt.traj.json",
    )


def mini_2x(raw: Path) -> None:
    """Task, 3 tool calls with their answers, the submit call and the exit message."""
    src = json.loads((raw / "mini-v2-deepseek-sqlfluff-1625.traj.json").read_text(encoding="utf-8"))
    msgs = src["messages"]
    keep = [0, 1, 2, 3, 6, 7, 92, 93, 96, 97]
    _dump(
        dict(src, info=_mini_info(src["info"]), messages=[msgs[i] for i in keep]),
        HERE / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json",
    )


def openhands_v1(raw: Path) -> None:
    """base_state.json and the event files of the task, 5 actions with their answers (think, editor, the first and last bash, finish) and the condensation."""
    src = raw / "openhands-v1-sonnet4-astropy-14309"
    out = HERE / "openhands-v1-astropy-14309.excerpt"
    shutil.rmtree(out, ignore_errors=True)
    (out / "events").mkdir(parents=True)
    shutil.copyfile(src / "base_state.json", out / "base_state.json")
    files = sorted((src / "events").glob("event-*.json"))
    events = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    kinds = [e["action"]["kind"] if e["kind"] == "ActionEvent" else e["kind"] for e in events]
    actions = [kinds.index("ThinkAction"), kinds.index("StrReplaceEditorAction"), kinds.index("ExecuteBashAction"),
               len(kinds) - 1 - kinds[::-1].index("ExecuteBashAction"), kinds.index("FinishAction")]  # fmt: skip
    ids = {events[i]["id"] for i in actions}
    answers = [
        i for i, e in enumerate(events) if e["kind"] == "ObservationEvent" and e["action_id"] in ids
    ]
    keep = sorted({kinds.index("MessageEvent"), kinds.index("Condensation"), *actions, *answers})
    for i in keep:  # byte-exact copies, original names
        shutil.copyfile(files[i], out / "events" / files[i].name)


def main(argv: list[str]) -> int:
    raw = Path(argv[1] if len(argv) > 1 else "../shared/corpus/raw")
    for make in (swe_agent_0x, mini_1x, mini_2x, openhands_v1):
        make(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
