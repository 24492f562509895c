"""The cache models on hand-computed runs, the breakpoint tokenization, and an independent openai check."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.common import BUG17
from tests.helpers.factory import sample_state
from workingset import providers
from workingset.compare import engine as bench
from workingset.compare.billing import TTLS, CacheOptions, Prompt, bill, model_names, state_time
from workingset.compare.wire import body_prompt
from workingset.encoders import ENCODERS
from workingset.errors import UsageError
from workingset.runs.layout import read_run
from workingset.tokens import count as tokens


def tok(*runs: range | list[int]) -> list[int]:
    return [t for run in runs for t in run]


def split(bills) -> list[tuple[int, int, int, float]]:
    """(uncached, written, read, cost) per prompt, cost rounded to hide float noise."""
    return [(b.uncached, b.written, b.read, round(b.cost, 6)) for b in bills]


# -- ideal ----------------------------------------------------------------------------------


def test_ideal_reads_the_common_prefix_with_the_previous_prompt_only():
    run = [
        Prompt(tok(range(1, 5))),
        Prompt(tok(range(1, 4), [5, 6])),
        Prompt([9]),
        Prompt(tok(range(1, 5))),
    ]
    # 4 new; 3 shared + 2 new; nothing shared with the one before; the first prompt is not looked at.
    assert split(bill("ideal", run)) == [
        (4, 0, 0, 4.0),
        (2, 0, 3, 2.3),
        (1, 0, 0, 1.0),
        (4, 0, 0, 4.0),
    ]


# -- anthropic ------------------------------------------------------------------------------

A = CacheOptions(cache_min=3)  # 5m TTL: 300 s, write 1.25, read 0.1


def test_anthropic_writes_to_the_last_breakpoint_and_reads_the_longest_entry():
    run = [
        Prompt(tok(range(1, 11)), (4, 8), time=0),  # nothing cached: 8 written, 2 uncached
        Prompt(
            tok(range(1, 9), [20, 21, 22, 23]), (4, 12), time=100, blocks=(4, 8, 12)
        ),  # 1..8 read, 9..12 written
        Prompt(
            tok(range(1, 9), [30, 31]), (10,), time=450
        ),  # every entry last used at 100: expired at 400
    ]
    bills = split(bill("anthropic", run, A))
    assert bills == [
        (2, 8, 0, 2 + 1.25 * 8),
        (0, 4, 8, 1.25 * 4 + 0.8),
        (0, 10, 0, 12.5),
    ]  # the README's example


def test_anthropic_reads_only_at_a_block_boundary_of_the_request():
    """An entry that ends inside one of this request's blocks is never read (the issue-21 journal case)."""
    first = Prompt(tok(range(1, 11)), (4, 8), time=0)
    mid = Prompt(
        tok(range(1, 9), [20, 21, 22, 23]), (4, 12), time=100, blocks=(4, 12)
    )  # 5..12 one block
    assert split(bill("anthropic", [first, mid], A))[1] == (
        0,
        8,
        4,
        1.25 * 8 + 0.4,
    )  # only 1..4 is a boundary


def test_anthropic_looks_back_twenty_blocks_from_a_breakpoint_and_no_further():
    """A hit 19 blocks behind the breakpoint's block is read; 20 behind, nothing is."""
    for behind, read in ((19, 3), (20, 0)):
        ends = tuple(
            range(3, 3 * (behind + 2), 3)
        )  # block ends 3, 6, ...: the breakpoint ends the last
        second = Prompt(list(range(ends[-1])), (ends[-1],), time=1, blocks=ends)
        bills = bill("anthropic", [Prompt(list(range(3)), (3,), time=0), second], A)
        assert bills[1].read == read and bills[1].written == ends[-1] - read
        # A second breakpoint within 20 blocks of the old entry brings it back into reach.
        near = Prompt(list(range(ends[-1])), (ends[1], ends[-1]), time=1, blocks=ends)
        assert bill("anthropic", [Prompt(list(range(3)), (3,), time=0), near], A)[1].read == 3


