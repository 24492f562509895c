"""The options several commands share, and the checks they run before anything is rendered."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import UsageError
from ..io.limits import MAX_COUNT

# A cached or written token priced at most 1,000 full tokens keeps every cost finite (counts stay under 2^53).
MAX_CACHED_PRICE = 1000.0

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print the result (or the error) as JSON on stdout.")
]
MessagesOpt = Annotated[
    str | None,
    typer.Option(
        "--messages",
        metavar="PROVIDER",
        help="Print the request as provider JSON: anthropic, openai or openai-responses.",
    ),
]
TtlOpt = Annotated[
    str | None,
    typer.Option("--ttl", help="Anthropic cache TTL of the breakpoints: 5m (default) or 1h."),
]
StrictOpt = Annotated[
    bool | None,
    typer.Option(
        "--strict/--no-strict",
        help="OpenAI: the strict transformed schema (default), or the frozen one unenforced.",
    ),
]

# The cache models' options, shared by compare and report (`workingset.compare.billing`); prices are
# checked by `check_prices`.
CachedPriceOpt = Annotated[
    float, typer.Option(help="Price of a cached token as a fraction of the full price (0 to 1000).")
]
CacheOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Bill under cache models: ideal, anthropic, openai-auto (alias openai), openai-5.6 (repeatable or a comma list)."
    ),
]
CacheTtlOpt = Annotated[
    str, typer.Option("--ttl", help="Cache entry lifetime for anthropic and openai: 5m or 1h.")
]
CacheMinOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=MAX_COUNT,
        help="Fewest tokens a cache entry holds (default: the --model's minimum, else 1,024).",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The provider model billed, for its minimum cacheable length (e.g. claude-opus-4-6: 4,096).",
    ),
]
WritePriceOpt = Annotated[
    float | None,
    typer.Option(
        help="Price of a cache-written token, 0 to 1000 (default: anthropic 1.25 for 5m, 2.0 for 1h; openai-auto 1.0; openai-5.6 1.25)."
    ),
]

# The session commands' options (`sessions`).
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="The store: a SQLite file or a postgresql:// URL (default: $WORKINGSET_STORE, else .workingset/store.sqlite3).",
    ),
]
AnalysisOpt = Annotated[str, typer.Option("--analysis", help="The analysis ID.")]


def check_prices(cached_price: float, write_price: float | None) -> None:
    """Refuse a price outside 0 to MAX_CACHED_PRICE (NaN too) before anything is rendered."""
    for flag, price in (("--cached-price", cached_price), ("--write-price", write_price)):
        if price is not None and not 0.0 <= price <= MAX_CACHED_PRICE:  # NaN fails this too
            raise UsageError(f"{flag} must be a number from 0 to {MAX_CACHED_PRICE:g}, not {price}")


def provider_options(messages: str | None, ttl: str | None, strict: bool | None) -> bool:
    """Check --messages and its options before anything is rendered; True when provider JSON is asked for."""
    from ..providers import check_options

    if messages is None:
        if ttl is not None or strict is not None:
            raise UsageError("--ttl and --strict/--no-strict go with --messages PROVIDER")
        return False
    check_options(messages, ttl, strict)
    return True
