"""Prompt-cache models: what a provider bills for each context of a run (`compare --cache`).

Each model is a pure function over a run's prompts, in run order, returning one `Billing`
per prompt: tokens billed uncached (1×), written to the cache (the write price) and read
from it (the cached price), and the effective cost in full-price token units. A prompt is
a request body as `wire.body_prompt` sees it: its tokens, every content block's end, its
breakpoints. README "Cache-true costs" quotes the provider rules each model follows.

- `ideal`: the longest common token prefix with the previous prompt is read; nothing is
  written, nothing expires, no minimum. The most any prefix cache could serve.
- `anthropic` (Messages API prompt caching, block-true): after a request, the prefix up to
  each of its breakpoints (at most 4) is an entry. A request reads only at a block boundary:
  from each breakpoint it looks back over that block and the `LOOKBACK - 1` before it, and
  the longest live entry equal to the prefix up to one of those boundaries is read. The
  tokens from the end of the read to the last breakpoint are written; the rest is uncached.
  Entries under the model's minimum (`CacheOptions.cache_min`, by `model`) are never written
  or read. An entry lives `ttl` after it was last written or read (a read refreshes it).
- `openai-auto` (automatic prefix caching, models before GPT-5.6; `openai` is an alias):
  every prompt of at least `cache_min` tokens is an entry. A request reads the longest
  common prefix with any live entry, rounded down to a multiple of 128 tokens, nothing under
  `cache_min`. Its own cacheable tokens (its length rounded down to 128) beyond the read are
  written, at 1.0 unless `write_price` says more.
- `openai-5.6` (GPT-5.6 family): entries are the prefixes up to a request's written
  breakpoints — the implicit one (`Prompt.implicit`, the end of the latest user or tool
  message, unless the body turned it off) and the latest explicit ones, 4 writes in all. A
  request reads the longest of the latest `OPENAI_MATCH` live entries that is exactly a
  prefix of its tokens (no rounding, no shorter fall-back inside an entry); the tokens past
  the read up to its furthest written breakpoint are written at 1.25×; entries last 30 min.

Time: a prompt's `time` is when it was sent (Unix seconds); `None` means "no later than
the previous prompt", so prompts without times are taken to be within the TTL of each other.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import xxhash

from ..errors import UsageError
from ..model.state import State
from ..providers import MAX_BREAKPOINTS
from ..tokens.count import common_prefix

OPENAI_BLOCK = (
    128  # OpenAI's automatic caching (before GPT-5.6) caches prefixes in 128-token increments
)
TTLS = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_WRITE = {
    "5m": 1.25,
    "1h": 2.0,
}  # cache-write price per TTL, as a fraction of the full price
LOOKBACK = 20  # block boundaries an Anthropic breakpoint looks for a hit at, its own included
# Anthropic's minimum cacheable prompt length by model (prefix of the API model name, longest match wins).
ANTHROPIC_MIN = {
    "claude-opus-4-6": 4096, "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 1024, "claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-opus-4": 1024,
    "claude-sonnet-4": 1024, "claude-3-7-sonnet": 1024, "claude-3-5-haiku": 2048, "claude-3-haiku": 2048,
}  # fmt: skip
DEFAULT_MIN = 1024  # without a model: Anthropic's Sonnet minimum, OpenAI's for every model
OPENAI_WRITE = 1.25  # GPT-5.6 family: a written token costs 1.25x the uncached input rate
OPENAI_TTL = 1800.0  # GPT-5.6 family: 30m, currently the only lifetime
OPENAI_WRITES = 4  # GPT-5.6 family: breakpoints one request writes (the implicit one among them)
OPENAI_MATCH = 80  # GPT-5.6 family: the latest breakpoints a request is matched against
ALIASES = {"openai": "openai-auto"}


def minimum(model: str | None) -> int:
    """The minimum cacheable prompt length of a model: Anthropic's table, else `DEFAULT_MIN`."""
    if model is None or model.startswith(("gpt-", "o1", "o3", "o4")):
        return DEFAULT_MIN
    known = [name for name in ANTHROPIC_MIN if model.startswith(name)]
    if not known:
        raise UsageError(f"no cache minimum known for model {model!r}; known: {', '.join(ANTHROPIC_MIN)} and gpt-*",
                         details={"valid": list(ANTHROPIC_MIN)})  # fmt: skip
    return ANTHROPIC_MIN[max(known, key=len)]


