"""A scripted model and a fixed clock: a controller's run, repeatable to the byte without a provider or the time.

`ScriptedModel` stands in for `send`: each call returns the next scripted reply (a reply's
JSON from `testing.replies`, or a function of the `Attempt` that builds one, for answers that
depend on the request, such as the evidence ID to assess). `FixedClock` is the `clock=` of
`Investigation.create`/`open_or_create`: every event's time comes from it instead of the wall
clock, so two runs of the same script export the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import UsageError
from ..session.attempts import Attempt

Step = dict[str, Any] | Callable[[Attempt], Any]


class ScriptedModel:
    """`send` for tests: the next scripted reply at each call; every body and attempt it was given is kept."""

    def __init__(self, *steps: Step) -> None:
        self.steps: list[Step] = list(steps)
        self.bodies: list[dict[str, Any]] = []
        self.attempts: list[Attempt] = []

    def __call__(self, body: dict[str, Any], attempt: Attempt) -> Any:
        self.bodies.append(body)
        self.attempts.append(attempt)
        if not self.steps:
            raise UsageError(
                f"the scripted model has no reply left for call {len(self.bodies)} "
                f"(request {attempt.request.request_id}, try {attempt.number})"
            )
        step = self.steps.pop(0)
        return step(attempt) if callable(step) else step

    @property
    def left(self) -> int:
        """How many scripted replies have not been asked for."""
        return len(self.steps)


class FixedClock:
    """A clock for `clock=`: `start` at the first call, then `step` seconds later at each call (0: always `start`).

    Times are RFC 3339 UTC with a `Z`, as the session writes them.
    """

    def __init__(self, start: str = "2026-01-01T00:00:00Z", step: int = 0) -> None:
        try:
            self._at = datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except (TypeError, ValueError):
            raise UsageError(
                f"a clock starts at an RFC 3339 UTC time like 2026-01-01T00:00:00Z, not {start!r}"
            ) from None
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise UsageError(
                f"a clock's step is a whole number of seconds, 0 or more, not {step!r}"
            )
        self._step = timedelta(seconds=step)
        self.calls = 0

    def __call__(self) -> str:
        now = self._at + self._step * self.calls
        self.calls += 1
        return now.strftime("%Y-%m-%dT%H:%M:%SZ")
