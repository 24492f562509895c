"""The `rendered` size and hash of an import's contexts, each state continuing from the one before.

An import stores one context per agent step, and its state k+1 holds every evidence item of
state k. Encoder v7 renders immutable material first: the header, the case, then every
evidence item's block in ID order, so the text of state k+1 begins with most of state k's.
Its recorded hash is xxh3-128 over the text's UTF-8 bytes (`hashing.hash_text`), and a
streaming xxh3-128 over the same bytes fed in pieces is the same hash by construction; so
`StreamingRender` keeps the hasher's state after each evidence block and, for the next state,
copies it at the end of the blocks the two states share and feeds only the new blocks and
the mutable sections after them. Rendering every text in full cost about 9 GB of text at
2,400 steps; this hashes each block once, plus each state's mutable part.

Each result is a function of its state alone, as `V7.render` is: a block's text depends only
on the item, the encoder and the item's v5 reference (the `_cache` module's account), and the
reference of an item depends only on the items shown before it; so two states whose header
and case texts are equal and whose shown items agree (equal items, in order) up to item m
render the same text up to the end of block m. Anything else starts from nothing. States
are values, as everywhere in the import: an item changed in place after its block was hashed
(rather than replaced) is not seen, as the block cache does not see a payload changed in
place. Only v7
itself streams (its layout is frozen; later versions select and order differently); every
other encoder renders each state in full. The tests compare both for every state of every
stored run and import, and for generated ones.
"""

from __future__ import annotations

from typing import Any

import xxhash

from ..encoders import get_encoder
from ..encoders._render import heading
from ..encoders.v06 import captures_table
from ..encoders.v07 import V7
from ..hashing import PREFIX
from ..model import Evidence, Rendered, State
from ..runfile import common_prefix

SEPARATOR = "\n\n"  # between sections and between the blocks of a section (`render_view`, `join_blocks`)


class StreamingRender:
    """`Rendered` (chars, hash) of states rendered one after another with one encoder, as `render` records them."""

    def __init__(self, encoder: str):
        self.encoder = get_encoder(encoder)
        self.streams = type(self.encoder) is V7
        self._head: tuple[str, str] | None = None  # the header and case texts the marks start from
        self._shown: list[Evidence] = []  # the items whose blocks the marks cover, in order
        # (hasher, chars) after the evidence heading, then after each block of `_shown`.
        self._marks: list[tuple[Any, int]] = []

    def __call__(self, state: State, hypothesis: str) -> Rendered:
        """The size and hash of `state` rendered for `hypothesis`, equal to the full render's."""
        enc = self.encoder
        if not self.streams or not state.evidence:  # no evidence: v7 writes "(no evidence shown)" instead
            out = enc.render(state, hypothesis)
            return Rendered(chars=out.chars, hash=out.hash)
        view = enc.select(state, enc.selected(state, hypothesis))
        view.refs = enc.references(view)
        head = (enc.header(view), enc.case_section(view))
        if head != self._head:
            self._head, self._shown = head, []
            opening = SEPARATOR.join([*head, heading(2, enc.evidence_heading)])
            hasher = xxhash.xxh3_128()
            hasher.update(opening.encode("utf-8"))
            self._marks = [(hasher, len(opening))]
        keep = common_prefix(view.shown, self._shown)
        del self._marks[keep + 1 :]
        for ev in view.shown[keep:]:
            self._marks.append(_extend(self._marks[-1], SEPARATOR + enc.cached_block(ev, view)))
        self._shown = view.shown
        # The mutable part, in `V7.layout`'s order after the evidence blocks; empty sections are left out as there.
        tail = [captures_table(view.shown)]
        tail.extend(body for _, body in enc.hypotheses_chunks(view))
        tail.extend([enc.notes_section(view), enc.budget_section(view), enc.task_section(view), enc.schema_section()])
        text = SEPARATOR + SEPARATOR.join(body for body in tail if body) + "\n"
        hasher, chars = _extend(self._marks[-1], text)
        return Rendered(chars=chars, hash=PREFIX + hasher.hexdigest())


def _extend(mark: tuple[Any, int], piece: str) -> tuple[Any, int]:
    """A new mark: a copy of `mark`'s hasher fed `piece`'s UTF-8 bytes, and the characters so far."""
    hasher = mark[0].copy()
    hasher.update(piece.encode("utf-8"))
    return hasher, mark[1] + len(piece)
