"""The decision a model returns for one request (docs/protocol.md#decisions), as a strict tagged union, and its validation.

A decision is checked in two stages, both before anything changes. `parse_decision` checks
the bytes' size, nesting and repeated keys (too_large, schema_violation) and turns them into
a `Decision` for one version's schema (malformed_json, recall_unsupported,
schema_violation with the JSON path, recall_count, recall_duplicate). `check_decision` then
checks it against the analysis: unknown_evidence, rule A (assessment_missing /
assessment_mismatch) and rule G (ungrounded_reference); a v14 recall's entries and pages are
checked by `check_recall_pages` (recall_entry, recall_page) against the request's encoder. The order is chosen so that the most
specific code wins: a recall under a version without it is `recall_unsupported`, not a schema
violation, and five recall IDs are `recall_count`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from .errors import DecisionRejected
from .io.limits import Limits, check_json
from .io.numbers import ascii_int
from .model.spans import MAX_SPANS, Span, canonical_text, first_span
from .model.state import (
    EntryRef,
    EvidenceId,
    PageRef,
    State,
    Unit,
    entry_refs,
    split_validation_error,
)

MAX_NOTES = 8
MAX_RECALL = 4


class _Strict(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of every decision record: a typo in a field name is an error, never dropped.

    msgspec passes `frozen` on to subclasses; each says `frozen=True` again because a type
    checker reads it from the class's own keywords (without it mypy takes a subclass as mutable).
    """


class Assessment(_Strict, frozen=True):
    evidence_ref: EvidenceId
    verdict: Literal["supports", "refutes", "neutral", "inconclusive"]
    confidence: Unit
    rationale: str


class NewNote(_Strict, frozen=True):
    kind: Literal["note", "question"]
    text: str


class Query(_Strict, frozen=True, tag_field="kind", tag="query"):
    source: str
    query: str
    purpose: str


class Recall(_Strict, frozen=True, tag_field="kind", tag="recall"):
    # The 1..4 bound is checked after decoding so that it reports `recall_count`.
    evidence_refs: list[EvidenceId]


class Conclude(_Strict, frozen=True, tag_field="kind", tag="conclude"):
    disposition: Literal["supported", "refuted", "inconclusive"]
    diagnosis: str
    evidence_refs: Annotated[list[EvidenceId], Meta(min_length=1)]


class _Answer(_Strict, frozen=True, kw_only=True):
    """What every version's decision has besides `next`: the optional assessment and notes."""

    assessment: Assessment | UnsetType = UNSET
    notes: Annotated[list[NewNote], Meta(max_length=MAX_NOTES)] = []


class Decision(_Answer, frozen=True, kw_only=True):
    """A decision of a version without recall (v1–v7, v10)."""

    next: Query | Conclude


class RecallDecision(_Answer, frozen=True, kw_only=True):
    """A decision of a version with recall (v8, v9, v11 and later)."""

    next: Query | Recall | Conclude


class CitingConclude(Conclude, frozen=True, tag="conclude"):
    """A conclusion that may cite exact spans of payloads it saw (versions with `supports_spans`)."""

    spans: Annotated[list[Span], Meta(max_length=MAX_SPANS)] = []


class CitingDecision(_Answer, frozen=True, kw_only=True):
    """A decision of a version with spans and without recall."""

    next: Query | CitingConclude


class CitingRecallDecision(_Answer, frozen=True, kw_only=True):
    """A decision of a version with spans and recall; also the stored form of every decision."""

    next: Query | Recall | CitingConclude


class PagedRecall(Recall, frozen=True, tag="recall"):
    """v14's recall: evidence IDs as before (0 to 4), notes, decision rows (`H<n>/<k>`) or `case`, and pages.

    `pages` names a page of a recalled entry as `REF:page` (1-based); 1 to 4 references in all.
    """

    entries: list[EntryRef] = []
    pages: list[PageRef] = []


class PagedRecallDecision(_Answer, frozen=True, kw_only=True):
    """A decision of a version with paged recall (v14)."""

    next: Query | PagedRecall | Conclude


class Quote(_Strict, frozen=True):
    """A short quote from a payload, as the model copies it; the library binds it to a span (`bind_quotes`)."""

    evidence_ref: EvidenceId
    quote: Annotated[str, Meta(min_length=1)]


class QuotingConclude(Conclude, frozen=True, tag="conclude"):
    """v15's conclusion: it may quote the evidence it rests on (`quotes`), at most `MAX_SPANS` quotes."""

    quotes: Annotated[list[Quote], Meta(max_length=MAX_SPANS)] = []


