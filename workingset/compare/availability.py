"""Availability: an offline stand-in for "can the model still get at what earlier evidence said?".

For each context of a run and each evidence item of its state, the item's exact identifiers
are harvested (`harvest.harvest`: paths, hashes, error names, numbers with units). Under a
strategy each identifier is then

- **visible**: its item's payload is in the context in full;
- **addressable**: its item is an `evidence_index` row of a version with recall, so one
  recall decision brings the payload back (v8, v9, v11 and later);
- **gone**: neither: masked by a transcript baseline, or hidden by a version without recall.

Items whose payload was never retained have no identifiers and count nowhere. The measure
counts identifiers, not items, so a large output with many identifiers weighs more than an
empty one; it says nothing about whether the model would use what it can see.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..io.caches import Bounded
from ..model.harvest import harvest
from ..model.state import State


@dataclass(frozen=True)
class Availability:
    """Identifiers of a context's evidence that are visible, addressable or gone."""

    visible: int = 0
    addressable: int = 0
    gone: int = 0

    @property
    def total(self) -> int:
        return self.visible + self.addressable + self.gone

    def __add__(self, other: Availability) -> Availability:
        return Availability(
            self.visible + other.visible,
            self.addressable + other.addressable,
            self.gone + other.gone,
        )

    def share(self, part: str) -> float | None:
        """`visible`, `addressable`, `gone` or `reachable` (visible + addressable) as a share of the total, or None."""
        if not self.total:
            return None
        value = self.visible + self.addressable if part == "reachable" else getattr(self, part)
        return value / self.total


_COUNTS: Bounded[tuple[str, str | None], int] = Bounded("identifier counts", limit=1_000_000,
                                                         holds="each evidence item's identifier count, by ID and content hash")  # fmt: skip


def _count(ev) -> int:
    key = (ev.id, ev.content_hash)
    n = _COUNTS.get(key)
    if n is None:
        n = _COUNTS[key] = len(harvest(ev.payload))
    return n


# The last state counted, with its items' counts: every strategy of a context asks for the same state.
_LAST: list[tuple[State, list[tuple[str, int]]]] = []


def _counted(state: State) -> list[tuple[str, int]]:
    """(ID, identifiers harvested) of each of `state`'s evidence items that has a payload."""
    if _LAST and _LAST[0][0] is state:
        return _LAST[0][1]
    counts = [(ev.id, _count(ev)) for ev in state.evidence if ev.payload is not None]
    _LAST[:] = [(state, counts)]
    return counts


def availability(
    state: State, shown: Collection[str], indexed: Collection[str], recall: bool
) -> Availability:
    """Count the identifiers of `state`'s evidence by what a context shows, indexes and can recall."""
    shown, indexed = set(shown), set(indexed)
    visible = addressable = gone = 0
    for eid, n in _counted(state):
        if eid in shown:
            visible += n
        elif recall and eid in indexed:
            addressable += n
        else:
            gone += n
    return Availability(visible, addressable, gone)
