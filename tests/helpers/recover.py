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
    if "\nencoder: investigation_project_v13" in head:
        return {eid: entry["payload"] for eid, entry in v13_evidence(text).items()}
    if "\nencoder: investigation_project_v14" in head:
        return v14_evidence_payloads(text)
    if "\nencoder: investigation_project_v15" in head:
        from tests.helpers.recover15 import v15_evidence_payloads

        return v15_evidence_payloads(text)
    if "\nencoder: investigation_project_v16" in head:
        from tests.helpers.recover16 import v16_evidence

        return {eid: entry["payload"] for eid, entry in v16_evidence(text).items()}
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
            payloads[eid] = {
                "kind": "text",
                "language": payload["language"],
                "text": by_line[following[1]][1],
            }
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
            payloads[eid] = {
                "kind": "text",
                "language": record.get("language"),
                "text": by_line[n + 1],
            }
        elif record["rows"]:
            columns, rows = parse_table(by_line[n + 1])
            payloads[eid] = {"kind": "rows", "columns": columns, "rows": rows}
        else:
            payloads[eid] = {"kind": "rows", "columns": json.loads(lines[n + 1]), "rows": []}
    return payloads


_V12_HEAD = re.compile(r"^(E[0-9]{6}) (\S+) #([0-9]+) (\S+) (\S+) (.*)$")
_JSON_WORD = re.compile(
    r"^(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)$"
)


def v12_fields(text: str) -> dict[str, object]:
    """v12: a head line's `key=value` pairs; a value is JSON when quoted or a JSON word, else a bare string."""
    return {key: value for key, (value, _written) in v12_pairs(text).items()}


def v12_pairs(text: str) -> dict[str, tuple[object, str]]:
    """v12: a head line's `key=value` pairs, each as (value, the pair as written)."""
    out: dict[str, tuple[object, str]] = {}
    decoder, i = json.JSONDecoder(), 0
    while i < len(text):
        start, eq = i, text.index("=", i)
        key, i = text[i:eq], eq + 1
        if text[i] in '"[{':
            value, i = decoder.raw_decode(text, i)
        else:
            end = text.find(" ", i)
            end = len(text) if end < 0 else end
            word, i = text[i:end], end
            value = json.loads(word) if _JSON_WORD.match(word) else word
        out[key] = (value, text[start:i])
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
        entry = {
            "id": m.group(1),
            "collector": m.group(2),
            "iteration": int(m.group(3)),
            "scope": scope,
            "captured_at": m.group(5),
            "fields": v12_fields(m.group(6)),
            "query": None,
        }
        k = n + 1
        if lines[k].startswith("query: "):
            entry["query"], k = lines[k][len("query: ") :], k + 1
        elif lines[k] == "query:":
            entry["query"] = body_at[k + 1]
            k = next(end for start, end, _, _ in spans if start == k + 1) + 1
        fields = entry["fields"]
        if fields.get("payload") == "unknown":
            entry["payload"] = None
        elif (
            "same_as" in fields
        ):  # v14 can point at an archived item: the reference stands for its payload
            target = fields["same_as"]
            entry["payload"] = out[target]["payload"] if target in out else {"same_as": target}
        elif "rows" not in fields:
            entry["payload"] = {
                "kind": "text",
                "language": fields.get("language"),
                "text": body_at[k],
            }
        elif fields["rows"]:
            columns, rows = parse_table(body_at[k])
            entry["payload"] = {"kind": "rows", "columns": columns, "rows": rows}
        else:
            entry["payload"] = {"kind": "rows", "columns": json.loads(lines[k]), "rows": []}
        out[entry["id"]] = entry
    return out


# -- v13: index rows as head lines, and a tail of data lines ---------------------------------------

