"""Content hashes: xxh3-128 over canonical bytes, written as `xxh3-128:<32 hex>`."""

from __future__ import annotations

from collections import OrderedDict

import msgspec
import xxhash

from ..io.caches import register

PREFIX = "xxh3-128:"


def hash_bytes(data: bytes) -> str:
    """Return the `xxh3-128:` hash of raw bytes."""
    return PREFIX + xxhash.xxh3_128_hexdigest(data)


# The hashes of the last few large texts, by object identity (each entry keeps its text
# alive, so an id is never reused while it is here): a rendered context is hashed by its
# encoder, then again by token counting and by the prefix comparison of the next turn;
# this makes the later ones free. Small texts are hashed every time (cheaper than this).
_RECENT: OrderedDict[int, tuple[str, str]] = OrderedDict()
_RECENT_KEPT = 48
_RECENT_MIN_CHARS = 4096
register("text hashes", holds="the hashes of the last large texts hashed", limit=_RECENT_KEPT,
         size=_RECENT.__len__, clear=_RECENT.clear)  # fmt: skip


def hash_text(text: str) -> str:
    """Return the `xxh3-128:` hash of a text's UTF-8 bytes."""
    if len(text) < _RECENT_MIN_CHARS:
        return hash_bytes(text.encode("utf-8"))
    seen = _RECENT.get(id(text))
    if seen is not None and seen[0] is text:
        _RECENT.move_to_end(id(text))
        return seen[1]
    digest = hash_bytes(text.encode("utf-8"))
    _RECENT[id(text)] = (text, digest)
    if len(_RECENT) > _RECENT_KEPT:
        _RECENT.popitem(last=False)
    return digest


def canonical_json(value: object) -> bytes:
    """Compact JSON with keys sorted, the canonical form that content hashes cover (docs/protocol.md#identifiers)."""
    return msgspec.json.encode(value, order="sorted")


def content_hash(payload: object) -> str:
    """Return the content hash of an evidence payload (a Struct or its plain-JSON form)."""
    return hash_bytes(canonical_json(payload))
