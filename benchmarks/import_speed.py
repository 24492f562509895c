"""Import speed: a synthetic SWE-agent trajectory of 480, 960 and 2,400 steps, against floors of the same run.

Run: .venv/bin/python benchmarks/import_speed.py [--steps 480,960,2400] [--no-write]

Each trajectory is a SWE-agent 0.x `.traj` file generated from a fixed seed (`trajectory`):
an issue, then per step a thought, a command and an observation of 3 to 60 lines of filler
(about 2 kB, the size of the corpus run `sweagent-gpt4-pydicom-1458.traj`'s). The import is
what `workingset import swe-agent FILE --out DIR` runs (`import_trajectory` then `write_import`
with the default run layout). Two floors are timed in the same process right after it:

- `read`: reading the file and decoding its JSON (msgspec), linear in the steps;
- `encode`: `msgspec.json.encode` of every state the import builds, the least a run of
  whole contexts costs to write (each state holds every step before it: quadratic). The
  import itself (with the default encoder, v16) writes no whole state: the run file stores
  each record once, and each step's render continues the journal walk of the step before
  (`importers/_stream.py`), so it runs below this floor.

Growth is the exponent between two sizes (`log(t2 / t1) / log(n2 / n1)`): 1 is linear, 2
quadratic. The import's time is wall clock with CPU time beside it; the floors and the ratios
use CPU time, which other processes sharing the cores disturb less.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_section  # noqa: E402
from synthetic import WORDS  # noqa: E402

from workingset.compare.engine import DEFAULT_LABEL  # noqa: E402
from workingset.importers import import_trajectory, write_import  # noqa: E402

COMMANDS = (
    "ls -la",
    "cat src/app.py",
    "grep -rn timeout src/",
    "python -m pytest -x -q",
    "open src/app.py 120",
)


def _text(rng: random.Random, lines: int) -> str:
    return "\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) for _ in range(lines)
    )


def trajectory(steps: int, seed: int = 25) -> dict:
    """A SWE-agent 0.x trajectory of `steps` steps, the same for the same arguments."""
    rng = random.Random(seed)
    task = f"We're currently solving the following issue within our repository.\nISSUE:\n{_text(rng, 12)}\n\nINSTRUCTIONS:\nfix it"
    return {
        "environment": "swe_main",
        "history": [{"role": "system", "content": "You are an autonomous programmer."}, {"role": "user", "content": task}],
        "info": {"model_stats": {"instance_cost": 1.5}},
        "trajectory": [
            {"thought": _text(rng, rng.randint(1, 4)), "action": rng.choice(COMMANDS) + "\n",
             "observation": _text(rng, rng.randint(3, 60)), "response": "", "state": "{}"}
            for _ in range(steps)
        ],
    }  # fmt: skip


def _timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def measure(steps: int, tmp: Path) -> dict:
    """Import the `steps`-step trajectory once and time the two floors."""
    source = tmp / f"synthetic-{steps}.traj"
    source.write_bytes(msgspec.json.encode(trajectory(steps)))
    out = tmp / f"run-{steps}"
    wall, cpu, imported = _timed(lambda: import_trajectory("swe-agent", source))
    w2, c2, _ = _timed(lambda: write_import(imported, out))
    read = _timed(lambda: msgspec.json.decode(source.read_bytes()))
    encode = _timed(
        lambda: sum(len(msgspec.json.encode(state)) for state in imported.states)
    )  # none kept: GBs at 2,400
    return {"steps": steps, "mb": source.stat().st_size / 1e6, "run_mb": (out / "run.json").stat().st_size / 1e6,
            "wall": wall + w2, "cpu": cpu + c2, "read": read[1], "encode": encode[1], "states_mb": encode[2] / 1e6}  # fmt: skip


def _growth(rows: list[dict], i: int, key: str) -> str:
    if i == 0:
        return "-"
    a, b = rows[i - 1], rows[i]
    return f"{math.log(b[key] / a[key]) / math.log(b['steps'] / a['steps']):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="480,960,2400")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for steps in (int(s) for s in args.steps.split(",")):
            rows.append(measure(steps, Path(tmp)))
            print(rows[-1], flush=True)
    table = tabulate(
        [[f"{r['steps']:,}", f"{r['mb']:.1f}", f"{r['run_mb']:.1f}", f"{r['states_mb']:,.0f}", f"{r['wall']:.1f} ({r['cpu']:.1f})",
          _growth(rows, i, "cpu"), f"{r['read']:.3f}", f"{r['cpu'] / r['read']:,.0f}x", f"{r['encode']:.2f}",
          f"{r['cpu'] / r['encode']:.1f}x", _growth(rows, i, "encode")]
         for i, r in enumerate(rows)],
        headers=["steps", "source MB", "run.json MB", "states MB", "import s (CPU s)", "growth (CPU)", "read CPU s",
                 "import / read", "encode CPU s", "import / encode", "growth (encode)"],
        tablefmt="github", disable_numparse=True,
    )  # fmt: skip
    body = "\n".join([
        "Importing a synthetic SWE-agent trajectory (`workingset import swe-agent`, run layout) against two floors "
        "timed in the same run: reading and decoding the file, and msgspec-encoding every state the import "
        "builds (`states MB`: their JSON; see the script's docstring). One import per size; ratios of CPU times. Target: growth at most quadratic, "
        f"2,400 steps within 30 s. The import records the default encoder, {DEFAULT_LABEL}, and writes no whole state (the run file stores each "
        "record once; each step's render continues its journal walk from the step before, `workingset/importers/_stream.py`), "
        "so it runs below the encode floor.\n",
        table,
    ])  # fmt: skip
    if args.no_write:
        print(body)
    else:
        write_section(
            "import_speed",
            "Import speed: SWE-agent trajectories of 480 to 2,400 steps",
            body,
            timed=True,
        )


if __name__ == "__main__":
    main()
