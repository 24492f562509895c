"""Read a v14 context back with the documented conventions alone (encodings/v14.md).

v14 is v13 with paged entries (`REF paged: N chars, K pages; page 1:` and the page fenced),
index rows of every kind and ID ranges, and a tail whose archived or paged entries are whole
or one page (`REF page P/K, N chars:`). The v13 parsers (recover.py) read what v14 keeps of
v13; these functions read what it adds.
"""

from __future__ import annotations

import re

from tests.helpers.recover import _headings, _spans, v13_index, v13_tail

PAGED = re.compile(r"^(\S+) paged: ([0-9]+) chars, ([0-9]+) pages; page 1:$")
TAIL_PAGE = re.compile(r"^(\S+) page ([0-9]+)/([0-9]+), ([0-9]+) chars:$")
CAPTION = re.compile(r"^evidence_index \(archived entries\): ([0-9]+) entr(?:y|ies)$")
RANGES = re.compile(r"^archived (evidence|notes|decisions of (H[0-9]+)): (.+)$")
NOTE_ROW = re.compile(r"^(N[0-9]{6}) (\S+) #([0-9]+) (note|question) archived$")
DECISION_ROW = re.compile(
    r"^(H[0-9]+/[0-9]+) #([0-9]+) (query|recall|assessment|conclude) archived$"
)
EVIDENCE_HEAD = re.compile(r"^E[0-9]{6} \S+ #[0-9]+ ")
TAIL_HEADING = "archived or paged, shown this turn:"


def sections(text: str) -> tuple[str, str, str]:
    """(index lines, journal body, tail) of a v14 text; the index is "" when nothing is archived."""
    lines = text.split("\n")
    heads = _headings(text)
    start, end = heads["## Journal"], heads["## This turn"]
    journal = lines[
        start + 2 : end - 1
    ]  # after the heading and its blank line, before the blank line above the tail
    index: list[str] = []
    if journal and CAPTION.match(journal[0]):
        cut = journal.index("") if "" in journal else len(journal)
        index, journal = journal[:cut], journal[cut + 1 :]
    return "\n".join(index), "\n".join(journal), "\n".join(lines[end:])


def read_index(index: str, ids: dict[str, list[str]]) -> dict:
    """The index: `count`, `ranged` (every reference its ranges name), `evidence` (v13 rows by ID, their `pages`),
    `notes` and `decisions` (rows by reference). `ids` gives each group's IDs in sorted order (E, N, H1, H2…)."""
    lines = index.split("\n")
    m = CAPTION.match(lines[0])
    assert m, lines[0]
    out: dict = {
        "count": int(m.group(1)),
        "ranged": [],
        "evidence": {},
        "notes": {},
        "decisions": {},
        "pages": {},
    }
    n = 1
    while n < len(lines) and (r := RANGES.match(lines[n])):
        group = "E" if r.group(1) == "evidence" else "N" if r.group(1) == "notes" else r.group(2)
        order = ids[group]
        for run in r.group(3).split(" "):
            first, _, last = run.partition("..")
            a, b = order.index(first), order.index(last or first)
            assert a <= b, run
            out["ranged"] += order[a : b + 1]
        n += 1
    evidence_rows: list[str] = []
    while n < len(lines):
        line = lines[n]
        if m := NOTE_ROW.match(line):
            out["notes"][m.group(1)] = (m.group(2), int(m.group(3)), m.group(4))
        elif m := DECISION_ROW.match(line):
            out["decisions"][m.group(1)] = (int(m.group(2)), m.group(3))
        else:
            assert EVIDENCE_HEAD.match(line), line[:80]
            head = line
            if pm := re.search(
                r" pages=([0-9]+)$", head
            ):  # v14 adds it at the end of a paged item's head
                head = head[: pm.start()]
                out["pages"][line.split(" ", 1)[0]] = int(pm.group(1))
            evidence_rows.append(head)
            if n + 1 < len(lines) and lines[n + 1].startswith(("query: ", "query~")):
                evidence_rows.append(lines[n + 1])
                n += 1
        n += 1
    count = len(evidence_rows) - sum(1 for x in evidence_rows if x.startswith("query"))
    as_v13 = "\n".join(
        [
            "## Journal",
            "",
            f"evidence_index (archived evidence): {count} rows",
            *evidence_rows,
            "",
            "## This turn",
            "",
        ]
    )
    out["evidence"] = v13_index(as_v13) if count else {}
    named = len(out["ranged"]) + len(out["evidence"]) + len(out["notes"]) + len(out["decisions"])
    assert named == out["count"], (named, out["count"])
    return out


def paged_blocks(body: str) -> dict[str, tuple[int, int, str]]:
    """Every paged entry of the journal body: reference -> (chars, pages, page 1)."""
    lines = body.split("\n")
    spans = {start: text for start, _end, _info, text in _spans(body)}
    inside = {n for start, end, _, _ in _spans(body) for n in range(start, end + 1)}
    out = {}
    for n, line in enumerate(lines):
        if n not in inside and (m := PAGED.match(line)):
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)), spans[n + 1])
    return out


def read_tail(tail: str) -> tuple[dict, dict[str, tuple[int, int, int, str]], str]:
    """The tail's fields (v13's reader), its paged entries (ref -> (page, pages, chars, text)) and its whole entries' text."""
    lines = tail.split("\n")
    pages: dict[str, tuple[int, int, int, str]] = {}
    whole = ""
    if TAIL_HEADING in lines:
        at = lines.index(TAIL_HEADING)
        entries = "\n".join(lines[at + 1 : -2])
        spans = {start: text for start, _end, _info, text in _spans(entries)}
        inside = {n for start, end, _, _ in _spans(entries) for n in range(start, end + 1)}
        kept = []
        for n, line in enumerate(entries.split("\n")):
            if n not in inside and (m := TAIL_PAGE.match(line)):
                pages[m.group(1)] = (
                    int(m.group(2)),
                    int(m.group(3)),
                    int(m.group(4)),
                    spans[n + 1],
                )
                kept.append("")
            else:
                kept.append(line)
        # Whole entries, the paged ones blanked (their fenced page stays, holding no head outside a fence).
        whole = "\n".join(kept)
        lines = lines[:at] + lines[-2:]
    return v13_tail("## This turn\n" + "\n".join(lines[1:])), pages, whole
