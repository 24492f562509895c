"""A budget's cost_used is the exact sum of its costs: no float noise reaches the model or `show`."""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.session_helpers import decision, make_state, query, result
from workingset.encoders import ENCODERS, get_encoder
from workingset.io.limits import MAX_COST
from workingset.model.costs import add_cost, cost_text
from workingset.session.investigation import Investigation
from workingset.session.replies import describe

costs = st.floats(min_value=0, max_value=MAX_COST / 2, allow_nan=False, allow_infinity=False)


@given(total=costs, cost=costs)
def test_a_sum_that_was_exact_is_the_same_float_and_any_other_prints_as_the_decimal_sum(
    total, cost
):
    exact = Decimal(repr(total)) + Decimal(repr(cost))
    summed = add_cost(total, cost)
    if (
        Decimal(repr(total + cost)) == exact
    ):  # the float sum showed no noise: nothing changes, bit for bit
        assert summed.hex() == (total + cost).hex()
    assert summed == float(exact)  # the float nearest the decimal sum


def test_the_noise_of_binary_floats_is_gone():
    assert (1.1 + 0.1 + 0.2, 0.1 + 0.2) == (1.4000000000000001, 0.30000000000000004)
    assert add_cost(add_cost(1.1, 0.1), 0.2) == 1.4
    assert add_cost(0.1, 0.2) == 0.3 and add_cost(0.25, 0.5) == 0.75


def test_cost_text_keeps_every_digit():
    assert [cost_text(c) for c in (1.4, 25.0, 0.0, 1234.5678, 1e-07, 1e16)] == [
        "1.4",
        "25",
        "0",
        "1234.5678",
        "1e-07",
        "1e+16",
    ]


def test_after_costs_0_1_and_0_2_every_rendering_says_what_was_spent(tmp_path):
    state = make_state(max_cost=25.0)
    state["budget"]["cost_used"] = 1.1
    inv = Investigation.create(str(tmp_path / "s.db"), json.dumps(state).encode(), encoder="v13",
                               clock=lambda: "2026-06-10T21:00:00Z")  # fmt: skip
    for hypothesis, cost in (
        ("H1", 0.1),
        ("H2", 0.2),
    ):  # two hypotheses: neither result needs assessing first
        applied = inv.submit(inv.next_request(hypothesis).request_id, decision(query()))
        inv.record(applied.action, result(cost=cost))
    request = inv.next_request("H3")
    assert " · cost 1.4/25.0\n" in request.text
    summary = inv.show()
    assert summary.state.budget.cost_used == 1.4
    assert "cost used: 1.4 of 25\n" in describe(summary)
    for version in sorted(ENCODERS):  # the same state, as every version writes its budget
        text = get_encoder(f"v{version}").render(summary.state, "H3").text
        assert "1.4" in text and "1.4000000000000004" not in text, version
    inv.close()
