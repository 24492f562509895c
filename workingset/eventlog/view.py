"""The replayed state of an analysis's event log: the state with the last event it reflects.

It sits below the log and its snapshots (`log` replays events into one, `snapshots` stores
and reads one back), so that neither imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import controller as ctl
from ..errors import StoreCorrupt
from ..model.lifecycle import Usage, queries_run
from ..model.state import Evidence, State

_STATE_CHANGES = frozenset({"created", "decision", "record"})


@dataclass
class Replayed:
    """The state after the events up to `seq`; `changed` is the last event that changed it.

    `request` and lifecycle events leave the state as it is, so the state at any event from
    `changed` to `seq` is this one. `numbers` are the highest evidence, note and budget-action
    numbers of the state and of the store's actions (which decisions allocated), kept up to
    date so that new IDs are allocated without a scan.
    """

    state: State
    seq: int
    changed: int
    numbers: ctl.Numbers
    requests_before: int = 0  # requests are numbered after this one (see `CreatedEvent`)
    # Evidence whose payload is still in the store (its content hash kept): payloads are read
    # only when something needs them (`fill`: rendering, showing, a recall or span check).
    unfilled: list[Evidence] = field(default_factory=list)
    # How many of `unfilled`, from its start, have been found stored and hashing right
    # (`check_stored`): each is checked once per kept state, not again at every call.
    checked: int = 0
    # Bytes of events since the latest snapshot (or the `created` event), and that one's size:
    # a new snapshot is due when the first reaches the second (see `snapshots.snapshot_due`).
    logged: int = 0
    base_bytes: int = 0
    # What an encoder keeps between the renders of this state as it grows (v11's journal
    # walk), by encoder name: the state's entries only ever get appended to.
    renders: dict[str, Any] = field(default_factory=dict)
    # The bounds the log counts (`note`): answers kept (model calls), the creation time, the
    # paused seconds so far, since when it is paused, and when it ended (a terminal status).
    model_calls: int = 0
    created_at: str | None = None
    paused_seconds: float = 0.0
    paused_since: str | None = None
    stopped_at: str | None = None
    last_at: str | None = None  # the time of the last event reflected

    def usage(self, now: str | None = None) -> Usage:
        """What the analysis has used of its bounds at time `now` (None: as of its last event, as `show` says)."""
        return Usage(
            queries=queries_run(self.state), model_calls=self.model_calls, seconds=self.seconds(now)
        )

    def seconds(self, now: str | None) -> float:
        """Execution time from creation to `now` (or the end), paused time left out; 0 without times."""
        if self.created_at is None:
            return 0.0
        # A paused or ended analysis's clock stands still.
        end = self.stopped_at or self.paused_since or now or self.last_at
        if end is None:
            return 0.0
        spent = _between(self.created_at, end) - self.paused_seconds
        return max(0.0, round(spent, 3))

    def apply_decision(self, hypothesis_id: str, decision: Any, ids: ctl.Allocated) -> int:
        """Apply an accepted decision (as `controller.apply_decision`); return the iteration it consumed."""
        iteration = ctl.apply_decision(self.state, hypothesis_id, decision, ids)
        self.numbers.count_decision(ids)
        return iteration

    def apply_record(self, evidence: Evidence) -> None:
        """Append a recorded result (as `controller.apply_record`)."""
        ctl.apply_record(self.state, evidence)
        self.numbers.count_record(evidence)

    def note(
        self, seq: int, kind: str, size: int = 0, at: str | None = None, status: str | None = None
    ) -> None:
        """Record that the event `seq` of `kind` (`size` bytes stored, at `at`, setting `status`) is reflected.

        Its change must already be applied. This is the one place the log's own bounds are
        counted: each `answer` event is one model call (a reply kept, retries and rejections
        too), and the times of the status changes give the execution time.
        """
        if seq != self.seq + 1:
            raise StoreCorrupt(f"event {seq} follows event {self.seq}: the event log has a gap")
        self.seq = seq
        self.logged += size
        if kind in _STATE_CHANGES:
            self.changed = seq
        if (
            kind == "answer" and self.stopped_at is None
        ):  # replies to an ended analysis use no budget
            self.model_calls += 1
        if at is None:
            return
        self.last_at = at
        if kind == "created":
            self.created_at = at
        if status is None:
            return
        if self.paused_since is not None and status != ctl.PAUSED:
            self.paused_seconds += _between(self.paused_since, at)
            self.paused_since = None
        if status == ctl.PAUSED and self.paused_since is None:
            self.paused_since = at
        if status in ctl.TERMINAL and self.stopped_at is None:
            self.stopped_at = at


def _between(start: str, end: str) -> float:
    """Seconds from one RFC 3339 time to another (0 if either does not parse)."""
    try:
        a = datetime.fromisoformat(start.replace("z", "Z"))
        b = datetime.fromisoformat(end.replace("z", "Z"))
    except ValueError:
        return 0.0
    return max(0.0, (b - a).total_seconds())
