"""The per-process cache registry: every cache listed with its bound, filled by use, and emptied by one `clear()`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import workingset.compare.availability as availability
import workingset.encoders._render as render_helpers
import workingset.encoders.journal.walk14 as journal14
import workingset.model.hashing as hashing
import workingset.tokens.count as count
from tests.helpers.session_helpers import state_bytes
from workingset.encoders import get_encoder
from workingset.io import caches
from workingset.model.state import load_state
from workingset.session.investigation import Investigation

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
EXPECTED = {
    "rendered blocks", "journal texts", "fence lengths", "page bounds", "budgeted encoders", "text hashes",
    "token counts", "token arrays", "block tokens", "tokenizers", "identifier counts", "kept views",
    "piece tokens", "v15 names", "v15 held names",
}  # fmt: skip


def sizes() -> dict[str, int]:
    return {c.name: c.size for c in caches.caches()}


def fill(tmp_path: Path) -> Investigation:
    """Use every cache once, the way workingset does; returns an open session (whose store keeps a view)."""
    state = load_state(state_bytes())
    hid = state.hypotheses[0].id
    get_encoder("v7").render(state, hid)  # rendered blocks
    get_encoder("v13").render(state, hid)  # journal texts
    get_encoder("v15").render(state, hid)  # v15 names, v15 held names
    get_encoder("v13:budget=50000")  # budgeted encoders
    render_helpers.fence("a ``` b")  # fence lengths
    journal14.page_bounds("x" * 10_000, 2_000)  # page bounds
    hashing.hash_text("y" * 5_000)  # text hashes
    count.count_tokens("some text\n\nand a block " * 20)  # token counts, arrays, blocks, tokenizers
    count.encode_at("a body\n\nin two pieces", [8])  # piece tokens
    shown = [ev.id for ev in state.evidence]
    availability.availability(state, shown, [], recall=True)  # identifier counts
    inv = Investigation.create(tmp_path / "s.sqlite3", state_bytes())  # kept views
    inv.next_request()
    return inv


def test_every_cache_of_workingset_is_registered():
    assert set(sizes()) == EXPECTED


def test_clear_empties_every_cache_and_changes_no_result(tmp_path):
    state = load_state(state_bytes())
    hid = state.hypotheses[0].id
    before = {v: get_encoder(v).render(state, hid).text for v in ("v7", "v13", "v14", "v15")}
    inv = fill(tmp_path)
    try:
        filled = sizes()
        assert all(filled[name] > 0 for name in EXPECTED), filled
        caches.clear()
        assert sizes() == dict.fromkeys(filled, 0)
        # Cold again, the results are the same, and the session replays what it no longer keeps.
        assert {v: get_encoder(v).render(state, hid).text for v in before} == before
        assert inv.show().open_request is not None
        assert sizes()["kept views"] == 1
    finally:
        inv.close()


def test_a_bounded_cache_drops_everything_past_its_limit():
    cache: caches.Bounded[str, int] = caches.Bounded("test: bounded", limit=3, holds="a test's")
    try:
        for i, key in enumerate("abc"):
            cache[key] = i
        cache["a"] = 9  # a key it holds: nothing dropped
        assert dict(cache) == {"a": 9, "b": 1, "c": 2}
        cache["d"] = 3
        assert dict(cache) == {"d": 3}
        info = {c.name: c for c in caches.caches()}["test: bounded"]
        assert (info.limit, info.unit, info.size) == (3, "entries", 1)
    finally:
        caches._REGISTRY.pop("test: bounded")


def test_an_lru_cache_is_registered_with_its_maxsize():
    info = {c.name: c for c in caches.caches()}
    assert (info["page bounds"].limit, info["page bounds"].unit) == (256, "entries")
    assert (info["rendered blocks"].limit, info["rendered blocks"].unit) == (
        64_000_000,
        "characters",
    )


def test_a_unit_that_is_neither_entries_nor_characters_is_refused():
    with pytest.raises(ValueError, match="entries or characters"):
        caches.register(
            "test: bytes", holds="", limit=1, size=int, clear=lambda: None, unit="bytes"
        )  # type: ignore[arg-type]
    assert "test: bytes" not in sizes()


def test_docs_list_every_cache_with_its_bound():
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Per-process caches", 1)[1].split("\n## ", 1)[0]
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([^`]+)` \|[^|]*\| ([^|]+) \|", section, re.M)
    }
    registered = {c.name: c for c in caches.caches() if not c.name.startswith("test:")}
    assert set(rows) == set(registered)
    for name, cache in registered.items():
        if cache.limit is not None:
            assert rows[name].startswith(f"{cache.limit:,} {cache.unit}"), (name, rows[name])
    from workingset.encoders.journal.walk15 import _HELD

    assert f"or {_HELD.TEXTS:,} texts" in rows["v15 held names"]  # its second bound


def test_v15_held_names_drop_everything_past_either_bound(monkeypatch):
    from workingset.encoders.journal.walk15 import _HELD

    _HELD.clear()
    monkeypatch.setattr(_HELD, "LIMIT", 3)
    monkeypatch.setattr(_HELD, "TEXTS", 2)
    first = _HELD.of("alpha beta")
    answers = [_HELD.holds(first, "alpha beta", v) for v in ("alpha", "gamma", "beta")]
    assert answers == [True, False, True]
    assert _HELD.answers == 3
    assert _HELD.holds(first, "alpha beta", "gamma") is False  # an answer it holds: nothing dropped
    assert _HELD.answers == 3
    assert _HELD.holds(first, "alpha beta", "delta") is False  # a fourth: all dropped first
    assert _HELD.answers == 1 and _HELD.texts == {}
    _HELD.of("one")
    _HELD.of("two")
    assert len(_HELD.texts) == 2
    _HELD.of("three")  # a third text: all dropped first
    assert list(_HELD.texts) == ["three"] and _HELD.answers == 0
    _HELD.clear()
