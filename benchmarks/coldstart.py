"""Cold start: the first call of a fresh process on an analysis of 10,000 evidence items, SQLite and PostgreSQL.

Run: .venv/bin/python benchmarks/coldstart.py [--items 10000] [--samples 5]

An analysis is created from the synthetic state (`synthetic.make_state`), a few turns are
made, and then each sample is a new Python process that opens the store and makes its first
call. Three first calls are timed, each in its own processes:

- `state`: reaching the current state, what `submit`, `record`, `pause`… do before their
  own work (a read transaction that restores the analysis's state and keeps it in the
  handle for the calls after it, as each of those calls does; payloads are not read: the
  writes' check that they are stored and hash right, `journal.check_stored`, which reads
  their bytes once per handle, is not part of this time), from
  the log alone: the snapshot `create` stored with the large initial state is removed first;
- `state, from a snapshot`: the same after a snapshot of the current state was written
  (the log has nothing after it);
- `next`: a v10 request, which renders every payload and so must read them all.

Times are wall clock inside the child, from before opening the store to the call's return
(interpreter start-up and imports excluded); CPU time is shown beside them because other
processes share the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))

from _results import median, write_section  # noqa: E402
from store_sql import execute, query  # noqa: E402

from workingset.eventlog.snapshots import SNAPSHOT_BODY_AT  # noqa: E402

CHILD = r"""
import json, sys, time
store, aid, what = sys.argv[1:4]
from workingset.session.investigation import Investigation
import workingset.encoders  # imports are not the call
if "://" in store:
    import psycopg
t0, c0 = time.perf_counter(), time.process_time()
inv = Investigation.open(store, aid)
if what == "next":
    inv.next_request()
else:
    with inv._call(write=False) as call:  # a read call that reaches the state and keeps it, as every call does
        call.sync()
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""
# The same-run reference for the machine's speed: decoding the snapshot's MessagePack body into
# plain Python objects (no classes, no checks) in a fresh process, as many objects as the call
# builds, with nothing else.
BASELINE = r"""
import json, sys, time
import msgspec
body = open(sys.argv[1], "rb").read()
t0, c0 = time.perf_counter(), time.process_time()
msgspec.msgpack.decode(body)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""


def _prepare(store: str, items: int, turns: int) -> str:
    from synthetic import make_state
    from turns import _roomy

    from workingset.session.investigation import Investigation

    state = _roomy(make_state(items))
    with Investigation.create(store, state, encoder="v10") as inv:
        for _ in range(
            turns
        ):  # answer with a conclusion-free query and record nothing: small turns
            req = inv.next_request()
            prev = inv.state.pending_result(req.hypothesis)
            decision = {"next": {"kind": "query", "source": "s", "query": "q", "purpose": "p"}}
            if prev:
                decision["assessment"] = {
                    "evidence_ref": prev,
                    "verdict": "neutral",
                    "confidence": 0.5,
                    "rationale": "r",
                }
            act = inv.submit(req.request_id, decision).action
            inv.record(act, {"scope": "log", "capture": {"origin": "s", "query": "q"}, "payload": {"kind": "text", "language": None,
                                                                                     "text": "x"}})  # fmt: skip
        return inv.analysis_id


def _snapshot(store: str, aid: str) -> None:
    """Write a snapshot of the current state now (as a write call does when one is due)."""
    from workingset.eventlog.log import catch_up
    from workingset.eventlog.snapshots import take_snapshot
    from workingset.store import open_store

    with open_store(store) as db, db.write() as tx:
        view = catch_up(tx, aid, None)
        tx.put_snapshot(aid, view.seq, take_snapshot(view))


def _stored_snapshot(store: str) -> tuple[bytes, str]:
    """The snapshot's bytes, and its size (as stored, where the backend compresses it)."""
    if "://" in store:
        ((data, stored),) = query(store, "SELECT data, pg_column_size(data) FROM snapshots")
        return bytes(data), f"{len(data):,} bytes, stored compressed in {stored:,}"
    ((data,),) = query(store, "SELECT data FROM snapshots")
    return data, f"{len(data):,} bytes"


