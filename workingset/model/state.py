"""The investigation state and stored-context formats as strict msgspec Structs.

The formats are docs/protocol.md#the-investigation-state and #stored-contexts-and-runs.

Decoding is strict: unknown keys, malformed IDs, naive timestamps and out-of-range numbers
fail with the JSON path. `validate_state` then checks what a schema cannot express:
unique IDs, dangling references, recall selections, 64-bit integers, finite floats and
content hashes. Every failure is an `InvalidFile` with code `invalid_file`.
"""

from __future__ import annotations

import math
import re
import sys
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import msgspec.inspect
from msgspec import Meta, Struct

from ..errors import InvalidFile
from ..io.limits import MAX_COST, MAX_COUNT, Limits, check_json, read_path
from .hashing import content_hash

STORED_CONTEXT_FORMAT = "workingset/stored-context@1"


def whole(body: str) -> str:
    r"""A pattern that matches a whole string of the form `body`, in Python's `re` and ECMA-262 alike.

    In Python (msgspec and jsonschema both use `re.search`) `$` also matches before a final
    newline, so `^demo$` accepted `"demo\n"`; `(?!\n)` after it refuses that, and in ECMA-262,
    where `$` is already the end of the input, changes nothing. (`\Z` is not ECMA-262.)
    """
    return rf"^{body}$(?!\n)"