def test_cache_minimum_follows_the_model():
    assert (
        CacheOptions().cache_min == 1024 and CacheOptions(model="claude-opus-4-6").cache_min == 4096
    )
    assert (
        CacheOptions(model="claude-3-5-haiku-20241022").cache_min == 2048
    )  # a dated name: its family
    assert (
        CacheOptions(model="claude-opus-4-1").cache_min == 1024
        and CacheOptions(model="gpt-5.6").cache_min == 1024
    )
    assert CacheOptions(model="claude-opus-4-6", cache_min=7).cache_min == 7  # --cache-min wins
    with pytest.raises(UsageError, match="no cache minimum known"):
        CacheOptions(model="gemini-3")


def test_anthropic_gap_longer_than_the_ttl_empties_the_cache():
    run = [Prompt(tok(range(1, 11)), (8,), time=0), Prompt(tok(range(1, 11)), (8,), time=301)]
    assert split(bill("anthropic", run, A)) == [(2, 8, 0, 12.0), (2, 8, 0, 12.0)]
    # at exactly the TTL the entry still lives
    run[1] = Prompt(tok(range(1, 11)), (8,), time=300)
    assert split(bill("anthropic", run, A))[1] == (2, 0, 8, 2.8)


def test_anthropic_read_refreshes_the_entry():
    run = [
        Prompt(tok(range(1, 9)), (8,), time=0),  # entry 1..8, lives until 300
        Prompt(
            tok(range(1, 9), [20, 21, 22, 23]), (12,), time=200, blocks=(8, 12)
        ),  # reads 1..8: lives until 500
        Prompt(
            tok(range(1, 9), [40, 41]), (10,), time=450, blocks=(8, 10)
        ),  # 1..12 is no prefix; 1..8 is, alive
    ]
    assert split(bill("anthropic", run, A)) == [(0, 8, 0, 10.0), (0, 4, 8, 5.8), (0, 2, 8, 3.3)]


def test_anthropic_minimum_breakpoints_and_ttl_prices():
    short = [Prompt([1, 2, 5], (2,), time=0), Prompt([1, 2, 6], (2,), time=1)]
    assert split(bill("anthropic", short, A)) == [
        (3, 0, 0, 3.0),
        (3, 0, 0, 3.0),
    ]  # under the minimum
    # An entry past this prompt's last breakpoint cannot be read (hits are found at or behind it).
    late = [Prompt(tok(range(1, 11)), (8,), time=0), Prompt(tok(range(1, 11)), (4,), time=1)]
    assert split(bill("anthropic", late, A))[1] == (6, 4, 0, 6 + 1.25 * 4)
    # No breakpoints: nothing is written or read.
    assert split(bill("anthropic", [Prompt(tok(range(1, 11)))] * 2, A)) == [(10, 0, 0, 10.0)] * 2
    hour = bill("anthropic", [Prompt(tok(range(1, 11)), (8,))], CacheOptions(ttl="1h", cache_min=3))
    assert split(hour) == [(2, 8, 0, 18.0)]
    custom = bill(
        "anthropic", [Prompt(tok(range(1, 11)), (8,))], CacheOptions(cache_min=3, write_price=1.5)
    )
    assert split(custom) == [(2, 8, 0, 14.0)]


# -- openai-5.6 -----------------------------------------------------------------------------


def test_openai_56_matches_breakpoint_entries_exactly_and_writes_at_125():
    o = CacheOptions(cache_min=3)
    run = [
        Prompt(tok(range(1, 11)), (4, 8), time=0),  # explicit mode: writes to 8 at 1.25
        Prompt(
            tok(range(1, 8), [40, 41, 42]), (4, 10), time=10
        ),  # 1..8 is no prefix: no shorter fall-back but 1..4
        Prompt(
            tok(range(1, 11)), (), time=20, implicit=10
        ),  # implicit only: reads 1..8, writes 9..10
        Prompt(
            tok(range(1, 11)), (), time=20 + 1801
        ),  # 30 min later every entry has expired; nothing written
    ]
    assert split(bill("openai-5.6", run, o)) == [
        (2, 8, 0, 2 + 1.25 * 8), (0, 6, 4, 1.25 * 6 + 0.4), (0, 2, 8, 2.5 + 0.8), (10, 0, 0, 10.0),
    ]  # fmt: skip


