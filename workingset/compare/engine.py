"""The offline comparison (`workingset compare`): sizes, tokens and prompt-cache accounting of a run.

A *strategy* is anything that turns a stored context into the text of a user message: an
encoder version (`v7`) or, for `compare --baselines`, a named baseline. Each context of a
run is rendered by every strategy; for each text we count characters and tokens and the
tokens a provider's prefix cache could serve: the longest common token prefix with the
previous context of the same run rendered by the same strategy (see
`tokens.common_prefix_tokens`). The first context of a run has nothing cached.

Effective cost is in full-price token units: `uncached + cached_price * cached`.
With `cache` models named (`workingset.compare.billing`), every context is also billed as a provider's
prompt cache would bill it, from the exact request body the provider would receive
(`Rendering.body`: an encoder's `providers.messages`, tool and schema included; a
baseline's `Baseline.body`), read by `wire.body_prompt`; each context is sent at its
state's latest capture time. An exported analysis records its rejected answers, and each
retry request they led to (`retries.py`) is billed after its context, at the same time, for
the encoder versions; a run imported from a trajectory records none. Nothing here calls a
model or the network.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, NamedTuple

import msgspec
import xxhash

from ..encoders import DEFAULT_ENCODER, LATEST
from ..encoders import PREFIX as ENCODER_PREFIX
from ..errors import UnknownEncoder, UsageError
from ..model.hashing import hash_text
from ..model.state import State, StoredContext
from ..providers import MAX_BREAKPOINTS, section_ends
from ..runs.fixed_prompt import FixedPrompt
from ..tokens.count import (
    DEFAULT_ENCODING,
    common_prefix_tokens,
    count_tokens,
    encode_at,
    get_encoding,
)
from .availability import Availability, availability
from .billed import keep_bills, kept_bills, renderer_key
from .billing import PROVIDER, Billing, CacheOptions, Meter, Prompt, model_names, state_time

# The default encoder (the registry's `DEFAULT_ENCODER`, the one source of truth) as compare names it.
DEFAULT_LABEL = "v" + DEFAULT_ENCODER.removeprefix(ENCODER_PREFIX)
# What `compare RUN` sets side by side: the plain transcript (what an agent sends without
# workingset) against the default encoder, with every baseline beside them (issue 33).
DEFAULT_BASE, DEFAULT_CANDIDATE = "full-transcript", DEFAULT_LABEL
DEFAULT_CACHE = ("anthropic",)  # the provider model `compare RUN` alone bills under
# `--all` keeps v7 first: the published every-version tables (README, RESULTS.md) read relative to it.
ALL_BASE = "v7"
DEFAULT_CACHED_PRICE = 0.1
SECTION_ORDER = (
    "header", "case", "evidence", "evidence_index", "selected_hypothesis",
    "other_hypotheses", "notes", "budget", "task", "output_schema",
)  # fmt: skip
UNASSIGNED = "unassigned"  # characters a renderer did not attribute to a section


class Rendering(NamedTuple):
    """A strategy's text for one context, with what the size and cache measures need."""

    text: str
    sections: tuple[tuple[str, int], ...] = ()  # (category, chars), may be empty
    breakpoints: tuple[int, ...] = ()  # character offsets of the cache breakpoints (at most 4)
    cuts: tuple[
        int, ...
    ] = ()  # character offsets where tokenization restarts (breakpoints included)
    reach: Availability | None = (
        None  # identifiers of the state's evidence visible, addressable, gone
    )
    # The request body sent for this context: (provider, API model or None) -> the JSON the API receives.
    body: Callable[[str, str | None], dict[str, Any]] | None = None
    # A retry of it: (provider, API model, request ID, retry turns) -> the body; None: never retried (a baseline).
    retried: (
        Callable[[str, str | None, str, Sequence[tuple[bytes, Any]]], dict[str, Any]] | None
    ) = None


Renderer = Callable[[State, str], Rendering]