class QuotingDecision(_Answer, frozen=True, kw_only=True):
    """A decision of a version with paged recall and quoting conclusions (v15), as the model writes it."""

    next: Query | PagedRecall | QuotingConclude


class NullableQuotingDecision(_Strict, frozen=True, kw_only=True):
    """v15's decision as its stable strict OpenAI form sends it: `"assessment": null` is no assessment."""

    assessment: Assessment | None | UnsetType = UNSET
    notes: Annotated[list[NewNote], Meta(max_length=MAX_NOTES)] = []
    next: Query | PagedRecall | QuotingConclude


class NullablePagedDecision(_Strict, frozen=True, kw_only=True):
    """v14's decision as its stable strict OpenAI form sends it: `"assessment": null` is no assessment."""

    assessment: Assessment | None | UnsetType = UNSET
    notes: Annotated[list[NewNote], Meta(max_length=MAX_NOTES)] = []
    next: Query | PagedRecall | Conclude


class StoredRecallDecision(_Answer, frozen=True, kw_only=True):
    """The stored form of every decision: spans and paged recall, each defaulting to empty."""

    next: Query | PagedRecall | CitingConclude


AnyDecision = (
    Decision
    | RecallDecision
    | CitingDecision
    | CitingRecallDecision
    | PagedRecallDecision
    | QuotingDecision
    | StoredRecallDecision
)
# The widest schema: the event log stores every version's decisions in it (`spans`, `entries` and
# `pages` default to []).
StoredDecision = StoredRecallDecision

# The decision type of each version schema (recall?, spans?), and its decoder, built once.
DECISION_TYPES: dict[tuple[bool, bool], type[AnyDecision]] = {
    (False, False): Decision,
    (True, False): RecallDecision,
    (False, True): CitingDecision,
    (True, True): CitingRecallDecision,
}
_DECODERS: dict[tuple[bool, bool], msgspec.json.Decoder[AnyDecision]] = {
    key: msgspec.json.Decoder(cls) for key, cls in DECISION_TYPES.items()
}
_PAGED_DECODER = msgspec.json.Decoder(PagedRecallDecision)
_NULLABLE_DECODER = msgspec.json.Decoder(NullablePagedDecision)
_QUOTING_DECODER = msgspec.json.Decoder(QuotingDecision)
_NULLABLE_QUOTING_DECODER = msgspec.json.Decoder(NullableQuotingDecision)


def _reject(code: str, message: str, **details: Any) -> DecisionRejected:
    return DecisionRejected(message, code=code, details=details)


# One fenced block and nothing else: ```json (or a bare ```) on its own line, the closing fence
# at least as long, only whitespace around. Models often wrap JSON so; the contents are kept as is.
_FENCED = re.compile(
    rb"\A\s*(`{3,})[ \t]*(?:json)?[ \t]*\r?\n(.*?)\r?\n[ \t]*\1`*\s*\Z", re.DOTALL | re.IGNORECASE
)


def unfence(data: bytes) -> bytes:
    """The JSON inside a single fenced ```json code block that is the whole answer; other data unchanged."""
    match = _FENCED.match(data)  # fails at the first non-space byte unless it is a backtick
    return match.group(2) if match else data


_EXPECTED = 'expected one JSON object such as {"next": {"kind": "query", "source": ..., "query": ..., "purpose": ...}}'


def malformed_hint(data: bytes) -> str:
    """What an unparseable answer looks like, and what is expected instead (appended to `malformed_json`)."""
    text = data.strip()
    if not text:
        return f"; the answer is empty: {_EXPECTED}"
    if text.startswith(b"```") or b"\n```" in text:
        return ("; it looks like Markdown with a code fence: send the JSON object alone "
                "(one ```json block that is the whole answer is also accepted)")  # fmt: skip
    if not text.startswith((b"{", b"[")) and b"{" in text:
        return (
            "; the answer has text before its JSON object: send the object alone, starting with `{`"
        )
    return f"; {_EXPECTED}"


