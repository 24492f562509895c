"""The evidence block cache: a warm render is byte for byte the render of an empty cache, whatever changed."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.factory import evidence, sample_state
from tests.helpers.strategies import states
from workingset.encoders import ENCODERS
from workingset.encoders._cache import BLOCKS, CACHED_VERSIONS, BlockCache
from workingset.model.state import RowsPayload, TextPayload, copy_state


def cold(encoder, state, hid):
    """The render with no cached block at all."""
    saved = BLOCKS._blocks.copy(), BLOCKS._chars
    BLOCKS.clear()
    try:
        return encoder.render(state, hid)
    finally:
        BLOCKS._blocks, BLOCKS._chars = saved


@pytest.mark.parametrize("version", sorted(CACHED_VERSIONS))
def test_a_second_render_reuses_every_block_and_equals_the_first(version):
    encoder = ENCODERS[version]
    state = sample_state()
    BLOCKS.clear()
    first = encoder.render(state, "H1")
    misses = BLOCKS.misses
    assert misses > 0 and BLOCKS.hits == 0
    assert encoder.render(copy_state(state), "H1") == first  # equal copies: every block is a hit
    assert BLOCKS.misses == misses and BLOCKS.hits == misses


def test_a_budget_changed_in_place_renders_anew(encoder):
    state = sample_state()
    encoder.render(state, "H2")
    for ev in state.evidence:  # what assessing a result does: the status changes in place
        ev.budget.status = "settled" if ev.budget.status == "unsettled" else "unsettled"
        ev.budget.cost += 1.5
    assert encoder.render(state, "H2") == cold(encoder, state, "H2")


def test_references_and_roles_are_part_of_the_key(encoder):
    """v5+ render a repeated payload as a reference to the earlier shown item; v8+ title items with roles."""
    state = sample_state()
    twin = msgspec.structs.replace(
        state.evidence[0], id="E000090", payload=copy_state(state).evidence[0].payload
    )
    state.evidence.append(twin)
    for hid in ("H1", "H2", "H3", "H1"):
        assert encoder.render(state, hid) == cold(encoder, state, hid)
    state.evidence.remove(
        state.evidence[0]
    )  # the twin now holds the first copy: no reference any more
    for hid in ("H1", "H2"):
        assert encoder.render(state, hid) == cold(encoder, state, hid)


def test_a_payload_with_a_forged_hash_never_takes_another_block(encoder):
    state = sample_state()
    encoder.render(state, "H1")
    ev = state.evidence[1]
    # Same ID, same content hash, another payload (a collision, or a caller's replacement object).
    ev.payload = TextPayload(language=None, text="not what was rendered before") if isinstance(ev.payload, RowsPayload) \
        else RowsPayload(columns=["x"], rows=[[1]])  # fmt: skip
    assert encoder.render(state, "H1") == cold(encoder, state, "H1")


def test_the_cache_stays_within_its_limit():
    cache = BlockCache(limit_chars=10_000)
    enc = ENCODERS[10]
    state = sample_state()
    for n in range(200):
        state.evidence.append(
            evidence(100 + n, "H1", TextPayload(language=None, text=f"item {n} " * 20))
        )
    view = enc.select(state, state.hypotheses[0])
    view.refs = enc.references(view)
    for ev in view.shown:
        assert cache.block(enc, ev, view, enc.evidence_block) == enc.evidence_block(ev, view)
    assert 0 < cache._chars <= 10_000 and cache._chars == sum(
        len(t) for _, t in cache._blocks.values()
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    state=states(),
    hids=st.lists(st.sampled_from(["H1", "H2", "H3"]), min_size=2, max_size=4),
    data=st.data(),
)
def test_random_turns_render_as_with_an_empty_cache(state, hids, data):
    """Random states, rendered for several hypotheses with random in-place changes between: warm == cold."""
    for hid in hids:
        for encoder in ENCODERS.values():
            assert encoder.render(state, hid) == cold(encoder, state, hid)
        ev = data.draw(st.sampled_from(state.evidence))
        change = data.draw(st.sampled_from(["status", "drop_first", "copy_payload", "none"]))
        if change == "status":
            ev.budget.status = data.draw(st.sampled_from(["settled", "unsettled", "none"]))
        elif (
            change == "drop_first"
            and len(state.evidence) > 1
            and not any(state.evidence[0].id in sel.evidence_refs for sel in state.recall.values())
        ):
            state.evidence.pop(0)
        elif change == "copy_payload" and ev.payload is not None:
            ev.payload = msgspec.json.decode(msgspec.json.encode(ev.payload), type=type(ev.payload))


@pytest.mark.parametrize("version", sorted(ENCODERS))
def test_versions_outside_the_list_never_use_the_cache(monkeypatch, version):
    import workingset.encoders._cache as cache_module

    monkeypatch.setattr(cache_module, "CACHED_VERSIONS", frozenset())
    BLOCKS.clear()
    ENCODERS[version].render(sample_state(), "H1")
    assert BLOCKS.hits == BLOCKS.misses == 0
