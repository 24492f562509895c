"""The README's per-turn example, run as it is written against a mock Anthropic endpoint, killed mid-turn and restarted."""

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
from workingset import Investigation, read_run, verify_context

if TYPE_CHECKING:  # annotations only; the tests import it where they use it
    import httpx2

pytestmark = pytest.mark.slow  # crash: the controller is killed mid-turn and restarted

ROOT = Path(__file__).parents[2]


def readme_example() -> str:
    section = (ROOT / "README.md").read_text().split("## Sessions: the per-turn API and CLI", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


class Model:
    """The mock endpoint: a text answer the schema rejects, then a query, then a conclusion citing its result.

    What to assess comes from the open request itself (the oracle a scripted model needs), read
    through a second handle on the store.
    """

    def __init__(self, store: Path) -> None:
        self.store, self.bodies = store, []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        httpx2 = require("httpx2")
        self.bodies.append(json.loads(request.content))
        with Investigation.open(str(self.store), "demo", read_only=True) as peek:
            req = peek.requests()[-1]
            owed = peek.state.pending_result(req.hypothesis)
        n = len(self.bodies)
        if (
            n == 1
        ):  # in text, not through the tool: the README's old loop crashed here (StopIteration)
            reply = anthropic_reply({})
            reply["content"] = [{"type": "text", "text": '{"next": {"kind": "query"}}'}]
            reply["stop_reason"] = "end_turn"
            return httpx2.Response(200, json=reply)
        answer = decision(
            query("select max(wait_ms) from pool_stats", source="pg:prod"),
            assess(owed) if owed else None,
        )
        if n > 2:
            answer = decision(conclude("supported", owed), assess(owed, "supports", 0.9))
        return httpx2.Response(200, json=anthropic_reply(answer))


def test_the_readme_per_turn_example_runs_and_restarts(tmp_path, monkeypatch):
    model = Model(tmp_path / "demo.sqlite3")
    mock_anthropic_in(tmp_path, monkeypatch, model)
    ran: list[tuple[str, str]] = []

    def run_query(source: str, q: str) -> dict:
        ran.append((source, q))
        if len(ran) == 1:
            raise ConnectionError(
                "the database went away"
            )  # the controller dies between decision and result
        return {"kind": "rows", "columns": ["max"], "rows": [[4180]]}

    monkeypatch.setitem(sys.modules, "my_queries", types.SimpleNamespace(run_query=run_query))
    code = compile(readme_example(), "README.md", "exec")
    with pytest.raises(ConnectionError):
        exec(code, {})
    exec(code, {})  # the restart: the same program again
    assert ran == [("pg:prod", "select max(wait_ms) from pool_stats")] * 2
    assert (
        len(model.bodies) == 3 and len(model.bodies[1]["messages"]) == 3
    )  # the text try went back with its rejection
    with Investigation.open("demo.sqlite3", "demo") as inv:
        summary = inv.show()
        assert (summary.status, summary.termination_reason) == ("completed", "root_cause_found")
        assert summary.state.evidence[-1].capture.query == "select max(wait_ms) from pool_stats"
    run = read_run(tmp_path / "runs" / "demo")
    assert [verify_context(str(p), c).status for p, c in run] == ["ok", "ok"]
