"""What a schema cannot express, checked after decoding: `validate_state` and the checks it is made of.

Unique IDs, dangling references, recall selections, 64-bit integers, finite floats, control
characters and content hashes. Every failure is an `InvalidFile` with code `invalid_file`
and the JSON path of what is wrong.
"""

from __future__ import annotations

import math
import re
import sys
from datetime import datetime
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ..errors import InvalidFile
from ..io.limits import MAX_COST, MAX_COUNT
from .hashing import content_hash
from .records import (
    TIMESTAMP_PATTERN,
    Capture,
    Payload,
    RecallSelection,
    RowsPayload,
    State,
    TextPayload,
)

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def invalid_at(source: str, path: str, message: str) -> InvalidFile:
    """The `invalid_file` error for what is wrong at JSON `path` of `source`."""
    return InvalidFile(f"{source}: {message} at {path}", details={"file": source, "path": path})


def check_scalar(value: Any, source: str, path: str) -> None:
    """A payload cell: a finite float, or an integer that fits in 64 bits."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise invalid_at(source, path, "integer does not fit in 64 bits")
    elif isinstance(value, float) and not math.isfinite(value):
        raise invalid_at(source, path, "NaN and infinities are not allowed")


def is_timestamp(value: object) -> bool:
    """An RFC 3339 timestamp with an explicit offset and a real calendar date and time."""
    if not isinstance(value, str) or re.match(TIMESTAMP_PATTERN, value) is None:
        return False
    # RFC 3339 allows lowercase t/z and a leap second (:60), which fromisoformat does not.
    calendar = value.upper()
    if calendar[17:19] == "60":
        calendar = calendar[:17] + "59" + calendar[19:]
    try:
        datetime.fromisoformat(calendar)
    except ValueError:
        return False
    return True


def _check_timestamp(value: str, source: str, path: str) -> None:
    if not is_timestamp(value):
        raise invalid_at(source, path, f"not a valid RFC 3339 timestamp: {value!r}")


# Cells that are plainly fine: int64 integers, finite floats. Checked at C speed; anything else
# (an unsigned 64-bit integer, or a bad cell) takes the exact cell-by-cell path below.
_PLAIN_CELL = (
    None
    | bool
    | Annotated[int, Meta(ge=_INT_MIN, le=2**63 - 1)]
    | Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
    | str
)
_PLAIN_ROWS = list[list[_PLAIN_CELL]]


# A text payload's language is a fence's info string (v3+): a control character in it (a
# newline above all) ends the info line early and shifts the fenced body. The tab is let
# through: it ends no line, and the frozen corpus holds valid states with a "tab\tlang".
_CONTROL_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def check_payload(payload: Payload | None, source: str, path: str) -> None:
    """Rows as wide as their columns, every cell a finite 64-bit-safe scalar; a language without control characters."""
    if isinstance(payload, TextPayload):
        language = payload.language
        if language is not None and _CONTROL_CHAR.search(language):
            raise invalid_at(
                source,
                f"{path}.language",
                f"a language holds no control character (a newline, U+2028…; a tab is allowed): {language!r}",
            )
    if isinstance(payload, RowsPayload):
        width = len(payload.columns)
        if set(map(len, payload.rows)) <= {width}:
            try:
                msgspec.convert(payload.rows, _PLAIN_ROWS)
                return
            except msgspec.ValidationError:
                pass
        for r, row in enumerate(payload.rows):
            if len(row) != width:
                raise invalid_at(
                    source, f"{path}.rows[{r}]", f"row has {len(row)} cells for {width} columns"
                )
            for c, cell in enumerate(row):
                check_scalar(cell, source, f"{path}.rows[{r}][{c}]")


def _check_number(
    value: Any, source: str, path: str, *, low: int = 0, cost: bool = False, unit: bool = False
) -> None:
    """A count in [low, MAX_COUNT], a cost in [0, MAX_COST] or a unit in [0, 1] (None passes).

    Decoding JSON already enforces these; this catches a state built in Python.
    """
    if value is None:
        return
    if cost or unit:
        top = 1.0 if unit else MAX_COST
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and 0 <= value <= top
        )
        if not ok:
            raise invalid_at(
                source, path, f"expected a finite number from 0 to {top:g}, not {value!r}"
            )
    elif isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
        raise invalid_at(
            source,
            path,
            f"expected an integer from {'-2^53' if low < 0 else low} to 2^53, not {value!r}",
        )


def check_capture(capture: Capture, source: str, path: str) -> None:
    """The capture's counts in range (page, item_count)."""
    for name in ("page", "item_count"):
        _check_number(getattr(capture, name), source, f"{path}.{name}", low=-MAX_COUNT)


def _check_unique(ids: list[str], source: str, path: str) -> None:
    seen: set[str] = set()
    for i, ident in enumerate(ids):
        if ident in seen:
            raise invalid_at(source, f"{path}[{i}].id", f"duplicate ID {ident}")
        seen.add(ident)


