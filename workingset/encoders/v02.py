"""v2: records as compact single-line JSON."""

from __future__ import annotations

from typing import Any

from ._render import compact, fence
from .v01 import V1


class V2(V1):
    """v2: records as compact single-line JSON."""

    version = 2

    def record(self, value: Any) -> str:
        return fence(compact(value), "json")
