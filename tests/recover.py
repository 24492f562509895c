"""Recover values from rendered text, to prove losslessness rather than assume it.

The parser knows only the documented conventions (encodings/): a fence is a run of 3+
backticks, closed by a line of exactly the same run; a text body is everything between the
newline after the opening fence and the newline before the closing one; jsonl tables have
the column names on their first line.
"""

from __future__ import annotations

import json
import re

_OPEN = re.compile(r"^(`{3,})([^`]*)$")


def blocks(text: str) -> list[tuple[int, str, str]]:
    """Every fenced block as (line number of its opening fence, info string, body)."""
    return [(start, info, body) for start, _end, info, body in _spans(text)]


def _spans(text: str) -> list[tuple[int, int, str, str]]:
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m:
            ticks, info = m.group(1), m.group(2)
            j = i + 1
            while lines[j] != ticks:
                j += 1
            out.append((i, j, info, "\n".join(lines[i + 1 : j])))
            i = j + 1
        else:
            i += 1
    return out


def parse_table(body: str) -> tuple[list, list[list]]:
    lines = body.split("\n")
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def evidence_payloads(text: str) -> dict[str, object]:
    """Evidence ID -> its payload as plain JSON (None when rendered as unknown)."""
    head = text.split("\n\n", 1)[0]
    if "\nencoder: investigation_project_v11" in head:
        return v11_evidence_payloads(text)
    if "\nencoder: investigation_project_v12" in head:
        return {eid: entry["payload"] for eid, entry in v12_evidence(text).items()}
    lines = text.split("\n")
    spans = _spans(text)
    inside = {n for start, end, _, _ in spans for n in range(start, end + 1)}
    by_line = {start: (info, body) for start, _end, info, body in spans}
    starts = sorted(by_line)
    payloads: dict[str, object] = {}
    for n, line in enumerate(lines):
        m = None if n in inside else re.match(r"^### Evidence (E[0-9]{6})", line)
        if not m:
            continue
        eid = m.group(1)
        following = [s for s in starts if s > n]
        record = json.loads(by_line[following[0]][1])
        payload = record["payload"]
        if payload is None:
            payloads[eid] = None
        elif "same_as" in payload:
            payloads[eid] = payloads[payload["same_as"]]
        elif payload["kind"] == "text" and "text" not in payload:
            payloads[eid] = {"kind": "text", "language": payload["language"], "text": by_line[following[1]][1]}
        elif payload["kind"] == "rows" and "rows" not in payload:
            columns, rows = parse_table(by_line[following[1]][1])
            payloads[eid] = {"kind": "rows", "columns": columns, "rows": rows}
        else:
            payloads[eid] = payload
    return payloads


def table_after(text: str, heading: str) -> tuple[list, list[list]]:
    """The first jsonl table after a line starting with `heading`."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    for line_no, info, body in blocks(text):
        if line_no > start and info == "jsonl":
            return parse_table(body)
    raise AssertionError(f"no table after {heading!r}")


def journal_records(text: str) -> list[tuple[int, dict]]:
    """v11: every record line outside code blocks, as (line number, record)."""
    inside = {n for start, end, _, _ in _spans(text) for n in range(start, end + 1)}
    return [(n, json.loads(line)) for n, line in enumerate(text.split("\n"))
            if n not in inside and line.startswith('{"entry":')]  # fmt: skip


def v11_evidence_payloads(text: str) -> dict[str, object]:
    """v11: evidence ID -> payload as plain JSON, from the record lines and the blocks after them."""
    lines = text.split("\n")
    by_line = {start: body for start, _end, _info, body in _spans(text)}
    payloads: dict[str, object] = {}
    for n, record in journal_records(text):
        if record["entry"] != "evidence":
            continue
        eid, kind = record["id"], record["payload"]
        if kind == "unknown":
            payloads[eid] = None
        elif "same_as" in record:
            payloads[eid] = payloads[record["same_as"]]
        elif kind == "text":
            payloads[eid] = {"kind": "text", "language": record.get("language"), "text": by_line[n + 1]}
        elif record["rows"]:
            columns, rows = parse_table(by_line[n + 1])
            payloads[eid] = {"kind": "rows", "columns": columns, "rows": rows}
        else:
            payloads[eid] = {"kind": "rows", "columns": json.loads(lines[n + 1]), "rows": []}
    return payloads


_V12_HEAD = re.compile(r"^(E[0-9]{6}) (\S+) #([0-9]+) (\S+) (\S+) (.*)$")
_JSON_WORD = re.compile(r"^(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)$")


def v12_fields(text: str) -> dict[str, object]:
    """v12: a head line's `key=value` pairs; a value is JSON when quoted or a JSON word, else a bare string."""
    out: dict[str, object] = {}
    decoder, i = json.JSONDecoder(), 0
    while i < len(text):
        eq = text.index("=", i)
        key, i = text[i:eq], eq + 1
        if text[i] in '"[{':
            value, i = decoder.raw_decode(text, i)
        else:
            end = text.find(" ", i)
            end = len(text) if end < 0 else end
            word, i = text[i:end], end
            value = json.loads(word) if _JSON_WORD.match(word) else word
        out[key] = value
        i += 1  # the space before the next pair
    return out


def v12_evidence(text: str) -> dict[str, dict]:
    """v12: evidence ID -> its head (id, collector, iteration, scope, captured_at, fields), query and payload."""
    lines = text.split("\n")
    spans = _spans(text)
    inside = {n for start, end, _, _ in spans for n in range(start, end + 1)}
    body_at = {start: body for start, _end, _info, body in spans}
    out: dict[str, dict] = {}
    for n, line in enumerate(lines):
        m = None if n in inside else _V12_HEAD.match(line)
        if not m:
            continue
        scope = json.loads(m.group(4)) if m.group(4).startswith('"') else m.group(4)
        entry = {"id": m.group(1), "collector": m.group(2), "iteration": int(m.group(3)), "scope": scope,
                 "captured_at": m.group(5), "fields": v12_fields(m.group(6)), "query": None}
        k = n + 1
        if lines[k].startswith("query: "):
            entry["query"], k = lines[k][len("query: "):], k + 1
        elif lines[k] == "query:":
            entry["query"] = body_at[k + 1]
            k = next(end for start, end, _, _ in spans if start == k + 1) + 1
        fields = entry["fields"]
        if fields.get("payload") == "unknown":
            entry["payload"] = None
        elif "same_as" in fields:
            entry["payload"] = out[fields["same_as"]]["payload"]
        elif "rows" not in fields:
            entry["payload"] = {"kind": "text", "language": fields.get("language"), "text": body_at[k]}
        elif fields["rows"]:
            columns, rows = parse_table(body_at[k])
            entry["payload"] = {"kind": "rows", "columns": columns, "rows": rows}
        else:
            entry["payload"] = {"kind": "rows", "columns": json.loads(lines[k]), "rows": []}
        out[entry["id"]] = entry
    return out
