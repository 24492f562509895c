"""What the report's context viewer shows for each turn and strategy.

For every context of a run and every strategy: the rendered text (as line edits of the
previous turn's, `texts`), its section boundaries, its cache breakpoints, how far a cache
serves it under each cache model (in characters of the text), and which evidence it shows
in full or only indexes (`texts.id_ranges`). Offsets are UTF-16 units, as the browser's
strings count them. Sections are their end offsets, with `names` as `[index, name]` at each
index where the name changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..compare.baselines import BASELINES, unrecoverable
from ..compare.engine import API_MODEL, Rendering, prompt, sent_prompts
from ..model.hashing import hash_text
from ..model.state import StoredContext
from ..tokens.count import prefix_chars
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


def _view(
    state: Any, hypothesis: str, name: str, encoder: str | None, sent: Rendering
) -> dict[str, Any]:
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


def _text_chars(
    rendering: Rendering, model: str, counts: Sequence[int], encoding: str
) -> list[int]:
    """Where in the text each count of billed tokens ends: the models bill the request body
    (the tool first, then the text's blocks), so a count is found in its block and mapped to
    that block's place in the text; a count that ends before the text (in the tool) is 0."""
    from ..compare.billing import PROVIDER, CacheOptions
    from ..compare.wire import body_blocks

    if rendering.body is None:
        return prefix_chars(prompt(rendering, None, encoding).tokens, counts, encoding)
    sent = sent_prompts(rendering, (model,), None, CacheOptions(), encoding)[model]
    blocks = body_blocks(rendering.body(PROVIDER[model], API_MODEL.get(model)), PROVIDER[model])
    starts, at, where = (
        [],
        0,
        0,
    )  # each block's token start, and its text's start in the rendering's text
    places = []
    for block, end in zip(blocks, _ends(blocks, sent)):
        starts.append((at, end))
        found = (
            rendering.text.find(block.text, where)
            if block.part == "messages" and block.text
            else -1
        )
        places.append(found)
        where = found + len(block.text) if found >= 0 else where
        at = end
    out = []
    for n in counts:
        k = next((j for j, (a, b) in enumerate(starts) if a < n <= b), None)
        if k is None or places[k] < 0:
            out.append(max([places[j] + len(blocks[j].text) for j, (a, b) in enumerate(starts) if b <= n and places[j] >= 0],
                           default=0))  # fmt: skip
            continue
        a, _ = starts[k]
        out.append(places[k] + prefix_chars(sent.tokens[a:], [n - a], encoding)[0])
    return out


def _ends(blocks: list, sent: Any) -> list[int]:
    """Each block's end as a token offset (an empty block ends where the one before it does)."""
    ends, at, known = [], 0, iter(sent.blocks)
    pending = next(known, None)
    for block in blocks:
        if block.text and pending is not None:
            at, pending = pending, next(known, None)
        ends.append(at)
    return ends


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
                raise AssertionError(
                    f"{name} rendered {ctx.request_id} differently for the viewer than for compare"
                )
            rendering = sent[name][i]._replace(text=text)
            served = {}
            for model, per in series.items():
                read, written = per[name]["read"][i], per[name]["written"][i]
                served[model] = _text_chars(rendering, model, (read, read + written), encoding)
            ends, at = [], 0
            for _, n in view["sections"]:
                at += n
                ends.append(at)
            points = list(rendering.breakpoints)
            marks = utf16_offsets(
                text, [len(text), *ends, *points, *(c for s in served.values() for c in s)]
            )
            view["length"], marks = marks[0], marks[1:]
            # One section name per change of name, the ends as one list (a transcript has hundreds).
            names = [cat for cat, _ in view["sections"]]
            view["names"] = [
                [k, cat] for k, cat in enumerate(names) if not k or names[k - 1] != cat
            ]
            view["sections"] = marks[: len(ends)]
            view["breakpoints"], marks = (
                marks[len(ends) : len(ends) + len(points)],
                marks[len(ends) + len(points) :],
            )
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
