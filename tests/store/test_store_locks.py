"""Two handles on one SQLite store in one process, writers in others: no acknowledged write is lost.

SQLite's locks are POSIX advisory locks, held per process and file: closing any descriptor of
the store file releases all of them. A second handle that read the store's header with a plain
open and close (as `open`, `create` and `open_or_create` did) dropped the first handle's locks,
so another process that wrote and exited deleted the write-ahead log under it: both sides then
acknowledged an answer to the same request, and one side's writes were gone (issue 30, item 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.common import ROOT
from tests.helpers.session_helpers import ANALYSIS, assess, decision, make_state, query
from workingset import Investigation
from workingset.errors import WorkingsetError

pytestmark = pytest.mark.slow  # cross-process

# One turn in another process: answer the open request (assessing what rule A asks for), then
# record the query's result; prints what was acknowledged.
_TURN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from workingset import Investigation
from workingset.errors import WorkingsetError
from tests.helpers.session_helpers import assess, decision, query
path, tag = sys.argv[2], sys.argv[3]
inv = Investigation.open(path, "demo")
try:
    req = inv.next_request()
    inv.submit(req.request_id, decision(query("select " + tag), assess(req.assess) if req.assess else None))
    acked = [req.request_id]
    (action,) = [a for a in inv.pending_actions() if a.request_id == req.request_id]
    inv.record(action.action, payload={"kind": "text", "language": None, "text": "rows " + tag})
    acked.append(action.action)
    print(json.dumps({"acked": acked}))
except WorkingsetError as err:
    print(json.dumps({"refused": err.code}))
"""


def _turn_here(inv: Investigation, tag: str) -> list[str]:
    req = inv.next_request()
    inv.submit(
        req.request_id, decision(query("select " + tag), assess(req.assess) if req.assess else None)
    )
    (action,) = [a for a in inv.pending_actions() if a.request_id == req.request_id]
    inv.record(action.action, payload={"kind": "text", "language": None, "text": "rows " + tag})
    return [req.request_id, action.action]


def _turn_elsewhere(path: str, tag: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _TURN, str(ROOT), path, tag],
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    reply = json.loads(out.stdout)
    assert "acked" in reply, reply
    return reply["acked"]


def _second_handle(how: str, path: str) -> Investigation:
    if how == "open":
        return Investigation.open(path, ANALYSIS)
    if how == "read_only":
        return Investigation.open(path, ANALYSIS, read_only=True)
    if how == "open_or_create":
        return Investigation.open_or_create(path, make_state())
    assert how == "create"  # another analysis in the same store file
    with pytest.raises(WorkingsetError) as taken:  # the same ID again is refused…
        Investigation.create(path, make_state())
    assert taken.value.code == "analysis_exists"
    return Investigation.create(path, make_state(analysis="other"))  # …another is a new handle


@pytest.mark.parametrize("how", ["open", "read_only", "open_or_create", "create"])
def test_a_second_handle_in_one_process_keeps_every_acknowledged_write(tmp_path, how):
    path = str(tmp_path / "store.db")
    Investigation.create(path, make_state(max_iterations=30, limits=(8, 8, 8))).close()
    first = Investigation.open(path, ANALYSIS)
    first.show()  # the connection is open and in WAL mode, holding SQLite's locks
    second = _second_handle(how, path)
    acked: list[str] = []
    for n in range(4):  # another process writes and exits, then this one writes, four times
        acked += _turn_elsewhere(path, f"other{n}")
        assert os.path.exists(path + "-wal"), "the write-ahead log was deleted under an open handle"
        acked += _turn_here(first, f"here{n}")
        second.show()
    first.close()
    second.close()

    fresh = Investigation.open(path, ANALYSIS, read_only=True)
    state = fresh.show().state
    fresh.close()
    requests = [a for a in acked if a.startswith(f"{ANALYSIS}-r")]
    assert len(requests) == len(set(requests)) == 8, "a request was answered twice"
    queries = [h.text for hyp in state.hypotheses for h in hyp.history if h.kind == "query"]
    for n in range(4):  # every acknowledged answer is in the store
        assert any(f"select other{n}" in q for q in queries)
        assert any(f"select here{n}" in q for q in queries)
    recorded = {
        ev.payload.text
        for ev in state.evidence
        if ev.payload is not None and hasattr(ev.payload, "text")
    }
    assert {f"rows other{n}" for n in range(4)} | {f"rows here{n}" for n in range(4)} <= recorded
