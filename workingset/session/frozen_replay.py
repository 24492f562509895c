"""Frozen replay: rebuild an exported analysis in a fresh store from its inputs alone, and compare.

The inputs are what the export recorded from outside the library: the initial state and
encoder (`created`), which hypothesis each request was for, every answer exactly as it was
submitted, every query result with its capture time, and the lifecycle calls. Replay feeds
them, in the recorded order and with the recorded times, through the same `Investigation`
API a controller uses, in a new store in a temporary directory: no model, no queries.

After each step it compares what the fresh store logged with what the export recorded for
that step (the request's rendered hash and manifest; the answer's outcome and the decision
as applied, with its iteration, action and status; the recorded evidence), and for each
request the stored-context file: its recorded hash and the state it holds. Then the final
status and state hash. The first difference stops the replay and is reported as a
`Divergence`: which step, which field (a JSON path), the recorded and the replayed value.
Every rule is checked again on the way, so a tampered answer or an altered result is
rejected or changes a hash, and a span (`decisions.check_spans`) is re-checked against the
bytes the replayed request showed.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ..encoders import get_encoder
from ..errors import InvalidFile, ReplyUnusable, WorkingsetError
from ..eventlog.exports import (
    ANSWERS,
    JOURNAL,
    JOURNAL_FORMAT,
    NO_ANSWER,
    event_hashes,
    journal_lines,
    state_hash,
)
from ..io.limits import jsonl_lines
from ..model.state import State, StoredContext, validate_state
from ..runs.layout import load_context_file, make_stored_context
from .attempts import reply_json
from .bounds import end_fields, stop_if_due
from .investigation import Investigation


@dataclass(frozen=True)
class Divergence:
    """The first place where the replay differs from the export."""

    step: str  # e.g. "request demo-r0003", "answer to demo-r0002", "record B000004", "end"
    seq: int | None  # the recorded event number, when the step has one
    path: str  # which field, as a JSON path into the compared object
    recorded: Any
    replayed: Any

    def lines(self) -> list[str]:
        """The human-readable structural diff."""
        at = f" (event {self.seq})" if self.seq is not None else ""
        return [
            f"first divergence: {self.step}{at}",
            f"  field:    {self.path}",
            f"  recorded: {_show(self.recorded)}",
            f"  replayed: {_show(self.replayed)}",
        ]


@dataclass
class ReplayReport:
    """What a replay did and where, if anywhere, it first differed."""

    analysis_id: str
    events: int = 0
    requests: int = 0
    answers: int = 0
    rejected: int = 0
    results: int = 0
    state_hash: str | None = None
    divergence: Divergence | None = None
    contexts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.divergence is None


HEADER_KEYS = frozenset({"format", "analysis_id", "encoder"})


class _Stop(Exception):
    def __init__(self, divergence: Divergence):
        self.divergence = divergence


def replay_export(directory: str | Path) -> ReplayReport:
    """Replay the export in `directory` in a fresh temporary store; never touches any other store."""
    root = Path(directory)
    header, steps, end = read_journal(root)
    contexts = _read_contexts(root)
    report = ReplayReport(analysis_id=header["analysis_id"])
    with tempfile.TemporaryDirectory(prefix="workingset-replay-") as tmp:
        run = _Run(Path(tmp) / "replay.sqlite3", contexts, report, header, end)
        moves = [lines[0].get("encoder") for lines in steps if lines[0]["kind"] == "budget"]
        run.last_encoder = moves[-1] if moves else None
        try:
            extra = sorted(set(header) - HEADER_KEYS)
            if extra:
                raise _Stop(
                    Divergence(
                        "journal header", None, f"$.{extra[0]}", header[extra[0]], "(absent)"
                    )
                )
            for step in steps:
                run.step(step)
            run.finish(end)
        except _Stop as stop:
            report.divergence = stop.divergence
        finally:
            run.close()
    return report


class _Run:
    """The fresh store being rebuilt, and the comparison after every step."""

    def __init__(self, store: Path, contexts: dict[str, tuple[str, StoredContext]], report: ReplayReport,
                 header: dict[str, Any], end: dict[str, Any]):  # fmt: skip
        self.store = store
        self.contexts = dict(contexts)
        self.report = report
        self.header = header
        hashes = end.get("event_hashes")
        self.hashes: list[Any] = hashes if isinstance(hashes, list) else []
        self.inv: Investigation | None = None
        # The header names the analysis's encoder at export: after a `budget` event, that event's.
        self.last_encoder: Any = None
        self.now = ""
        self.seq = 0

    def clock(self) -> str:
        return self.now

    def close(self) -> None:
        if self.inv is not None:
            self.inv.close()

    def step(self, lines: list[dict[str, Any]]) -> None:
        first = lines[0]
        kind, self.now = first["kind"], first["at"]
        name = _step_name(first)
        try:
            self._call(kind, first)
        except WorkingsetError as err:
            if (
                kind != "answer"
            ):  # only an answer may be refused, and only as recorded (compared below)
                raise _Stop(
                    Divergence(name, first["seq"], "$", "accepted", f"{err.code}: {err.message}")
                ) from None
        assert self.inv is not None
        with self.inv.store.read() as tx:
            got = journal_lines(tx, self.inv.analysis_id, after=self.seq)
        _compare(name, lines, got)
        for line, digest in zip(got, event_hashes(got)):
            # The time and the answer bytes went in as recorded: only the export's own hash can catch an edit.
            recorded = (
                self.hashes[line["seq"] - 1] if line["seq"] <= len(self.hashes) else "(absent)"
            )
            if recorded != digest:
                raise _Stop(Divergence(f"{name}: its {line['kind']} event", line["seq"],
                                       f"end.event_hashes[{line['seq'] - 1}]", recorded, digest))  # fmt: skip
        self.seq += len(got)
        self.report.events += len(got)
        if kind == "created":
            self._check_header()
        if kind == "request":
            self._check_context(first)

    def _check_header(self) -> None:
        """The header names the analysis and the encoder the created event made (and nothing else)."""
        assert self.inv is not None
        row = self.inv.show()
        replayed = {
            "format": JOURNAL_FORMAT,
            "analysis_id": self.inv.analysis_id,
            "encoder": self.last_encoder or row.encoder,
        }
        diff = first_difference(self.header, replayed)
        if diff is not None:
            raise _Stop(Divergence("journal header", None, *diff))

    def _call(self, kind: str, line: dict[str, Any]) -> None:
        if kind == "created":
            state = _state(line["state"])
            before = line.get(
                "requests_before", 0
            )  # created from a stored context: its requests follow that one's
            if type(before) is not int:
                raise InvalidFile(f"{JOURNAL}: the created event's requests_before is not an integer",
                                  details={"file": JOURNAL, "path": "$.requests_before"})  # fmt: skip
            # As recorded, even a state created before `create` refused fixed parts past the budget.
            self.inv = Investigation.create(self.store, state, encoder=line["encoder"], clock=self.clock,
                                            requests_before=before, check_fixed=False)  # fmt: skip
            return
        if self.inv is None:
            raise InvalidFile(
                f"{JOURNAL}: the first event must be `created`",
                details={"file": JOURNAL, "path": "$"},
            )
        if kind == "request":
            self.report.requests += 1
            self.inv.next_request(line["hypothesis"])
        elif kind == "answer":
            self.report.answers += 1
            self.report.rejected += line.get("outcome") == "rejected"
            self._answer(line)
        elif kind == "record":
            self.report.results += 1
            ev = line["evidence"]
            result = {"scope": ev["scope"], "capture": ev["capture"], "payload": ev["payload"],
                      "cost": ev["budget"]["cost"]}  # fmt: skip
            self.inv.record(line["action"], result, captured_at=ev["captured_at"])
        elif kind == "fail":
            self.inv.fail(line.get("message") or "")
        elif kind == "stop":  # a bound the log counts ran out: the same check at the recorded time
            stop_if_due(self.inv)
        elif kind in ("pause", "resume", "cancel"):
            getattr(self.inv, kind)()
        elif kind == "budget":
            self.inv.raise_budget(_budget_of(line.get("encoder")))
        else:
            raise InvalidFile(f"{JOURNAL}: event {line['seq']} has an unknown kind {kind!r}",
                              details={"file": JOURNAL, "path": "$.kind"})  # fmt: skip

    def _answer(self, line: dict[str, Any]) -> None:
        """Submit a recorded answer again; a reply that held no answer is read again from the reply kept."""
        assert self.inv is not None
        data = _answer_bytes(line)
        if line.get("code") in NO_ANSWER:
            size = line.get("size")
            if isinstance(size, int):  # only its head was kept: its refusal is the one recorded
                err = ReplyUnusable(
                    str(line.get("message")), code=line["code"], details=line.get("details") or {}
                )
                raise self.inv._keep_reply(
                    line["request_id"], _answer_bytes(line, pad=False), err, size=size
                )
            if line["code"] == "reply_malformed" and (reply_json(data) or {}).get("unreadable"):
                err = ReplyUnusable(
                    str(line.get("message")), code=line["code"], details=line.get("details") or {}
                )
                raise self.inv._keep_reply(line["request_id"], data, err)
            reply = reply_json(data)
            if (
                reply is not None and "unreadable" not in reply
            ):  # else a note of a reply that was not JSON
                self.inv.submit_reply(line["request_id"], reply)
                return
        self.inv.submit(line["request_id"], data)

    def _check_context(self, line: dict[str, Any]) -> None:
        rid = line["request_id"]
        name = f"stored context {rid}.json"
        found = self.contexts.pop(rid, None)
        if found is None:
            raise _Stop(Divergence(name, line["seq"], "$", "a stored context", "missing"))
        path, ctx = found
        self.report.contexts.append(path)
        recorded = ctx.rendered.hash if ctx.rendered is not None else None
        if recorded != line["hash"]:
            raise _Stop(Divergence(name, line["seq"], "$.rendered.hash", recorded, line["hash"]))
        assert self.inv is not None
        replayed = msgspec.to_builtins(self.inv.state)
        diff = first_difference(msgspec.to_builtins(ctx.state), replayed, "$.state")
        if diff is None:
            diff = first_difference(
                [ctx.encoder, ctx.hypothesis],
                [line["encoder"], line["hypothesis"]],
                "$[encoder, hypothesis]",
            )
        if diff is None:  # every other byte of it too: its format, request ID and rendered size
            again = make_stored_context(rid, line["encoder"], line["hypothesis"], self.inv.state)
            diff = first_difference(msgspec.to_builtins(ctx), msgspec.to_builtins(again))
        if diff is not None:
            raise _Stop(Divergence(name, line["seq"], *diff))

    def finish(self, end: dict[str, Any]) -> None:
        if self.contexts:
            rid = sorted(self.contexts)[0]
            raise _Stop(
                Divergence(
                    f"stored context {rid}.json",
                    None,
                    "$",
                    "no such request in the journal",
                    "present",
                )
            )
        assert self.inv is not None
        summary = self.inv.show()
        self.report.state_hash = state_hash(summary.state)
        replayed = {"events": self.seq, "status": summary.status, "termination_reason": summary.termination_reason,
                    "state_hash": self.report.state_hash}  # fmt: skip
        replayed["event_hashes"] = self.hashes[
            : self.seq
        ]  # each compared on the way; none may be left over
        # The lifecycle keys, where the export has them (one made before them has not).
        replayed.update(
            {k: v for k, v in end_fields(summary, self.inv.usage()).items() if k in end}
        )
        recorded = {k: end.get(k) for k in replayed}
        extra = sorted(set(end) - set(replayed) - {"kind"})
        diff = first_difference(recorded, replayed) or (
            (f"$.{extra[0]}", end[extra[0]], "(absent)") if extra else None)  # fmt: skip
        if diff is not None:
            raise _Stop(Divergence("end", None, *diff))


def first_difference(recorded: Any, replayed: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """The first (JSON path, recorded, replayed) where two plain-JSON values differ, or None."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in list(recorded) + [k for k in replayed if k not in recorded]:
            if key not in recorded or key not in replayed:
                return f"{path}.{key}", recorded.get(key, "(absent)"), replayed.get(key, "(absent)")
            found = first_difference(recorded[key], replayed[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        for i, (a, b) in enumerate(zip(recorded, replayed)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(recorded) != len(replayed):
            return f"{path}.length", len(recorded), len(replayed)
        return None
    if type(recorded) is not type(replayed) or recorded != replayed:
        return path, recorded, replayed
    return None


def _compare(name: str, recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> None:
    for i in range(max(len(recorded), len(replayed))):
        rec = recorded[i] if i < len(recorded) else None
        rep = replayed[i] if i < len(replayed) else None
        seq = (rec or rep or {}).get("seq")
        if rec is None or rep is None:
            only = rec or rep
            # i is below the longer list's length: that list has an event here.
            assert only is not None
            what = f"{only['kind']} event"
            raise _Stop(
                Divergence(name, seq, "$", what if rec else "nothing", what if rep else "nothing")
            )
        diff = first_difference(rec, rep)
        if diff is not None:
            raise _Stop(Divergence(f"{name}: its {rec['kind']} event", seq, *diff))


def _budget_of(encoder: Any) -> int:
    """The budget a `budget` event's encoder names (its replay then writes the same event, or differs)."""
    budget = getattr(get_encoder(encoder), "budget", None) if isinstance(encoder, str) else None
    if type(budget) is not int:
        raise InvalidFile(f"{JOURNAL}: a budget event names no encoder with a budget ({str(encoder)[:100]!r})",
                          details={"file": JOURNAL, "path": "$.encoder"})  # fmt: skip
    return budget


def _step_name(line: dict[str, Any]) -> str:
    kind = line["kind"]
    if kind == "request":
        return f"request {line.get('request_id')} for {line.get('hypothesis')}"
    if kind == "answer":
        return f"answer to {line.get('request_id')} ({line.get('outcome')})"
    if kind == "record":
        return f"record {line.get('action')}"
    return kind


# -- reading an export -------------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for number, raw in jsonl_lines(str(path)):  # bounded size and nesting, no key given twice
        try:
            item = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise InvalidFile(
                f"{path}: line {number} is not JSON ({exc})",
                details={"file": str(path), "line": number},
            ) from None
        if not isinstance(item, dict):
            raise InvalidFile(
                f"{path}: line {number} is not a JSON object",
                details={"file": str(path), "line": number},
            )
        out.append(item)
    return out


def read_journal(root: Path) -> tuple[dict[str, Any], list[list[dict[str, Any]]], dict[str, Any]]:
    """An export's header, its steps (each the recorded events one API call wrote) and its end line (`{}` if none)."""
    if not root.is_dir():
        raise InvalidFile(f"{root}: not a directory", details={"file": str(root), "path": "$"})
    for name in (JOURNAL, ANSWERS):
        if not (root / name).is_file():
            raise InvalidFile(f"{root}: no {name}; export the analysis again with this version (`workingset export`)",
                              details={"file": str(root / name), "path": "$"})  # fmt: skip
    journal = _read_jsonl(root / JOURNAL)
    if (
        not journal
        or journal[0].get("format") != JOURNAL_FORMAT
        or not isinstance(journal[0].get("analysis_id"), str)
    ):
        raise InvalidFile(f"{root / JOURNAL}: the first line must be the header with format {JOURNAL_FORMAT!r}",
                          details={"file": str(root / JOURNAL), "line": 1})  # fmt: skip
    header, events, end = journal[0], journal[1:], {}
    if events and events[-1].get("kind") == "end":
        end = events.pop()
    answers = _read_jsonl(root / ANSWERS)
    for source, items in ((JOURNAL, events), (ANSWERS, answers)):
        for i, item in enumerate(items):
            if (
                not isinstance(item.get("seq"), int)
                or not isinstance(item.get("kind"), str)
                or not isinstance(item.get("at"), str)
            ):
                raise InvalidFile(f"{root / source}: entry {i + 1} lacks seq, kind or at",
                                  details={"file": str(root / source), "line": i + 1})  # fmt: skip
    merged = sorted(events + answers, key=lambda x: x["seq"])
    steps: list[list[dict[str, Any]]] = []
    for item in merged:
        follows_answer = (
            steps
            and steps[-1][-1]["kind"] == "answer"
            and steps[-1][-1].get("outcome") == "accepted"
        )
        if item["kind"] == "decision" and follows_answer:
            steps[-1].append(item)  # an accepted answer and its decision are one submission
        else:
            steps.append([item])
    if not steps or steps[0][0]["kind"] != "created":
        raise InvalidFile(
            f"{root / JOURNAL}: the first event must be `created`",
            details={"file": str(root / JOURNAL), "line": 2},
        )
    return header, steps, end


def _read_contexts(root: Path) -> dict[str, tuple[str, StoredContext]]:
    out = {}
    for path in sorted(p for p in root.iterdir() if p.suffix == ".json" and p.is_file()):
        ctx = load_context_file(path)
        out[ctx.request_id] = (str(path), ctx)
    return out


def _state(raw: Any) -> State:
    try:
        state = msgspec.convert(raw, State)
    except msgspec.ValidationError as exc:
        raise InvalidFile(
            f"{JOURNAL}: the created event's state is invalid ({exc})",
            details={"file": JOURNAL, "path": "$.state"},
        ) from None
    validate_state(state, JOURNAL, "$.state")
    return state


def _answer_bytes(line: dict[str, Any], pad: bool = True) -> bytes:
    answer = line.get("answer")
    if not isinstance(answer, str):
        raise InvalidFile(
            f"{ANSWERS}: event {line['seq']} has no answer text",
            details={"file": ANSWERS, "path": "$.answer"},
        )
    try:
        data = (
            base64.b64decode(answer, validate=True)
            if line.get("encoding") == "base64"
            else answer.encode("utf-8")
        )
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise InvalidFile(f"{ANSWERS}: event {line['seq']}: the answer is not {line.get('encoding') or 'text'}",
                          details={"file": ANSWERS, "path": "$.answer"}) from None  # fmt: skip
    size = line.get("size")
    if pad and isinstance(size, int) and size > len(data):
        # A `too_large` answer kept only its head: the same size is refused the same way, whatever the rest was.
        data += b" " * (size - len(data))
    return data


def _show(value: Any) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 300 else text[:300] + f"… ({len(text)} characters)"
