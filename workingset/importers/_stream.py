"""The `rendered` size and hash of an import's contexts, each state continuing from the one before.

An import stores one context per agent step, and its state k+1 holds every evidence item of
state k. Encoder v7 renders immutable material first: the header, the case, then every
evidence item's block in ID order, so the text of state k+1 begins with most of state k's.
Its recorded hash is xxh3-128 over the text's UTF-8 bytes (`hashing.hash_text`), and a
streaming xxh3-128 over the same bytes fed in pieces is the same hash by construction; so
`StreamingRender` keeps the hasher's state after each evidence block and, for the next state,
copies it at the end of the blocks the two states share and feeds only the new blocks and
the mutable sections after them. Those sections (the captures, history, notes and evidence
budget tables, `_Table`) keep each row's JSON line while its item is unchanged, so a state
costs what it adds plus joining its table lines. Rendering every text in full cost about
9 GB of text at 2,400 steps; this renders each block and each row once.

Each result is a function of its state alone, as `V7.render` is: a block's text depends only
on the item, the encoder and the item's v5 reference (the `_cache` module's account), and the
reference of an item depends only on the items shown before it; so two states whose header
and case texts are equal and whose shown items agree (equal items, in order) up to item m
render the same text up to the end of block m. Anything else starts from nothing. States
are values, as everywhere in the import: an item changed in place after its block was hashed
(rather than replaced) is not seen, as the block cache does not see a payload changed in
place. Only v7 itself streams (its layout is frozen; later versions select and order
differently). A journal encoder (v11 and later) keeps its walk from state to state
(`render_kept`), as a session keeps it from turn to turn, so a state costs its new entries
and its tail; any other encoder renders each state in full. The tests compare both for every
state of every stored run and import, and for generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec
import xxhash

from ..encoders import get_encoder
from ..encoders._render import heading, rows_caption
from ..encoders.journal.base import render_kept
from ..encoders.v01 import to_plain
from ..encoders.v06 import CAPTURE_COLUMNS, HISTORY_COLUMNS, NOTE_COLUMNS, capture_cells
from ..encoders.v07 import EVIDENCE_BUDGET_COLUMNS, V7
from ..model.hashing import PREFIX
from ..model.state import Evidence, Rendered, State
from ..runs.runfile import common_prefix

SEPARATOR = (
    "\n\n"  # between sections and between the blocks of a section (`render_view`, `join_blocks`)
)
_line = msgspec.json.Encoder().encode_lines  # as `_render.table` encodes its rows, one line per row
_TICK_RUNS = re.compile(
    rb"`{3,}"
)  # `_render.fence`'s runs; a backtick is one byte in UTF-8, never inside another character


class _Table:
    """One jsonl table as v6 and v7 write it (`rows_caption`, then `_render.table`), its row lines kept while its items are equal.

    `_render.table` writes the column names and each row as one JSON line and fences them
    with `_render.fence`: three backticks, or one more than the longest run of three or more
    inside (a run never crosses a line). So each line, its characters and its longest run are
    worked out once per item, and a state's table costs the joining of its lines.
    """

    def __init__(self, what: str, columns: tuple[str, ...], row: Callable[[Any], Any]):
        self.what, self.row = what, row
        head = _line([list(columns)])
        self._items: list[Any] = []
        # Per line, the column names first: its bytes, then the characters and the longest run up to it.
        self._lines, self._chars, self._runs = (
            [head],
            [len(head.decode("utf-8"))],
            [_longest_run(head)],
        )

    def __call__(self, items: list[Any]) -> tuple[bytes, int]:
        """The table of `items` (UTF-8) and its length in characters."""
        keep = common_prefix(items, self._items)
        for kept in (self._lines, self._chars, self._runs):
            del kept[keep + 1 :]
        for item in items[keep:]:
            line = _line([self.row(item)])
            self._lines.append(line)
            self._chars.append(self._chars[-1] + len(line.decode("utf-8")))
            self._runs.append(max(self._runs[-1], _longest_run(line)))
        self._items = list(items)  # a copy: the caller's list may grow in place
        ticks = b"`" * (self._runs[-1] + 1) if self._runs[-1] >= 3 else b"```"
        caption = rows_caption(len(items), self.what).encode("utf-8")
        # The last line's newline is dropped, as `table` drops it before fencing.
        text = b"".join(
            [
                caption,
                b"\n",
                ticks,
                b"jsonl\n",
                *self._lines[:-1],
                self._lines[-1][:-1],
                b"\n",
                ticks,
            ]
        )
        return text, len(caption) + 1 + 2 * len(ticks) + 6 + self._chars[-1] - 1 + 1


def _longest_run(line: bytes) -> int:
    return max(map(len, _TICK_RUNS.findall(line)), default=0)


def _budget_row(ev: Evidence) -> list[Any]:
    return [ev.id, ev.budget.action, ev.budget.status, ev.budget.cost]  # `V7.budget_section`'s row


class StreamingRender:
    """`Rendered` (chars, hash) of states rendered one after another with one encoder, as `render` records them."""

    def __init__(self, encoder: str):
        self.encoder = get_encoder(encoder)
        # Only v7 itself streams; a subclass may lay its context out otherwise.
        found = self.encoder
        self._v7: V7 | None = found if type(found) is V7 and isinstance(found, V7) else None
        self.streams = self._v7 is not None
        self._head: tuple[str, str] | None = None  # the header and case texts the marks start from
        self._shown: list[Evidence] = []  # the items whose blocks the marks cover, in order
        # (hasher, chars) after the evidence heading, then after each block of `_shown`.
        self._marks: list[tuple[Any, int]] = []
        self._captures = _Table(
            "captures", ("id", *CAPTURE_COLUMNS), lambda ev: [ev.id, *capture_cells(ev)]
        )
        self._budget = _Table("evidence budget", EVIDENCE_BUDGET_COLUMNS, _budget_row)
        self._notes = _Table("notes", NOTE_COLUMNS, attrgetter(*NOTE_COLUMNS))
        self._histories: dict[str, _Table] = {}  # by hypothesis ID
        self._kept: dict[str, Any] = {}  # a journal encoder's walk, resumed from state to state

    def __call__(self, state: State, hypothesis: str) -> Rendered:
        """The size and hash of `state` rendered for `hypothesis`, equal to the full render's."""
        enc = self._v7
        if (
            enc is None or not state.evidence
        ):  # no evidence: v7 writes "(no evidence shown)" instead
            out = render_kept(self.encoder, state, hypothesis, self._kept)
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
        hasher, chars = self._marks[-1]
        hasher = hasher.copy()
        for piece, n in self._tail(view):
            hasher.update(piece)
            chars += n
        return Rendered(chars=chars, hash=PREFIX + hasher.hexdigest())

    def _tail(self, view: Any) -> list[tuple[bytes, int]]:
        """The mutable part after the evidence blocks, as `V7.layout` lays it out, in (UTF-8, characters) pieces."""
        enc, state = self._v7, view.state
        assert enc is not None  # only a v7 stream lays out a tail
        pieces: list[tuple[bytes, int]] = []

        def text(value: str) -> None:
            pieces.append((value.encode("utf-8"), len(value)))

        text(SEPARATOR)
        pieces.append(
            self._captures(view.shown)
        )  # the evidence section ends with the captures table
        text(SEPARATOR + heading(2, "Hypotheses"))
        for h in state.hypotheses:  # `V6.hypothesis_block`: title, record, history table
            text(
                SEPARATOR
                + enc.hypothesis_title(h, view)
                + "\n"
                + enc.record(enc.hypothesis_record(h, view))
                + "\n"
            )
            if h.id not in self._histories:
                self._histories[h.id] = _Table(
                    "history", HISTORY_COLUMNS, attrgetter(*HISTORY_COLUMNS)
                )
            pieces.append(self._histories[h.id](h.history))
        text(SEPARATOR + heading(2, "Notes") + "\n")  # `V6.notes_section`
        pieces.append(self._notes(enc.shown_notes(view)))
        text(
            SEPARATOR + heading(2, "Budget") + "\n" + enc.record(to_plain(state.budget)) + "\n"
        )  # `V7.budget_section`
        pieces.append(self._budget(view.shown))
        text(SEPARATOR + enc.task_section(view) + SEPARATOR + enc.schema_section() + "\n")
        return pieces


def _extend(mark: tuple[Any, int], piece: str) -> tuple[Any, int]:
    """A new mark: a copy of `mark`'s hasher fed `piece`'s UTF-8 bytes, and the characters so far."""
    hasher = mark[0].copy()
    hasher.update(piece.encode("utf-8"))
    return hasher, mark[1] + len(piece)
