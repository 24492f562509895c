"""Limits: the input checks, `compare` on one big payload, and `export` of a long history grow linearly.

Run: .venv/bin/python benchmarks/limits.py [--baseline REV]

1. The checks every JSON input gets before decoding (`limits.check_json`: size, nesting,
   repeated keys), the strict decode alone, and the whole `load_state` (checks, decode and
   validation), on states holding one text or one rows payload of growing size: per MB, and
   the checks' share of the load.
2. `workingset compare` on a run of one stored context holding one text payload of growing
   size: wall time and peak memory per MB of input, each in its own process.
3. `workingset export` of analyses with growing histories (each turn records a 4 kB
   result): time per MB written and peak memory against the largest file written. With
   `--baseline REV` the same export also runs with the code of that commit (from
   `git archive`), on the same stores, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from _results import ROOT, median, sample, write_section  # noqa: E402
from session_helpers import assess, decision, make_state, query  # noqa: E402

from workingset.io.limits import check_json  # noqa: E402
from workingset.model.hashing import content_hash  # noqa: E402
from workingset.model.state import _STATE_DECODER, load_state  # noqa: E402
from workingset.runs.layout import make_stored_context, write_run  # noqa: E402
from workingset.session.investigation import Investigation  # noqa: E402

MB = 1_000_000
CHECK_SIZES = (1, 4, 16)
COMPARE_SIZES = (4, 16, 48)
EXPORT_TURNS = (100, 200, 300)
WORDS = "request timeout retry worker queue shard lease token cache miss commit offset".split()


def _text(mb: float) -> str:
    line = '2026-06-10T20:01:00Z level=warn {} said "retry" [shard {}] {{lease}}'
    lines, size, i = [], 0, 0
    while size < mb * MB:
        text = line.format(" ".join(WORDS[(i + k) % len(WORDS)] for k in range(8)), i % 97)
        lines.append(text)
        size += len(text) + 1
        i += 1
    return "\n".join(lines)


def _rows(mb: float) -> dict:
    rows, size, i = [], 0, 0
    while size < mb * MB:
        row = [i, "paid" if i % 3 else "failed", (i % 1000) / 8, None, f"user-{i * 7919 % 100_000}"]
        rows.append(row)
        size += 40
        i += 1
    return {"kind": "rows", "columns": ["id", "status", "amount", "note", "user"], "rows": rows}


def _state_bytes(payload: dict) -> bytes:
    state = make_state()
    state["evidence"][1]["payload"] = payload
    state["evidence"][1]["content_hash"] = content_hash(payload)
    return json.dumps(state).encode()


def checks() -> str:
    rows = []
    for kind, make in (
        ("text", lambda mb: {"kind": "text", "language": "log", "text": _text(mb)}),
        ("rows", _rows),
    ):
        for mb in CHECK_SIZES:
            data = _state_bytes(make(mb))
            repeat = 5 if mb < 16 else 3
            check = median(
                sample(lambda data=data: check_json(data, "file", "x"), repeat, warmup=1)
            )
            decode = median(sample(lambda data=data: _STATE_DECODER.decode(data), repeat, warmup=1))
            load = median(sample(lambda data=data: load_state(data), repeat, warmup=1))
            size = len(data) / MB
            rows.append([kind, f"{size:.1f}", f"{check * 1000 / size:.1f}", f"{decode * 1000 / size:.1f}",
                         f"{load * 1000 / size:.1f}", f"{check / load:.2f}"])  # fmt: skip
    return tabulate(rows, ["payload", "MB", "check ms/MB", "decode ms/MB", "load_state ms/MB", "check / load_state"],
                    tablefmt="github")  # fmt: skip


# The child reports its own peak memory. Linux keeps a process's peak across exec, and a child
# forked from this (large) process would start at its size: `sh` forks the measured one.
_CHILD = (
    "import resource, sys; from workingset.cli.commands import main; code = main(sys.argv[1:]); "
    "sys.stderr.write(f'maxrss={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n'); sys.exit(code)"
)


def _measure(args: list[str], path: str = str(ROOT), cwd: str | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident MB of `workingset ARGS` in its own process, with the code at `path`."""
    start = time.perf_counter()
    proc = subprocess.run(["sh", "-c", '"$@"; exit $?', "sh", sys.executable, "-c", _CHILD, *args],
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=path), cwd=cwd or path)  # fmt: skip
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"workingset {' '.join(args)} failed: {proc.stderr}")
    return wall, int(proc.stderr.rsplit("maxrss=", 1)[1]) / 1024


