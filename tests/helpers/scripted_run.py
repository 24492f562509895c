"""A controller that runs one analysis with `Investigation.run`, a scripted model and query runner, and a fixed clock.

`python -m tests.helpers.scripted_run STORE OUT [KILL]` (from the repository root) runs it to
the end and exports it to OUT; with KILL (`send:N` or `query:N`) the process kills itself
with SIGKILL at the N-th model call or query instead, as a crash would. The crash tests run
it killed, then again, and compare the export with an uninterrupted run's, byte for byte.
"""

from __future__ import annotations

import os
import signal
import sys

from tests.helpers.session_helpers import assess, conclude, decision, query, state_bytes
from workingset import Investigation
from workingset.testing import FixedClock, anthropic_refusal, anthropic_reply


def model_reply(attempt):
    """Query, query again assessing the first result, then conclude; the second request is refused once."""
    owed = attempt.assess
    if attempt.request.request_id.endswith("r0002") and attempt.number == 1:
        return anthropic_refusal("not now")
    if owed is not None and owed >= "E000008":
        return anthropic_reply(decision(conclude("supported", owed), assess(owed, "supports", 0.9)))
    return anthropic_reply(
        decision(query(f"select {owed or 'first'}"), assess(owed) if owed else None)
    )


def scripted_send(body, attempt):
    """`send` of the scripted model (the body is what it would merge into the call)."""
    return model_reply(attempt)


def main(store: str, out: str, kill: str | None = None) -> None:
    counts = {"send": 0, "query": 0}

    def maybe_die(what: str) -> None:
        counts[what] += 1
        if kill == f"{what}:{counts[what]}":
            os.kill(os.getpid(), signal.SIGKILL)

    def send(body, attempt):
        maybe_die("send")
        return model_reply(attempt)

    def run_query(source, text):
        maybe_die("query")
        return {"kind": "rows", "columns": ["q"], "rows": [[text]]}

    with Investigation.open_or_create(
        store, state_bytes(), encoder="v13", clock=FixedClock()
    ) as inv:
        summary = inv.run(send, run_query, "anthropic", cost=0.5)
        assert (summary.status, summary.termination_reason) == ("completed", "root_cause_found")
        inv.export(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