@dataclass(frozen=True)
class Size:
    """One context rendered by one strategy."""

    chars: int
    tokens: int
    cached: int  # leading tokens shared with the previous context under the same strategy
    sections: tuple[tuple[str, int], ...] = ()

    @property
    def uncached(self) -> int:
        """Tokens billed at the full price."""
        return self.tokens - self.cached

    def cost(self, cached_price: float) -> float:
        """Effective cost in full-price token units."""
        return self.uncached + cached_price * self.cached


@dataclass(frozen=True)
class Totals:
    """The sums of one strategy's sizes over a run."""

    chars: int
    tokens: int
    cached: int
    uncached: int
    cost: float


@dataclass(frozen=True)
class Comparison:
    """Every context of a run measured under every strategy, in run order."""

    strategies: tuple[str, ...]
    labels: tuple[str, ...]
    hypotheses: tuple[str, ...]
    sizes: Mapping[str, tuple[Size, ...]]
    encoding: str
    cached_price: float
    # Cache model -> strategy -> one billing per context (empty without `--cache`).
    caches: Mapping[str, Mapping[str, tuple[Billing, ...]]] = field(default_factory=dict)
    cache_options: CacheOptions | None = None
    timed: bool = False  # the contexts carry distinct send times (else all are taken as one moment)
    # Strategy -> per context, the earlier evidence's identifiers visible, addressable or gone.
    availability: Mapping[str, tuple[Availability, ...]] = field(default_factory=dict)

    def availability_total(self, strategy: str) -> Availability:
        """One strategy's availability summed over the run's contexts."""
        return sum(self.availability[strategy], Availability())

    def cache_total(self, model: str, strategy: str) -> Billing:
        """Return one strategy's billing under one cache model, summed over the run."""
        bills = self.caches[model][strategy]
        return Billing(
            tokens=sum(b.tokens for b in bills), uncached=sum(b.uncached for b in bills),
            written=sum(b.written for b in bills), read=sum(b.read for b in bills), cost=sum(b.cost for b in bills),
        )  # fmt: skip

    def total(self, strategy: str) -> Totals:
        """Return the sums over the run for one strategy."""
        sizes = self.sizes[strategy]
        tokens, cached = sum(s.tokens for s in sizes), sum(s.cached for s in sizes)
        return Totals(
            chars=sum(s.chars for s in sizes), tokens=tokens, cached=cached,
            uncached=tokens - cached, cost=sum(s.cost(self.cached_price) for s in sizes),
        )  # fmt: skip

    def last(self, strategy: str) -> Size:
        """Return the size of the run's last context under one strategy."""
        return self.sizes[strategy][-1]

    def sections(self, strategy: str, index: int | None = None) -> dict[str, int]:
        """Characters per section category, for one context or (index None) summed over the run."""
        sizes = self.sizes[strategy] if index is None else (self.sizes[strategy][index],)
        out: dict[str, int] = {}
        for size in sizes:
            for category, chars in size.sections:
                out[category] = out.get(category, 0) + chars
            if size.sections:
                rest = size.chars - sum(c for _, c in size.sections)
                if rest:
                    out[UNASSIGNED] = out.get(UNASSIGNED, 0) + rest
        return out


def change_percent(base: float, value: float) -> float | None:
    """Return the change from `base` to `value` in percent, or None when `base` is 0."""
    if base == 0:
        return None
    return (value - base) / base * 100.0


def measure_one(text: str, prev: str, encoding: str = DEFAULT_ENCODING, sections: tuple = (),
                digest: str | None = None, prev_digest: str | None = None) -> Size:  # fmt: skip
    """Measure one text sent after `prev` (the previous context of its run, "" for the first).

    `digest` and `prev_digest` are the texts' `hash_text`, when the caller has them.
    """
    digest = digest or hash_text(text)
    # `prev` (counted just before) lets the tokenizer skip the blocks the two share.
    after = (prev, prev_digest or hash_text(prev)) if prev else None
    cached = common_prefix_tokens(prev, text, encoding, (after[1], digest)) if after else 0
    return Size(chars=len(text), tokens=count_tokens(text, encoding, digest, after), cached=cached,
                sections=tuple(sections))  # fmt: skip


