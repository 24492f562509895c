"""v3: text payloads as fenced code blocks with their language."""

from __future__ import annotations

from typing import Any

from ..model.state import Evidence, TextPayload
from ._api import View
from ._render import fence
from .v02 import V2


class V3(V2):
    """v3: text payloads as fenced code blocks with their language."""

    version = 3

    def payload_record(self, ev: Evidence, view: View) -> Any:
        if isinstance(ev.payload, TextPayload):
            # The text moves verbatim into the block below; kind and language stay here.
            return {"kind": "text", "language": ev.payload.language}
        return super().payload_record(ev, view)

    def payload_blocks(self, ev: Evidence, view: View) -> list[str]:
        blocks = super().payload_blocks(ev, view)
        if isinstance(ev.payload, TextPayload):
            blocks.append(fence(ev.payload.text, ev.payload.language))
        return blocks
