"""What the report's context viewer shows for each turn and strategy.

For every context of a run and every strategy: the rendered text (as line edits of the
previous turn's, `texts`), its section boundaries, its cache breakpoints, how far a cache
serves it under each cache model (in characters of the text), and which evidence it shows
in full or only indexes (`texts.id_ranges`). Offsets are UTF-16 units, as the browser's
strings count them. Sections are their end offsets, with `names` as `[index, name]` at each
index where the name changes.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import msgspec

from ..baselines import BASELINES, unrecoverable
from ..bench import Rendering, prompt
from ..model import StoredContext
from ..hashing import hash_text
from ..tokens import prefix_chars
from .texts import LineTable, edits, id_ranges, utf16_offsets


def _sections(chunks: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Consecutive chunks of one category merged: (category, characters) in render order."""
    out: list[tuple[str, int]] = []
    for category, n in chunks:
        if out and out[-1][0] == category:
            out[-1] = (category, out[-1][1] + n)
        else:
            out.append((category, n))
    return out


def _view(state: Any, hypothesis: str, name: str, encoder: str | None, sent: Rendering) -> dict[str, Any]:
    """The text, sections and evidence lists of one context under one strategy."""
    if encoder is None:
        # A transcript: its sections are its messages (compare cuts it where each one ends).
        text = BASELINES[name](state, hypothesis)
        ends = [*sent.cuts, len(text)]
        return {"text": text, "sections": [("message", b - a) for a, b in zip([0, *ends], ends) if b > a],
                "gone": unrecoverable(name, state, hypothesis)}  # fmt: skip
    from ..encoders import render

    rendered = render(state, hypothesis, encoder)
    return {"text": rendered.text, "sections": _sections(rendered.chunks),
            "shown": id_ranges(rendered.shown), "indexed": id_ranges(rendered.indexed)}  # fmt: skip


def view_data(
    contexts: Sequence[StoredContext],
    strategies: Mapping[str, str | None],
    sent: Mapping[str, Sequence[Rendering]],
    series: Mapping[str, Mapping[str, Mapping[str, list]]],
    *,
    recall: bool = True,
    encoding: str,
) -> dict[str, Any]:
    """Return the viewer's data: the shared line table and, per strategy, one entry per turn.

    `strategies` maps each strategy to its encoder name, or None for a baseline; `sent`
    holds what compare billed of each context (`recording`: the text's hash, breakpoints, cuts);
    `series` is `cache_series`' per-model billing, whose read and written tokens become
    the served characters, counted in the tokens the model billed.
    """
    table = LineTable()
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in strategies}
    prev: dict[str, list[int]] = {name: [] for name in strategies}
    for i, ctx in enumerate(contexts):
        state = ctx.state if recall else msgspec.structs.replace(ctx.state, recall={})
        for name, encoder in strategies.items():
            view = _view(state, ctx.hypothesis, name, encoder, sent[name][i])
            text = view.pop("text")
            if hash_text(text) != sent[name][i].text:
                raise AssertionError(f"{name} rendered {ctx.request_id} differently for the viewer than for compare")
            rendering = sent[name][i]._replace(text=text)
            tokens = prompt(rendering, None, encoding).tokens  # as the cache models billed them
            served = {}
            for model, per in series.items():
                read, written = per[name]["read"][i], per[name]["written"][i]
                served[model] = prefix_chars(tokens, (read, read + written), encoding)
            ends, at = [], 0
            for _, n in view["sections"]:
                at += n
                ends.append(at)
            points = list(rendering.breakpoints)
            marks = utf16_offsets(text, [len(text), *ends, *points, *(c for s in served.values() for c in s)])
            view["length"], marks = marks[0], marks[1:]
            # One section name per change of name, the ends as one list (a transcript has hundreds).
            names = [cat for cat, _ in view["sections"]]
            view["names"] = [[k, cat] for k, cat in enumerate(names) if not k or names[k - 1] != cat]
            view["sections"] = marks[: len(ends)]
            view["breakpoints"], marks = marks[len(ends) : len(ends) + len(points)], marks[len(ends) + len(points) :]
            view["served"] = {model: marks[2 * k : 2 * k + 2] for k, model in enumerate(served)}
            ids = table.ids(text)
            out[name].append({"edits": edits(prev[name], ids), **view})
            prev[name] = ids
    return {"lines": table.lines, "turns": out}


def recording(renderer: Any, sink: list[Rendering]) -> Any:
    """Wrap a compare renderer so that what it hands compare is kept (the text as its hash)."""

    def run(state: Any, hypothesis: str) -> Rendering:
        out = renderer(state, hypothesis)
        sink.append(out._replace(text=hash_text(out.text), sections=()))
        return out

    return run
