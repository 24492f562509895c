"""A rejected answer writes its `answer` event and nothing else: no snapshot row either, however large it is."""

from __future__ import annotations

import sqlite3

import pytest

from tests.helpers.session_helpers import decision, query, state_bytes
from workingset import DecisionRejected, Investigation


def _rows(path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("events", "snapshots", "payloads", "requests", "actions", "analyses")}  # fmt: skip


@pytest.mark.parametrize(
    "size", [2 << 20, (1 << 20) - 100], ids=["too-large", "just-under-the-limit"]
)
def test_a_large_rejected_answer_writes_only_its_answer_event(tmp_path, size):
    path = str(tmp_path / "s.sqlite3")
    with Investigation.create(path, state_bytes(), encoder="v8") as inv:
        req = inv.next_request("H1")
        before = _rows(path)
        with pytest.raises(DecisionRejected):
            inv.submit(req.request_id, b'{"next": "' + b"x" * size + b'"}')
        after = _rows(path)
        assert after == dict(before, events=before["events"] + 1)  # the answer event, nothing else
        # The next accepted call takes the snapshot that is due, with the events it reflects.
        inv.submit(req.request_id, decision(query("select 1")))
        assert _rows(path)["snapshots"] == before["snapshots"] + 1