_V13_CAPTION = re.compile(r"^evidence_index \(archived evidence\): ([0-9]+) rows?$")
_V13_CUT = re.compile(r"^query~([0-9]+): (\".*)$")
V13_EXCERPT = 160  # what a cut text shows: its first 160 characters
_V13_ITERATION = re.compile(r"^iteration ([0-9]+)/([0-9]+)(?: · cost ([^/ ]+)(?:/(\S+))?)?$")
_V13_HYPOTHESIS = re.compile(r"^(\*?)(H[0-9]+) (\S+) (\S+) ([0-9]+)/([0-9]+) (\S+)(?: (\S+))?$")


def _headings(text: str) -> dict[str, int]:
    """Line number of each `## ` heading outside code blocks (a fenced text may hold any line)."""
    inside = {n for start, end, _, _ in _spans(text) for n in range(start, end + 1)}
    return {
        line: n
        for n, line in enumerate(text.split("\n"))
        if n not in inside and line.startswith("## ")
    }


def _v13_index_rows(text: str) -> tuple[int, int, list[tuple[int, int]]]:
    """v13: (caption line, line after the index, [(head line, line after the row)]) of the index; (-1, -1, []) if none.

    The caption states the number of rows; a row is one head line and, when the item has a
    query, one `query` line. The index is one block: a blank line (or the end) follows it.
    """
    lines = text.split("\n")
    heads = _headings(text)
    start, end = heads["## Journal"], heads["## This turn"]
    captions = [n for n in range(start + 1, end) if _V13_CAPTION.match(lines[n])]
    if not captions:
        return -1, -1, []
    caption = captions[0]
    assert caption == start + 2 and lines[start + 1] == "", "the index opens the journal"
    count = int(_V13_CAPTION.match(lines[caption]).group(1))
    rows, n = [], caption + 1
    for _ in range(count):
        assert _V12_HEAD.match(lines[n]), f"line {n} is no index row: {lines[n][:80]!r}"
        after = n + 2 if lines[n + 1].startswith(("query: ", "query~")) else n + 1
        rows.append((n, after))
        n = after
    assert n == len(lines) or lines[n] == "", "the index holds exactly the rows its caption counts"
    return caption, n, rows


def v13_query(line: str) -> tuple[str, int, bool]:
    """v13: an index row's query line -> (the query or its first characters, the query's length, whether it is cut).

    `query: <raw>` (a plain line never starts with a quote), `query: <JSON string>`, or
    `query~N: <JSON string of the first 160 characters>` (N: the query's length).
    """
    if m := _V13_CUT.match(line):
        shown = json.loads(m.group(2))
        assert isinstance(shown, str) and len(shown) == V13_EXCERPT < int(m.group(1)), line[:80]
        return shown, int(m.group(1)), True
    assert line.startswith("query: "), line[:80]
    rest = line[len("query: ") :]
    query = json.loads(rest) if rest.startswith('"') else rest
    assert isinstance(query, str)
    return query, len(query), False


def v13_index(text: str) -> dict[str, dict]:
    """v13: evidence ID -> its index row: the head (collector, iteration, scope, captured_at, fields),
    the query (None when the item has none; its first characters when cut), the query's length,
    whether it is cut, and the row's text."""
    lines = text.split("\n")
    _caption, _end, rows = _v13_index_rows(text)
    out: dict[str, dict] = {}
    for head, after in rows:
        m = _V12_HEAD.match(lines[head])
        assert m
        scope = json.loads(m.group(4)) if m.group(4).startswith('"') else m.group(4)
        fields, cut_fields = {}, {}
        for key, value in v12_fields(m.group(6)).items():
            name, tilde, length = key.partition(
                "~"
            )  # `key~N="…"`: a text of N characters, its first 160
            if tilde:
                assert isinstance(value, str) and len(value) == V13_EXCERPT < int(length), key
                cut_fields[name] = int(length)
            assert name not in fields, f"{name} written twice"
            fields[name] = value
        row = {"id": m.group(1), "collector": m.group(2), "iteration": int(m.group(3)), "scope": scope,
               "captured_at": m.group(5), "fields": fields, "cut_fields": cut_fields, "query": None,
               "query_chars": None, "cut": False, "text": "\n".join(lines[head:after])}  # fmt: skip
        if after == head + 2:
            row["query"], row["query_chars"], row["cut"] = v13_query(lines[head + 1])
        assert row["id"] not in out, f"{row['id']} indexed twice"
        out[row["id"]] = row
    return out


