"""Snapshots: a new process starts from an analysis's latest one and reads only the events after it.

A snapshot is a `Replayed` as stored, with its payloads left in the payload table. A
write call stores one when it is due (`snapshot_due`), and `create` stores one at once for a
large initial state (`snapshot_at_creation`); only the latest is kept, since the log holds
everything. Since schema 4 a snapshot is compact MessagePack behind a checksum, decoded
without checking each value again (`trusted.TrustedCodec`); a snapshot of schema 3 is still
read, every value checked.
"""

from __future__ import annotations

import msgspec
import xxhash

from .. import controller as ctl
from ..errors import StoreCorrupt
from ..model.state import State
from ..store import Tx
from .trusted import TrustedCodec
from .view import Replayed

# A snapshot is due when the events logged since the latest one (or since `created`) hold as
# many bytes as it does, and at least this many: writing snapshots then costs at most as much
# as writing the log (plus the latest snapshot), and a new process reads at most about twice a
# snapshot's size.
SNAPSHOT_MIN_BYTES = 1_000_000


class Snapshot(msgspec.Struct, forbid_unknown_fields=True, array_like=True):
    """A `Replayed` as stored (MessagePack): its state with payloads left in the payload table."""

    seq: int
    changed: int
    numbers: tuple[int, int, int]  # evidence, notes, actions
    requests_before: int
    state: State
    # What the log counts of the bounds (`Replayed.model_calls` and the times), since the lifecycle
    # bounds; a snapshot without it is not used (the log is replayed from its start instead).
    usage: tuple[int, str | None, float, str | None, str | None, str | None] | None = None


_SNAPSHOT_DECODER = msgspec.msgpack.Decoder(Snapshot)
# Since schema 4 a snapshot is this mark, the xxh3-128 digest of the body, and the body: the
# compact MessagePack of `trusted.TrustedCodec`. The digest vouches for every value, checked
# when the state was accepted, so the body is decoded without checking them again (that was
# over half the time of a fresh process's first call at 10,000 items).
SNAPSHOT_MAGIC = b"WSS4"
SNAPSHOT_BODY_AT = len(SNAPSHOT_MAGIC) + 16  # where the body starts, after the mark and digest
_SNAPSHOT_CODEC = TrustedCodec(Snapshot)


def snapshot_due(view: Replayed) -> bool:
    """Whether the events since the latest snapshot call for a new one (see `SNAPSHOT_MIN_BYTES`)."""
    return view.logged >= max(SNAPSHOT_MIN_BYTES, view.base_bytes)


def snapshot_at_creation(created_bytes: int) -> bool:
    """Whether a new analysis's `created` event is large enough to store a snapshot with it.

    A snapshot is decoded several times faster than the `created` event it reflects (no value
    is checked again), and the rule above would wait for as many bytes of later events as
    the state holds: an analysis created from a large state (an import) would otherwise make
    every new process replay that event for its first thousands of turns.
    """
    return created_bytes >= SNAPSHOT_MIN_BYTES


def take_snapshot(view: Replayed) -> bytes:
    """The stored form of `view`; the view then counts the events logged from here."""
    evidence = [msgspec.structs.replace(ev, payload=None) if ev.content_hash is not None else ev
                for ev in view.state.evidence]  # fmt: skip
    n = view.numbers
    usage = (
        view.model_calls,
        view.created_at,
        view.paused_seconds,
        view.paused_since,
        view.stopped_at,
        view.last_at,
    )
    state = msgspec.structs.replace(view.state, evidence=evidence)
    snap = Snapshot(seq=view.seq, changed=view.changed, numbers=(n.evidence, n.notes, n.actions),
                    requests_before=view.requests_before, state=state, usage=usage)  # fmt: skip
    body = _SNAPSHOT_CODEC.encode(snap)
    data = SNAPSHOT_MAGIC + xxhash.xxh3_128_digest(body) + body
    view.logged, view.base_bytes = 0, len(data)
    return data


def from_snapshot(tx: Tx, analysis_id: str, upto: int | None = None) -> Replayed | None:
    """The view the analysis's latest snapshot holds, if it has one at or before `upto`."""
    found = tx.snapshot(analysis_id)
    if found is None or (upto is not None and found[0] > upto):
        return None
    seq, data = found
    snap = _decode_snapshot(analysis_id, data)
    if snap.seq != seq or not 0 <= snap.changed <= seq:
        raise StoreCorrupt(f"the snapshot of {analysis_id} says event {snap.seq}, its row {seq}")
    if snap.usage is None:  # written before the log counted the bounds: replay from the start
        return None
    view = Replayed(state=snap.state, seq=seq, changed=snap.changed, numbers=ctl.Numbers(*snap.numbers),
                    requests_before=snap.requests_before, base_bytes=len(data))  # fmt: skip
    (view.model_calls, view.created_at, view.paused_seconds, view.paused_since, view.stopped_at,
     view.last_at) = snap.usage  # fmt: skip
    # One pass without a call per item: a snapshot holds no payloads, so this is every hashed item.
    view.unfilled.extend(
        [ev for ev in snap.state.evidence if ev.content_hash is not None and ev.payload is None]
    )
    return view


def _decode_snapshot(analysis_id: str, data: bytes) -> Snapshot:
    """A checksummed snapshot decoded without re-checking its values; an older one (schema 3) checked in full."""
    try:
        if not data.startswith(SNAPSHOT_MAGIC):
            return _SNAPSHOT_DECODER.decode(data)
        digest, body = data[len(SNAPSHOT_MAGIC) : SNAPSHOT_BODY_AT], data[SNAPSHOT_BODY_AT:]
        if xxhash.xxh3_128_digest(body) != digest:
            raise StoreCorrupt(f"the snapshot of {analysis_id} does not match its checksum")
        return _SNAPSHOT_CODEC.decode(body)
    except msgspec.DecodeError as exc:
        raise StoreCorrupt(f"the snapshot of {analysis_id} is damaged ({exc})") from None
