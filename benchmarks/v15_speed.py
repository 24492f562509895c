"""v15's and v16's speed: a fresh render against msgspec-encoding the same state, and a session turn at 10,000 items.

Run: .venv/bin/python benchmarks/v15_speed.py

Issue 32's targets, as `v14_speed.py` measures v14's: a fresh render (no kept walk) within 3
times `msgspec.json.encode(state)` (medians of CPU time, alternating, after two warm-up calls,
which also fill the per-process text caches every version keeps), and a session turn (submit
+ next on the SQLite store, the walk kept between turns) at 10,000 items with a median within
20 ms. Writes the `v15_speed` section of RESULTS.md (timed).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_section  # noqa: E402
from synthetic import make_state  # noqa: E402
from turns import run_turns  # noqa: E402
from v14_speed import RENDER_TARGET, TURN_ITEMS, TURN_TARGET_MS, renders  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def speed() -> None:
    table, verdicts = renders(("v14", "v15", "v16"))
    turn_rows = []
    for encoder in ("v14", "v15", "v16"):
        turns = run_turns(make_state(TURN_ITEMS), 9, encoder=encoder)
        turn_ms = statistics.median(turns.submit_next) * 1000
        render_ms = statistics.median(turns.render) * 1000
        verdict = "met" if turn_ms <= TURN_TARGET_MS else "missed"
        turn_rows.append(
            [encoder, f"{turn_ms:.3f}", f"{render_ms:.3f}", verdict if encoder != "v14" else ""]
        )
    turn_table = tabulate(turn_rows, headers=["version", "submit+next median ms", "of it, render ms",
                                              f"target {TURN_TARGET_MS:g} ms"],
                          tablefmt="github", disable_numparse=True)  # fmt: skip
    body = (
        "Fresh renders (no kept walk) against `msgspec.json.encode` of the same state, medians of CPU time. "
        f"Target, within {RENDER_TARGET:g}x: " + "; ".join(verdicts) + ".\n\n" + table + "\n\n"
        f"Session turn at {TURN_ITEMS:,} items (`turns.run_turns`, 9 turns after 3 warm-up turns, the walk kept "
        "between turns):\n\n" + turn_table + "\n\n"
        "Where a fresh v15 render goes beyond v14's: for each query, note and decision text it finds the names the "
        "text uses (`model.used`, once per text per process) and looks each up in the entries the journal shows, "
        "newest first, to mark the one it uses; and a compaction ranks the shown entries by last use. v14's walk "
        "finds each compaction by bisecting running sizes and never reads a text twice. A session pays the walk once "
        "and resumes it each turn. The turn shares the machine's two cores with other processes (the load average "
        "above): its median moves with them.\n"
    )
    write_section(
        "v15_speed", "v15's and v16's speed: fresh render and a 10,000-item turn", body, timed=True
    )


if __name__ == "__main__":
    speed()
