"""Texts of many turns and strategies stored once: a shared line table and per-turn line edits.

A run's contexts repeat one another: a transcript or v11 context is the previous one plus a
little, and the same evidence appears under every strategy. Storing each text whole would
put a 167-step run's report far past what a browser opens quickly, so each text is kept as
edits of the previous text *of the same strategy*: ranges of its lines copied, and new lines
taken from one table of distinct lines shared by every strategy. The same edits are the
"what changed since the previous turn" diff the viewer shows. Decoding is exact: lines are
the text split on "\n", so joining them with "\n" gives the text back byte for byte.

An edit list holds, in order:
- an int `k`: line `k` of the table;
- `[k, n]` with `k >= 0`: table lines `k … k+n-1`;
- `[-1-a, n]`: lines `a … a+n-1` of the previous text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class LineTable:
    """Distinct lines in order of first appearance, each stored once."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._ids: dict[str, int] = {}

    def ids(self, text: str) -> list[int]:
        """Return the table IDs of the text's lines, adding the lines not seen yet."""
        out = []
        for line in text.split("\n"):
            k = self._ids.get(line)
            if k is None:
                k = self._ids[line] = len(self.lines)
                self.lines.append(line)
            out.append(k)
        return out


def _table_ops(ids: Sequence[int]) -> list[Any]:
    """Table lines as single IDs and runs of consecutive IDs."""
    out: list[Any] = []
    i = 0
    while i < len(ids):
        j = i + 1
        while j < len(ids) and ids[j] == ids[j - 1] + 1:
            j += 1
        out.append(ids[i] if j == i + 1 else [ids[i], j - i])
        i = j
    return out


def edits(prev: Sequence[int], cur: Sequence[int]) -> list[Any]:
    """Return the edit list that turns the previous text's line IDs into the current ones."""
    # Most turns extend or edit the previous text in one place: match the common head and
    # tail directly and leave only the middle to difflib (quadratic at worst).
    limit = min(len(prev), len(cur))
    head = next((k for k in range(limit) if prev[k] != cur[k]), limit)
    tail = next((k for k in range(limit - head) if prev[-1 - k] != cur[-1 - k]), limit - head)
    out: list[Any] = [[-1, head]] if head else []
    a_end, b_end = len(prev) - tail, len(cur) - tail
    matcher = SequenceMatcher(None, prev[head:a_end], cur[head:b_end], autojunk=a_end - head > 2000)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            out.append([-1 - head - a0, a1 - a0])
        elif b1 > b0:  # replace or insert; what was deleted is implied by the gap in copies
            out.extend(_table_ops(cur[head + b0 : head + b1]))
    if tail:
        out.append([-1 - a_end, tail])
    return out


def decode(table: Sequence[str], prev_lines: Sequence[str], ops: Sequence[Any]) -> list[str]:
    """Return the lines an edit list describes (the viewer's decoder, in Python, for tests)."""
    out: list[str] = []
    for op in ops:
        if isinstance(op, int):
            out.append(table[op])
        elif op[0] >= 0:
            out.extend(table[op[0] : op[0] + op[1]])
        else:
            a = -1 - op[0]
            out.extend(prev_lines[a : a + op[1]])
    return out


def utf16_offsets(text: str, offsets: Sequence[int]) -> list[int]:
    """Convert character offsets of `text` into the UTF-16 offsets a browser's strings use."""
    if not _ASTRAL.search(text):
        return list(offsets)
    return [len(text[:k].encode("utf-16-le")) // 2 for k in offsets]


_ID = re.compile(r"^(.*?)(\d+)$")


def id_ranges(ids: Sequence[str]) -> list[str]:
    """Runs of consecutive IDs written as one range: `["E000001–E000003", "E000007"]`.

    Two IDs are consecutive when they share the prefix and digit count and their numbers
    differ by one; the list keeps its order. `expand_ids` undoes it.
    """
    out: list[str] = []
    run: list[tuple[str, int, int, str]] = []  # (prefix, width, number, id)

    def flush() -> None:
        if run:
            out.append(run[0][3] if len(run) == 1 else f"{run[0][3]}\u2013{run[-1][3]}")
            run.clear()

    for ident in ids:
        m = _ID.match(ident)
        key = (m.group(1), len(m.group(2)), int(m.group(2)), ident) if m else None
        if key is None or "\u2013" in ident:
            flush()
            out.append(ident)  # an ID that cannot join a range stands alone
            continue
        if run and not (run[-1][0] == key[0] and run[-1][1] == key[1] and run[-1][2] + 1 == key[2]):
            flush()
        run.append(key)
    flush()
    return out


def expand_ids(ranges: Sequence[str]) -> list[str]:
    """The IDs that `id_ranges` wrote as ranges, one by one."""
    out: list[str] = []
    for item in ranges:
        first, dash, last = item.partition("\u2013")
        if not dash:
            out.append(item)
            continue
        a, b = _ID.match(first), _ID.match(last)
        assert a and b  # both ends of a range `id_ranges` wrote end in digits
        width = len(a.group(2))
        out.extend(
            f"{a.group(1)}{n:0{width}d}" for n in range(int(a.group(2)), int(b.group(2)) + 1)
        )
    return out
