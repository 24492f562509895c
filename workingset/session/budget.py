"""An analysis's context budget: refused at creation when its fixed parts pass it, and moved up later.

Under v14 (and any version with `fixed_chars`), the preamble, a page of the case and the
tail's lines are what no walk of the journal shrinks; when they alone pass the budget every
`next` is `too_large`. `check_fixed_parts` refuses such a state at `create`, with both sizes.
And since a state grows (hypotheses, recalls of long entries), `raise_budget` lets an
analysis move to a larger budget of its own version: a `budget` event in the log (replayed,
exported and replayed by `workingset replay` like any other), the analysis's encoder set in
the same transaction. Only up, and only within the version: the decisions accepted so far
were checked by that version's rules, and a smaller budget could put the analysis behind
its own budget again (docs/protocol.md#the-context-budget).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .. import controller as ctl
from ..encoders import get_encoder
from ..errors import SessionError, TooLarge, UsageError
from ..eventlog.log import BudgetEvent
from ..model.state import State
from .calls import closed, stored_encoder


class BudgetRaised(msgspec.Struct, kw_only=True):
    """The outcome of `raise_budget`: the encoder of the analysis's next requests, and the one before."""

    analysis_id: str
    encoder: str
    prior_encoder: str
    budget: int
    prior_budget: int


def check_fixed_parts(state: State, encoder: Any) -> None:
    """Refuse (`too_large`) a state whose fixed parts alone pass `encoder`'s budget, for the hypothesis served first."""
    fixed = getattr(encoder, "fixed_chars", None)
    if fixed is None:
        return
    ready = [h.id for h in state.hypotheses if ctl.unavailable_reason(state, h.id) is None]
    if not ready:
        return  # no hypothesis can take a turn: nothing is ever rendered
    hypothesis = ctl.schedule(state, busy=())
    chars = fixed(state, hypothesis)
    if chars > encoder.budget:
        raise TooLarge(
            f"{encoder.name}: the preamble, the case and this turn's lines alone take {chars} characters "
            f"for {hypothesis}, more than the budget of {encoder.budget}, so no request of this analysis "
            f"could ever be rendered; create it with a larger budget (v{encoder.version}:budget=N, N more than {chars} at least)",
            details={
                "chars": chars,
                "budget": encoder.budget,
                "hypothesis": hypothesis,
                "part": "fixed",
            },
        )


def raise_budget(inv: Any, budget: int) -> BudgetRaised:
    """Move the analysis of `inv` (an `Investigation`: not imported, it imports this) to `budget` characters of its own version."""
    if type(budget) is not int:
        raise UsageError(f"a budget is a number of characters, not {type(budget).__name__}")
    aid = inv.analysis_id
    with inv._call(write=True) as call:
        tx = call.tx
        row = inv._row(tx)
        if row.status in ctl.TERMINAL:
            raise closed(row)
        current = stored_encoder(row.encoder, f"analysis {aid}")
        prior = getattr(current, "budget", None)
        if prior is None or not hasattr(current, "with_options"):
            raise SessionError(f"analysis {aid} renders with {row.encoder}, which has no context budget to raise",
                               code="invalid_transition", details={"encoder": row.encoder})  # fmt: skip
        new = get_encoder(f"v{current.version}:budget={budget}")  # unknown_encoder out of range
        if budget <= prior:
            raise SessionError(
                f"analysis {aid} has a budget of {prior} characters ({row.encoder}); a budget only grows, "
                f"so not {budget}: a smaller one could put the analysis behind its own budget again",
                code="invalid_transition", details={"encoder": row.encoder, "budget": prior, "asked": budget},
            )  # fmt: skip
        # Appended to a sound log only, as every write (see `Call.checked`).
        call.checked(inv.store.path, tx.open_request(aid))
        call.change()  # synced: the kept state's position moves past this event
        call.append(
            "budget", BudgetEvent(encoder=new.name, prior_encoder=row.encoder), inv._clock()
        )
        tx.set_encoder(aid, new.name)
        return BudgetRaised(analysis_id=aid, encoder=new.name, prior_encoder=row.encoder, budget=budget,
                            prior_budget=prior)  # fmt: skip