def test_openai_56_writes_at_most_four_breakpoints_the_implicit_among_them():
    o = CacheOptions(cache_min=1)
    five = Prompt(
        list(range(20)), (2, 4, 6, 8), time=0, implicit=20
    )  # implicit + the latest three explicit
    second = Prompt(list(range(20)), (2,), time=1, implicit=3)
    # (2,) was not written by the first request (the implicit took its write), so 2 is no entry;
    # the second request reads the first's 20-token implicit entry, the longest exact prefix.
    assert split(bill("openai-5.6", [five, second], o)) == [(0, 20, 0, 25.0), (0, 0, 20, 2.0)]
    third = Prompt(
        list(range(2)) + [99] * 18, (2,), time=2
    )  # shares only 0..1: 2 was never written
    assert bill("openai-5.6", [five, third], o)[1].read == 0


# -- openai-auto (before GPT-5.6) -------------------------------------------------------------


def test_openai_reads_whole_blocks_from_any_live_prompt():
    a = list(range(1300))
    b = [7] * 1300
    run = [
        Prompt(a, time=0),  # cacheable 1,280 (10 blocks) written, 20 uncached
        Prompt(
            a[:1200] + [-1 % 2**32] * 100, time=10
        ),  # shares 1,200 with a: reads 1,152, writes 128
        Prompt(b, time=20),  # shares nothing
        Prompt(
            a[:1100] + [5] * 400, time=30
        ),  # shares 1,100 with a (not with b, the one before): 1,024
        Prompt(a[:1000] + [5] * 500, time=40),  # 1,000 shared rounds down to 896, under the minimum
        Prompt([1, 2, 3], time=50),  # under the minimum: not an entry, nothing read
        Prompt(a, time=351),  # every earlier prompt expired (the last entry was written at 40)
    ]
    assert split(bill("openai-auto", run)) == [
        (20, 1280, 0, 1300.0), (20, 128, 1152, 263.2), (20, 1280, 0, 1300.0), (92, 384, 1024, 578.4),
        (92, 1408, 0, 1500.0), (3, 0, 0, 3.0), (20, 1280, 0, 1300.0),
    ]  # fmt: skip
    priced = bill("openai", run[:2], CacheOptions(write_price=1.25))  # the alias of openai-auto
    assert split(priced)[1] == (20, 128, 1152, 20 + 160 + 115.2)


def test_openai_entry_that_is_a_prefix_of_a_later_one_still_counts_through_it():
    a = list(range(2000))
    run = [Prompt(a[:1100], time=0), Prompt(a[:1500], time=1), Prompt(a[:1900] + [1], time=2)]
    assert [b.read for b in bill("openai-auto", run)] == [0, 1024, 1408]


def _reference_openai(
    runs: list[list[int]], times: list[float], ttl: float = 300, floor: int = 1024
) -> list[tuple]:
    """The openai rule written out plainly: (uncached, written, read) per prompt."""
    out = []
    for i, tokens_i in enumerate(runs):
        best = 0
        for j in range(i):
            if len(runs[j]) >= floor and times[i] - times[j] <= ttl:
                shared = 0
                while (
                    shared < min(len(runs[j]), len(tokens_i))
                    and runs[j][shared] == tokens_i[shared]
                ):
                    shared += 1
                best = max(best, shared)
        read = best // 128 * 128
        read = read if read >= floor else 0
        cacheable = len(tokens_i) // 128 * 128 if len(tokens_i) >= floor else 0
        out.append((len(tokens_i) - cacheable, cacheable - read, read))
    return out


# -- prompts: breakpoints as token offsets ------------------------------------------------------


