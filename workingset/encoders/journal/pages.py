"""The pages of a v14 entry: where each ends, found in one pass over the text whatever its backticks.

A page is fenced on its own (`_render.fence`), so a run of backticks inside it lengthens its
fence; v14 froze the rule that cuts pages (the longest slice whose fenced block fits, found by
shrinking it), and this module finds the same bounds without fencing slice after slice.

The frozen rule, for a page starting at `start` with `width = size - 8` (two fences of three
and their line breaks): the slice of `length = min(chars left, width)` characters is fenced
with `t = max(3, R + 1)` backticks on each side, R the longest backtick run inside the slice
(cut at its ends), so it takes `length + 2 + 2t` characters. If that passes `size`, the slice
shrinks to `max(1, min(length - excess, length * size // fenced))` and is fenced again. One
shrink always fits: the new length is at most `size - 2 - 2t`, and a shorter slice holds no
longer run, so its fence is no longer. So a page needs R of one window only, and the windows
slide forward: R is a sliding maximum over the runs of three or more backticks (a shorter run
never lengthens a fence), kept in a monotonic queue. A page whose window holds a run of at
least `(size - 4) // 2` backticks is one character long (its fence leaves no room for more),
and so is every page after it until that run is left with fewer: those pages are counted at
once, so one backtick run of 8 MB is a few steps. Likewise, while the run that sets R lies
whole in the window and nothing coming in is longer, the pages are of one length: counted at
once too (runs of just under half a page made two-character pages, one step each). The
bounds are kept as runs of equal pages (`PageBounds`), never one integer per page.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator

from ...io.caches import register_lru
from .._render import fence

# `ref paged: N chars, K pages; page 1:` heads a paged entry (see `paged_text`).
PAGED = "{ref} paged: {chars} chars, {pages} pages; page 1:"
_RUNS = re.compile(r"`{3,}")  # shorter runs never lengthen a fence (`_render.fence`)
MIN_PAGE_SIZE = 9  # a fenced character: the frozen rule finds no page in less


class PageBounds:
    """Where each page ends, as a sequence of ints (`bounds[k]`: the end of page k + 1), stored as runs of equal pages."""

    __slots__ = ("_count", "_first", "_index", "_step")

    def __init__(self) -> None:
        self._index: list[int] = []  # the first page (0-based) of each run of equal pages
        self._first: list[int] = []  # where that page ends
        self._step: list[int] = []  # the length of each page of the run
        self._count = 0

    def add(self, end: int, length: int, pages: int = 1) -> None:
        """`pages` pages of `length` characters each, the first ending at `end`."""
        if self._step and self._step[-1] == length:
            self._count += pages  # pages follow one another: this run goes on
            return
        self._index.append(self._count)
        self._first.append(end)
        self._step.append(length)
        self._count += pages

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        run = bisect_right(self._index, i) - 1
        return self._first[run] + (i - self._index[run]) * self._step[run]

    def __iter__(self) -> Iterator[int]:
        for run, first in enumerate(self._first):
            stop = self._index[run + 1] if run + 1 < len(self._index) else self._count
            yield from range(
                first, first + (stop - self._index[run]) * self._step[run], self._step[run]
            )


@functools.lru_cache(maxsize=256)  # a recall of page k needs the bounds of every page before it
def page_bounds(text: str, size: int) -> PageBounds:
    """Where each page of `text` ends: the longest slices whose fenced block is at most `size` characters (the frozen rule above)."""
    if size < MIN_PAGE_SIZE:
        raise ValueError(f"a page holds at least a fenced character ({MIN_PAGE_SIZE}), not {size}")
    n = len(text)
    width, low = size - 8, (size - 4) // 2
    runs = _RUNS.finditer(text)
    following = next(runs, None)
    crossing: tuple[int, int] | None = None  # the run reaching past the window's end, if any
    # The runs wholly before the window's end, from the first not yet passed; each is longer
    # than every one after it (a shorter one before a longer one never decides again).
    inside: deque[tuple[int, int]] = deque()
    out = PageBounds()
    start = 0
    while start < n:
        end = min(n, start + width)
        while True:
            if crossing is None:
                if following is None or following.start() >= end:
                    break
                crossing, following = following.span(), next(runs, None)
            if crossing[1] > end:
                break
            a, b = crossing
            crossing = None
            while inside and inside[-1][1] - inside[-1][0] <= b - a:
                inside.pop()
            inside.append((a, b))
        while inside and inside[0][1] <= start:
            inside.popleft()
        longest = longest_end = 0  # R, and where the run that has it ends
        whole = -1  # where that run starts when it lies whole in the window, else -1
        if inside:  # only the first can start before the window (cut there)
            a, b = inside[0]
            longest, longest_end, whole = b - max(a, start), b, (a if a >= start else -1)
            if len(inside) > 1 and inside[1][1] - inside[1][0] > longest:
                longest, longest_end, whole = (
                    inside[1][1] - inside[1][0],
                    inside[1][1],
                    inside[1][0],
                )
        if crossing is not None and end - max(crossing[0], start) > longest:
            longest, longest_end, whole = end - max(crossing[0], start), crossing[1], -1
        if longest >= low:
            # One-character pages until the run has fewer than `low` backticks left in the window.
            last = longest_end - low + 1
            out.add(start + 1, 1, last - start)
            start = last
            continue
        length = end - start
        fenced = length + 2 + 2 * max(3, longest + 1)
        if fenced > size:
            length = max(1, min(length - (fenced - size), length * size // fenced))
        pages = 1
        if whole >= 0 and length < width and end - start == width:
            # The next pages are as long while their windows stay whole, the run that has R
            # stays in them uncut, and no run coming in from the right gets longer in them
            # than R (the first such run, crossing the window's end or following it, gets
            # longest first).
            coming = crossing[0] if crossing is not None else following.start() if following else n
            pages += min(
                (whole - start) // length, (n - end) // length, (longest + coming - end) // length
            )
        out.add(start + length, length, pages)
        start += pages * length
    return out


register_lru(
    "page bounds",
    page_bounds,
    holds="where each page of a paged v14 entry ends, by text and page size",
)


def page(text: str, size: int, number: int) -> str | None:
    """Page `number` (1-based) of `text`, un-fenced; None when there is no such page."""
    bounds = page_bounds(text, size)
    if not 1 <= number <= len(bounds):
        return None
    return text[(bounds[number - 2] if number > 1 else 0) : bounds[number - 1]]


def paged_text(ref: str, text: str, size: int) -> tuple[str, int]:
    """The entry as the journal writes it when longer than a page: its head line, then page 1 fenced; and the page count."""
    bounds = page_bounds(text, size)
    return PAGED.format(ref=ref, chars=len(text), pages=len(bounds)) + "\n" + fence(
        text[: bounds[0]]
    ), len(bounds)
