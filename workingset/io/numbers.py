"""Numbers read from outside text (files, options, replies, file names): ASCII digits, and few, before `int()`.

`int()` on such text fails or misleads in three ways: past 4,300 digits it raises a
`ValueError` (CPython's limit on converting long strings), `str.isdigit()` is true for
characters it refuses (`²`), and it accepts what no format here writes (`٣`, ` 7 `, `1_0`).
Every number workingset reads from outside goes through `ascii_int`, and a caller turns its
None into the error of that input, with a stable code.
"""

from __future__ import annotations

import re

# Eighteen digits hold any count, index, size or budget workingset keeps (under 10**18, an int64).
MAX_DIGITS = 18
_DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def ascii_int(text: str) -> int | None:
    """`text` as an int when it is 1 to MAX_DIGITS ASCII digits (leading zeros allowed), else None."""
    return int(text) if _DIGITS.fullmatch(text) else None
