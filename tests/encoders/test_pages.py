"""v14's pages and the fence of every version: the same bytes as the frozen algorithms, in linear time on any text.

The frozen algorithms are copied here as they were released (`reference_*`): a page grows
to the longest slice whose fenced block fits, fencing the slice again as it shrinks, and a
fence is one backtick longer than the longest run of three or more (a list of every run).
They took seconds on a million backticks (issue 30); the library's one-pass versions must
give their bytes on every text.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workingset.encoders._render as render_helpers
from tests.helpers.factory import with_output
from workingset.encoders import get_encoder
from workingset.encoders.journal import pages, v14
from workingset.encoders.journal.pages import page_bounds
from workingset.io import caches

_RUNS = re.compile(r"`{3,}")


def reference_fence(body: str) -> str:
    ticks = "`" * max(3, max(map(len, _RUNS.findall(body))) + 1) if "```" in body else "```"
    return f"{ticks}\n{body}\n{ticks}"


def reference_page_end(text: str, start: int, size: int) -> int:
    """Where the page starting at `start` ends, as v14 was released (fence, shrink, fence again)."""
    length = min(len(text) - start, size - 8)
    while True:
        fenced = len(reference_fence(text[start : start + length]))
        if fenced <= size:
            return start + length
        length = max(1, min(length - (fenced - size), length * size // fenced))


def reference_bounds(text: str, size: int) -> list[int]:
    bounds, start = [], 0
    while start < len(text):
        start = reference_page_end(text, start, size)
        bounds.append(start)
    return bounds


def _texture(rng: random.Random) -> str:
    """Backtick runs of every length around a page's thresholds, between plain stretches."""
    parts = []
    for _ in range(rng.randint(0, 30)):
        if rng.random() < 0.5:
            parts.append("`" * rng.choice([1, 2, 3, 4, rng.randint(1, 80), rng.randint(1, 400)]))
        else:
            parts.append(rng.choice("x\n ") * rng.randint(1, rng.choice([3, 30, 200])))
    return "".join(parts)


def test_page_bounds_are_the_released_ones_on_backtick_textures():
    rng = random.Random(30)
    for _ in range(3_000):
        text, size = _texture(rng), rng.randint(9, 300)
        assert list(page_bounds(text, size)) == reference_bounds(text, size), (text, size)


def test_page_bounds_are_the_released_ones_around_a_half_page_run():
    """Runs near half a page (where pages get short and are counted in batches), cut by letters and long runs."""
    rng = random.Random(2)
    for _ in range(2_000):
        size = rng.randint(9, 200)
        low, parts = (size - 4) // 2, []
        for _ in range(rng.randint(1, 40)):
            r = rng.random()
            if r < 0.4:
                parts.append("`" * max(1, low + rng.randint(-6, 3)))
            elif r < 0.6:
                parts.append("`" * rng.randint(1, 2 * size))
            else:
                parts.append(rng.choice("x\n") * rng.randint(1, rng.choice([1, 3, size])))
        text = "".join(parts)
        assert list(page_bounds(text, size)) == reference_bounds(text, size), (text, size)


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="`x\n", max_size=600), size=st.integers(9, 120))
def test_page_bounds_are_the_released_ones(text: str, size: int):
    bounds = page_bounds(text, size)
    assert list(bounds) == reference_bounds(text, size)
    assert [bounds[i] for i in range(len(bounds))] == list(bounds)


def test_a_page_size_that_holds_no_fenced_character_is_refused():
    with pytest.raises(ValueError, match="at least a fenced character"):
        page_bounds("abc", 8)


def test_the_fence_is_the_released_one():
    rng = random.Random(7)
    for _ in range(2_000):
        body = _texture(rng)
        render_helpers._longest_run.cache_clear()
        assert render_helpers.fence(body) == reference_fence(body), body


# One version of each family's shapes: v1 (JSON sections), v3 (fenced text), v7, v10, v11–v14 (journal).
VERSIONS = ("v1", "v3", "v7", "v10", "v11", "v12", "v13", "v14")


def _released(monkeypatch) -> None:
    """Render with the released fence length and page bounds from here on (caches emptied)."""
    caches.clear()
    monkeypatch.setattr(
        render_helpers, "_longest_run", lambda body: max(map(len, _RUNS.findall(body)))
    )
    monkeypatch.setattr(pages, "page_bounds", reference_bounds)
    monkeypatch.setattr(v14, "page_bounds", reference_bounds)


def test_a_backtick_output_renders_as_released_in_every_family(monkeypatch):
    """Small enough for the released algorithms: every version's bytes with them and without."""
    text = "`" * 30_000 + "tail" + "```x" * 2_000
    state, hid = with_output(text), "H1"
    now = {v: get_encoder(v).render(state, hid).text for v in VERSIONS}
    _released(monkeypatch)
    try:
        assert {v: get_encoder(v).render(state, hid).text for v in VERSIONS} == now
    finally:
        caches.clear()
    assert "E000010 paged: 98120 chars, 86295 pages; page 1:\n" in now["v14"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["one run", "many runs"])
def test_a_multi_megabyte_backtick_output_renders_in_every_family(kind: str, monkeypatch):
    """4 MB of backticks: v1–v13 give the released bytes; v14's pages are the released ones, page by sampled page."""
    n = 4_000_000
    text = "`" * n if kind == "one run" else "```x" * (n // 4)
    state, hid = with_output(text), "H1"
    enc = get_encoder("v14")
    size = enc.page_size  # type: ignore[attr-defined]
    out = enc.render(state, hid).text
    entry = enc.entry_text(state, "E000010")  # type: ignore[attr-defined]
    bounds = page_bounds(entry, size)
    now = {v: get_encoder(v).render(state, hid).text for v in VERSIONS if v != "v14"}
    _released(
        monkeypatch
    )  # the released fence is fast enough at this size; the released pages are not
    try:
        assert {v: get_encoder(v).render(state, hid).text for v in now} == now
    finally:
        caches.clear()
    assert f"E000010 paged: {len(entry)} chars, {len(bounds)} pages; page 1:\n" in out
    assert len(out) <= enc.budget  # type: ignore[attr-defined]
    assert len(bounds._index) < 20  # runs of equal pages, never one int per page
    ends = list(bounds)
    n = len(entry)
    assert ends[-1] == n and all(a < b for a, b in zip([0, *ends], ends))
    rng = random.Random(4)
    for i in sorted({0, 1, len(ends) - 2, len(ends) - 1, *rng.sample(range(len(ends)), 300)}):
        assert ends[i] == reference_page_end(entry, ends[i - 1] if i else 0, size), i
    # From a page's end on, the pages are those of the rest of the text alone (a page looks
    # only forward): the last pages whole against the released walk.
    tail_from = next(i for i in range(len(ends) - 1, -1, -1) if n - ends[i] >= 3 * size)
    rest = reference_bounds(entry[ends[tail_from] :], size)
    assert ends[tail_from + 1 :] == [ends[tail_from] + b for b in rest]