def _verdict(backend: str, cells: dict, base: dict, size: str) -> str:
    wall, cpu = cells["wall"] * 1000, cells["cpu"] * 1000
    met = "met" if wall <= 50 else f"missed by {wall / 50:.2f}x"
    return (
        f"{backend} {wall:.1f} ms, {met} (the process's own CPU time {cpu:.1f} ms, waiting on the store "
        f"{max(wall - cpu, 0):.1f} ms; the snapshot {size}; the reference decode {base['cpu'] * 1000:.1f} ms, "
        f"the call's CPU time {cpu / (base['cpu'] * 1000):.2f}x it)"
    )


def _run(*argv: str) -> dict:
    return json.loads(
        subprocess.run(
            [sys.executable, "-c", *argv], check=True, capture_output=True, text=True
        ).stdout
    )


def _medians(runs: list[dict]) -> dict:
    return {k: median([r[k] for r in runs]) for k in ("wall", "cpu")}


def _sample(store: str, aid: str, what: str, n: int) -> dict:
    return _medians([_run(CHILD, store, aid, what) for _ in range(n)])


def _sample_with_baseline(store: str, aid: str, body: str, n: int) -> tuple[dict, dict]:
    """The first call from the snapshot and the reference decode, alternating, so both see the same machine."""
    pairs = [(_run(CHILD, store, aid, "state"), _run(BASELINE, body)) for _ in range(n)]
    return _medians([a for a, _ in pairs]), _medians([b for _, b in pairs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    import pg_server

    why = pg_server.missing()
    server = None if why else pg_server.Server(durable=True)
    rows = []
    verdicts = []
    try:
        with tempfile.TemporaryDirectory(dir=HERE) as tmp:
            stores = {"SQLite": os.path.join(tmp, "cold.sqlite3")}
            if server is not None:
                stores["PostgreSQL"] = server.database()
            for backend, store in stores.items():
                aid = _prepare(store, args.items, turns=5)
                execute(store, "DELETE FROM snapshots")  # derived data: the log holds everything
                cells = {"state": _sample(store, aid, "state", args.samples)}
                cells["next"] = _sample(store, aid, "next", args.samples)
                _snapshot(store, aid)
                data, size = _stored_snapshot(store)
                body = os.path.join(tmp, "snapshot.msgpack")
                Path(body).write_bytes(
                    data[SNAPSHOT_BODY_AT:]
                )  # the MessagePack after mark and digest
                cells["snap"], base = _sample_with_baseline(store, aid, body, args.samples)
                verdicts.append(_verdict(backend, cells["snap"], base, size))
                rows.append([backend, *(f"{cells[k]['wall'] * 1000:.1f} ({cells[k]['cpu'] * 1000:.1f})"
                                        for k in ("state", "snap", "next"))])  # fmt: skip
                print(rows[-1], flush=True)
    finally:
        if server is not None:
            server.stop()
    table = tabulate(rows, headers=["backend", "state ms (CPU ms)", "state, from a snapshot ms (CPU ms)",
                                    "next (v10 render) ms (CPU ms)"], tablefmt="github", disable_numparse=True)  # fmt: skip
    body = "\n".join([
        f"The first call of a fresh process on an analysis created from a {args.items:,}-item synthetic state "
        f"plus 5 turns; medians of {args.samples} processes each (see the script's docstring). "
        + ("" if server else f"PostgreSQL was not measured: {why}. ") + "Target: 50 ms.\n",
        table,
        "",
        "From a snapshot, against the target: " + "; ".join(verdicts) + ". The reference decode is a "
        "measure of the machine's speed in this run (see `BASELINE` in the script): decoding the "
        "snapshot's MessagePack into plain Python objects in a fresh process, as many objects as the "
        "call builds, nothing else. This machine's speed drifts from run to run, and the call's time "
        "with it; the ratio drifts less.",
    ])  # fmt: skip
    if args.no_write:
        print(body)
    else:
        write_section("coldstart", "Cold start: a fresh process's first call", body, timed=True)


if __name__ == "__main__":
    main()
