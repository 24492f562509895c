"""Claims bound to bytes: a span of a payload's canonical text, with the SHA-256 of those bytes.

A conclusion of a version whose schema allows it (an encoder with `supports_spans`) may cite
spans `{"evidence_ref", "start", "end", "sha256"}`. `start` and `end` are byte offsets into
the payload's canonical text (UTF-8), `start < end`, and `sha256` is the lowercase hex
SHA-256 of the bytes `[start, end)`. The canonical text of a payload is:

- a text payload: its `text`, exactly;
- a rows payload: the column names, then each row, as compact JSON arrays, one per line,
  each line ending with a newline: the lines v4 and later versions print inside a table's
  jsonl block.

A model cannot be expected to compute a digest: a controller usually builds the span from
what the model quoted (`quote_span`) or from offsets it gave (`make_span`), and the
decision validation (`decisions.check_spans`) checks it against the request's state.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

import msgspec
from msgspec import Meta

from .state import EvidenceId, Payload, RowsPayload, State, whole

Sha256 = Annotated[str, Meta(pattern=whole("[0-9a-f]{64}"))]
MAX_SPANS = 16
_lines = msgspec.json.Encoder().encode_lines


class Span(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """An exact byte range of one evidence payload's canonical text, and the SHA-256 of its bytes."""

    evidence_ref: EvidenceId
    start: Annotated[int, Meta(ge=0)]
    end: Annotated[int, Meta(ge=1)]
    sha256: Sha256


def canonical_text(payload: Payload) -> bytes:
    """The bytes a span's offsets count: a text payload's text, or a rows payload's jsonl lines."""
    if isinstance(payload, RowsPayload):
        return _lines([payload.columns, *payload.rows])
    return payload.text.encode("utf-8")


def make_span(state: State, evidence_ref: str, start: int, end: int) -> Span:
    """The span of bytes `[start, end)` of an evidence item's payload in `state`, with their digest."""
    data = canonical_text(_payload(state, evidence_ref))
    if not 0 <= start < end <= len(data):
        raise ValueError(
            f"[{start}, {end}) is not a non-empty range inside the {len(data)} bytes of {evidence_ref}"
        )
    return Span(
        evidence_ref=evidence_ref,
        start=start,
        end=end,
        sha256=hashlib.sha256(data[start:end]).hexdigest(),
    )


def quote_span(state: State, evidence_ref: str, quote: str) -> Span:
    """The span of the first occurrence of `quote` in an evidence item's payload (ValueError if absent)."""
    span = first_span(evidence_ref, _payload(state, evidence_ref), quote)
    if span is None:
        raise ValueError(f"{evidence_ref}'s payload does not contain {quote!r}")
    return span


def first_span(evidence_ref: str, payload: Payload, quote: str) -> Span | None:
    """The span of the first occurrence of `quote` in `payload`'s canonical text, or None (an empty quote too)."""
    needle = quote.encode("utf-8")
    at = canonical_text(payload).find(needle) if needle else -1
    if at < 0:
        return None
    return Span(evidence_ref=evidence_ref, start=at, end=at + len(needle),
                sha256=hashlib.sha256(needle).hexdigest())  # fmt: skip


def _payload(state: State, evidence_ref: str) -> Payload:
    for ev in state.evidence:
        if ev.id == evidence_ref:
            if ev.payload is None:
                raise ValueError(f"{evidence_ref}'s payload was not retained: nothing to cite")
            return ev.payload
    raise ValueError(f"no evidence {evidence_ref} in analysis {state.analysis_id}")