def v13_evidence(text: str) -> dict[str, dict]:
    """v13: the evidence entries shown in full (journal and tail), read as v12's; the index rows left out."""
    caption, end, _rows = _v13_index_rows(text)
    if caption < 0:
        return v12_evidence(text)
    lines = text.split("\n")
    # The same line count, so that the entries' line numbers stay; a blank line matches no head.
    return v12_evidence("\n".join(lines[:caption] + [""] * (end - caption) + lines[end:]))


def v13_tail(text: str) -> dict:
    """v13: every field "This turn" states.

    Lines, empty ones left out: `iteration i/max`, then ` · cost used/limit` (` · cost used`
    without a limit, nothing when nothing was spent and there is none); one line per hypothesis
    (`*` before the selected one's): ID, confidence, disposition, used/limit, previous result
    (`-`: none), the recalled IDs if any; then `plan: <JSON>`, `next checks: <JSON>`, `budget
    status: ID status, …` (the result to assess, unsettled by definition, left out), `note
    status: status ID, ID; …` when set; the archived items shown in full; `assess: E… | none`.
    """
    lines = text.split("\n")
    start = _headings(text)["## This turn"]
    assert lines[-1] == "" and lines[-2] != "", "the text ends with one newline"
    tail = lines[start + 1 : -1]
    inside = {n for first, last, _, _ in _spans("\n".join(tail)) for n in range(first, last + 1)}
    assert all(line or n in inside for n, line in enumerate(tail)), (
        "no empty line outside a code block"
    )
    m = _V13_ITERATION.match(tail[0])
    assert m, tail[0]
    out: dict = {"iteration": int(m.group(1)), "max_iterations": int(m.group(2)),
                 "cost_used": json.loads(m.group(3)) if m.group(3) else 0.0,
                 "max_cost": json.loads(m.group(4)) if m.group(4) else None, "hypotheses": [], "selected": None,
                 "plan": None, "next_checks": [], "budget_status": {}, "note_status": {}, "shown": [], "assess": None}  # fmt: skip
    n = 1
    while m := _V13_HYPOTHESIS.match(tail[n]):
        star, hid, confidence, disposition, used, limit, previous, recalled = m.groups()
        if star:
            assert out["selected"] is None, "one selected hypothesis"
            out["selected"] = hid
        out["hypotheses"].append({
            "id": hid, "confidence": json.loads(confidence), "disposition": _word(disposition),
            "iterations_used": int(used), "iteration_limit": int(limit),
            "previous_result": None if previous == "-" else previous,
            "recalled": None if recalled is None else recalled.split(","),
        })  # fmt: skip
        n += 1
    for key, prefix, read in (("plan", "plan: ", json.loads), ("next_checks", "next checks: ", json.loads),
                              ("budget_status", "budget status: ", _statuses),
                              ("note_status", "note status: ", _note_statuses)):  # fmt: skip
        if tail[n].startswith(prefix):
            out[key] = read(tail[n][len(prefix) :])
            n += 1
    if tail[n] == "archived, shown in full this turn:":
        out["shown"] = list(v12_evidence("\n".join(tail[n + 1 : -1])))
        assert out["shown"] and _V12_HEAD.match(tail[n + 1]), (
            "the heading is written only above items"
        )
    else:
        assert n == len(tail) - 1, f"no line between the statuses and the task: {tail[n][:80]!r}"
    last = tail[-1]
    assert last.startswith("assess: "), last
    out["assess"] = None if last == "assess: none" else last[len("assess: ") :]
    if (
        out["assess"] is not None
    ):  # the result to assess is unsettled: the budget status line leaves it out
        assert out["assess"] not in out["budget_status"], out["assess"]
        out["budget_status"][out["assess"]] = "unsettled"
    return out


