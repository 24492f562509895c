"""Evidence blocks rendered once per process and reused: a turn renders only what is new.

A recorded evidence item does not change (its payload is covered by its content hash; only
its budget status moves, when it is assessed), so the text of its block under one frozen
encoder is the same at every turn of a run. `BlockCache` keeps each block's text, keyed by
everything the text depends on:

- the encoder class (its version and the hooks it overrides);
- the item itself: every field of the evidence record, nested descriptors (capture, budget)
  compared field by field, because the controller changes a budget's status in place; the
  payload by identity, else by equality, so two payloads with one hash (a collision, or a
  copy) never share a block by accident;
- the context the block is rendered in: the item's v5 reference (`view.refs`: the earlier
  item whose payload it repeats) and its roles (`view.roles`, which v8 and v9 print in the
  title).

Only versions listed in `CACHED_VERSIONS` use it: for them the block's text was checked to
depend on nothing else (the snapshot tests and the bug17 hashes hold it to the byte). A new
version opts in by joining the list once the same is true of it. Payloads are treated as
immutable values, as everywhere in the model: a caller who changes a payload in place
without giving it a new object must not expect a changed block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec.structs import astuple

from ..io.caches import register
from ..model.state import Evidence

CACHED_VERSIONS = frozenset(range(1, 11))
# About 64 MB of text at most; past it the older half is dropped (a long-lived process
# serving many large analyses keeps the blocks of the ones it renders now).
LIMIT_CHARS = 64_000_000


def _fingerprint(ev: Evidence) -> tuple:
    """Every field of the item, nested records as tuples of their fields (compared by value)."""
    return (ev.id, ev.collector, ev.scope, astuple(ev.capture), ev.payload, ev.content_hash, astuple(ev.budget),
            ev.iteration, ev.captured_at)  # fmt: skip


class BlockCache:
    """Rendered evidence blocks by (encoder class, item, rendering context)."""

    def __init__(self, limit_chars: int = LIMIT_CHARS):
        self.limit_chars = limit_chars
        self._blocks: dict[tuple, tuple[tuple, str]] = {}
        self._chars = 0
        self.hits = self.misses = 0

    def block(
        self, encoder: Any, ev: Evidence, view: Any, render: Callable[[Evidence, Any], str]
    ) -> str:
        """The block of `ev` as `render(ev, view)` writes it, rendered at most once per key."""
        if encoder.version not in CACHED_VERSIONS:
            return render(ev, view)
        roles = view.roles.get(ev.id)
        key = (type(encoder), ev.id, view.refs.get(ev.id), tuple(roles) if roles else ())
        fingerprint = _fingerprint(ev)
        found = self._blocks.get(key)
        if found is not None and found[0] == fingerprint:
            self.hits += 1
            return found[1]
        self.misses += 1
        text = render(ev, view)
        if found is not None:
            self._chars -= len(found[1])
        self._blocks[key] = (fingerprint, text)
        self._chars += len(text)
        if self._chars > self.limit_chars:
            self._evict()
        return text

    def _evict(self) -> None:
        keys = list(self._blocks)
        for key in keys[: len(keys) // 2 + 1]:
            self._chars -= len(self._blocks.pop(key)[1])

    def clear(self) -> None:
        self._blocks.clear()
        self._chars = 0
        self.hits = self.misses = 0


BLOCKS = BlockCache()
register("rendered blocks", holds="v1-v10 evidence blocks, by encoder, item and rendering context",
         limit=LIMIT_CHARS, unit="characters", size=lambda: BLOCKS._chars, clear=BLOCKS.clear)  # fmt: skip
