"""Reading a report page back: the JSON it embeds, as the page's script reads it."""

from __future__ import annotations

import json
import re

from workingset.report.texts import decode


def embedded(page: str, element: str) -> dict:
    """The JSON of the page's `<script type="application/json" id=element>`."""
    match = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', page, re.S)
    assert match, f"no #{element} in the page"
    return json.loads(match.group(1))


def texts(report: dict, strategy: str) -> list[str]:
    """Every turn's text of one strategy, decoded from the viewer's line edits."""
    lines, prev, out = report["viewer"]["lines"], [], []
    for entry in report["viewer"]["turns"][strategy]:
        prev = decode(lines, prev, entry["edits"])
        out.append("\n".join(prev))
    return out


def exported_run(tmp_path) -> tuple:
    """A run made by `export`, two requests for H1: a malformed answer refused, then a query, its result recorded; a
    conclusion citing unknown evidence refused, then one that completes the analysis. Returns the run's directory,
    the query's action and the evidence it recorded."""
    import pytest

    from tests.helpers.session_helpers import assess, conclude, decision, query, result, state_bytes
    from workingset.errors import DecisionRejected
    from workingset.session.investigation import Investigation

    store, out = tmp_path / "store.sqlite3", tmp_path / "export"
    with Investigation.create(
        str(store), state_bytes(), encoder="v10", clock=lambda: "2026-06-10T21:00:00Z"
    ) as inv:
        req = inv.next_request("H1")
        with pytest.raises(DecisionRejected):
            inv.submit(req.request_id, "{")
        act = inv.submit(req.request_id, decision(query("select 1"))).action
        eid = inv.record(act, result("42 rows"), captured_at="2026-06-10T20:30:00Z").evidence
        req = inv.next_request("H1")
        with pytest.raises(DecisionRejected):  # cites evidence the state does not hold
            inv.submit(req.request_id, decision(conclude("supported", "E999999"), assess(eid)))
        inv.submit(
            req.request_id, decision(conclude("supported", eid), assess(eid))
        )  # the root cause: completed
        inv.export(out)
    return out, act, eid
