"""The investigation state and stored-context formats as strict msgspec Structs, and their field types.

The formats are docs/protocol.md#the-investigation-state and #stored-contexts-and-runs.
Decoding them is strict (`decoding`): unknown keys, malformed IDs, naive timestamps and
out-of-range numbers fail with the JSON path; what a type cannot express is checked after
(`validation`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from ..io.limits import MAX_COST, MAX_COUNT

STORED_CONTEXT_FORMAT: Final = "workingset/stored-context@1"


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


Limit = Annotated[int, Meta(ge=1, le=MAX_COUNT)]


class Budget(_Strict, kw_only=True):
    """The analysis's five bounds; the last three may be left out (no bound), and are then not written.

    `max_queries` bounds the queries run (results recorded), `max_model_calls` the model's
    replies (every answer kept, retries too), `max_seconds` the execution time since creation,
    paused time left out. Their usage is counted from the event log.
    """

    max_iterations: Limit
    max_cost: Cost | None = None
    cost_used: Cost = 0.0
    max_queries: Limit | UnsetType = UNSET
    max_model_calls: Limit | UnsetType = UNSET
    max_seconds: Limit | UnsetType = UNSET


class StopRules(_Strict, kw_only=True, omit_defaults=True):
    """The optional thresholds of the stop policy; each is off when left out or null."""

    success_confidence: Unit | None = None
    contradiction_confidence: Unit | None = None
    min_confidence: Unit | None = None


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
    # Left out when not set (`UNSET`): a state that sets no threshold is written as before.
    stop_rules: StopRules | UnsetType = UNSET

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