@pytest.mark.parametrize("name", ["bug17-r0002.json", "bug17-r0018.json"])
def test_cutting_at_section_ends_tokenizes_like_the_whole_text(name):
    """Every encoder's section boundaries are token boundaries, so a breakpoint is an exact offset."""
    ctx = dict((p.name, c) for p, c in read_run(BUG17))[name]
    enc = tokens.get_encoding()
    for encoder in ENCODERS.values():
        out = encoder.render(ctx.state, ctx.hypothesis)
        ends, at = [], 0
        for _, n in out.chunks:
            at += n
            ends.append(at)
        whole = enc.encode_ordinary(out.text)
        cut, offsets = tokens.encode_at(out.text, ends[:-1])
        assert list(cut) == whole
        sent = bench.prompt(
            bench.version_renderer(f"v{encoder.version}")(ctx.state, ctx.hypothesis), None
        )
        assert list(sent.tokens) == whole and 1 <= len(sent.breakpoints) <= 4
        assert sent.breakpoints == tuple(offsets[ends.index(e)] for e in out.stable_ends())


def test_baseline_breakpoint_is_the_end_of_its_last_message():
    """The rolling breakpoint's prefix is a block boundary of the next turn's body, and is read there."""
    contexts = [ctx for _, ctx in read_run(BUG17)]
    render = bench.baseline_renderers()["full-transcript"]
    sent = [
        body_prompt(render(c.state, c.hypothesis).body("anthropic", None), "anthropic")
        for c in contexts[:4]
    ]
    for prev, cur in zip(sent, sent[1:]):
        (point,) = prev.breakpoints
        assert point == len(prev.tokens) and point in cur.blocks
        assert cur.tokens[:point] == prev.tokens[:point]
    bills = bill("anthropic", sent, CacheOptions(ttl="1h"))
    assert [b.read for b in bills[1:]] == [p.breakpoints[0] for p in sent[:-1]]


def test_prompt_rejects_more_than_four_or_unordered_breakpoints():
    with pytest.raises(UsageError, match="at most 4"):
        Prompt(list(range(10)), (1, 2, 3, 4, 5))
    with pytest.raises(UsageError, match="ascend"):
        Prompt(list(range(10)), (5, 3))
    with pytest.raises(UsageError, match="ascend"):
        Prompt(list(range(10)), (11,))


def test_every_encoder_declares_at_most_four_breakpoints():
    state = sample_state()
    for encoder in ENCODERS.values():
        assert 1 <= len(encoder.render(state, "H1").stable_ends()) <= 4


# -- options and times ---------------------------------------------------------------------


def test_model_names_and_options_are_validated():
    assert model_names(["openai,ideal", "anthropic", "ideal"]) == (
        "openai-auto",
        "ideal",
        "anthropic",
    )
    assert model_names(["openai-5.6,openai-auto,openai"]) == ("openai-5.6", "openai-auto")
    with pytest.raises(UsageError, match="available: ideal, anthropic, openai-auto, openai-5.6"):
        model_names(["anthropic,gemini"])
    with pytest.raises(UsageError, match="available: 5m, 1h"):
        CacheOptions(ttl="10m")
    assert (
        CacheOptions().write("anthropic") == 1.25
        and CacheOptions(ttl="1h").write("anthropic") == 2.0
    )
    assert (
        CacheOptions().write("openai-auto") == 1.0
        and CacheOptions(write_price=1.1).write("openai-auto") == 1.1
    )
    assert CacheOptions().write("openai-5.6") == 1.25
    assert (
        tuple(TTLS) == providers.TTLS
    )  # the TTLs `compare --ttl` and `render --messages --ttl` accept


def test_state_time_is_the_latest_capture_leap_seconds_and_lowercase_included():
    state = sample_state()
    seconds = [
        datetime.fromisoformat(e.captured_at.replace("Z", "+00:00")).timestamp()
        for e in state.evidence
    ]
    assert state_time(state) == max(seconds)
    first = msgspec.structs.replace(state.evidence[0], captured_at="2030-12-31t23:59:60z")
    leap = msgspec.structs.replace(state, evidence=[first, *state.evidence[1:]])
    assert state_time(leap) == datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
    bare = msgspec.structs.replace(state, evidence=[])
    assert (
        state_time(bare)
        == datetime.fromisoformat(state.case.opened_at.replace("Z", "+00:00")).timestamp()
    )


