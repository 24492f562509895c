"""JSON Schemas of the formats a caller writes, generated from the msgspec types that validate them.

`json_schema("state")` is the investigation state, `"context"` a stored context, `"result"`
what `record` takes, and `"decision"` a decision answering a request of one encoder version.
They are derived with `msgspec.json.schema` from the very Structs the library decodes with,
so they cannot drift from the validation.

Decisions also have the frozen, hand-written schema each version prints in its prompts
(`get_encoder(v).decision_schema`). Both accept exactly the same decisions (a property test
checks it); they differ in form only: the derived one names each record in `$defs` and
tags the `next` variants with a `discriminator`, where the frozen one inlines them under
`oneOf`. A recall's 1–4 distinct IDs are checked after decoding, to report `recall_count`
and `recall_duplicate` instead of a bare schema violation, so they are added to the derived
schema here. What a schema cannot say (IDs that exist, rule A, rule G, spans against the
bytes) is checked by the library and listed in docs/protocol.md.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..decisions import DECISION_TYPES, MAX_RECALL, PagedRecallDecision, QuotingDecision
from ..encoders import DEFAULT_ENCODER, get_encoder
from ..errors import UsageError
from ..eventlog.log import ResultInput
from ..model.state import State, StoredContext

TYPES: dict[str, type[msgspec.Struct]] = {
    "state": State,
    "context": StoredContext,
    "result": ResultInput,
}
KINDS = ("state", "context", "result", "decision")
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(kind: str, encoder: str | None = None) -> dict[str, Any]:
    """The JSON Schema of `kind` (state, context, result, decision); `encoder` picks the decision's version."""
    if kind not in KINDS:
        raise UsageError(
            f"no schema {kind!r}; available: {', '.join(KINDS)}", details={"valid": list(KINDS)}
        )
    if kind != "decision":
        if encoder is not None:
            raise UsageError(f"--encoder applies to decision schemas only, not to {kind}")
        return {"$schema": DRAFT, **msgspec.json.schema(TYPES[kind])}
    enc = get_encoder(encoder or DEFAULT_ENCODER)
    paged = getattr(enc, "supports_pages", False)
    quoting = getattr(enc, "supports_quotes", False)
    schema = msgspec.json.schema(
        (QuotingDecision if quoting else PagedRecallDecision)
        if paged
        else DECISION_TYPES[enc.supports_recall, enc.supports_spans]
    )
    recall = schema["$defs"].get("Recall")
    if recall is not None:
        recall["properties"]["evidence_refs"].update(
            minItems=1, maxItems=MAX_RECALL, uniqueItems=True
        )
    paged_recall = schema["$defs"].get("PagedRecall")
    if (
        paged_recall is not None
    ):  # v14: 1 to 4 references in all, which no schema keyword says (checked after decoding)
        for key in ("evidence_refs", "entries", "pages"):
            paged_recall["properties"][key].update(maxItems=MAX_RECALL, uniqueItems=True)
    return {"$schema": DRAFT, "title": f"{enc.name} decision", **schema}
