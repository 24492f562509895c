"""Workers: 64 analyses driven by 1, 2, 4 and 8 controller processes, on SQLite and on PostgreSQL.

Run: .venv/bin/python benchmarks/workers.py [--turns 6] [--pg postgresql://…]

Each worker process opens the store once and takes analyses from a shared queue: a task is
one analysis's next turn (`next` → `submit` → `record`, each call one durable transaction);
after the turn the analysis goes back to the queue, so its turns move between processes and
each process catches up with what the others appended. No two workers hold the same analysis
at once here (the queue sees to that); the race below is where they do.

Afterwards the event logs are checked, not the workers' word: every turn a worker reported
applied is a `decision` event of its analysis (zero lost), no request is answered and no
action recorded twice (zero applied twice), every analysis's log replays (no
`store_corrupt`), and each analysis has exactly as many turns as asked.

The race: 8 processes open one analysis, wait at a barrier and submit a decision to the same
open request at once; exactly one must be applied and seven refused with `stale_request`.

SQLite is a file on the benchmark's disk (WAL, `synchronous = FULL`); PostgreSQL is a
throwaway server started here (initdb in a temp dir, fsync and synchronous_commit on, a unix
socket), unless `--pg` names one (its database must be empty).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tabulate import tabulate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))

from _results import median, ms, p95, write_section  # noqa: E402

ANALYSES = 64
WORKERS = (1, 2, 4, 8)
RACERS = 8
RACE_ROUNDS = 5


def _state(aid: str) -> bytes:
    import json

    from session_helpers import make_state

    return json.dumps(
        make_state(analysis=aid, max_iterations=10_000, limits=(5_000, 5_000, 5_000))
    ).encode()


def _result(aid: str, turn: int) -> dict:
    text = "\n".join(
        f"20:{turn % 60:02d}:{i:02d} worker lease renewed {aid} shard={i}" for i in range(20)
    )
    return {"scope": "log", "cost": 0.01, "payload": {"kind": "text", "language": "log", "text": text},
            "capture": {"query": f"turn {turn}", "origin": "loki:prod-eu", "eof": True, "item_count": 20}}  # fmt: skip


def _worker(store: str, tasks, done, start, out) -> None:
    """Take (analysis, turns left, pending results) tasks until a None; report per-call times and codes."""
    from workingset.errors import WorkingsetError
    from workingset.session.investigation import Investigation
    from workingset.store import open_store

    db = open_store(store)
    handles: dict[str, Investigation] = {}
    times: dict[str, list[float]] = {"next": [], "submit": [], "record": []}
    applied, errors = [], Counter()
    start.wait()
    while (task := tasks.get()) is not None:
        aid, left, pending = task
        inv = handles.get(aid) or handles.setdefault(aid, Investigation.open(db, aid))
        try:
            t0 = time.perf_counter()
            req = inv.next_request()
            t1 = time.perf_counter()
            prev = pending.get(req.hypothesis)
            decision = {
                "next": {
                    "kind": "query",
                    "source": "loki:prod-eu",
                    "query": f"turn {left}",
                    "purpose": "leases",
                }
            }
            if prev is not None:
                decision["assessment"] = {
                    "evidence_ref": prev,
                    "verdict": "neutral",
                    "confidence": 0.5,
                    "rationale": "ok",
                }
            sub = inv.submit(req.request_id, decision)
            t2 = time.perf_counter()
            rec = inv.record(sub.action, _result(aid, left))
            t3 = time.perf_counter()
        except WorkingsetError as err:
            errors[err.code] += 1
            done.put(aid)
            continue
        times["next"].append(t1 - t0)
        times["submit"].append(t2 - t1)
        times["record"].append(t3 - t2)
        applied.append((aid, req.request_id, sub.action))
        pending[req.hypothesis] = rec.evidence
        if left > 1:
            tasks.put((aid, left - 1, pending))
        else:
            done.put(aid)
    out.put({"times": times, "applied": applied, "errors": dict(errors)})
    db.close()


def _create(store: str, prefix: str) -> list[str]:
    from workingset.session.investigation import Investigation
    from workingset.store import open_store

    ids = [f"{prefix}-{i:02d}" for i in range(ANALYSES)]
    with open_store(store) as db:
        for aid in ids:
            Investigation.create(db, _state(aid), encoder="v10")
    return ids


def _check(store: str, ids: list[str], applied: list[tuple[str, str, str]], turns: int) -> dict:
    """What the event logs say: lost turns, turns applied twice, analyses that fail to replay."""
    from workingset.errors import WorkingsetError
    from workingset.eventlog.log import catch_up
    from workingset.store import open_store

    reported = {(aid, rid) for aid, rid, _ in applied}
    lost = twice = corrupt = short = 0
    with open_store(store) as db, db.read() as tx:
        for aid in ids:
            answered = Counter()
            recorded = Counter()
            for row in tx.events(aid):
                if row.kind == "decision":
                    answered[_field(row.data, "request_id")] += 1
                elif row.kind == "record":
                    recorded[_field(row.data, "action")] += 1
            twice += sum(n - 1 for n in answered.values() if n > 1) + sum(
                n - 1 for n in recorded.values() if n > 1
            )
            lost += sum(1 for a, rid in reported if a == aid and rid not in answered)
            short += abs(len(answered) - turns)
            try:
                catch_up(tx, aid, None)
            except WorkingsetError:
                corrupt += 1
    return {"lost": lost, "twice": twice, "corrupt": corrupt, "short": short}


def _field(data: bytes, name: str) -> str:
    import json

    return json.loads(data)[name]


def run(store: str, workers: int, turns: int, prefix: str) -> dict:
    """One configuration: create the analyses, run the workers, check the logs."""
    ids = _create(store, prefix)
    ctx = mp.get_context("spawn")
    tasks, done, out = ctx.Queue(), ctx.Queue(), ctx.Queue()
    start = ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(store, tasks, done, start, out)) for _ in range(workers)
    ]
    for p in procs:
        p.start()
    for aid in ids:
        tasks.put((aid, turns, {}))
    time.sleep(1.0)  # let every worker import and open the store before the clock starts
    began = time.perf_counter()
    start.set()
    for _ in ids:
        done.get()
    wall = time.perf_counter() - began
    for _ in procs:
        tasks.put(None)
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    times = {k: [t for r in results for t in r["times"][k]] for k in ("next", "submit", "record")}
    applied = [a for r in results for a in r["applied"]]
    errors = sum((Counter(r["errors"]) for r in results), Counter())
    check = _check(store, ids, applied, turns)
    return {
        "workers": workers,
        "turns": len(applied),
        "wall": wall,
        "times": times,
        "errors": dict(errors),
        **check,
    }


def _racer(store: str, aid: str, rid: str, barrier, out) -> None:
    from workingset.errors import WorkingsetError
    from workingset.session.investigation import Investigation

    with Investigation.open(store, aid) as inv:
        inv.show()  # warm: the kept state is loaded before the race
        barrier.wait()
        try:
            inv.submit(
                rid,
                {
                    "next": {
                        "kind": "query",
                        "source": "pg:orders",
                        "query": "race",
                        "purpose": "race",
                    }
                },
            )
            out.put("applied")
        except WorkingsetError as err:
            out.put(err.code)


def race(store: str) -> Counter:
    """RACE_ROUNDS rounds of RACERS processes submitting to one open request at once."""
    from workingset.session.investigation import Investigation
    from workingset.store import open_store

    outcomes: Counter = Counter()
    ctx = mp.get_context("spawn")
    for n in range(RACE_ROUNDS):
        aid = f"race-{n}"
        with open_store(store) as db:
            rid = Investigation.create(db, _state(aid), encoder="v10").next_request().request_id
        barrier, out = ctx.Barrier(RACERS), ctx.Queue()
        procs = [
            ctx.Process(target=_racer, args=(store, aid, rid, barrier, out)) for _ in range(RACERS)
        ]
        for p in procs:
            p.start()
        round_ = Counter(out.get() for _ in procs)
        for p in procs:
            p.join()
        outcomes["rounds with exactly one applied and seven stale"] += round_ == Counter(
            applied=1, stale_request=7
        )
        outcomes.update(round_)
    return outcomes


def _row(backend: str, r: dict) -> list[str]:
    t = r["times"]
    return [backend, str(r["workers"]), str(r["turns"]), f"{r['turns'] / r['wall']:.1f}",
            *(f"{ms(median(t[k]))} / {ms(p95(t[k]))}" for k in ("next", "submit", "record")),
            str(r["lost"]), str(r["twice"]), str(r["corrupt"] + r["errors"].get("store_corrupt", 0)),
            ", ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())) or "none"]  # fmt: skip


def main() -> None:
    """Measure and write the `workers` section of RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=6, help="turns per analysis")
    parser.add_argument(
        "--pg", help="an empty PostgreSQL database to use instead of a throwaway server"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    args = parser.parse_args()
    server = None
    if args.pg is None:
        import pg_server

        why = pg_server.missing()
        if why:
            sys.exit(f"workers.py: {why}")
        server = pg_server.Server(durable=True)
    rows, races = [], {}
    try:
        with tempfile.TemporaryDirectory(dir=HERE) as tmp:
            stores = {"SQLite": lambda w: os.path.join(tmp, f"workers-{w}.sqlite3"),
                      "PostgreSQL": lambda w: args.pg if args.pg else server.database()}  # fmt: skip
            for backend, make in stores.items():
                for w in WORKERS:
                    r = run(make(w), w, args.turns, prefix=f"w{w}")
                    rows.append(_row(backend, r))
                    print(rows[-1], flush=True)
                races[backend] = race(make("race"))
                print(backend, races[backend], flush=True)
    finally:
        if server is not None:
            server.stop()
    headers = ["backend", "workers", "turns", "turns/s", "next p50 / p95 ms", "submit p50 / p95 ms",
               "record p50 / p95 ms", "lost turns", "applied twice", "store_corrupt", "errors"]  # fmt: skip
    table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    race_lines = [f"- {b}: {c.pop('rounds with exactly one applied and seven stale')} of {RACE_ROUNDS} rounds with "
                  f"exactly one applied and {RACERS - 1} `stale_request`; outcomes over all rounds: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) for b, c in races.items()]  # fmt: skip
    body = "\n".join([
        f"{ANALYSES} analyses (the tests' three-hypothesis state, encoder v10), {args.turns} turns each "
        f"(`next` → `submit` → `record`), driven by 1, 2, 4 and 8 worker processes that take analyses from one "
        "queue; turns/s is all turns over the wall time from the start signal to the last turn. Each call is one "
        "durable transaction (SQLite WAL with `synchronous = FULL`; PostgreSQL with fsync and synchronous_commit "
        "on, on the same disk). Lost turns, turns applied twice and `store_corrupt` are counted from the event "
        "logs afterwards (see the script's docstring). The machine has 2 cores shared with other work, so more "
        "than 2 workers cannot add CPU; what they show is that the stores stay correct and how they queue.\n",
        table, "", f"The race ({RACERS} processes submit to one open request at once, {RACE_ROUNDS} rounds):", "",
        *race_lines,
    ])  # fmt: skip
    if args.no_write:
        print(body)
    else:
        write_section(
            "workers", "Workers: many controller processes on one store", body, timed=True
        )


if __name__ == "__main__":
    main()