def parse_decision(
    data: bytes,
    *,
    supports_recall: bool,
    supports_spans: bool = False,
    limits: Limits | None = None,
    supports_pages: bool = False,
    null_assessment: bool = False,
    supports_quotes: bool = False,
) -> AnyDecision:
    """Decode a decision for one version's schema; raise `DecisionRejected` with its stable code.

    Its size, nesting and repeated keys are checked first (`too_large`, `schema_violation`),
    so what the model wrote never reaches a decoder unbounded, and a key given twice is
    refused whichever key it is. `null_assessment` (a paged version whose strict OpenAI
    schema is the stable one, v14) reads `"assessment": null` as no assessment; every other
    version refuses it (`schema_violation`), as before. `supports_quotes` (v15, with
    `supports_pages`) lets a conclusion carry `quotes`, which `bind_quotes` turns into spans.
    """
    received, data = data, unfence(data)
    check_json(data, "decision", "<decision>", limits)
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        hint = (
            malformed_hint(received)
            if data is received
            else " inside its ```json fence" + malformed_hint(data)
        )
        raise _reject(
            "malformed_json", f"the decision is not parseable JSON ({exc}){hint}", path="$"
        ) from None
    if not isinstance(raw, dict):
        raise _reject(
            "malformed_json",
            f"the decision must be a JSON object, not {_json_type(raw)}; {_EXPECTED}",
            path="$",
        )
    nxt = raw.get("next")
    if not supports_recall and isinstance(nxt, dict) and nxt.get("kind") == "recall":
        raise _reject(
            "recall_unsupported",
            "this request was rendered by a version without recall; answer with a query or a conclusion",
            path="$.next.kind",
        )
    nullable = supports_pages and null_assessment
    quoting = supports_pages and supports_quotes
    decision_type: type[msgspec.Struct] = (
        (
            (NullableQuotingDecision if nullable else QuotingDecision)
            if quoting
            else (NullablePagedDecision if nullable else PagedRecallDecision)
        )
        if supports_pages
        else DECISION_TYPES[supports_recall, supports_spans]
    )
    decision: AnyDecision
    try:
        if nullable:  # null and left out are the same decision: its canonical form leaves it out
            loose = (_NULLABLE_QUOTING_DECODER if quoting else _NULLABLE_DECODER).decode(data)
            assessment = UNSET if loose.assessment is None else loose.assessment
            paged = QuotingDecision if quoting else PagedRecallDecision
            decision = paged(assessment=assessment, notes=loose.notes, next=loose.next)  # type: ignore[arg-type]
        elif supports_pages:
            decision = (_QUOTING_DECODER if quoting else _PAGED_DECODER).decode(data)
        else:
            decision = _DECODERS[supports_recall, supports_spans].decode(data)
    except msgspec.ValidationError as exc:
        message, path = split_validation_error(exc, decision_type)
        raise _reject("schema_violation", f"{message} at {path}", path=path) from None
    if isinstance(decision.next, Recall):
        refs = [*decision.next.evidence_refs, *getattr(decision.next, "entries", ())]
        if isinstance(
            decision.next, PagedRecall
        ):  # each list distinct, as its schema says, before the count in all
            for listed, path in ((refs, "$.next"), (decision.next.pages, "$.next.pages")):
                if repeated := _repeated(listed):
                    raise _reject("recall_duplicate", f"a recall names each reference and page once; repeated: "
                                  f"{', '.join(repeated)}", path=path, ids=repeated)  # fmt: skip
        if not 1 <= len(refs) <= MAX_RECALL:
            raise _reject(
                "recall_count",
                f"a recall names 1 to {MAX_RECALL} evidence IDs, not {len(refs)}",
                path="$.next.evidence_refs",
                count=len(refs),
            )
        repeated = _repeated(refs)
        if repeated:
            raise _reject(
                "recall_duplicate",
                f"a recall names each evidence ID once; repeated: {', '.join(repeated)}",
                path="$.next.evidence_refs",
                ids=repeated,
            )
    return decision


def assessment_of(decision: AnyDecision) -> Assessment | None:
    """The decision's assessment, or None when it has none."""
    return None if decision.assessment is UNSET else decision.assessment


def cited_ids(decision: AnyDecision) -> list[str]:
    """Every evidence ID the decision cites (assessment, recall, conclusion), in order, once each."""
    ids: list[str] = []
    if decision.assessment is not UNSET:
        ids.append(decision.assessment.evidence_ref)
    if isinstance(decision.next, (Recall, Conclude)):
        ids.extend(decision.next.evidence_refs)
    return list(dict.fromkeys(ids))


