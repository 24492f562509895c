"""`Investigation.run`: the whole loop in one call; it stops at the end, at a pause or a cancel, and survives a kill."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.scripted_run import scripted_send as model_reply
from tests.helpers.session_helpers import state_bytes
from workingset import Investigation, WorkingsetError, replay_export
from workingset.testing import FixedClock, ScriptedModel, anthropic_refusal

ROOT = Path(__file__).parents[2]


def rows(source, text):
    return {"kind": "rows", "columns": ["q"], "rows": [[text]]}


@pytest.fixture
def inv(tmp_path):
    with Investigation.create(
        str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v13", clock=FixedClock()
    ) as handle:
        yield handle


def test_run_goes_to_the_end_and_returns_the_summary(inv):
    turns, ran = [], []
    summary = inv.run(
        model_reply, lambda s, q: ran.append(q) or rows(s, q), cost=lambda a, p: 0.5,
        on_turn=turns.append,
    )  # fmt: skip
    assert (summary.status, summary.termination_reason) == ("completed", "root_cause_found")
    # The scheduler takes H1, H2, H3 in turn; H2 concludes on its second turn.
    assert [(t.hypothesis, t.applied) for t in turns] == [
        ("H1", "query"), ("H2", "query"), ("H3", "query"), ("H1", "query"), (None, "conclude")
    ]  # fmt: skip
    assert ran == ["select first"] * 3 + ["select E000007"]
    assert [ev.budget.cost for ev in summary.state.evidence[-4:]] == [0.5] * 4


def test_run_stops_after_max_turns_and_continues_when_called_again(inv):
    summary = inv.run(model_reply, rows, max_turns=1)
    # One turn, and the query it decided is run and recorded before `run` returns.
    assert summary.status == "active" and summary.state.iteration == 1
    assert (
        inv.pending_actions() == [] and summary.state.evidence[-1].capture.query == "select first"
    )
    assert inv.run(model_reply, rows).status == "completed"


@pytest.mark.parametrize("verb", ["pause", "cancel"])
def test_run_honours_a_pause_or_a_cancel_from_another_process(inv, verb):
    def run_query(source, text):
        with Investigation.open(inv.store.path, "demo") as other:
            getattr(other, verb)()  # another process, while the query ran
        return rows(source, text)

    summary = inv.run(model_reply, run_query)
    assert summary.status == {"pause": "paused", "cancel": "cancelled"}[verb]
    if verb == "pause":
        assert inv.pending_actions() == []  # a paused analysis still takes the result of its query
        inv.resume()
        assert inv.run(model_reply, rows).status == "completed"


def test_run_takes_a_whole_result_when_the_runner_has_more_to_say(inv):
    def run_query(source, text):
        return {"scope": "query_result", "cost": 1.5, "payload": rows(source, text),
                "capture": {"query": text, "origin": source, "truncated": True, "item_count": 1}}  # fmt: skip

    inv.run(model_reply, run_query, max_turns=1)
    ev = inv.state.evidence[-1]
    assert ev.capture.truncated is True and ev.budget.cost == 1.5


def test_run_raises_the_retryable_error_and_a_second_call_goes_on(inv):
    with pytest.raises(WorkingsetError) as info:
        inv.run(ScriptedModel(*[anthropic_refusal()] * 3), rows)
    assert info.value.code == "turn_incomplete" and inv.status == "active"
    assert inv.run(model_reply, rows).status == "completed"


def scripted(store: Path, out: Path, kill: str | None = None) -> int:
    args = [sys.executable, "-m", "tests.helpers.scripted_run", str(store), str(out)]
    return subprocess.run(args + ([kill] if kill else []), cwd=ROOT).returncode


def files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir())}


@pytest.mark.slow  # crash: a controller killed with SIGKILL, then run again
@pytest.mark.parametrize("kill", ["send:1", "send:3", "query:2", "send:4"])
def test_a_run_killed_anywhere_continues_to_the_same_export(tmp_path, kill):
    assert scripted(tmp_path / "ref.sqlite3", tmp_path / "ref") == 0
    assert scripted(tmp_path / "s.sqlite3", tmp_path / "run", kill) == -9  # killed
    assert not (tmp_path / "run").exists()
    assert scripted(tmp_path / "s.sqlite3", tmp_path / "run") == 0  # the restart
    assert files(tmp_path / "run") == files(tmp_path / "ref")  # byte for byte
    assert replay_export(tmp_path / "run").ok
