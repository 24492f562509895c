"""Reading a v16 context back with its documented conventions alone (encodings/v16.md).

v16 writes v15's entries with compact heads: a capture time without its date is on the case's
`opened_at` date, and with `evidence actions: numbered` in the case an evidence head without
`action=` has the action `B` and its ID's digits (`action=null`: none). `expand` writes each
such head back as v15 would, so v15's reader (`recover15`) reads the entries and payloads.
"""

from __future__ import annotations

import re

from tests.helpers.recover import v12_pairs
from tests.helpers.recover15 import rewrite_heads, v15_evidence

NUMBERED = "evidence actions: numbered"


def expand(text: str) -> str:
    """`text` with every v16 evidence head written as v15 writes it: the full capture time, the action written."""
    opened = re.search(r"^opened_at: (\S+)$", text, re.M)
    date = opened.group(1).partition("T")[0] if opened else None
    numbered = f"\n{NUMBERED}\n" in text

    def v15_head(m: re.Match[str]) -> str:
        eid, iteration, when, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if "T" not in when:
            assert date is not None, "a time without a date needs the case's opened_at"
            when = f"{date}T{when}"
        pairs = v12_pairs(rest) if rest else {}
        fields = [written for _, written in pairs.values()]
        if numbered:
            if "action" not in pairs:
                fields.append(f"action=B{eid[1:]}")
            elif pairs["action"][0] is None:
                fields.remove("action=null")
        return " ".join([eid, f"#{iteration}", when, *fields])

    return rewrite_heads(text, v15_head)


def v16_evidence(text: str) -> dict[str, dict]:
    """Evidence ID -> its head, query and payload, for every entry shown whole (v15's reader on the expanded text)."""
    return v15_evidence(expand(text))