def measure(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> tuple[Size, ...]:
    """Measure the texts of one strategy, given in run order."""
    return tuple(
        measure_one(text, texts[i - 1] if i else "", encoding) for i, text in enumerate(texts)
    )


def compare_texts(
    texts: Mapping[str, Sequence[str]],
    *,
    labels: Sequence[str] | None = None,
    hypotheses: Sequence[str] | None = None,
    encoding: str = DEFAULT_ENCODING,
    cached_price: float = DEFAULT_CACHED_PRICE,
    cache: Sequence[str] = (),
    cache_options: CacheOptions | None = None,
) -> Comparison:
    """Compare runs of texts per strategy: `{"v7": [text of turn 1, turn 2, ...], ...}`.

    Every strategy must have the same number of texts, in run order. This is the entry
    point for callers that render their own texts (e.g. trajectory benchmarks). Under the
    `cache` models each text is one message with one rolling breakpoint at its end, and
    the texts carry no times (all are taken to be within the TTL of each other).
    """
    get_encoding(encoding)
    counts = {len(t) for t in texts.values()}
    if len(counts) > 1:
        raise UsageError(f"every strategy needs the same number of texts, got {sorted(counts)}")
    n = counts.pop() if counts else 0
    models, options = model_names(cache), _options(cache_options, cached_price)
    caches = {m: {name: _bill_run(m, options, [Rendering(t, (), (len(t),), (len(t),)) for t in run], encoding)
                  for name, run in texts.items()} for m in models}  # fmt: skip
    return Comparison(
        strategies=tuple(texts), labels=tuple(labels or (str(i + 1) for i in range(n))),
        hypotheses=tuple(hypotheses or ("",) * n),
        sizes={name: measure(run, encoding) for name, run in texts.items()},
        encoding=encoding, cached_price=cached_price, caches=caches, cache_options=options if models else None,
    )  # fmt: skip


def _options(options: CacheOptions | None, cached_price: float) -> CacheOptions:
    return options if options is not None else CacheOptions(cached_price=cached_price)


def prompt(rendering: Rendering, time: float | None, encoding: str = DEFAULT_ENCODING) -> Prompt:
    """A rendering as a cache model sees it: tokenized piece by piece between its cuts."""
    cuts = sorted(set(rendering.cuts) | set(rendering.breakpoints))
    tokens, offsets = encode_at(rendering.text, cuts, encoding)
    at = dict(zip(cuts, offsets))
    return Prompt(
        tokens=tokens,
        breakpoints=tuple(at[b] for b in rendering.breakpoints if at[b] > 0),
        time=time,
    )


# The API model whose body each cache model bills: GPT-5.6 is sent explicit breakpoints, the older models none.
API_MODEL = {"openai-5.6": "gpt-5.6"}


def sent_prompts(rendering: Rendering, models: Sequence[str], time: float | None, options: CacheOptions,
                 encoding: str = DEFAULT_ENCODING,
                 body: Callable[[str, str | None], dict[str, Any]] | None = None) -> dict[str, Prompt]:  # fmt: skip
    """What each cache model bills for one context: its request body's blocks (or `body`'s), or (no body) the bare text."""
    from .wire import body_prompt

    body = body or rendering.body
    if body is None:
        bare = prompt(rendering, time, encoding)
        return {m: bare for m in models}
    out: dict[str, Prompt] = {}
    seen: dict[tuple[str, str | None], Prompt] = {}
    for m in models:
        key = (PROVIDER[m], API_MODEL.get(m, options.model if PROVIDER[m] == "anthropic" else None))
        if key not in seen:
            seen[key] = body_prompt(body(*key), key[0], time, encoding)
        out[m] = seen[key]
    return out


def _retry_body(rendering: Rendering, request_id: str, turns: Sequence[tuple[bytes, Any]]
                ) -> Callable[[str, str | None], dict[str, Any]]:  # fmt: skip
    assert rendering.retried is not None
    retried = rendering.retried
    return lambda provider, model: retried(provider, model, request_id, turns)


def _plus(a: Billing, b: Billing) -> Billing:
    return Billing(tokens=a.tokens + b.tokens, uncached=a.uncached + b.uncached, written=a.written + b.written,
                   read=a.read + b.read, cost=a.cost + b.cost)  # fmt: skip


def _bill_run(
    model: str, options: CacheOptions, run: Sequence[Rendering], encoding: str
) -> tuple[Billing, ...]:
    meter = Meter(model, options)
    return tuple(meter(prompt(rendering, None, encoding)) for rendering in run)


_VERSION = re.compile(r"^(?:investigation_project_)?v(\d+)(:.+)?$")


def version_label(name: str) -> str:
    """Return the short label (`v7`) of an encoder name or alias; unknown names list the valid ones."""
    from ..encoders import get_encoder

    get_encoder(name)  # raises UnknownEncoder with the valid choices
    match = _VERSION.match(name)
    if match is None:
        raise UnknownEncoder(f"no encoder {name}")
    return f"v{int(match.group(1))}{match.group(2) or ''}"


def version_renderer(label: str) -> Renderer:
    """Return the renderer of an encoder version given its label (`v8`)."""
    from ..encoders import get_encoder
    from ..encoders.journal.base import render_kept
    from ..session.replies import Request

    encoder = get_encoder("investigation_project_" + label)
    # A journal version's walk, kept from context to context: a run's contexts are rendered in order, each
    # a copy of the last with entries appended, so each costs what is new (the bytes are a fresh render's).
    kept: dict[str, Any] = {}

    def run(state: State, hypothesis: str) -> Rendering:
        # The blocks and breakpoints of the provider request (`workingset.providers`), exactly.
        rendered = render_kept(encoder, state, hypothesis, kept)
        points = tuple(rendered.stable_ends()[-MAX_BREAKPOINTS:])
        reach = availability(
            state, rendered.shown, rendered.indexed, recall=encoder.supports_recall
        )

        def body(provider: str, model: str | None) -> dict[str, Any]:
            return Request.of(rendered, "", state).messages(provider, model=model)

        def retried(
            provider: str, model: str | None, request_id: str, turns: Sequence[tuple[bytes, Any]]
        ) -> dict[str, Any]:
            from .retries import retry_pairs

            request = Request.of(rendered, request_id, state)
            return request.messages(provider, model=model, retry=retry_pairs(turns, provider))

        return Rendering(
            rendered.text,
            tuple(rendered.sections),
            points,
            tuple(section_ends(rendered.chunks)),
            reach,
            body,
            retried,
        )

    renderer_key(run, f"encoder:{label}")
    return run


def baseline_renderers(fixed: FixedPrompt | None = None) -> dict[str, Renderer]:
    """Return the transcript baselines of `workingset.compare.baselines` as renderers.

    A baseline is a chat transcript whose agent (SWE-agent, mini-swe-agent) puts one
    rolling cache breakpoint on its last message. Chat APIs delimit messages, so for the
    cache models each message is tokenized on its own (cut where its `\n\n` separator
    starts) and the breakpoint is the end of the last message, before the closing newline.
    """
    from .baselines import for_run

    def renderer(baseline: Callable[[State, str], str]) -> Renderer:
        def run(state: State, hypothesis: str) -> Rendering:
            messages = baseline.messages(state, hypothesis)  # type: ignore[attr-defined]
            ends, at = [], -2
            for message in messages:
                at += 2 + len(message)
                ends.append(at)
            masked = baseline.masked(state)  # type: ignore[attr-defined]
            reach = availability(
                state, [ev.id for ev in state.evidence if ev.id not in masked], (), recall=False
            )

            def body(provider: str, model: str | None) -> dict[str, Any]:
                return baseline.body(state, hypothesis, provider, model)  # type: ignore[attr-defined]

            return Rendering(
                "\n\n".join(messages) + "\n", (), (ends[-1],), tuple(ends), reach, body
            )

        return run

    sent = "none" if fixed is None else xxhash.xxh3_128_hexdigest(msgspec.json.encode(fixed))
    out = {name: renderer(fn) for name, fn in for_run(fixed).items()}
    for name, run in out.items():
        renderer_key(run, f"baseline:{name}:{sent}")
    return out


def strategy_renderer(name: str, fixed: FixedPrompt | None = None) -> Renderer:
    """The renderer of one strategy `compare` knows: a baseline's name or an encoder version (`v13`)."""
    renderers = baseline_renderers(fixed)
    return (
        renderers[name] if name in renderers else version_renderer(strategy_label(name, renderers))
    )


def strategy_label(name: str, baselines: Mapping[str, Any]) -> str:
    """A strategy's column name: a baseline's name as it is, an encoder version's label (`v13`)."""
    if name in baselines:
        return name
    try:
        return version_label(name)
    except UnknownEncoder:
        if ":" in name:  # a version's options are wrong: its own message says how
            raise
        raise UnknownEncoder(f"no strategy {name[:100]!r}: an encoder version (v1 to v{LATEST}, from the registry) "
                             f"or a baseline ({', '.join(baselines)})", details={"valid": list(baselines)}) from None  # fmt: skip


def request_bodies(contexts: Sequence[StoredContext], name: str, provider: str, model: str | None = None,
                   fixed: FixedPrompt | None = None,
                   retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None = None) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Each request under one strategy, as sent: `{"request_id", "sent_at", "body"}` (`workingset requests`).

    A baseline sends `fixed`, the run's source agent's fixed prompt (`runs.read_fixed_prompt`), where it has one.
    After each context come its retries (`retries`: request ID -> retry turns, `runs.read_retries`), for an
    encoder version: `{"request_id", "retry": k, "sent_at", "body"}`, the k-th carrying the first k turns.
    """
    from datetime import datetime

    render = strategy_renderer(name, fixed)
    for ctx in contexts:
        rendering = render(ctx.state, ctx.hypothesis)
        assert rendering.body is not None
        sent = datetime.fromtimestamp(state_time(ctx.state), UTC).isoformat().replace("+00:00", "Z")
        turns = (retries or {}).get(ctx.request_id, ()) if rendering.retried is not None else ()
        bodies = [rendering.body(provider, model)]
        bodies += [
            _retry_body(rendering, ctx.request_id, turns[:k])(provider, model)
            for k in range(1, len(turns) + 1)
        ]
        for k, body in enumerate(bodies):
            if model is not None:
                body = {"model": model, **body}
            yield {
                "request_id": ctx.request_id,
                **({"retry": k} if k else {}),
                "sent_at": sent,
                "body": body,
            }


def strategies(base: str, candidate: str, all_versions: bool, baselines: bool,
               fixed: FixedPrompt | None = None) -> dict[str, Renderer]:  # fmt: skip
    """Resolve the command line's choice of strategies to renderers, in column order (baselines send `fixed`).

    The base and the candidate are each an encoder version or a baseline; with `baselines`
    every other baseline follows them.
    """
    from ..encoders import ENCODERS

    pool = baseline_renderers(fixed)
    base_label = strategy_label(base, pool)
    if all_versions:
        labels = [base_label] + [f"v{n}" for n in sorted(ENCODERS) if f"v{n}" != base_label]
    else:
        labels = [base_label, strategy_label(candidate, pool)]
        if labels[0] == labels[1]:
            raise UsageError(f"base and candidate are both {labels[0]}")
    if baselines:
        labels += [name for name in pool if name not in labels]
    return {label: pool[label] if label in pool else version_renderer(label) for label in labels}


def compare_contexts(
    contexts: Sequence[StoredContext],
    renderers: Mapping[str, Renderer],
    *,
    recall: bool = True,
    labels: Sequence[str] | None = None,
    encoding: str = DEFAULT_ENCODING,
    cached_price: float = DEFAULT_CACHED_PRICE,
    cache: Sequence[str] = (),
    cache_options: CacheOptions | None = None,
    step: Callable[[int], None] | None = None,
    retries: Mapping[str, Sequence[tuple[bytes, Any]]] | None = None,
) -> Comparison:
    """Render each stored context (for its own hypothesis) with every renderer and measure it.

    With `recall=False` each state is rendered with its recall selections emptied. Under
    each `cache` model (`workingset.compare.billing.MODELS`) every text is also billed, sent at its
    state's latest capture time. `retries` (request ID -> retry turns, `runs.read_retries`)
    adds, for each strategy that retries (the encoder versions), every retry request after
    its context, at the same time; a context's billing is then its request's and its
    retries' together. `step` is called with 1 after each context is rendered and counted,
    for a progress bar.
    """
    get_encoding(encoding)
    models, options = model_names(cache), _options(cache_options, cached_price)
    meters = {(m, name): Meter(m, options) for m in models for name in renderers}
    bills: dict[tuple[str, str], list[Billing]] = {key: [] for key in meters}
    prev = {name: "" for name in renderers}
    prev_digest: dict[str, str | None] = {name: None for name in renderers}
    sizes: dict[str, list[Size]] = {name: [] for name in renderers}
    reach: dict[str, list[Availability]] = {name: [] for name in renderers}
    times = [state_time(ctx.state) for ctx in contexts]
    kept, keys = kept_bills(contexts, renderers, models, options, encoding, recall, retries)
    for pair, found in kept.items():
        bills[pair] = list(found)
    for ctx, time in zip(contexts, times):
        state = ctx.state if recall else msgspec.structs.replace(ctx.state, recall={})
        for name, renderer in renderers.items():
            rendering = renderer(state, ctx.hypothesis)
            text, digest = rendering.text, hash_text(rendering.text)
            sizes[name].append(
                measure_one(
                    text, prev[name], encoding, rendering.sections, digest, prev_digest[name]
                )
            )
            if rendering.reach is not None:
                reach[name].append(rendering.reach)
            prev[name], prev_digest[name] = text, digest
            if models and (models[0], name) not in kept:
                sent = sent_prompts(rendering, models, time, options, encoding)
                billed = {m: meters[(m, name)](sent[m]) for m in models}
                turns = (
                    (retries or {}).get(ctx.request_id, ()) if rendering.retried is not None else ()
                )
                for k in range(1, len(turns) + 1):
                    again = sent_prompts(rendering, models, time, options, encoding,
                                         _retry_body(rendering, ctx.request_id, turns[:k]))  # fmt: skip
                    billed = {m: _plus(billed[m], meters[(m, name)](again[m])) for m in models}
                for m in models:
                    bills[(m, name)].append(billed[m])
            if step is not None:
                step(1)
    keep_bills(keys, bills, kept)
    return Comparison(
        strategies=tuple(renderers),
        labels=tuple(labels or (c.request_id for c in contexts)),
        hypotheses=tuple(c.hypothesis for c in contexts),
        sizes={name: tuple(sizes[name]) for name in renderers},
        encoding=encoding, cached_price=cached_price,
        caches={m: {name: tuple(bills[(m, name)]) for name in renderers} for m in models},
        cache_options=options if models else None, timed=len(set(times)) > 1,
        availability={name: tuple(r) for name, r in reach.items() if len(r) == len(contexts)},
    )  # fmt: skip
