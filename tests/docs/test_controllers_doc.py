"""docs/controllers.md's `run` example, run as written against a mock Anthropic endpoint, crashed and run again.

A controller written from the docs alone needs only its model call and its query runner.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.provider_replies import anthropic_reply
from tests.helpers.sdks import mock_anthropic_in, require
from tests.helpers.session_helpers import assess, conclude, decision, query
from workingset import Investigation, read_run, replay_export, verify_context
from workingset.testing import anthropic_cut_off

if TYPE_CHECKING:
    import httpx2

ROOT = Path(__file__).parents[2]


def doc_example() -> str:
    section = (ROOT / "docs" / "controllers.md").read_text().split("## `run`: the whole loop", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


class Model:
    """The endpoint: a cut-off first, then a query per request until a result is owed twice, then a conclusion.

    What to assess comes from the open request, read through a second handle on the store
    (the oracle a scripted model needs).
    """

    def __init__(self, store: Path) -> None:
        self.store, self.bodies = store, []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        httpx2 = require("httpx2")
        self.bodies.append(json.loads(request.content))
        if len(self.bodies) == 1:
            return httpx2.Response(200, json=anthropic_cut_off(max_tokens=2048))
        with Investigation.open(str(self.store), "demo", read_only=True) as peek:
            req = peek.requests()[-1]
            owed = peek.state.pending_result(req.hypothesis)
        if owed:
            answer = decision(conclude("supported", owed), assess(owed, "supports", 0.9))
        else:
            answer = decision(query("select max(wait_ms) from pool_stats", source="pg:prod"))
        return httpx2.Response(200, json=anthropic_reply(answer))


@pytest.mark.slow  # crash: the controller dies in its first query and runs again
def test_the_run_example_runs_crashes_and_continues(tmp_path, monkeypatch):
    model = Model(tmp_path / "demo.sqlite3")
    mock_anthropic_in(tmp_path, monkeypatch, model)
    ran: list[str] = []

    def run_query(source: str, q: str) -> dict:
        ran.append(q)
        if len(ran) == 1:
            raise ConnectionError("the database went away")  # dies between decision and result
        return {"kind": "rows", "columns": ["max"], "rows": [[4180]]}

    monkeypatch.setitem(sys.modules, "my_queries", types.SimpleNamespace(run_query=run_query))
    code = compile(doc_example(), "docs/controllers.md", "exec")
    with pytest.raises(ConnectionError):
        exec(code, {})
    exec(code, {})  # the restart: the same program again
    assert ran == ["select max(wait_ms) from pool_stats"] * 2
    # The cut-off was asked again with twice its output limit: `send` merged attempt.max_tokens.
    assert [b["max_tokens"] for b in model.bodies[:2]] == [2048, 4096]
    assert model.bodies[0]["messages"] == model.bodies[1]["messages"]
    with Investigation.open("demo.sqlite3", "demo") as inv:
        assert (inv.status, inv.show().termination_reason) == ("completed", "root_cause_found")
    run = read_run(tmp_path / "runs" / "demo")
    assert {verify_context(str(p), c).status for p, c in run} == {"ok"}
    assert replay_export(tmp_path / "runs" / "demo").ok
    kept = (tmp_path / "runs" / "demo" / "answers.jsonl").read_text().splitlines()
    assert json.loads(kept[0])["code"] == "reply_truncated"  # the cut-off reply is kept too


def test_the_testing_example_runs(tmp_path, monkeypatch):
    section = (ROOT / "docs" / "controllers.md").read_text().split("## Testing a controller", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "encodings").mkdir()
    (tmp_path / "encodings" / "example-state.json").write_bytes(
        (ROOT / "encodings" / "example-state.json").read_bytes()
    )
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/controllers.md", "exec"), {})
    with Investigation.open("test.sqlite3", "demo") as inv:
        assert inv.pending_actions()[0].query == "select 1"
