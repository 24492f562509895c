"""Content hashes: xxh3-128 over canonical bytes, written as `xxh3-128:<32 hex>`."""

from __future__ import annotations

import msgspec
import xxhash

PREFIX = "xxh3-128:"


def hash_bytes(data: bytes) -> str:
    """Return the `xxh3-128:` hash of raw bytes."""
    return PREFIX + xxhash.xxh3_128_hexdigest(data)


def hash_text(text: str) -> str:
    """Return the `xxh3-128:` hash of a text's UTF-8 bytes."""
    return hash_bytes(text.encode("utf-8"))


def canonical_json(value: object) -> bytes:
    """Compact JSON with keys sorted, the canonical form that content hashes cover (SPEC §3)."""
    return msgspec.json.encode(value, order="sorted")


def content_hash(payload: object) -> str:
    """Return the content hash of an evidence payload (a Struct or its plain-JSON form)."""
    return hash_bytes(canonical_json(payload))
