"""The replayed state of an analysis's event log: the state with the last event it reflects.

It sits below the log and its snapshots (`log` replays events into one, `snapshots` stores
and reads one back), so that neither imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import controller as ctl
from ..errors import StoreCorrupt
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

    def apply_decision(self, hypothesis_id: str, decision: Any, ids: ctl.Allocated) -> int:
        """Apply an accepted decision (as `controller.apply_decision`); return the iteration it consumed."""
        iteration = ctl.apply_decision(self.state, hypothesis_id, decision, ids)
        self.numbers.count_decision(ids)
        return iteration

    def apply_record(self, evidence: Evidence) -> None:
        """Append a recorded result (as `controller.apply_record`)."""
        ctl.apply_record(self.state, evidence)
        self.numbers.count_record(evidence)

    def note(self, seq: int, kind: str, size: int = 0) -> None:
        """Record that the event `seq` of `kind` (`size` bytes stored) is reflected (its change already applied)."""
        if seq != self.seq + 1:
            raise StoreCorrupt(f"event {seq} follows event {self.seq}: the event log has a gap")
        self.seq = seq
        self.logged += size
        if kind in _STATE_CHANGES:
            self.changed = seq
