"""Budget costs summed exactly, so every rendering of a budget shows what was spent.

A cost is a float in the formats (`model.Cost`), but binary floating point cannot add
decimals: 1.1 + 0.1 + 0.2 is 1.4000000000000004, and that noise reached the model in the
tail of the context (`cost 1.4000000000000004/25.0`). A budget's running sum is therefore
kept as the sum of the decimals its costs print as, stored as the float that prints as that
sum. Where the float sum already printed as the decimal sum, the result is that same float,
bit for bit: only sums that showed noise change.
"""

from __future__ import annotations

from decimal import Context, Decimal

# Enough digits to add any two finite floats exactly (their decimal forms span 1e-324 to 1e308).
_EXACT = Context(prec=800)


def add_cost(total: float, cost: float) -> float:
    """`total + cost` as decimals (0.30000000000000004 is 0.3 here), returned as the float nearest that sum."""
    return float(_EXACT.add(Decimal(repr(total)), Decimal(repr(cost))))


def cost_text(cost: float) -> str:
    """A cost for people: every digit it holds (`1234.5678`, not `:g`'s `1234.57`), a whole one without `.0`."""
    return repr(float(cost)).removesuffix(".0")