def _find_unencodable(value: Any, path: str) -> str | None:
    """The JSON path of the first string that is not valid Unicode (a lone surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _find_unencodable(key, path) or _find_unencodable(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _find_unencodable(item, f"{path}[{i}]")
            if found:
                return found
    return None


def validate_state(state: State, source: str = "<state>", root: str = "$") -> None:
    """Check everything a schema cannot: uniqueness, references, hashes, number ranges."""
    try:
        msgspec.json.encode(state)
    except UnicodeEncodeError:
        # Only a state built in Python can get here: JSON decoding rejects lone surrogates.
        plain = msgspec.to_builtins(state)
        raise invalid_at(
            source, _find_unencodable(plain, root) or root, "string is not valid Unicode"
        ) from None
    hids = {h.id for h in state.hypotheses}
    eids = {e.id for e in state.evidence}
    _check_unique([h.id for h in state.hypotheses], source, f"{root}.hypotheses")
    _check_unique([e.id for e in state.evidence], source, f"{root}.evidence")
    _check_unique([n.id for n in state.notes], source, f"{root}.notes")
    if not state.hypotheses:
        raise invalid_at(source, f"{root}.hypotheses", "a state needs at least one hypothesis")
    _check_number(state.iteration, source, f"{root}.iteration")
    _check_number(state.budget.max_iterations, source, f"{root}.budget.max_iterations", low=1)
    for name in ("max_cost", "cost_used"):
        _check_number(getattr(state.budget, name), source, f"{root}.budget.{name}", cost=True)
    _check_timestamp(state.case.opened_at, source, f"{root}.case.opened_at")

    for i, h in enumerate(state.hypotheses):
        hp = f"{root}.hypotheses[{i}]"
        _check_number(h.confidence, source, f"{hp}.confidence", unit=True)
        _check_number(h.control.iterations_used, source, f"{hp}.control.iterations_used")
        _check_number(h.control.iteration_limit, source, f"{hp}.control.iteration_limit")
        prev = h.control.previous_result
        if prev is not None and prev not in eids:
            raise invalid_at(source, f"{hp}.control.previous_result", f"unknown evidence {prev}")
        for j, entry in enumerate(h.history):
            _check_number(entry.iteration, source, f"{hp}.history[{j}].iteration")
            _check_number(entry.confidence, source, f"{hp}.history[{j}].confidence", unit=True)
            for k, ref in enumerate(entry.evidence_refs):
                if ref not in eids:
                    raise invalid_at(
                        source, f"{hp}.history[{j}].evidence_refs[{k}]", f"unknown evidence {ref}"
                    )

    for i, e in enumerate(state.evidence):
        ep = f"{root}.evidence[{i}]"
        if e.collector not in hids:
            raise invalid_at(source, f"{ep}.collector", f"unknown hypothesis {e.collector}")
        _check_timestamp(e.captured_at, source, f"{ep}.captured_at")
        check_capture(e.capture, source, f"{ep}.capture")
        _check_number(e.budget.cost, source, f"{ep}.budget.cost", cost=True)
        _check_number(e.iteration, source, f"{ep}.iteration")
        if e.payload is None:
            if e.content_hash is not None:
                raise invalid_at(
                    source, f"{ep}.content_hash", "must be null when the payload is null"
                )
            continue
        check_payload(e.payload, source, f"{ep}.payload")
        expected = content_hash(e.payload)
        if e.content_hash != expected:
            raise invalid_at(
                source,
                f"{ep}.content_hash",
                f"content hash {e.content_hash} does not match the payload ({expected})",
            )

    for i, n in enumerate(state.notes):
        _check_number(n.iteration, source, f"{root}.notes[{i}].iteration")
        if n.hypothesis is not None and n.hypothesis not in hids:
            raise invalid_at(
                source, f"{root}.notes[{i}].hypothesis", f"unknown hypothesis {n.hypothesis}"
            )

    for hid in sorted(state.recall):
        sel = state.recall[hid]
        rp = f"{root}.recall.{hid}"
        if hid not in hids:
            raise invalid_at(source, rp, f"unknown hypothesis {hid}")
        _check_number(sel.iteration, source, f"{rp}.iteration")
        if not 1 <= len(sel.evidence_refs) + len(sel.entries) <= 4:
            raise invalid_at(
                source,
                f"{rp}.evidence_refs",
                f"a recall selection holds 1 to 4 IDs, not {len(sel.evidence_refs) + len(sel.entries)}",
            )
        check_recall_entries(state, sel, source, rp)
        seen: set[str] = set()
        for k, ref in enumerate(sel.evidence_refs):
            if ref not in eids:
                raise invalid_at(source, f"{rp}.evidence_refs[{k}]", f"unknown evidence {ref}")
            if ref in seen:
                raise invalid_at(source, f"{rp}.evidence_refs[{k}]", f"repeated evidence {ref}")
            seen.add(ref)


def entry_refs(state: State) -> set[str]:
    """Every note ID, decision row reference (`H<n>/<k>`) and `case`: what a v14 recall's `entries` can name."""
    refs = {n.id for n in state.notes} | {"case"}
    refs.update(f"{h.id}/{k}" for h in state.hypotheses for k in range(1, len(h.history) + 1))
    return refs


def check_recall_entries(state: State, sel: RecallSelection, source: str, rp: str) -> None:
    """A v14 selection's entries exist and repeat nothing; each page names a recalled reference, once."""
    if not sel.entries and not sel.pages:
        return
    known = entry_refs(state)
    for k, ref in enumerate(sel.entries):
        if ref not in known:
            raise invalid_at(source, f"{rp}.entries[{k}]", f"unknown entry {ref}")
        if ref in sel.entries[:k]:
            raise invalid_at(source, f"{rp}.entries[{k}]", f"repeated entry {ref}")
    recalled = set(sel.evidence_refs) | set(sel.entries)
    named: set[str] = set()
    for k, item in enumerate(sel.pages):
        ref = item.rpartition(":")[0]
        if ref not in recalled or ref in named:
            raise invalid_at(
                source,
                f"{rp}.pages[{k}]",
                f"a page of {ref}, which the selection does not recall once",
            )
        named.add(ref)