# An analysis ID: a lowercase letter or digit, then more of them or `._-`, 64 at most.
ANALYSIS_ID_MAX_CHARS = 64
ANALYSIS_ID_CHARS = rf"[a-z0-9][a-z0-9._-]{{0,{ANALYSIS_ID_MAX_CHARS - 1}}}"
ANALYSIS_ID_PATTERN = whole(ANALYSIS_ID_CHARS)
AnalysisId = Annotated[str, Meta(pattern=ANALYSIS_ID_PATTERN)]
HypothesisId = Annotated[str, Meta(pattern=whole("H[0-9]{1,4}"))]
EvidenceId = Annotated[str, Meta(pattern=whole("E[0-9]{6}"))]
NoteId = Annotated[str, Meta(pattern=whole("N[0-9]{6}"))]
ActionId = Annotated[str, Meta(pattern=whole("B[0-9]{6}"))]
RequestId = Annotated[str, Meta(pattern=whole(rf"{ANALYSIS_ID_CHARS}-r[0-9]{{4,}}"))]
# RFC 3339 with an explicit offset; the calendar itself is checked by is_timestamp.
TIMESTAMP_PATTERN = whole(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
Timestamp = Annotated[str, Meta(pattern=TIMESTAMP_PATTERN)]
Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
# Every count (iterations, limits, pages, item and character counts) and every cost has a range
# (see `limits`), so that no sum or increment of accepted input can overflow or become infinite.
Cost = Annotated[float, Meta(ge=0.0, le=MAX_COST)]
Count = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
# What a source reports about a capture (page, item count), kept verbatim: some report -1.
SourceCount = Annotated[int, Meta(ge=-MAX_COUNT, le=MAX_COUNT)]
Hash = Annotated[str, Meta(pattern=whole("xxh3-128:[0-9a-f]{32}"))]
Scalar = None | bool | int | float | str

Disposition = Literal["open", "supported", "refuted", "inconclusive", "parked"]
Scope = Literal["query_result", "log", "code", "metric", "document", "feedback"]


class _Strict(Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
    """Base for every record: unknown keys are an error, never silently dropped.

    Records are not tracked by the cyclic garbage collector (`gc=False`): a state is a tree,
    and tracking its tens of thousands of records made the collector scan them again and
    again while a large state was decoded (a fresh process decoded a 10,000-item snapshot in
    about 50 ms with them tracked, about 30 ms without collections).
    """


class Budget(_Strict, kw_only=True):
    max_iterations: Annotated[int, Meta(ge=1, le=MAX_COUNT)]
    max_cost: Cost | None = None
    cost_used: Cost = 0.0


class Entity(_Strict, kw_only=True):
    id: str
    kind: str
    name: str
    source: str | None = None


class Case(_Strict, kw_only=True):
    title: str
    statement: str
    opened_at: Timestamp
    entities: list[Entity] = []


class Control(_Strict, kw_only=True):
    iterations_used: Count
    iteration_limit: Count
    previous_result: EvidenceId | None = None
    plan: str | None = None
    next_checks: list[str] = []


class HistoryEntry(_Strict, kw_only=True):
    iteration: Count
    kind: Literal["query", "recall", "assessment", "conclude"]
    evidence_refs: list[EvidenceId] = []
    verdict: str | None = None
    confidence: Unit | None = None
    text: str | None = None


class Hypothesis(_Strict, kw_only=True):
    id: HypothesisId
    title: str
    mechanism: str
    confidence: Unit
    disposition: Disposition
    control: Control
    history: list[HistoryEntry] = []


class Capture(_Strict, kw_only=True):
    """The capture descriptor, kept verbatim: what was asked, where, and what came back."""

    query: str | None = None
    predicate: str | None = None
    origin: str
    snapshot: str | None = None
    coverage: str | None = None
    truncated: bool | None = None
    page: SourceCount | None = None
    next_cursor: str | None = None
    eof: bool | None = None
    item_count: SourceCount | None = None


class RowsPayload(Struct, tag_field="kind", tag="rows", forbid_unknown_fields=True, kw_only=True):
    kind: ClassVar[str] = (
        "rows"  # the tag, readable as an attribute (and by `trusted.TrustedCodec`)
    )
    columns: list[str]
    rows: list[list[Scalar]]


class TextPayload(Struct, tag_field="kind", tag="text", forbid_unknown_fields=True, kw_only=True):
    kind: ClassVar[str] = "text"
    language: str | None
    text: str


Payload = RowsPayload | TextPayload


class EvidenceBudget(_Strict, kw_only=True):
    action: ActionId | None = None
    status: Literal["none", "unsettled", "settled"]
    cost: Cost = 0.0


class Evidence(_Strict, kw_only=True):
    id: EvidenceId
    collector: HypothesisId
    scope: Scope
    capture: Capture
    payload: Payload | None
    content_hash: Hash | None
    budget: EvidenceBudget
    iteration: Count
    captured_at: Timestamp


class Note(_Strict, kw_only=True):
    id: NoteId
    hypothesis: HypothesisId | None
    kind: Literal["note", "question"]
    text: str
    status: Literal["open", "answered"] | None = None
    iteration: Count


# A v14 recall can also name a note, a decision row (`H<n>/<k>`: hypothesis H<n>'s k-th row) or the
# case, and a page of any recalled entry (`REF:page`). Older selections have neither (defaults).
ENTRY_REF = r"(N[0-9]{6}|H[0-9]+/[1-9][0-9]*|case)"
PAGE_REF = r"(E[0-9]{6}|N[0-9]{6}|H[0-9]+/[1-9][0-9]*|case):[1-9][0-9]*"
EntryRef = Annotated[str, Meta(pattern=whole(ENTRY_REF))]
PageRef = Annotated[str, Meta(pattern=whole(PAGE_REF))]


class RecallSelection(_Strict, kw_only=True, omit_defaults=True):
    """A hypothesis's recall; empty `entries` and `pages` are left out when written, so older states' bytes stay."""

    evidence_refs: list[EvidenceId]
    iteration: Count
    entries: list[EntryRef] = []
    pages: list[PageRef] = []


class State(_Strict, kw_only=True):
    analysis_id: AnalysisId
    iteration: Count
    budget: Budget
    case: Case
    hypotheses: list[Hypothesis]
    evidence: list[Evidence] = []
    notes: list[Note] = []
    recall: dict[HypothesisId, RecallSelection] = {}

    def hypothesis(self, hid: str) -> Hypothesis | None:
        """Return the hypothesis with this ID, or None."""
        for h in self.hypotheses:
            if h.id == hid:
                return h
        return None

    def pending_result(self, hid: str) -> str | None:
        """The hypothesis's previous result if its budget action is unsettled (rule A), else None.

        The prompt's assessment instruction and decision validation both ask this, so they
        cannot disagree.
        """
        h = self.hypothesis(hid)
        prev = None if h is None else h.control.previous_result
        if prev is None:
            return None
        for ev in self.evidence:
            if ev.id == prev:
                return prev if ev.budget.status == "unsettled" else None
        return None


class Rendered(_Strict, kw_only=True):
    """The recorded size and hash of a stored context's rendered text."""

    chars: Count
    hash: Hash


class StoredContext(_Strict, kw_only=True):
    format: Literal["workingset/stored-context@1"]
    request_id: RequestId
    encoder: str
    hypothesis: HypothesisId
    rendered: Rendered | None
    state: State


_STATE_DECODER = msgspec.json.Decoder(State)
_CONTEXT_DECODER = msgspec.json.Decoder(StoredContext)
_PATH_RE = re.compile(r" - at `(\$[^`]*)`$")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _fail(source: str, path: str, message: str) -> InvalidFile:
    return InvalidFile(f"{source}: {message} at {path}", details={"file": source, "path": path})


def split_validation_error(exc: msgspec.ValidationError, root: Any = None) -> tuple[str, str]:
    """A msgspec validation error as (message, JSON path); the path is `$` where msgspec names none.

    Given the decoded `root` type, an invalid enum or tag value's message lists the valid ones.
    """
    text = str(exc)
    match = _PATH_RE.search(text)
    message, path = _PATH_RE.sub("", text), match.group(1) if match else "$"
    if root is not None and message.startswith(("Invalid enum value", "Invalid value")):
        valid = allowed_values(root, path)
        if valid:
            message += f"; expected one of: {', '.join(valid)}"
    return message, path


_TOKEN_RE = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def allowed_values(root: Any, path: str) -> tuple[str, ...] | None:
    """The values a string enum (a Literal, or a tagged union's tag) at JSON `path` of type `root` allows."""
    infos = [msgspec.inspect.type_info(root)]
    for name, index in _TOKEN_RE.findall(path[1:]):
        infos = [sub for info in infos for sub in _step(info, name, index)]
        if not infos:
            return None
    values = []
    for info in infos:
        if isinstance(info, msgspec.inspect.LiteralType):
            values.extend(str(v) for v in info.values)
        elif isinstance(info, tuple):  # a tag field: the tags of the union's variants
            values.extend(info)
    return tuple(dict.fromkeys(values)) or None


def _members(info: Any) -> list[Any]:
    return (
        [m for t in info.types for m in _members(t)]
        if isinstance(info, msgspec.inspect.UnionType)
        else [info]
    )


def _step(info: Any, name: str, index: str) -> list[Any]:
    out: list[Any] = []
    members = _members(info)
    if name and any(
        isinstance(m, msgspec.inspect.StructType) and m.tag_field == name for m in members
    ):
        return [
            tuple(
                m.tag
                for m in members
                if isinstance(m, msgspec.inspect.StructType) and m.tag_field == name
            )
        ]
    for m in members:
        if index and isinstance(
            m, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.VarTupleType)
        ):
            out.append(m.item_type)
        elif name and isinstance(m, msgspec.inspect.DictType):
            out.append(m.value_type)
        elif name and isinstance(m, msgspec.inspect.StructType):
            out.extend(f.type for f in m.fields if f.encode_name == name)
    return out


def decode_strict(
    data: bytes,
    decoder: msgspec.json.Decoder,
    source: str,
    prefix: str = "$",
    *,
    kind: str | None = "file",
    limits: Limits | None = None,
) -> Any:
    """Check the input's limits (`kind`: file or result; None: checked already), then decode it strictly.

    Any failure is `too_large` or `invalid_file` with its JSON path.
    """
    if kind is not None:
        check_json(data, kind, source, limits)
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        message, path = split_validation_error(exc, decoder.type)
        raise _fail(source, prefix + path[1:], message) from None
    except msgspec.DecodeError as exc:
        raise InvalidFile(
            f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}
        ) from None


