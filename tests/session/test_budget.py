"""No analysis stuck behind its own budget (issue 30, item 4).

`create` refuses a v14 state whose fixed parts (preamble, case page, this turn's lines) alone
pass the budget, with both sizes; and an analysis can move to a larger budget of its own
version (`raise_budget`, `workingset budget`): a `budget` event, replayed and exported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workingset.session.investigation as investigation
from tests.helpers.common import invoke
from tests.helpers.session_helpers import _hypothesis, make_state
from workingset.errors import WorkingsetError
from workingset.session.frozen_replay import replay_export
from workingset.session.investigation import Investigation


def crowded() -> dict:
    """1,000 hypotheses: at v14:budget=20000 their lines alone pass the budget (issue 30's case)."""
    state = make_state()
    state["hypotheses"] += [_hypothesis(f"H{i}", f"hypothesis number {i}") for i in range(10, 1010)]
    return state


def test_create_refuses_fixed_parts_past_the_budget_with_both_sizes(tmp_path: Path):
    with pytest.raises(WorkingsetError) as err:
        Investigation.create(
            tmp_path / "s.sqlite3", json.dumps(crowded()), encoder="v14:budget=20000"
        )
    e = err.value
    assert e.code == "too_large" and e.details["budget"] == 20000 and e.details["chars"] > 20000
    assert f"{e.details['chars']} characters" in e.message and "budget of 20000" in e.message
    assert not (tmp_path / "s.sqlite3").exists()
    state = tmp_path / "state.json"
    state.write_text(json.dumps(crowded()))
    res = invoke("init", "--state", str(state), "--encoder", "v14:budget=20000", "--store", str(tmp_path / "c.sqlite3"), "--json")  # fmt: skip
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "too_large"
    # A budget it fits is accepted, and its first request renders.
    with Investigation.create(
        tmp_path / "ok.sqlite3", json.dumps(crowded()), encoder="v14:budget=200000"
    ) as inv:
        assert inv.next_request().chars <= 200_000


@pytest.fixture
def stuck(tmp_path: Path, monkeypatch) -> Path:
    """A store whose analysis was created before the check (as older stores were): every `next` is too_large."""
    store = tmp_path / "stuck.sqlite3"
    monkeypatch.setattr(investigation, "check_fixed_parts", lambda state, enc: None)
    Investigation.create(store, json.dumps(crowded()), encoder="v14:budget=20000", clock=lambda: "2026-06-10T21:00:00Z").close()  # fmt: skip
    monkeypatch.undo()  # from here on, every create checks (the replay of its export too)
    with Investigation.open(store, "demo") as inv, pytest.raises(WorkingsetError) as err:
        inv.next_request()
    assert err.value.code == "too_large"
    return store


def test_a_stuck_analysis_moves_to_a_larger_budget_and_takes_turns(stuck: Path, tmp_path: Path):
    with Investigation.open(stuck, "demo") as inv:
        moved = inv.raise_budget(100_000)
        assert (moved.prior_budget, moved.budget, moved.prior_encoder, moved.encoder) == (
            20_000, 100_000, "investigation_project_v14:budget=20000", "investigation_project_v14")  # fmt: skip
        req = inv.next_request()
        assert req.encoder == "investigation_project_v14" and req.chars <= 100_000
        assert inv.show().encoder == "investigation_project_v14"
        files = inv.export(tmp_path / "export")
    assert files
    journal = (tmp_path / "export" / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line).get("kind") for line in journal] == [
        None,
        "created",
        "budget",
        "request",
        "end",
    ]
    report = replay_export(tmp_path / "export")
    assert report.divergence is None, report.divergence and report.divergence.lines()
    # Reopened (a new handle replays the log past the event): the same open request.
    with Investigation.open(stuck, "demo") as inv:
        assert inv.next_request().request_id == req.request_id


def test_a_tampered_budget_event_diverges_on_replay(stuck: Path, tmp_path: Path):
    with Investigation.open(stuck, "demo") as inv:
        inv.raise_budget(100_000)
        inv.next_request()
        inv.export(tmp_path / "export")
    journal = tmp_path / "export" / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        if line.get("kind") == "budget":
            line["encoder"] = "investigation_project_v14:budget=120000"
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = replay_export(tmp_path / "export")
    assert report.divergence is not None and "budget" in " ".join(report.divergence.lines())


def test_the_cli_moves_the_budget(stuck: Path):
    res = invoke("budget", "--analysis", "demo", "100000", "--store", str(stuck), "--json")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["encoder"] == "investigation_project_v14"
    res = invoke("next", "--analysis", "demo", "--store", str(stuck), "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["encoder"] == "investigation_project_v14"
    for bad, code in (("²", "usage_error"), ("1" * 4_301, "usage_error"), ("50000", "invalid_transition"),
                      ("100000", "invalid_transition"), ("999999999999", "unknown_encoder")):  # fmt: skip
        res = invoke("budget", "--analysis", "demo", bad, "--store", str(stuck), "--json")
        assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == code, (
            bad,
            res.stdout,
        )


def test_lowering_or_no_budget_is_refused_and_changes_nothing(tmp_path: Path):
    store = tmp_path / "s.sqlite3"
    with Investigation.create(store, json.dumps(make_state()), encoder="v14:budget=50000") as inv:
        before = inv.show()
        for budget in (40_000, 50_000):
            with pytest.raises(WorkingsetError) as err:
                inv.raise_budget(budget)
            assert err.value.code == "invalid_transition" and "only grows" in err.value.message
        with pytest.raises(WorkingsetError) as err:
            inv.raise_budget("60000")  # type: ignore[arg-type]
        assert err.value.code == "usage_error"
        assert inv.show() == before
    with Investigation.create(
        tmp_path / "v10.sqlite3", json.dumps(make_state()), encoder="v10"
    ) as inv:
        with pytest.raises(WorkingsetError) as err:
            inv.raise_budget(200_000)
        assert err.value.code == "invalid_transition" and "no context budget" in err.value.message
    # Another journal version keeps its version: v13 at a larger v13 budget.
    with Investigation.create(
        tmp_path / "v13.sqlite3", json.dumps(make_state()), encoder="v13:budget=50000"
    ) as inv:
        assert inv.raise_budget(60_000).encoder == "investigation_project_v13:budget=60000"
        inv.cancel()
        with pytest.raises(WorkingsetError) as err:
            inv.raise_budget(70_000)
        assert err.value.code == "analysis_closed"
