"""Exact identifiers harvested mechanically from a payload: what an index row keeps of its contents.

An archived payload is replaced by one `evidence_index` row. The row keeps the capture
descriptor, and beside it the identifiers a reader would search for — file paths, commit
and content hashes, exception and error names, numbers with units — copied character for
character, never paraphrased. They tell the model which archived item to recall; they are
not the payload and prove nothing about the rest of it.

Pure and deterministic: regular expressions over the payload's text (a rows payload is
read as its JSON lines), distinct values in order of first appearance, at most
`MAX_IDENTIFIERS` per payload, each at most `MAX_LENGTH` characters (longer ones are left
out rather than cut, so every value listed is exact).
"""

from __future__ import annotations

import re

import msgspec

from .state import Payload, RowsPayload

MAX_IDENTIFIERS = 8
MAX_LENGTH = 80

# One alternation, so that identifiers come out in order of appearance in a single pass.
# Each branch starts with a cheap, distinctive character class; a hex run is a commit
# hash only if it mixes digits and letters (checked after the match, not by lookahead).
_PATTERN = re.compile(
    r"(?<![\w.@+/-])(?:"  # only where a word starts: the engine skips the inside of words fast
    r"(?:xxh3-128:[0-9a-f]{32}|sha256:[0-9a-f]{64})\b"
    r"|(?:\.{1,2}/|/)?[\w.@+-]++/[\w.@+/-]*\.[A-Za-z0-9]{1,8}\b(?::\d+)?"
    r"|[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Fault|Timeout|Warning)\b"
    r"|[0-9a-f]{7,40}\b"
    r"|\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|min|h|KiB|MiB|GiB|KB|MB|GB|B|%|rps|qps)(?![\w%])"
    r")"
)
_HEX = re.compile(r"[0-9a-f]{7,40}")


def _is_identifier(value: str) -> bool:
    if _HEX.fullmatch(value):  # a commit hash, not a plain number or word
        return not value.isdigit() and any(c.isdigit() for c in value)
    return True


def payload_text(payload: Payload) -> str:
    """The text identifiers are harvested from: a text payload as is, rows as JSON lines."""
    if isinstance(payload, RowsPayload):
        return msgspec.json.Encoder().encode_lines([payload.columns, *payload.rows]).decode("utf-8")
    return payload.text


def harvest(payload: Payload | None) -> list[str]:
    """The exact identifiers of a payload, distinct, in order of first appearance, capped."""
    if payload is None:
        return []
    found: list[str] = []
    seen: set[str] = set()
    for match in _PATTERN.finditer(payload_text(payload)):
        value = match.group(0)
        if value in seen or len(value) > MAX_LENGTH or not _is_identifier(value):
            continue
        seen.add(value)
        found.append(value)
        if len(found) == MAX_IDENTIFIERS:
            break
    return found
