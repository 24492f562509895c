"""Property tests: random states render losslessly and deterministically under every version."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.recover import evidence_payloads, table_after, v13_index
from tests.helpers.strategies import states
from workingset.encoders import ENCODERS, get_encoder
from workingset.model.state import (
    copy_state,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=states(), hid=st.sampled_from(["H1", "H2", "H3"]))
def test_random_states_are_lossless_under_every_version(state, hid):
    by_id = {e.id: e for e in state.evidence}
    before = msgspec.json.encode(state)
    for encoder in [
        *ENCODERS.values(),
        get_encoder("v11:budget=20000"),
        get_encoder("v12:budget=20000"),
        get_encoder("v13:budget=20000"),
    ]:
        out = encoder.render(state, hid)
        assert encoder.render(copy_state(state), hid) == out
        recovered = evidence_payloads(out.text)
        assert sorted(recovered) == sorted(out.shown)
        for eid, payload in recovered.items():
            assert payload == msgspec.to_builtins(by_id[eid].payload)
        assert sorted(out.shown + out.indexed) == sorted(by_id)
        if (
            encoder.version >= 14
        ):  # an index of every kind of entry: tests/encoders/test_v14.py reads it back
            pass
        elif (
            encoder.version >= 13
        ):  # index rows as heads; a query past 200 characters shows its first 160
            index = v13_index(out.text)
            assert set(out.indexed) <= set(index) and not set(out.indexed) & set(out.shown)
            for eid, row in index.items():
                query = by_id[eid].capture.query
                cut = query is not None and len(query) > 200
                assert (row["query"], row["cut"]) == (
                    (query[:160], True) if cut else (query, False)
                )
                assert row["query_chars"] == (None if query is None else len(query))
        elif (
            encoder.version >= 11
        ):  # the index holds every archived item; the tail shows the working set's
            rows = table_after(out.text, "evidence_index")[1] if out.indexed else []
            assert set(out.indexed) <= {r[0] for r in rows} and not set(out.indexed) & set(
                out.shown
            )
            assert all(r[5] == by_id[r[0]].capture.query for r in rows)
        elif encoder.supports_recall:
            _, rows = table_after(out.text, "## evidence_index")
            assert [r[0] for r in rows] == list(out.indexed)
            assert all(r[3] == by_id[r[0]].capture.query for r in rows)
    assert msgspec.json.encode(state) == before
