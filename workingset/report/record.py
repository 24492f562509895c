"""What an exported run recorded of each turn: its decision, its rejected answers and its outcome.

A run made by `workingset export` holds `journal.jsonl` and `answers.jsonl` beside its
stored contexts (see `exports`): the report shows, for each context, the decision accepted
for its request, every answer refused before it (code and message) and what followed (the
query's recorded result, the analysis's status), and the run's final status. A plain run (a
folder of stored contexts, an import) holds none of this; the page then says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..eventlog.exports import ANSWERS, JOURNAL


def turn_records(directory: str, request_ids: Sequence[str]) -> dict[str, Any] | None:
    """The recorded decision, rejections and outcome of each request (in order) and the run's outcome; None for a plain run.

    An export whose journal is damaged is `invalid_file`, as `replay` reports it.
    """
    from ..session.frozen_replay import read_journal

    root = Path(directory)
    if not root.is_dir() or not ((root / JOURNAL).exists() or (root / ANSWERS).exists()):
        return None
    _, steps, end = read_journal(root)
    events = [item for step in steps for item in step]
    out = {"outcome": _status(end.get("status"), end.get("termination_reason")) if end else None,
           "turns": [_turn(events, rid) for rid in request_ids]}  # fmt: skip
    if "stage" in end:  # an export made since the lifecycle was recorded (#34)
        out["lifecycle"] = lifecycle_line(end)
    return out


def lifecycle_line(end: dict[str, Any]) -> str:
    """The run's stage, why it stopped (one sentence) and, for a partial outcome, its limitations, from the end line."""
    parts = [f"stage {end.get('stage')}"]
    stop = end.get("stop")
    if isinstance(stop, dict):
        parts.append(f"stopped: {stop.get('explanation')}")
    limits = end.get("limitations")
    if isinstance(limits, list) and limits:
        what = "; ".join(f"{item.get('evidence')} ({', '.join(map(str, item.get('why') or []))})"
                         for item in limits if isinstance(item, dict))  # fmt: skip
        head = "partial outcome, limitations" if end.get("partial") else "limitations so far"
        parts.append(f"{head}: {what}")
    return " · ".join(parts)


def _turn(events: list[dict[str, Any]], request_id: str) -> dict[str, Any]:
    mine = [e for e in events if e.get("request_id") == request_id]
    rejections = [{"code": str(e.get("code")), "message": str(e.get("message"))}
                  for e in mine if e["kind"] == "answer" and e.get("outcome") == "rejected"]  # fmt: skip
    decision = next((e for e in mine if e["kind"] == "decision"), None)
    if decision is None:
        return {"decision": None, "rejections": rejections, "outcome": _undecided(events, mine)}
    return {
        "decision": describe(decision.get("decision")),
        "rejections": rejections,
        "outcome": _after(events, decision),
    }


def describe(decision: Any) -> str:
    """One line for a decision as the journal holds it: its assessment, its next step, how many notes it adds."""
    if not isinstance(decision, dict) or not isinstance(decision.get("next"), dict):
        return "(not readable)"
    step, parts = decision["next"], []
    assessment = decision.get("assessment")
    if isinstance(assessment, dict):
        parts.append(f"assessed {assessment.get('evidence_ref')} as {assessment.get('verdict')} "
                     f"(confidence {assessment.get('confidence')})")  # fmt: skip
    kind = step.get("kind")
    if kind == "query":
        parts.append(
            f"query {step.get('source')}: {step.get('query')} (purpose: {step.get('purpose')})"
        )
    elif kind == "recall":
        parts.append("recall " + ", ".join(map(str, step.get("evidence_refs") or [])))
    elif kind == "conclude":
        cited = ", ".join(map(str, step.get("evidence_refs") or []))
        parts.append(
            f"conclude {step.get('disposition')}: {step.get('diagnosis')} (citing {cited})"
        )
    else:
        parts.append(f"{kind}")
    notes = decision.get("notes")
    if isinstance(notes, list) and notes:
        parts.append(f"{len(notes)} note{'s' * (len(notes) > 1)} added")
    return "; ".join(parts)


def _status(status: Any, reason: Any) -> str:
    return f"{status} ({reason})" if reason else str(status)


def _after(events: list[dict[str, Any]], decision: dict[str, Any]) -> str:
    """What followed an accepted decision: its query's recorded result, and the analysis's status when it closed."""
    out = []
    action = decision.get("action")
    if action is not None:
        record = next(
            (e for e in events if e["kind"] == "record" and e.get("action") == action), None
        )
        evidence = record.get("evidence") if record else None
        if isinstance(evidence, dict):
            capture = evidence.get("capture")
            items = capture.get("item_count") if isinstance(capture, dict) else None
            out.append(
                f"{action} ran: its result is {evidence.get('id')}"
                + (f" ({items} item{'s' * (items != 1)})" if items is not None else "")
            )
        else:
            out.append(f"{action} decided: no result recorded")
    elif (
        isinstance(decision.get("decision"), dict)
        and (decision["decision"].get("next") or {}).get("kind") == "recall"
    ):
        out.append("recalled into the next request")
    status = decision.get("status")
    out.append("the analysis stays active" if status == "active" else
               f"the analysis is {_status(status, decision.get('termination_reason'))}")  # fmt: skip
    return "; ".join(out)


def _undecided(events: list[dict[str, Any]], mine: list[dict[str, Any]]) -> str:
    """A request no decision answered: open at the end, or closed by the lifecycle event that followed it."""
    after = max((e["seq"] for e in mine), default=0)
    closing = next(
        (e for e in events if e["seq"] > after and e["kind"] in ("cancel", "fail")), None
    )
    if closing is None:
        return "no decision accepted: the request was still open"
    why = f": {closing['message']}" if closing.get("message") else ""
    return f"no decision accepted: the analysis was {closing.get('status')}{why}"