def grounded_ids(decision: AnyDecision) -> list[str]:
    """The IDs rule G covers: those an assessment or a conclusion makes claims about."""
    ids: list[str] = []
    if decision.assessment is not UNSET:
        ids.append(decision.assessment.evidence_ref)
    if isinstance(decision.next, Conclude):
        ids.extend(decision.next.evidence_refs)
    return list(dict.fromkeys(ids))


def check_decision(
    decision: AnyDecision,
    state: State,
    *,
    hypothesis_id: str,
    request_id: str,
    shown: tuple[str, ...] | list[str],
    supports_recall: bool,
) -> None:
    """Check a decoded decision against the analysis: unknown IDs, rule A, rule G."""
    known = {ev.id for ev in state.evidence}
    unknown = [eid for eid in cited_ids(decision) if eid not in known]
    if unknown:
        raise _reject(
            "unknown_evidence",
            f"not evidence of analysis {state.analysis_id}: {', '.join(unknown)}",
            ids=unknown,
        )

    check_recall_retained(decision, state)

    pending = state.pending_result(hypothesis_id)
    assessment = assessment_of(decision)
    if pending is not None and assessment is None:
        raise _reject(
            "assessment_missing",
            f"{hypothesis_id}'s previous result {pending} is unsettled: assess it first (assessment.evidence_ref = {pending})",
            path="$.assessment",
            expected=pending,
        )
    if pending is not None and assessment is not None and assessment.evidence_ref != pending:
        raise _reject(
            "assessment_mismatch",
            f"the assessment must name {hypothesis_id}'s pending result {pending}, not {assessment.evidence_ref}",
            path="$.assessment.evidence_ref",
            expected=pending,
            got=assessment.evidence_ref,
        )
    if pending is None and assessment is not None:
        raise _reject(
            "assessment_mismatch",
            f"{hypothesis_id} has no result pending assessment; omit the assessment (got {assessment.evidence_ref})",
            path="$.assessment",
            expected=None,
            got=assessment.evidence_ref,
        )

    seen = set(shown)
    ungrounded = [eid for eid in grounded_ids(decision) if eid not in seen]
    if ungrounded:
        listed = ", ".join(ungrounded)
        them = "it" if len(ungrounded) == 1 else "them"
        hint = (
            f'recall {them} first (a recall decision with "evidence_refs": {msgspec.json.encode(ungrounded).decode()}), '
            f"then cite {them}"
            if supports_recall
            else "cite only evidence this request shows in full"
        )
        raise _reject(
            "ungrounded_reference",
            f"{listed} {'was' if len(ungrounded) == 1 else 'were'} not shown in full in request {request_id}; {hint}",
            ids=ungrounded,
        )


def check_recall_pages(decision: AnyDecision, state: State, page_count: Any) -> None:
    """Check a v14 recall's entries and pages against the analysis (`recall_entry`, `recall_page`).

    `page_count(state, ref)` is the encoder's count of the reference's pages. An entry the
    analysis does not have, or a page of a reference the recall does not name, or past its
    count, rejects the whole decision.
    """
    nxt = decision.next
    if not isinstance(nxt, PagedRecall):
        return
    if nxt.entries:
        known = entry_refs(state)
        unknown = [ref for ref in nxt.entries if ref not in known]
        if unknown:
            raise _reject("recall_entry", f"no such note, decision row or case in analysis {state.analysis_id}: "
                          f"{', '.join(unknown)}", path="$.next.entries", ids=unknown)  # fmt: skip
    recalled = [*nxt.evidence_refs, *nxt.entries]
    named: list[str] = []
    for k, item in enumerate(nxt.pages):
        ref, _, number = item.rpartition(":")
        path = f"$.next.pages[{k}]"
        if ref not in recalled or ref in named:
            raise _reject("recall_page", f"{item} asks for a page of {ref}, which this recall does not name once; "
                          "name the entry in evidence_refs or entries, and one page of it", path=path, page=item)  # fmt: skip
        named.append(ref)
        count = page_count(state, ref)
        wanted = ascii_int(number)  # the schema's `[1-9][0-9]*`: no more than a page count's digits
        if wanted is None or not 1 <= wanted <= count:
            raise _reject("recall_page", f"{ref} has {count} page{'s' if count != 1 else ''}, not a page {number[:40]}",
                          path=path, page=item[:80], pages=count)  # fmt: skip


