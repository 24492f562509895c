"""v4: row payloads as lossless columns/rows tables (column names once, then rows)."""

from __future__ import annotations

from typing import Any

from ..model.state import Evidence, RowsPayload
from ._api import View
from ._render import TABLE_CONVENTION, rows_caption, table
from .v03 import V3


class V4(V3):
    """v4: row payloads as lossless columns/rows tables (column names once, then rows)."""

    version = 4

    def header(self, view: View) -> str:
        return super().header(view) + "\n" + TABLE_CONVENTION

    def payload_record(self, ev: Evidence, view: View) -> Any:
        if isinstance(ev.payload, RowsPayload):
            return {"kind": "rows"}
        return super().payload_record(ev, view)

    def payload_blocks(self, ev: Evidence, view: View) -> list[str]:
        blocks = super().payload_blocks(ev, view)
        if isinstance(ev.payload, RowsPayload):
            blocks.append(
                rows_caption(len(ev.payload.rows))
                + "\n"
                + table(ev.payload.columns, ev.payload.rows)
            )
        return blocks