@dataclass(frozen=True)
class Prompt:
    """One request of a run as a cache sees it: its tokens, breakpoints and send time."""

    tokens: array  # array("I") of token ids
    breakpoints: tuple[int, ...] = ()  # ascending token offsets of the cache breakpoints
    time: float | None = None  # Unix seconds; None: no later than the previous prompt
    blocks: tuple[
        int, ...
    ] = ()  # ascending token offsets of every content block's end; () = unknown
    implicit: int | None = (
        None  # GPT-5.6: offset of the implicit breakpoint; None: none (explicit mode)
    )

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, array) or self.tokens.typecode != "I":
            object.__setattr__(self, "tokens", array("I", self.tokens))
        points = tuple(self.breakpoints)
        if len(points) > MAX_BREAKPOINTS:
            raise UsageError(
                f"{len(points)} cache breakpoints; a request carries at most {MAX_BREAKPOINTS}"
            )
        if list(points) != sorted(set(points)) or any(
            not 0 < b <= len(self.tokens) for b in points
        ):
            raise UsageError(f"cache breakpoints {points} must ascend within 1..{len(self.tokens)}")
        object.__setattr__(self, "breakpoints", points)
        ends = tuple(self.blocks)
        if list(ends) != sorted(set(ends)) or any(not 0 < b <= len(self.tokens) for b in ends):
            raise UsageError(f"block ends must ascend within 1..{len(self.tokens)}")
        if ends and not set(points) <= set(ends):
            raise UsageError("every cache breakpoint must be at a block's end")
        object.__setattr__(self, "blocks", ends)
        if self.implicit is not None and not 0 < self.implicit <= len(self.tokens):
            raise UsageError(
                f"the implicit breakpoint {self.implicit} must lie within 1..{len(self.tokens)}"
            )


@dataclass(frozen=True)
class CacheOptions:
    """Prices and limits of the cache models; prices are fractions of the full token price."""

    ttl: str = "5m"
    cache_min: int | None = None  # None: the model's minimum (`minimum`), 1,024 without a model
    cached_price: float = 0.1
    write_price: float | None = (
        None  # None: anthropic 1.25 (5m) or 2.0 (1h), openai-auto 1.0, openai-5.6 1.25
    )
    model: str | None = None  # the provider model billed (its minimum cacheable length)
    ttl_seconds: float = field(init=False)

    def __post_init__(self) -> None:
        if self.ttl not in TTLS:
            raise UsageError(
                f"no TTL {self.ttl!r}; available: {', '.join(TTLS)}", details={"valid": list(TTLS)}
            )
        if self.cache_min is None:
            object.__setattr__(self, "cache_min", minimum(self.model))
        assert self.cache_min is not None
        if (
            self.cache_min < 0
            or self.cached_price < 0
            or (self.write_price is not None and self.write_price < 0)
        ):
            raise UsageError("cache minimum and prices must not be negative")
        object.__setattr__(self, "ttl_seconds", TTLS[self.ttl])

    def write(self, model: str) -> float:
        """The price of a written token under `model`."""
        if self.write_price is not None:
            return self.write_price
        return {"anthropic": ANTHROPIC_WRITE[self.ttl], "openai-5.6": OPENAI_WRITE}.get(model, 1.0)


@dataclass(frozen=True)
class Billing:
    """What one prompt is billed: every token is exactly one of uncached, written or read."""

    tokens: int
    uncached: int
    written: int
    read: int
    cost: float  # uncached + write price × written + cached price × read


