"""A small synthetic investigation for the session, store and CLI tests (not the bug17 fixture)."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from typing import Any

import msgspec

from workingset.model.hashing import content_hash

ANALYSIS = "demo"


def _evidence(n: int, collector: str, scope: str, payload: dict | None, *, query: str | None, status: str = "settled",
              action: str | None = None, iteration: int = 0) -> dict[str, Any]:  # fmt: skip
    return {
        "id": f"E{n:06d}",
        "collector": collector,
        "scope": scope,
        "capture": {
            "query": query,
            "predicate": None,
            "origin": "loki:prod-eu" if scope == "log" else "pg:orders",
            "snapshot": None,
            "coverage": "2026-06-10T19:00Z/20:00Z",
            "truncated": False,
            "page": None,
            "next_cursor": None,
            "eof": True,
            "item_count": len(payload["rows"]) if payload and payload["kind"] == "rows" else None,
        },
        "payload": payload,
        "content_hash": content_hash(payload) if payload is not None else None,
        "budget": {"action": action, "status": status if action else "none", "cost": 0.0},
        "iteration": iteration,
        "captured_at": "2026-06-10T20:15:00Z",
    }


def _hypothesis(hid: str, title: str, limit: int = 6) -> dict[str, Any]:
    return {
        "id": hid,
        "title": title,
        "mechanism": f"mechanism of {title}",
        "confidence": 0.3,
        "disposition": "open",
        "control": {
            "iterations_used": 0,
            "iteration_limit": limit,
            "previous_result": None,
            "plan": None,
            "next_checks": [],
        },
        "history": [],
    }


def make_state(*, max_iterations: int = 30, limits: tuple[int, int, int] = (6, 6, 6), max_cost: float | None = None,
               analysis: str = ANALYSIS) -> dict[str, Any]:  # fmt: skip
    """Three open hypotheses and six settled evidence items: rows, text, a null payload and feedback."""
    rows = {
        "kind": "rows",
        "columns": ["order_id", "status", "amount"],
        "rows": [[1, "paid", 9.5], [2, "failed", None]],
    }
    log = {
        "kind": "text",
        "language": "log",
        "text": "20:01 ERROR retry budget exceeded\n20:02 WARN ``` fence",
    }
    code = {"kind": "text", "language": "python", "text": "def retry(n):\n    return n - 1\n"}
    empty = {"kind": "rows", "columns": ["order_id"], "rows": []}
    evidence = [
        _evidence(
            1,
            "H1",
            "query_result",
            rows,
            query="select * from orders",
            action="B000001",
            iteration=0,
        ),
        _evidence(
            2, "H1", "log", log, query='{app="checkout"} |= "ERROR"', action="B000002", iteration=0
        ),
        _evidence(3, "H2", "code", code, query="read retry.py", action="B000003", iteration=0),
        _evidence(
            4,
            "H2",
            "query_result",
            None,
            query="select count(*) from refunds",
            action="B000004",
            iteration=0,
        ),
        _evidence(
            5,
            "H3",
            "query_result",
            empty,
            query="select * from orders where status = 'lost'",
            action="B000005",
        ),
        _evidence(
            6,
            "H3",
            "feedback",
            {"kind": "text", "language": None, "text": "reviewer: check the retry path"},
            query=None,
        ),  # fmt: skip
    ]
    return {
        "analysis_id": analysis,
        "iteration": 0,
        "budget": {"max_iterations": max_iterations, "max_cost": max_cost, "cost_used": 0.0},
        "case": {
            "title": "Checkout orders stuck in failed",
            "statement": "Since 19:40 some paid orders show status failed.",
            "opened_at": "2026-06-10T19:45:00Z",
            "entities": [
                {"id": "svc-checkout", "kind": "service", "name": "checkout", "source": None}
            ],
        },
        "hypotheses": [
            _hypothesis("H1", "retry storm", limits[0]),
            _hypothesis("H2", "refund job race", limits[1]),
            _hypothesis("H3", "stale cache", limits[2]),
        ],
        "evidence": evidence,
        "notes": [
            {
                "id": "N000001",
                "hypothesis": None,
                "kind": "question",
                "text": "Which region?",
                "status": "open",
                "iteration": 0,
            }
        ],  # fmt: skip
        "recall": {},
    }


def state_bytes(**kw: Any) -> bytes:
    return json.dumps(make_state(**kw)).encode()


def query(
    text: str = "select 1", source: str = "pg:orders", purpose: str = "check"
) -> dict[str, Any]:
    return {"kind": "query", "source": source, "query": text, "purpose": purpose}


def recall(*ids: str) -> dict[str, Any]:
    return {"kind": "recall", "evidence_refs": list(ids)}


def conclude(disposition: str, *ids: str, diagnosis: str = "because") -> dict[str, Any]:
    return {
        "kind": "conclude",
        "disposition": disposition,
        "diagnosis": diagnosis,
        "evidence_refs": list(ids),
    }


def assess(eid: str, verdict: str = "supports", confidence: float = 0.7) -> dict[str, Any]:
    return {
        "evidence_ref": eid,
        "verdict": verdict,
        "confidence": confidence,
        "rationale": f"{eid} says so",
    }


def decision(
    next_: dict[str, Any], assessment: dict[str, Any] | None = None, notes: list | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"next": next_}
    if assessment is not None:
        out["assessment"] = assessment
    if notes is not None:
        out["notes"] = notes
    return out


def result(text: str = "42 rows", cost: float = 0.0, scope: str = "query_result", *, query: str = "select 1",
           origin: str = "pg:orders") -> dict[str, Any]:  # fmt: skip
    """A query's result; `query` and `origin` must be those its action decided (`query()`'s defaults)."""
    return {
        "scope": scope,
        "capture": {"query": query, "origin": origin, "item_count": 1, "eof": True},
        "payload": {"kind": "text", "language": None, "text": text},
        "cost": cost,
    }


_ANSWER_ROW = re.compile(r"^INSERT INTO \"events\" VALUES\('[^']*',[0-9]+,'answer',")


def db_dump(path: str, *, answers: bool = True) -> str:
    """The store's whole logical content (either backend): equal dumps mean nothing was written.

    `answers=False` leaves out the `answer` events: every submitted answer is kept, so a
    rejection appends one, and changes nothing else (every other row stays identical).
    """
    if str(path).startswith("postgresql://"):
        from tests.helpers import pg_server

        return pg_server.dump(str(path), answers=answers)
    conn = sqlite3.connect(path)
    try:
        lines = conn.iterdump()
        return "\n".join(line for line in lines if answers or not _ANSWER_ROW.match(line))
    finally:
        conn.close()


def answer_bytes(event: dict[str, Any]) -> bytes:
    """The submitted bytes an `answer` event keeps (UTF-8 text, else base64)."""
    if event.get("encoding") == "base64":
        return base64.b64decode(event["answer"])
    return event["answer"].encode("utf-8")


def answer_events(path: str) -> list[dict[str, Any]]:
    """The store's `answer` events in log order, as (analysis, at, and the event's fields); either backend."""
    sql = "SELECT analysis_id, at, data FROM events WHERE kind = 'answer' ORDER BY analysis_id, seq"
    if str(path).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(path)) as pg:
            rows = pg.execute(sql).fetchall()
    else:
        conn = sqlite3.connect(path)
        try:
            rows = conn.execute(sql).fetchall()
        finally:
            conn.close()
    return [{"analysis": a, "at": at, **json.loads(data)} for a, at, data in rows]


def state_json(inv: Any) -> bytes:
    return msgspec.json.encode(inv.show())


def recalled(inv: Any, *ids: str) -> str:
    """Recall `ids` for H1 and return the next request's ID, which shows them."""
    req = inv.next_request("H1")
    inv.submit(req.request_id, decision(recall(*ids)))
    nxt = inv.next_request("H1")
    assert set(ids) <= set(nxt.shown)
    return nxt.request_id
