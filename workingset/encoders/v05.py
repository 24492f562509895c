"""v5: a payload whose content hash equals an earlier item's renders as a reference to it.

"Earlier" means earlier among the items this context shows in full, in render order, so
a reference always points at a payload the same context shows in full.
"""

from __future__ import annotations

from typing import Any

from ..model.state import Evidence, RowsPayload
from ._api import View
from ._render import empty_rows_remark
from .v04 import V4


class V5(V4):
    """v5: a payload whose content hash equals an earlier item's renders as a reference to it."""

    version = 5

    def references(self, view: View) -> dict[str, str]:
        first: dict[str, Evidence] = {}
        refs: dict[str, str] = {}
        for ev in view.shown:
            if ev.content_hash is None:
                continue
            earlier = first.get(ev.content_hash)
            # Equal payloads, not just equal hashes: a collision must never swap contents.
            if earlier is not None and earlier.payload == ev.payload:
                refs[ev.id] = earlier.id
            elif earlier is None:
                first[ev.content_hash] = ev
        return refs

    def payload_record(self, ev: Evidence, view: View) -> Any:
        if ev.id in view.refs:
            assert ev.payload is not None  # a null payload has no content hash to repeat
            return {"kind": ev.payload.__struct_config__.tag, "same_as": view.refs[ev.id]}
        return super().payload_record(ev, view)

    def payload_blocks(self, ev: Evidence, view: View) -> list[str]:
        if ev.id in view.refs:
            return []
        return super().payload_blocks(ev, view)

    def payload_remark(self, ev: Evidence, view: View) -> str:
        if ev.id in view.refs:
            remark = f"payload: identical to {view.refs[ev.id]}'s (same content hash), shown in full there."
            if isinstance(ev.payload, RowsPayload) and not ev.payload.rows:
                # Whether no rows means absence depends on this item's own capture.
                remark += "\n" + empty_rows_remark(ev)
            return remark
        return super().payload_remark(ev, view)