def _bill(
    tokens: int, read: int, written: int, options: CacheOptions, write_price: float
) -> Billing:
    uncached = tokens - read - written
    cost = uncached + write_price * written + options.cached_price * read
    return Billing(tokens=tokens, uncached=uncached, written=written, read=read, cost=cost)


def _clock(prompts: Iterable[Prompt]) -> Iterator[tuple[Prompt, float]]:
    """Each prompt with its send time; a missing or earlier time is the previous prompt's."""
    now = float("-inf")
    for prompt in prompts:
        now = max(now, prompt.time) if prompt.time is not None else now
        yield prompt, (0.0 if now == float("-inf") else now)


def ideal(prompts: Iterable[Prompt], options: CacheOptions) -> Iterator[Billing]:
    """Read the longest common token prefix with the previous prompt; write nothing."""
    prev = None
    for prompt in prompts:
        read = common_prefix(prev, prompt.tokens) if prev is not None else 0
        yield _bill(len(prompt.tokens), read, 0, options, 0.0)
        prev = prompt.tokens


def _digest(tokens: array, length: int) -> bytes:
    return xxhash.xxh3_128_digest(memoryview(tokens)[:length].tobytes())


def _window(bounds: tuple[int, ...], point: int) -> tuple[int, ...]:
    """The block boundaries a breakpoint at `point` looks for a hit at: its own and the `LOOKBACK - 1` before it."""
    at = bisect_left(bounds, point)
    return bounds[max(0, at - LOOKBACK + 1) : at + 1]


def anthropic(prompts: Iterable[Prompt], options: CacheOptions) -> Iterator[Billing]:
    """Read the longest live entry at a block boundary within a breakpoint's lookback; write up to the last breakpoint."""
    write_price, ttl, floor = (
        options.write("anthropic"),
        options.ttl_seconds,
        max(options.cache_min or 0, 1),
    )
    entries: dict[tuple[int, bytes], float] = {}  # (prefix length, digest of the prefix) -> expiry
    for prompt, now in _clock(prompts):
        entries = {key: end for key, end in entries.items() if end >= now}
        lengths = {n for n, _ in entries}
        # A prompt without block ends (an older caller) has its breakpoints as its only boundaries.
        bounds = prompt.blocks or prompt.breakpoints
        read, hit = 0, None
        for point in prompt.breakpoints:
            for end in reversed(_window(bounds, point)):
                if end <= read or end < floor:
                    break
                if end in lengths:
                    key = (end, _digest(prompt.tokens, end))
                    if key in entries:
                        read, hit = end, key
                        break
        if hit is not None:
            entries[hit] = now + ttl  # a read refreshes the entry
        last = prompt.breakpoints[-1] if prompt.breakpoints else 0
        written = last - read if last >= floor else 0
        for point in prompt.breakpoints:
            if point >= floor:
                entries[(point, _digest(prompt.tokens, point))] = now + ttl
        yield _bill(len(prompt.tokens), read, written, options, write_price)


def openai_auto(prompts: Iterable[Prompt], options: CacheOptions) -> Iterator[Billing]:
    """Read the longest common prefix with any live prompt, in 128-token blocks from the minimum."""
    write_price, ttl, floor = (
        options.write("openai-auto"),
        options.ttl_seconds,
        options.cache_min or 0,
    )
    entries: list[tuple[array, float]] = []  # earlier prompts and when they expire
    for prompt, now in _clock(prompts):
        tokens = prompt.tokens
        entries = [(e, end) for e, end in entries if end >= now]
        shared = [common_prefix(e, tokens) for e, _ in entries]
        read = max(shared, default=0) // OPENAI_BLOCK * OPENAI_BLOCK
        read = read if read >= max(floor, 1) else 0
        cacheable = len(tokens) // OPENAI_BLOCK * OPENAI_BLOCK if len(tokens) >= floor else 0
        if cacheable:
            # An entry that is a prefix of this prompt can serve nothing this one cannot serve longer.
            entries = [(e, end) for (e, end), n in zip(entries, shared) if n < len(e)] + [
                (tokens, now + ttl)
            ]
        yield _bill(len(tokens), read, max(0, cacheable - read), options, write_price)


