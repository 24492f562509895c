"""Reading a report page back: the JSON it embeds, as the page's script reads it."""

from __future__ import annotations

import json
import re

from workingset.report.texts import decode


def embedded(page: str, element: str) -> dict:
    """The JSON of the page's `<script type="application/json" id=element>`."""
    match = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', page, re.S)
    assert match, f"no #{element} in the page"
    return json.loads(match.group(1))


def texts(report: dict, strategy: str) -> list[str]:
    """Every turn's text of one strategy, decoded from the viewer's line edits."""
    lines, prev, out = report["viewer"]["lines"], [], []
    for entry in report["viewer"]["turns"][strategy]:
        prev = decode(lines, prev, entry["edits"])
        out.append("\n".join(prev))
    return out
