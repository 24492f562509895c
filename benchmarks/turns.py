"""The controller's turn on the SQLite store: time of submit plus next, and bytes written.

A turn here is what a controller does between two model calls: `submit` the model's
decision for the open request and ask for the `next` request. Between them the application
`record`s the result of the query the decision asked for (timed apart). Every decision
assesses the hypothesis's pending result (when it has one, as rule A requires) and asks one
query; every result is a new ~2.5 kB log excerpt, so each turn adds real content.

The store is a file in a temporary directory of the benchmark's working disk, WAL mode
with `synchronous = FULL` (durable), exactly as the library opens it. One `Investigation`
handle makes every turn, as a controller process would: it keeps the replayed state and each
call reads only the events appended since (none here, no other process writes). What a new
process pays once, rebuilding the state from the latest snapshot and the events after it, is
timed apart (`replay`). The
time `next` spends in the encoder's `render` is timed inside each turn (the encoder's
`render` wrapped with a clock), so a turn splits into rendering the request, which no store
change can shorten (v10 writes every item of the state), and the rest (`store`): the two
transactions, catching up, validation, applying and writing (the medians of the two parts
need not add up to the median of their sum).

Bytes written per turn are reported two ways: `logical` is the growth of the stored event
and payload data (what the turn appends), `physical` the bytes the process handed to
write() during the turn (SQLite pages and WAL frames, from /proc/self/io), compared with the
new content: the decision's JSON plus the recorded result's JSON.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from _results import median, ms, p95

from workingset.model.state import State, copy_state

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class TurnStats:
    """Per-turn samples of one benchmark run."""

    submit_next: list[float]
    record: list[float]
    logical: list[int]
    physical: list[int | None]
    content: list[int]
    create: float
    parts: dict[str, list[int]]  # logical bytes per turn by event kind, and payloads
    replay: list[float]  # time to rebuild the current state as a new handle's first call does
    render: list[float]  # time spent in the encoder's render during each turn's next
    store: list[float]  # each turn's submit + next without that render
    # Joining each turn's request text from its sections as rendered (not part of the turn):
    # the least any render that returns the whole text as one string pays, however incremental.
    join: list[float] = field(default_factory=list)


def _wchar() -> int | None:
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _stored_bytes(path: str) -> dict[str, int]:
    """Stored event data per event kind, and payload data, in bytes."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = dict(
            conn.execute("SELECT kind, sum(length(data)) FROM events GROUP BY kind").fetchall()
        )
        out["payloads"] = conn.execute(
            "SELECT coalesce(sum(length(data)), 0) FROM payloads"
        ).fetchone()[0]
    finally:
        conn.close()
    return out


def _roomy(state: State) -> State:
    """A copy whose budgets and iteration limits never end the loop early."""
    state = copy_state(state)
    state.budget.max_iterations = state.iteration + 10_000
    state.budget.max_cost = None
    for h in state.hypotheses:
        h.control.iteration_limit = h.control.iterations_used + 10_000
        if h.disposition != "open":
            h.disposition = "open"
    return state


def _result(turn: int) -> bytes:
    lines = [f"2026-06-10T21:{turn % 60:02d}:{i % 60:02d}Z level=info worker={i % 7} lease renewed "
             f"shard={turn}-{i} latency_ms={(turn * 37 + i * 11) % 997}" for i in range(28)]  # fmt: skip
    return msgspec.json.encode({
        "scope": "log", "cost": 0.01,
        "capture": {"query": f'{{app="worker"}} |= "turn {turn}"', "origin": "loki:prod-eu", "eof": True,
                    "item_count": len(lines)},
        "payload": {"kind": "text", "language": "log", "text": "\n".join(lines)},
    })  # fmt: skip


