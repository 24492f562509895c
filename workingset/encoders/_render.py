"""Shared rendering primitives: JSON records, code fences, columns/rows tables, schemas.

Everything here is pure and byte-deterministic: msgspec writes floats in their shortest
round-trip form on every platform, Struct fields keep their declared order, and nothing
reads the clock, the locale or the hash seed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from ..io.caches import register_lru

_FENCE_RUNS = re.compile(r"`{3,}")  # shorter runs never decide the fence length
# A fence's info string is written only when it is a plausible language name: these
# characters, at most this long. Frozen: changing either changes v3+ output. `\Z`, not `$`:
# `$` also matches before a final newline, which let "python\n" through and shifted the body.
FENCE_INFO_MAX_CHARS = 40
_SAFE_INFO = re.compile(rf"^[A-Za-z0-9_+.#-]{{1,{FENCE_INFO_MAX_CHARS}}}\Z")
_encode = msgspec.json.encode
_lines = msgspec.json.Encoder().encode_lines


def compact(value: Any) -> str:
    """Compact single-line JSON (no newlines: strings escape theirs)."""
    return _encode(value).decode("utf-8")


def indented(value: Any) -> str:
    """Indented JSON, two spaces."""
    return msgspec.json.format(_encode(value), indent=2).decode("utf-8")


@functools.lru_cache(maxsize=4096)
def _longest_run(body: str) -> int:
    # The same outputs are fenced again in every later turn and by every version: scan once.
    return max(map(len, _FENCE_RUNS.findall(body)))


register_lru("fence lengths", _longest_run, holds="the longest backtick run of each fenced body")


def fence(body: str, info: str | None = None) -> str:
    """A fenced code block whose fence is longer than any backtick run inside `body`.

    The body is kept byte-exact: it is everything between the newline after the opening
    fence and the newline before the closing fence. An info string that could break the
    fence (spaces, backticks) is left out; the record beside the block carries it anyway.
    """
    ticks = "`" * max(3, _longest_run(body) + 1) if "```" in body else "```"
    tag = info if info is not None and _SAFE_INFO.match(info) else ""
    return f"{ticks}{tag}\n{body}\n{ticks}"


def table(columns: Iterable[Any], rows: Iterable[Iterable[Any]]) -> str:
    """A lossless columns/rows table: the column names once, then one JSON array per row."""
    body = _lines([list(columns), *rows]).decode("utf-8")
    return fence(body[:-1], "jsonl")


def rows_caption(count: int, what: str = "rows") -> str:
    """The line above a table, so an empty table reads as an empty result, not as missing."""
    noun = "row" if count == 1 else "rows"
    return f"{what}: {count} {noun}"


TABLE_CONVENTION = (
    "Tables are jsonl code blocks: the first line holds the column names, "
    "each further line one row as a JSON array."
)


UNKNOWN_PAYLOAD = "payload: UNKNOWN — the content was not retained. This is not an empty result and not evidence of absence."


def heading(level: int, title: str) -> str:
    return f"{'#' * level} {title}"


def join_blocks(blocks: Iterable[str]) -> str:
    """Blocks separated by one blank line."""
    return "\n\n".join(b for b in blocks if b)


# Decision JSON Schemas (docs/protocol.md#decisions). Hand-written and frozen with the versions that render
# them: generating them from Structs would tie released prompts to a library's output.
_EID = {"type": "string", "pattern": "^E[0-9]{6}$"}

_ASSESSMENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["evidence_ref", "verdict", "confidence", "rationale"],
    "properties": {
        "evidence_ref": _EID,
        "verdict": {"enum": ["supports", "refutes", "neutral", "inconclusive"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "rationale": {"type": "string"},
    },
}

_NOTES = {
    "type": "array",
    "maxItems": 8,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["kind", "text"],
        "properties": {"kind": {"enum": ["note", "question"]}, "text": {"type": "string"}},
    },
}

_QUERY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "source", "query", "purpose"],
    "properties": {
        "kind": {"const": "query"},
        "source": {"type": "string"},
        "query": {"type": "string"},
        "purpose": {"type": "string"},
    },
}

_RECALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "evidence_refs"],
    "properties": {
        "kind": {"const": "recall"},
        "evidence_refs": {
            "type": "array",
            "minItems": 1,
            "maxItems": 4,
            "uniqueItems": True,
            "items": _EID,
        },
    },
}

_CONCLUDE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "disposition", "diagnosis", "evidence_refs"],
    "properties": {
        "kind": {"const": "conclude"},
        "disposition": {"enum": ["supported", "refuted", "inconclusive"]},
        "diagnosis": {"type": "string"},
        "evidence_refs": {"type": "array", "minItems": 1, "items": _EID},
    },
}


# Spans (`workingset.model.spans`): only versions that declare `supports_spans` add them to the
# conclusion; v1–v10 never do, so their frozen schemas are unchanged.
_SPAN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["evidence_ref", "start", "end", "sha256"],
    "properties": {
        "evidence_ref": _EID,
        "start": {"type": "integer", "minimum": 0},
        "end": {"type": "integer", "minimum": 1},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
}

_CITING_CONCLUDE = {
    **_CONCLUDE,
    "properties": {
        **_CONCLUDE["properties"],
        "spans": {"type": "array", "maxItems": 16, "items": _SPAN},
    },
}


def decision_schema(name: str, recall: bool, spans: bool = False) -> dict[str, Any]:
    """The JSON Schema of a decision answering a request rendered by encoder `name`."""
    conclude = _CITING_CONCLUDE if spans else _CONCLUDE
    variants = [_QUERY, _RECALL, conclude] if recall else [_QUERY, conclude]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{name} decision",
        "type": "object",
        "additionalProperties": False,
        "required": ["next"],
        "properties": {"assessment": _ASSESSMENT, "notes": _NOTES, "next": {"oneOf": variants}},
    }
