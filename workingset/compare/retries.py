"""Retry turns: the further requests an exported analysis's rejected answers led to, as sent.

A rejected answer goes back to the model with its rejection (`providers.messages(...,
retry=...)`): the same request, plus the rejected answers and rejection texts so far. An
export records them (`answers.jsonl`, read by `runs.layout.read_retries`); a request's k-th
retry carries its first k turns. They are billed for the encoder versions, which replay the
recorded analysis (its states, its answers); a baseline is another agent's transcript, asked
no decision, so it has none.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DecisionRejected
from ..providers import Answer, as_sent


def retry_pairs(
    turns: Sequence[tuple[bytes, DecisionRejected]], provider: str
) -> list[tuple[Answer, DecisionRejected]]:
    """The `retry` argument of `providers.messages` for these turns, oldest first."""
    return [(as_sent(answer, provider), err) for answer, err in turns]
