"""What the report's context viewer shows for each turn and strategy.

For every context of a run and every strategy: the rendered text (as line edits of the
previous turn's, `texts`), its section boundaries, its cache breakpoints, how far a cache
serves it under each cache model (in characters of the text), and which evidence it shows
in full or only indexes. Offsets are UTF-16 units, as the browser's strings count them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import msgspec

from ..baselines import BASELINES, unrecoverable
from ..model import StoredContext
from ..providers import MAX_BREAKPOINTS
from ..tokens import prefix_chars
from .texts import LineTable, edits, utf16_offsets


def _sections(chunks: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Consecutive chunks of one category merged: (category, characters) in render order."""
    out: list[tuple[str, int]] = []
    for category, n in chunks:
        if out and out[-1][0] == category:
            out[-1] = (category, out[-1][1] + n)
        else:
            out.append((category, n))
    return out


def _encoder_view(state: Any, hypothesis: str, encoder: str) -> dict[str, Any]:
    from ..encoders import render

    rendered = render(state, hypothesis, encoder)
    return {
        "text": rendered.text, "sections": _sections(rendered.chunks),
        "breakpoints": list(rendered.stable_ends()[-MAX_BREAKPOINTS:]),
        "shown": list(rendered.shown), "indexed": list(rendered.indexed),
    }  # fmt: skip


def _baseline_view(state: Any, hypothesis: str, name: str) -> dict[str, Any]:
    text = BASELINES[name](state, hypothesis)
    # A transcript agent's one rolling breakpoint: the end of its last message (the text is
    # its messages joined, then a closing newline).
    return {"text": text, "sections": [], "breakpoints": [len(text) - text.endswith("\n")],
            "gone": unrecoverable(name, state, hypothesis)}  # fmt: skip


def view_data(
    contexts: Sequence[StoredContext],
    strategies: Mapping[str, str | None],
    series: Mapping[str, Mapping[str, Mapping[str, list]]],
    *,
    recall: bool = True,
    encoding: str,
) -> dict[str, Any]:
    """Return the viewer's data: the shared line table and, per strategy, one entry per turn.

    `strategies` maps each strategy to its encoder name, or None for a baseline; `series`
    is the per-model billing of `data.cache_series`, whose read and written tokens give the
    served characters.
    """
    table = LineTable()
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in strategies}
    prev: dict[str, list[int]] = {name: [] for name in strategies}
    for i, ctx in enumerate(contexts):
        state = ctx.state if recall else msgspec.structs.replace(ctx.state, recall={})
        for name, encoder in strategies.items():
            view = _encoder_view(state, ctx.hypothesis, encoder) if encoder else _baseline_view(state, ctx.hypothesis, name)
            text = view.pop("text")
            ids = table.ids(text)
            served = {}
            for model, per in series.items():
                read, written = per[name]["read"][i], per[name]["written"][i]
                served[model] = prefix_chars(text, (read, read + written), encoding)
            ends, at = [], 0
            for _, n in view["sections"]:
                at += n
                ends.append(at)
            marks = utf16_offsets(text, [len(text), *ends, *view["breakpoints"], *(c for s in served.values() for c in s)])
            length, marks = marks[0], marks[1:]
            view["sections"] = [[cat, end] for (cat, _), end in zip(view["sections"], marks)]
            marks = marks[len(ends):]
            view["breakpoints"], marks = marks[: len(view["breakpoints"])], marks[len(view["breakpoints"]):]
            view["served"] = {model: marks[2 * k : 2 * k + 2] for k, model in enumerate(served)}
            out[name].append({"edits": edits(prev[name], ids), "length": length, **view})
            prev[name] = ids
    return {"lines": table.lines, "turns": out}