def _raw_object(data: bytes, source: str) -> dict:
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidFile(
            f"{source}: not valid JSON ({exc})", details={"file": source, "path": "$"}
        ) from None
    if not isinstance(raw, dict):
        raise _fail(source, "$", "expected a JSON object")
    return raw


def load_state(
    data: bytes, source: str = "<state>", limits: Limits | None = None, *, checked: bool = False
) -> State:
    """Decode and fully validate a bare state; `limits` default to `Limits.current()`."""
    state = decode_strict(
        data, _STATE_DECODER, source, kind=None if checked else "file", limits=limits
    )
    validate_state(state, source)
    return state


def load_stored_context(
    data: bytes,
    source: str = "<stored context>",
    limits: Limits | None = None,
    *,
    checked: bool = False,
) -> StoredContext:
    """Decode and fully validate one stored context; `limits` default to `Limits.current()`."""
    ctx = decode_strict(
        data, _CONTEXT_DECODER, source, kind=None if checked else "file", limits=limits
    )
    validate_state(ctx.state, source, "$.state")
    if ctx.state.hypothesis(ctx.hypothesis) is None:
        raise _fail(source, "$.hypothesis", f"hypothesis {ctx.hypothesis} is not in the state")
    return ctx


def load_state_or_context(
    data: bytes, source: str = "<input>", limits: Limits | None = None
) -> State:
    """Take a bare state, or the state of a stored context (told apart by its `format` key)."""
    check_json(data, "file", source, limits)
    raw = _raw_object(data, source)
    if "format" in raw:
        return load_stored_context(data, source, checked=True).state
    return load_state(data, source, checked=True)