# -- property: the models against plain references on random runs ----------------------------


def _reference_anthropic(run: list[Prompt], opts: CacheOptions) -> list[tuple]:
    """The anthropic rule written out plainly: (uncached, written, read) per prompt.

    A hit is an earlier breakpoint's prefix, alive, equal to this prompt's tokens up to one of
    its block boundaries that lies at most 19 boundaries before one of its breakpoints.
    """
    entries: dict[tuple[int, ...], float] = {}  # prefix -> time last written or read
    out, now = [], 0.0
    for p in run:
        now = max(now, p.time) if p.time is not None else now
        tokens = list(p.tokens)
        bounds = list(p.blocks or p.breakpoints)
        last = p.breakpoints[-1] if p.breakpoints else 0
        live = {e: t for e, t in entries.items() if now - t <= opts.ttl_seconds}
        reach = {
            bounds[i]
            for b in p.breakpoints
            for i in range(len(bounds))
            if 0 <= bounds.index(b) - i < 20
        }
        hits = [
            e
            for e in live
            if len(e) >= max(opts.cache_min, 1) and len(e) in reach and tuple(tokens[: len(e)]) == e
        ]
        read = max((len(e) for e in hits), default=0)
        written = last - read if last >= max(opts.cache_min, 1) else 0
        if read:
            live[tuple(tokens[:read])] = now
        for b in p.breakpoints:
            if b >= max(opts.cache_min, 1):
                live[tuple(tokens[:b])] = now
        entries = live
        out.append((len(tokens) - read - written, written, read))
    return out


@st.composite
def runs(draw, length: int = 700):
    """Prompts that reuse prefixes of earlier ones, with breakpoints and times that sometimes gap."""
    prompts: list[Prompt] = []
    now = 0.0
    for _ in range(draw(st.integers(1, 6))):
        base = (
            list(draw(st.sampled_from(prompts)).tokens) if prompts and draw(st.booleans()) else []
        )
        keep = draw(st.integers(0, len(base)))
        tail = draw(st.lists(st.integers(0, 3), min_size=1, max_size=length))
        tokens = base[:keep] + tail
        points = sorted(set(draw(st.lists(st.integers(1, len(tokens)), max_size=4))))
        # Block ends: the breakpoints, some random ends, and (sometimes) every token, so lookbacks of 20 matter.
        every = draw(st.booleans())
        ends = (
            set(range(1, len(tokens) + 1))
            if every
            else set(draw(st.lists(st.integers(1, len(tokens)), max_size=30)))
        )
        blocks = tuple(sorted(ends | set(points) | {len(tokens)})) if draw(st.booleans()) else ()
        now += draw(st.sampled_from([0, 10, 200, 299, 300, 301, 4000]))
        prompts.append(Prompt(tokens, tuple(points), now, blocks))
    return prompts


@settings(max_examples=150, deadline=None)
@given(runs(), st.sampled_from([0, 1, 64, 256]), st.sampled_from(["5m", "1h"]))
def test_models_equal_plain_references_on_random_runs(run, floor, ttl):
    opts = CacheOptions(ttl=ttl, cache_min=floor)
    got = {m: bill(m, run, opts) for m in ("ideal", "anthropic", "openai-auto", "openai-5.6")}
    for bills in got.values():
        assert all(
            b.uncached + b.written + b.read == b.tokens == len(p.tokens) for b, p in zip(bills, run)
        )
    assert [(b.uncached, b.written, b.read) for b in got["anthropic"]] == _reference_anthropic(
        run, opts
    )
    times = [max(p.time for p in run[: i + 1]) for i in range(len(run))]
    reference = _reference_openai([list(p.tokens) for p in run], times, opts.ttl_seconds, floor)
    assert [(b.uncached, b.written, b.read) for b in got["openai-auto"]] == reference
