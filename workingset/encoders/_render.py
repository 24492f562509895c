"""What both encoder families share: JSON records, code fences, tables, schemas, and the render's frame.

The frame: the hypothesis a render is for, the roles of this turn's evidence, and the
rendered context joined from a layout's sections. Everything here is pure and
byte-deterministic: msgspec writes floats in their shortest round-trip form on every
platform, Struct fields keep their declared order, and nothing reads the clock, the locale
or the hash seed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from ..errors import SessionError
from ..io.caches import register_lru
from ..model.hashing import hash_text
from ..model.state import Capture, Evidence, Hypothesis, State
from ._api import RenderedContext, View

# A fence's info string is written only when it is a plausible language name: these
# characters, at most this long. Frozen: changing either changes v3+ output. `\Z`, not `$`:
# `$` also matches before a final newline, which let "python\n" through and shifted the body.
FENCE_INFO_MAX_CHARS = 40
_SAFE_INFO = re.compile(rf"^[A-Za-z0-9_+.#-]{{1,{FENCE_INFO_MAX_CHARS}}}\Z")
Chunk = tuple[str, str]  # (section category, text)
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
    """The longest backtick run of `body`, which holds one of at least three.

    The same outputs are fenced again in every later turn and by every version: scan once.
    No list of runs (a text of a million runs ```x``` made one): a run of k backticks is in
    the body exactly when k is at most the longest, so a doubling then a bisection finds it,
    each step one substring search in C (linear: CPython's two-way search).
    """
    longest = 3
    while "`" * (2 * longest) in body:
        longest *= 2
    absent = 2 * longest
    while absent - longest > 1:
        mid = (longest + absent) // 2
        if "`" * mid in body:
            longest = mid
        else:
            absent = mid
    return longest


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


CAPTURE_COLUMNS = (
    "query", "predicate", "origin", "snapshot", "coverage",
    "truncated", "page", "next_cursor", "eof", "item_count",
)  # fmt: skip
# v6's captures table and the journal's records list these fields positionally; a new Capture
# field must not silently join (or shift) the columns of a frozen version.
assert Capture.__struct_fields__ == CAPTURE_COLUMNS


def empty_rows_remark(ev: Evidence) -> str:
    """An empty rows payload is a real empty result only when the source said so."""
    cap = ev.capture
    if cap.item_count == 0 or (cap.item_count is None and cap.truncated is not True):
        return "payload: 0 rows — a real, empty result."
    return (
        f"payload: 0 rows retained, but the source reported item_count {compact(cap.item_count)}, "
        f"truncated {compact(cap.truncated)}: this is not evidence of absence."
    )


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


def ref_array(items: dict[str, Any], min_items: int | None = None) -> dict[str, Any]:
    """A schema's list of up to four distinct references (MAX_RECALL), each matching `items`."""
    bounds = {} if min_items is None else {"minItems": min_items}
    return {"type": "array", **bounds, "maxItems": 4, "uniqueItems": True, "items": items}


_RECALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "evidence_refs"],
    "properties": {"kind": {"const": "recall"}, "evidence_refs": ref_array(_EID, min_items=1)},
}

_CONCLUDE: dict[str, Any] = {
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

_CITING_CONCLUDE: dict[str, Any] = {
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


# -- the render's frame ------------------------------------------------------------------

ROLE_ORDER = ("previous_result", "unsettled", "recalled")


def selected_hypothesis(state: State, hypothesis: str) -> Hypothesis:
    """The hypothesis to render for, or the error `unknown_hypothesis`."""
    selected = state.hypothesis(hypothesis)
    if selected is None:
        known = ", ".join(h.id for h in state.hypotheses)
        raise SessionError(
            f"no hypothesis {hypothesis} in analysis {state.analysis_id}; known: {known}",
            code="unknown_hypothesis",
        )
    return selected


def turn_roles(state: State, selected: Hypothesis, recall: bool) -> dict[str, list[str]]:
    """Evidence ID -> its roles this turn, in ROLE_ORDER: the selected hypothesis's previous
    result, every unsettled result, and (with `recall`) the selected hypothesis's recalled IDs."""
    found: dict[str, set[str]] = {}
    if selected.control.previous_result is not None:
        found.setdefault(selected.control.previous_result, set()).add("previous_result")
    for ev in state.evidence:
        if ev.budget.status == "unsettled":
            found.setdefault(ev.id, set()).add("unsettled")
    selection = state.recall.get(selected.id)
    if recall and selection is not None:
        for ref in selection.evidence_refs:
            found.setdefault(ref, set()).add("recalled")
    return {eid: [r for r in ROLE_ORDER if r in rs] for eid, rs in found.items()}


def rendered_context(
    encoder: str, view: View, layout: Iterable[Chunk], stable_sections: tuple[str, ...]
) -> RenderedContext:
    """The layout's non-empty sections joined by blank lines, a newline at the end, measured per section."""
    chunks = [c for c in layout if c[1]]
    # The trailing newline joins the last body before the one big join: no second copy of the text.
    bodies = [body for _, body in chunks]
    bodies[-1] += "\n"
    text = "\n\n".join(bodies)
    sections: dict[str, int] = {}
    ordered: list[tuple[str, int]] = []
    for i, (category, body) in enumerate(chunks):
        sep = 1 if i == len(chunks) - 1 else 2
        sections[category] = sections.get(category, 0) + len(body) + sep
        ordered.append((category, len(body) + sep))
    return RenderedContext(
        encoder=encoder,
        hypothesis=view.selected.id,
        text=text,
        shown=tuple(e.id for e in view.shown),
        indexed=tuple(e.id for e in view.indexed),
        chars=len(text),
        hash=hash_text(text),
        sections=tuple(sections.items()),
        chunks=tuple(ordered),
        stable_sections=stable_sections,
    )