def check_recall_retained(decision: AnyDecision, state: State) -> None:
    """Refuse a recall of items whose payload was never retained: it would spend an iteration to show nothing."""
    if not isinstance(decision.next, Recall):
        return
    unretained = {ev.id for ev in state.evidence if ev.payload is None}
    ids = [eid for eid in decision.next.evidence_refs if eid in unretained]
    if ids:
        raise _reject(
            "recall_not_retained",
            f"the payload of {', '.join(ids)} was not retained (its index row says `unknown`): a recall cannot show it; "
            "recall items whose payload is `archived`",
            path="$.next.evidence_refs",
            ids=ids,
        )


def bind_quotes(decision: AnyDecision, state: State) -> AnyDecision:
    """Bind a v15 conclusion's quotes to spans: each quote's first occurrence in its payload's canonical text.

    The result is the decision in its stored form: the conclusion with `spans` (start, end,
    SHA-256 of the bytes) in place of `quotes`, which `check_spans` then checks against the
    request and a replay re-checks. A quote its payload does not hold, byte for byte, is
    `quote_not_found`; a quote of an item that is not evidence of the analysis, `unknown_evidence`.
    Any other decision comes back as the plain paged decision it is.
    """
    if not isinstance(decision, QuotingDecision):
        return decision
    nxt = decision.next
    if not isinstance(nxt, QuotingConclude):
        return PagedRecallDecision(assessment=decision.assessment, notes=decision.notes, next=nxt)
    payloads = {ev.id: ev.payload for ev in state.evidence}
    spans: list[Span] = []
    for i, q in enumerate(nxt.quotes):
        path, eid = f"$.next.quotes[{i}]", q.evidence_ref
        if eid not in payloads:
            raise _reject("unknown_evidence", f"quote {i} cites {eid}, which is not evidence of analysis "
                          f"{state.analysis_id}", path=f"{path}.evidence_ref", ids=[eid])  # fmt: skip
        payload = payloads[eid]
        span = None if payload is None else first_span(eid, payload, q.quote)
        if span is None:
            why = (
                "its payload was not retained"
                if payload is None
                else "its payload does not hold it, character for character"
            )
            raise _reject("quote_not_found", f"quote {i} is not in {eid}: {why}; quote the exact text the context shows "
                          "(a rows payload: a row as its jsonl line shows it)", path=f"{path}.quote", evidence_ref=eid)  # fmt: skip
        spans.append(span)
    bound = CitingConclude(disposition=nxt.disposition, diagnosis=nxt.diagnosis,
                           evidence_refs=nxt.evidence_refs, spans=spans)  # fmt: skip
    return StoredRecallDecision(assessment=decision.assessment, notes=decision.notes, next=bound)


def check_spans(
    decision: AnyDecision, state: State, *, shown: tuple[str, ...] | list[str], request_id: str
) -> None:
    """Check every span a conclusion cites: a payload shown in full in this request, in range, the same bytes.

    Applies to requests whose encoder allows spans (`supports_spans`); runs after rule G.
    """
    spans = getattr(decision.next, "spans", ())
    if not spans:
        return
    seen = set(shown)
    payloads = {ev.id: ev.payload for ev in state.evidence}
    for i, span in enumerate(spans):
        path = f"$.next.spans[{i}]"
        eid = span.evidence_ref
        payload = payloads.get(eid)
        if eid not in seen or payload is None:
            why = "its payload was not retained" if eid in payloads and payload is None else (
                f"it was not shown in full in request {request_id}" if eid in payloads else f"it is not evidence of analysis {state.analysis_id}")  # fmt: skip
            raise _reject("span_not_shown", f"span {i} cites {eid}, but {why}; cite only payloads this request shows in full",
                          path=path, evidence_ref=eid)  # fmt: skip
        data = canonical_text(payload)
        if not span.start < span.end <= len(data):
            raise _reject(
                "span_out_of_range",
                f"span {i} [{span.start}, {span.end}) is not a non-empty range inside the {len(data)} bytes of {eid}'s canonical text",
                path=path, evidence_ref=eid, length=len(data),
            )  # fmt: skip
        digest = hashlib.sha256(data[span.start : span.end]).hexdigest()
        if digest != span.sha256:
            raise _reject(
                "span_mismatch",
                f"span {i}: the SHA-256 of bytes [{span.start}, {span.end}) of {eid} is {digest}, not {span.sha256}",
                path=f"{path}.sha256", evidence_ref=eid, expected=digest, got=span.sha256,
            )  # fmt: skip


def _repeated(ids: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for eid in ids:
        if eid in seen and eid not in out:
            out.append(eid)
        seen.add(eid)
    return out


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
