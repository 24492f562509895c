"""Reading a v15 context back with its documented conventions alone (encodings/v15.md).

A v15 evidence head writes only what differs from the case's `evidence defaults:` line;
`expand` rewrites each such head (outside fenced blocks) as v12's positional head with every
field, so v12's and v14's readers read the entries and their payloads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.helpers.recover import _JSON_WORD, _spans, v12_evidence, v12_fields

_HEAD = re.compile(r"^(E[0-9]{6}) #([0-9]+) (\S+)(?: (.*))?$")
DEFAULTS = "evidence defaults: "


def defaults(text: str) -> dict[str, object]:
    """The case's evidence defaults (an unlisted field defaults to null)."""
    line = next((ln for ln in text.split("\n") if ln.startswith(DEFAULTS)), None)
    return {} if line is None else v12_fields(line[len(DEFAULTS) :])


def _written(value: object) -> str:
    if (
        isinstance(value, str)
        and re.fullmatch(r"[A-Za-z0-9_.:/@+-]+", value)
        and not _JSON_WORD.match(value)
    ):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def rewrite_heads(text: str, rewrite: Callable[[re.Match[str]], str]) -> str:
    """`text` with every evidence head line outside fenced blocks replaced by `rewrite` of its `_HEAD` match."""
    lines = text.split("\n")
    inside = {n for start, end, _, _ in _spans(text) for n in range(start, end + 1)}
    for n, line in enumerate(lines):
        m = None if n in inside else _HEAD.match(line)
        if m:
            lines[n] = rewrite(m)
    return "\n".join(lines)


def expand(text: str) -> str:
    """`text` with every v15 evidence head written as v12's head: collector, iteration, scope, time, all fields."""
    base = defaults(text)

    def v12_head(m: re.Match[str]) -> str:
        fields = {**base, **v12_fields(m.group(4) or "")}
        collector, scope = fields.pop("collector"), fields.pop("scope")
        pairs = " ".join(f"{k}={_written(v)}" for k, v in fields.items() if v is not None)
        return f"{m.group(1)} {collector} #{m.group(2)} {_written(scope)} {m.group(3)} {pairs}"

    return rewrite_heads(text, v12_head)


def v15_evidence(text: str) -> dict[str, dict]:
    """Evidence ID -> its head (as v12's reader gives it), query and payload, for every entry shown whole."""
    from tests.helpers.recover14 import sections

    index, _body, _tail = sections(text)
    if index:  # the same line count, so that the entries' line numbers stay
        text = text.replace("\n" + index + "\n", "\n" + "\n" * index.count("\n") + "\n", 1)
    return v12_evidence(expand(text))


def v15_evidence_payloads(text: str) -> dict[str, object]:
    return {eid: entry["payload"] for eid, entry in v15_evidence(text).items()}