def compares(tmp: Path) -> str:
    rows = []
    for mb in COMPARE_SIZES:
        state = load_state(_state_bytes({"kind": "text", "language": "log", "text": _text(mb)}))
        run = tmp / f"run-{mb}"
        write_run(run, [make_stored_context("demo-r0001", "v7", "H1", state)])
        size = sum(p.stat().st_size for p in run.iterdir()) / MB
        wall, rss = _measure(["compare", str(run)])
        rows.append(
            [
                f"{size:.1f}",
                f"{wall:.1f}",
                f"{wall * 1000 / size:.0f}",
                f"{rss:.0f}",
                f"{rss / size:.1f}",
            ]
        )
    return tabulate(
        rows, ["input MB", "seconds", "ms/MB", "peak MB", "peak / input"], tablefmt="github"
    )


def _history(path: Path, turns: int) -> None:
    text = _text(0.004)
    with Investigation.create(path, json.dumps(make_state(max_iterations=turns + 10, limits=(turns, turns, turns))),
                              clock=lambda: "2026-06-10T21:00:00Z") as inv:  # fmt: skip
        for _ in range(turns):
            req = inv.next_request("H1")
            pending = inv.state.pending_result("H1")
            applied = inv.submit(
                req.request_id, decision(query(), assess(pending) if pending else None)
            )
            inv.record(applied.action, {"scope": "log", "capture": {"origin": "pg:orders", "query": "select 1"},
                                        "payload": {"kind": "text", "language": "log", "text": text}})  # fmt: skip


def _baseline(rev: str, tmp: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", rev, "workingset"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    target = tmp / f"baseline-{rev}"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target)
    return target


def exports(tmp: Path, baseline: str | None) -> str:
    runners = [("this commit", str(ROOT), None)]
    if baseline:
        runners.append((baseline, str(_baseline(baseline, tmp)), baseline))
    rows = []
    for turns in EXPORT_TURNS:
        store = tmp / f"history-{turns}.sqlite3"
        _history(store, turns)
        for label, path, _ in runners:
            out = tmp / f"out-{turns}-{label.replace(' ', '-')}"
            wall, rss = _measure(["export", "--analysis", "demo", "--store", str(store), "--out", str(out)], path,
                                 cwd=str(tmp))  # fmt: skip
            files = list(out.iterdir())
            written = sum(p.stat().st_size for p in files) / MB
            largest = max(p.stat().st_size for p in files) / MB
            rows.append([label, turns, len(files), f"{written:.0f}", f"{wall:.1f}", f"{wall * 1000 / written:.0f}",
                         f"{rss:.0f}", f"{rss / largest:.0f}"])  # fmt: skip
    return tabulate(rows, ["code", "turns", "files", "MB written", "seconds", "ms per MB written", "peak MB",
                           "peak / largest file"], tablefmt="github")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="also export with the code of this commit (e.g. main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        body = [
            "### Input checks against the decode (a state with one payload of growing size)\n",
            checks(),
            "\n### `compare` on a run of one stored context with one text payload (own process each)\n",
            compares(tmp),
            "\n### `export` of growing histories (a 4 kB result per turn; own process each)\n",
            exports(tmp, args.baseline),
        ]
    write_section(
        "limits",
        "Limits: input checks, one big payload, long histories",
        "\n".join(body),
        timed=True,
    )


if __name__ == "__main__":
    main()
