"""v5: a payload whose content hash equals an earlier item's renders as a reference to it.

"Earlier" means earlier among the items this context shows in full, in render order, so
a reference always points at a payload the same context shows in full.
"""

from __future__ import annotations

from typing import Any

from ..model import Evidence
from ._api import View
from .v04 import V4


class V5(V4):
    """v5: a payload whose content hash equals an earlier item's renders as a reference to it."""

    version = 5

    def references(self, view: View) -> dict[str, str]:
        first: dict[str, str] = {}
        refs: dict[str, str] = {}
        for ev in view.shown:
            if ev.content_hash is None:
                continue
            if ev.content_hash in first:
                refs[ev.id] = first[ev.content_hash]
            else:
                first[ev.content_hash] = ev.id
        return refs

    def evidence_record(self, ev: Evidence, view: View) -> dict[str, Any]:
        rec = super().evidence_record(ev, view)
        if ev.id in view.refs:
            rec["payload"] = {"kind": rec["payload"]["kind"], "same_as": view.refs[ev.id]}
        return rec

    def payload_blocks(self, ev: Evidence, view: View) -> list[str]:
        if ev.id in view.refs:
            return []
        return super().payload_blocks(ev, view)

    def payload_remark(self, ev: Evidence, view: View) -> str:
        if ev.id in view.refs:
            return f"payload: identical to {view.refs[ev.id]}'s (same content hash), shown in full there."
        return super().payload_remark(ev, view)