def _word(value: str) -> object:
    """A value written bare unless it is no plain word (then JSON)."""
    return json.loads(value) if value.startswith('"') or _JSON_WORD.match(value) else value


def _statuses(text: str) -> dict[str, str]:
    return dict(pair.split(" ") for pair in text.split(", "))


def _note_statuses(text: str) -> dict[object, list[str]]:
    out: dict[object, list[str]] = {}
    for group in text.split("; "):
        status, ids = group.split(" ", 1)
        out[_word(status)] = ids.split(", ")
    return out


def v14_evidence_payloads(text: str) -> dict[str, object]:
    """v14: the payloads of the evidence entries shown whole (journal and tail); the index rows left out.

    A paged entry's first page is fenced, so v12's reader sees no head in it; such items are in
    `shown` without a payload here (tests/encoders/test_v14.py joins their pages).
    """
    from tests.helpers.recover14 import sections

    index, _body, _tail = sections(text)
    if index:  # the same line count, so that the entries' line numbers stay
        text = text.replace("\n" + index + "\n", "\n" + "\n" * index.count("\n") + "\n", 1)
    return {eid: entry["payload"] for eid, entry in v12_evidence(text).items()}


# -- the output schema outline of v13 and later (its documented grammar) ---------------------------


def read_outline(text: str, at: int = 0) -> tuple[dict, int]:
    """Parse one value of a schema outline (the documented grammar) from `at`; return (schema, end)."""
    parts, at = [], at
    while True:
        part, at = _read_alternative(text, at)
        parts.append(part)
        if not text.startswith(" | ", at):
            break
        at += 3
    return (parts[0] if len(parts) == 1 else {"oneOf": parts}), at


def _read_alternative(text: str, at: int) -> tuple[dict, int]:
    decoder = json.JSONDecoder()
    if text[at] == "{":
        schema: dict = {
            "type": "object",
            "additionalProperties": False,
            "required": [],
            "properties": {},
        }
        at += 1
        while text[at] != "}":
            key, at = decoder.raw_decode(text, at)
            optional = text[at] == "?"
            at += optional
            assert text.startswith(": ", at)
            schema["properties"][key], at = read_outline(text, at + 2)
            if not optional:
                schema["required"].append(key)
            at += 2 if text.startswith(", ", at) else 0
        if not schema["required"]:
            del schema["required"]
        return schema, at + 1
    if text[at] == "[":
        items, at = read_outline(text, at + 1)
        assert text[at] == "]"
        schema, at = {"type": "array", "items": items}, at + 1
        if m := re.compile(r" (?:(\d+) to (\d+)|at least (\d+)|at most (\d+))(, distinct)?").match(
            text, at
        ):
            low, high = m.group(1) or m.group(3), m.group(2) or m.group(4)
            schema.update({k: int(v) for k, v in (("minItems", low), ("maxItems", high)) if v})
            if m.group(5):
                schema["uniqueItems"] = True
            at = m.end()
        return schema, at
    if text[at] == '"':
        values = []
        while True:
            value, at = decoder.raw_decode(text, at)
            values.append(value)
            if (
                text[at : at + 1] != "|"
                or text.startswith("| ", at)
                or text.startswith(" | ", at - 1)
            ):
                break
            at += 1
        return ({"const": values[0]} if len(values) == 1 else {"enum": values}), at
    if text.startswith("string", at):
        m = re.compile(r"string(?: (\^\S*?\$)(?=[,}\]]| |$))?").match(text, at)
        return (
            {"type": "string", "pattern": m.group(1)} if m.group(1) else {"type": "string"}
        ), m.end()
    m = re.compile(r"number(?: ([0-9.]+)\.\.([0-9.]+))?").match(text, at)
    assert m, text[at : at + 40]
    schema = {"type": "number"}
    if m.group(1):
        schema.update(minimum=json.loads(m.group(1)), maximum=json.loads(m.group(2)))
    return schema, m.end()
