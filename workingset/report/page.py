"""The report page: one HTML file with its styles, scripts and data inlined.

The charts are drawn by plotly.js, read from the `plotly` Python package (which ships its
minified bundle for offline use), so the page needs no network when it is opened. The data
is JSON in `<script type="application/json">` elements: `ws-compare` holds `compare
--json`'s object exactly, `ws-report` the rest (cache series, budgets, viewer texts).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import msgspec

_ASSETS = resources.files(__package__) / "assets"


def plotly_js() -> str:
    """The plotly.js bundle that the `plotly` package ships (`plotly/package_data/plotly.min.js`)."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text("utf-8")


def _json(value: Any) -> str:
    # "<" only occurs inside JSON strings, where \u003c means the same: no "</script>" can end
    # the element early, whatever the evidence holds.
    return msgspec.json.encode(value).decode("utf-8").replace("<", "\\u003c")


def _script(code: str) -> str:
    if "</script" in code.lower():  # would end the element; a bundle that holds it is not inlinable
        raise ValueError("script holds </script")
    return code


def render_page(data: dict[str, Any]) -> str:
    """Return the page for `report_data`'s data (deterministic: same data, same bytes)."""
    title = f"workingset report: {data['compare']['run']}"
    rest = {k: v for k, v in data.items() if k != "compare"}
    parts = {
        "TITLE": title.replace("&", "&amp;").replace("<", "&lt;"),
        "CSS": (_ASSETS / "report.css").read_text("utf-8"),
        "PLOTLY": _script(plotly_js()),
        "APP": _script((_ASSETS / "report.js").read_text("utf-8")),
        "COMPARE": _json(data["compare"]),
        "REPORT": _json(rest),
    }
    page = (_ASSETS / "page.html").read_text("utf-8")
    out, marker = [], "@@"
    pieces = page.split(marker)
    # The template alternates text and @@NAME@@ markers; content is inserted, never re-scanned.
    for i, piece in enumerate(pieces):
        out.append(parts[piece] if i % 2 else piece)
    return "".join(out)