def openai_56(prompts: Iterable[Prompt], options: CacheOptions) -> Iterator[Billing]:
    """Read the longest of the latest live breakpoint entries that is exactly a prefix; write up to 4 breakpoints."""
    write_price, floor = options.write("openai-5.6"), max(options.cache_min or 0, 1)
    entries: dict[
        tuple[int, bytes], float
    ] = {}  # (prefix length, digest) -> expiry, oldest written first
    for prompt, now in _clock(prompts):
        live = [(key, end) for key, end in entries.items() if end >= now][-OPENAI_MATCH:]
        entries = dict(live)
        tokens = prompt.tokens
        read, hit = 0, None
        for length, digest in sorted((key for key, _ in live), reverse=True):
            if length <= len(tokens) and length > read and _digest(tokens, length) == digest:
                read, hit = length, (length, digest)
                break
        if hit is not None:
            entries[hit] = now + OPENAI_TTL  # a read keeps the entry
        explicit = prompt.breakpoints[-(OPENAI_WRITES - (prompt.implicit is not None)) :]
        points = sorted({p for p in (*explicit, prompt.implicit) if p is not None and p >= floor})
        written = max(0, points[-1] - read) if points else 0
        for point in points:
            key = (point, _digest(tokens, point))
            entries.pop(key, None)  # re-inserted: the latest written comes last
            entries[key] = now + OPENAI_TTL
        yield _bill(len(tokens), read, written, options, write_price)


# The one registry of cache models: `compare --cache NAME` and `bill` look names up here.
MODELS: dict[str, Callable[[Iterable[Prompt], CacheOptions], Iterator[Billing]]] = {
    "ideal": ideal, "anthropic": anthropic, "openai-auto": openai_auto, "openai-5.6": openai_56,
}  # fmt: skip
# The provider whose request body each model bills (`ideal` reads what Anthropic is sent).
PROVIDER = {
    "ideal": "anthropic",
    "anthropic": "anthropic",
    "openai-auto": "openai",
    "openai-5.6": "openai",
}


def model_names(values: Iterable[str]) -> tuple[str, ...]:
    """Resolve `--cache` values (repeatable, each a comma list) to model names, in order, once each."""
    out: list[str] = []
    for value in values:
        for name in (part.strip() for part in value.split(",")):
            name = ALIASES.get(name, name)
            if name not in MODELS:
                raise UsageError(
                    f"no cache model {name!r}; available: {', '.join(MODELS)}",
                    details={"valid": list(MODELS)},
                )
            if name not in out:
                out.append(name)
    return tuple(out)


def bill(
    model: str, prompts: Iterable[Prompt], options: CacheOptions | None = None
) -> tuple[Billing, ...]:
    """Bill a run's prompts (in run order) under the named cache model."""
    (name,) = model_names([model])
    return tuple(MODELS[name](prompts, options or CacheOptions()))


class Meter:
    """Bills prompts one at a time under one model, so a run need not be held in memory."""

    def __init__(self, model: str, options: CacheOptions):
        self._queue: list[Prompt] = []
        # The model pulls exactly one prompt per billing, so the queue never holds more than one.
        (name,) = model_names([model])
        self._billings = MODELS[name](iter(lambda: self._queue.pop(), None), options)

    def __call__(self, prompt: Prompt) -> Billing:
        """Return the billing of the next prompt of the run."""
        self._queue.append(prompt)
        return next(self._billings)


def _seconds(timestamp: str) -> float:
    value = timestamp.upper()
    if value[17:19] == "60":  # a leap second counts as the second before it
        value = value[:17] + "59" + value[19:]
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def state_time(state: State) -> float:
    """When a context of this state was sent: its latest capture time, else the case's opening."""
    return max([_seconds(state.case.opened_at)] + [_seconds(e.captured_at) for e in state.evidence])
