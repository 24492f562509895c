"""Every per-process cache, in one registry: what each holds, its bound, its size now, and one `clear()`.

A process renders, hashes and counts the same texts again and again (each turn, each version
compared), so several modules keep what they made. Each cache keeps its own eviction (an LRU
of so many entries, or everything dropped past so many characters); this module only lists
them (`caches()`) and empties them all (`clear()`): for a long-lived process that wants its
memory back, or a measurement that must start cold. Clearing changes no result, only what the
next call costs. docs/operations.md#per-process-caches lists them.

A cache registers itself where it is defined, so this module imports nothing from the rest
of workingset and any room may use it (it lives in `io/` beside `limits`, the other bounds a
process keeps). The registry holds the caches of the modules imported so far; one that was
not imported holds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

K = TypeVar("K")
V = TypeVar("V")
Unit = Literal["entries", "characters"]


@dataclass(frozen=True)
class Cache:
    """One registered cache: how it is named, what it holds, its bound and how to measure and empty it."""

    name: str
    holds: str
    limit: int | None  # in `unit`; None: as many as there are of what it is keyed by (see `holds`)
    unit: Unit
    size: Callable[[], int]  # now, in `unit`
    empty: Callable[[], None]


@dataclass(frozen=True)
class CacheInfo:
    """A cache as `caches()` reports it."""

    name: str
    holds: str
    limit: int | None
    unit: Unit
    size: int


_REGISTRY: dict[str, Cache] = {}


def register(
    name: str,
    *,
    holds: str,
    limit: int | None,
    size: Callable[[], int],
    clear: Callable[[], None],
    unit: Unit = "entries",
) -> None:
    """Register a cache under `name` (a module imported again replaces its own entry)."""
    if unit not in ("entries", "characters"):
        raise ValueError(f"a cache's unit is entries or characters, not {unit!r}")
    _REGISTRY[name] = Cache(name, holds, limit, unit, size, clear)


def register_lru(name: str, func: Any, *, holds: str) -> None:
    """Register a `functools.lru_cache` function: its bound is its `maxsize`, in entries."""
    register(
        name,
        holds=holds,
        limit=func.cache_info().maxsize,
        size=lambda: func.cache_info().currsize,
        clear=func.cache_clear,
    )


class Bounded(dict[K, V]):
    """A dict that empties itself when a new key would take it past `limit` entries; registered under `name`.

    For a cache whose entries are small and equally cheap to make again: dropping all of
    them at once costs one refill, and keeps no order to maintain on every hit. Only `d[k] = v`
    counts new keys (what the caches use).
    """

    def __init__(self, name: str, *, limit: int, holds: str):
        super().__init__()
        self.limit = limit
        register(name, holds=holds, limit=limit, size=self.__len__, clear=self.clear)

    def __setitem__(self, key: K, value: V) -> None:
        if len(self) >= self.limit and key not in self:
            self.clear()
        super().__setitem__(key, value)


def caches() -> list[CacheInfo]:
    """Every registered cache with its size now, in the order they were registered."""
    return [CacheInfo(c.name, c.holds, c.limit, c.unit, c.size()) for c in _REGISTRY.values()]


def clear() -> None:
    """Empty every registered cache."""
    for cache in _REGISTRY.values():
        cache.empty()