def load_start(
    data: bytes, source: str = "<input>", limits: Limits | None = None
) -> tuple[State, int]:
    """A state to start an analysis from, and the number of the request it comes from (0 for a bare state).

    A stored context's request ID ends in its request number (`-r0018`): an analysis created
    from it numbers its own requests on from there, so its IDs never repeat the context's.
    """
    check_json(data, "file", source, limits)
    raw = _raw_object(data, source)
    if "format" in raw:
        ctx = load_stored_context(data, source, checked=True)
        return ctx.state, int(ctx.request_id.rsplit("-r", 1)[1])
    return load_state(data, source, checked=True), 0


def read_file(path: str, limits: Limits | None = None) -> bytes:
    """Read a regular file's bytes (at most the file size limit): a bigger one is `too_large`.

    OS errors and special files (FIFOs, devices) are `invalid_file`, `details.reason` saying why
    with an OS code of `files.OS_CODES` (`not_found`, `not_regular_file`, …); see `limits.read_path`.
    """
    return read_path(path, "file", limits)


def dump_json(value: object) -> bytes:
    """Encode a Struct as indented JSON with a trailing newline (the on-disk form)."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n"


def copy_state(state: State) -> State:
    """Return a deep copy of a state (through its JSON form, so nothing is shared)."""
    return _STATE_DECODER.decode(msgspec.json.encode(state))


def check_scalar(value: Any, source: str, path: str) -> None:
    """A payload cell: a finite float, or an integer that fits in 64 bits."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise _fail(source, path, "integer does not fit in 64 bits")
    elif isinstance(value, float) and not math.isfinite(value):
        raise _fail(source, path, "NaN and infinities are not allowed")


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
        raise _fail(source, path, f"not a valid RFC 3339 timestamp: {value!r}")


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
            raise _fail(
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
                raise _fail(
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
            raise _fail(source, path, f"expected a finite number from 0 to {top:g}, not {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
        raise _fail(
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
            raise _fail(source, f"{path}[{i}].id", f"duplicate ID {ident}")
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
        raise _fail(
            source, _find_unencodable(plain, root) or root, "string is not valid Unicode"
        ) from None
    hids = {h.id for h in state.hypotheses}
    eids = {e.id for e in state.evidence}
    _check_unique([h.id for h in state.hypotheses], source, f"{root}.hypotheses")
    _check_unique([e.id for e in state.evidence], source, f"{root}.evidence")
    _check_unique([n.id for n in state.notes], source, f"{root}.notes")
    if not state.hypotheses:
        raise _fail(source, f"{root}.hypotheses", "a state needs at least one hypothesis")
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
            raise _fail(source, f"{hp}.control.previous_result", f"unknown evidence {prev}")
        for j, entry in enumerate(h.history):
            _check_number(entry.iteration, source, f"{hp}.history[{j}].iteration")
            _check_number(entry.confidence, source, f"{hp}.history[{j}].confidence", unit=True)
            for k, ref in enumerate(entry.evidence_refs):
                if ref not in eids:
                    raise _fail(
                        source, f"{hp}.history[{j}].evidence_refs[{k}]", f"unknown evidence {ref}"
                    )

    for i, e in enumerate(state.evidence):
        ep = f"{root}.evidence[{i}]"
        if e.collector not in hids:
            raise _fail(source, f"{ep}.collector", f"unknown hypothesis {e.collector}")
        _check_timestamp(e.captured_at, source, f"{ep}.captured_at")
        check_capture(e.capture, source, f"{ep}.capture")
        _check_number(e.budget.cost, source, f"{ep}.budget.cost", cost=True)
        _check_number(e.iteration, source, f"{ep}.iteration")
        if e.payload is None:
            if e.content_hash is not None:
                raise _fail(source, f"{ep}.content_hash", "must be null when the payload is null")
            continue
        check_payload(e.payload, source, f"{ep}.payload")
        expected = content_hash(e.payload)
        if e.content_hash != expected:
            raise _fail(
                source,
                f"{ep}.content_hash",
                f"content hash {e.content_hash} does not match the payload ({expected})",
            )

    for i, n in enumerate(state.notes):
        _check_number(n.iteration, source, f"{root}.notes[{i}].iteration")
        if n.hypothesis is not None and n.hypothesis not in hids:
            raise _fail(
                source, f"{root}.notes[{i}].hypothesis", f"unknown hypothesis {n.hypothesis}"
            )

    for hid in sorted(state.recall):
        sel = state.recall[hid]
        rp = f"{root}.recall.{hid}"
        if hid not in hids:
            raise _fail(source, rp, f"unknown hypothesis {hid}")
        _check_number(sel.iteration, source, f"{rp}.iteration")
        if not 1 <= len(sel.evidence_refs) + len(sel.entries) <= 4:
            raise _fail(
                source,
                f"{rp}.evidence_refs",
                f"a recall selection holds 1 to 4 IDs, not {len(sel.evidence_refs) + len(sel.entries)}",
            )
        check_recall_entries(state, sel, source, rp)
        seen: set[str] = set()
        for k, ref in enumerate(sel.evidence_refs):
            if ref not in eids:
                raise _fail(source, f"{rp}.evidence_refs[{k}]", f"unknown evidence {ref}")
            if ref in seen:
                raise _fail(source, f"{rp}.evidence_refs[{k}]", f"repeated evidence {ref}")
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
            raise _fail(source, f"{rp}.entries[{k}]", f"unknown entry {ref}")
        if ref in sel.entries[:k]:
            raise _fail(source, f"{rp}.entries[{k}]", f"repeated entry {ref}")
    recalled = set(sel.evidence_refs) | set(sel.entries)
    named: set[str] = set()
    for k, item in enumerate(sel.pages):
        ref = item.rpartition(":")[0]
        if ref not in recalled or ref in named:
            raise _fail(
                source,
                f"{rp}.pages[{k}]",
                f"a page of {ref}, which the selection does not recall once",
            )
        named.add(ref)