def run_turns(state: State, turns: int, encoder: str = "v10", warmup: int = 3) -> TurnStats:
    """Create an analysis from `state` in a fresh store and time `turns` turns after `warmup`."""
    from workingset.encoders import get_encoder
    from workingset.eventlog.log import catch_up
    from workingset.session.investigation import Investigation

    state = _roomy(state)
    pending = {h.id: None for h in state.hypotheses}
    unsettled = {e.id for e in state.evidence if e.budget.status == "unsettled"}
    for h in state.hypotheses:
        if h.control.previous_result in unsettled:
            pending[h.id] = h.control.previous_result
    stats = TurnStats([], [], [], [], [], 0.0, {}, [], [], [])
    renderer = get_encoder(encoder)
    rendering: list[float] = []

    rendered: list = []

    def timed_render(*args, **kw):
        start = time.perf_counter()
        try:
            out = type(renderer).render(renderer, *args, **kw)
            rendered.append(out)
            return out
        finally:
            rendering.append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory(dir=ROOT / "benchmarks") as tmp:
        path = os.path.join(tmp, "store.sqlite3")
        start = time.perf_counter()
        inv = Investigation.create(path, state, encoder=encoder)
        stats.create = time.perf_counter() - start
        try:
            renderer.render = (
                timed_render  # shadows the method on the one instance get_encoder returns
            )
            request = inv.next_request()
            for turn in range(warmup + turns):
                hid = request.hypothesis
                decision: dict = {"next": {"kind": "query", "source": "loki:prod-eu",
                                           "query": f'{{app="worker"}} |= "turn {turn}"',
                                           "purpose": "check lease renewals around the incident"}}  # fmt: skip
                if pending[hid] is not None:
                    decision["assessment"] = {"evidence_ref": pending[hid], "verdict": "neutral",
                                              "confidence": 0.5, "rationale": "renewals look normal in this window"}  # fmt: skip
                body, result = msgspec.json.encode(decision), _result(turn)
                before_bytes, before_io = _stored_bytes(path), _wchar()
                t0 = time.perf_counter()
                applied = inv.submit(request.request_id, body)
                t1 = time.perf_counter()
                recorded = inv.record(applied.action, result)
                t2 = time.perf_counter()
                rendering.clear()
                rendered.clear()
                request = inv.next_request()
                t3 = time.perf_counter()
                after_io = _wchar()
                pending[hid] = recorded.evidence
                if turn < warmup:
                    continue
                stats.submit_next.append((t1 - t0) + (t3 - t2))
                stats.render.append(sum(rendering))
                stats.store.append(stats.submit_next[-1] - stats.render[-1])
                stats.record.append(t2 - t1)
                pieces = [text for _, text in rendered[-1].blocks()]
                start = time.perf_counter()
                joined = "".join(pieces)
                stats.join.append(time.perf_counter() - start)
                assert joined == rendered[-1].text
                del joined, pieces
                after_bytes = _stored_bytes(path)
                for kind in after_bytes:
                    grown = after_bytes[kind] - before_bytes.get(kind, 0)
                    stats.parts.setdefault(kind, []).append(grown)
                stats.logical.append(sum(after_bytes.values()) - sum(before_bytes.values()))
                stats.physical.append(None if before_io is None else after_io - before_io)
                stats.content.append(len(body) + len(result))
            for _ in range(max(3, turns // 4)):
                start = time.perf_counter()
                with inv.store.read() as tx:
                    catch_up(
                        tx, inv.analysis_id, None
                    )  # from the latest snapshot, as a new handle does
                stats.replay.append(time.perf_counter() - start)
        finally:
            del renderer.render
            inv.close()
    return stats


def breakdown(stats: TurnStats) -> str:
    """Where a turn's bytes go (median bytes per event kind), and a full replay's time."""
    parts = ", ".join(f"{kind} {median(v):,.0f}" for kind, v in sorted(stats.parts.items()))
    return (f"logical bytes per turn by kind: {parts}; rebuilding the state as a new process's first call "
            f"does (from the latest snapshot and the events after it; an analysis created from a state of 1 MB "
            f"or more has one from the start), not part of the turn, takes {ms(median(stats.replay))} ms")  # fmt: skip


def describe(label: str, stats: TurnStats) -> list[str]:
    """One Markdown table row: times (ms) and bytes per turn."""
    phys = [p for p in stats.physical if p is not None]
    content = median(stats.content)
    return [
        label, str(len(stats.submit_next)), f"{stats.create * 1000:.1f}",
        ms(median(stats.submit_next)), ms(p95(stats.submit_next)), ms(median(stats.render)), ms(median(stats.store)),
        ms(median(stats.record)),
        f"{median(stats.logical):,.0f}", f"{median(phys):,.0f}" if phys else "n/a", f"{content:,.0f}",
        f"{median(stats.logical) / content:.2f}x", f"{median(phys) / content:.2f}x" if phys else "n/a",
    ]  # fmt: skip


HEADERS = ["state", "turns", "create ms", "submit+next median ms", "submit+next p95 ms", "of it: render ms",
           "of it: the rest ms", "record median ms", "logical bytes/turn", "physical bytes/turn",
           "new content bytes/turn", "logical / content", "physical / content"]  # fmt: skip
