"""Scale: synthetic states of 100, 1,000 and 10,000 evidence items; how render and turn cost grow.

Run: .venv/bin/python benchmarks/scale.py

States come from `synthetic.make_state` (seeded, about 3 kB of JSON per evidence item, five
hypotheses, one note per two items). Render times are medians; `per item` divides by the
evidence count, so linear growth shows as a flat `per item` column and as a growth factor
near 10 for each tenfold step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import median, ms, sample, write_section  # noqa: E402
from synthetic import make_state  # noqa: E402
from turns import HEADERS, describe, run_turns  # noqa: E402

from workingset.encoders import ENCODERS  # noqa: E402

SIZES = (100, 1_000, 10_000)
REPEAT = {100: 40, 1_000: 15, 10_000: 5}
# Linear enough: the per-item time at the largest size is within this factor of the one
# at the size before it (fixed costs make small states look dearer per item, never cheaper).
LINEAR_SLACK = 1.5
TURNS = {100: 20, 1_000: 10, 10_000: 5}


def _turn_table(states: dict) -> str:
    rows = [describe(f"{n:,} items", run_turns(states[n], TURNS[n])) for n in SIZES]
    table = tabulate(rows, headers=HEADERS, tablefmt="github", colalign=["left"] + ["right"] * (len(HEADERS) - 1),
                     disable_numparse=True)  # fmt: skip
    verdicts = [f"{row[0]}: {row[9]} ({'met' if float(row[9][:-1]) <= 2 else 'missed'})" for row in rows]
    return table + "\n\nLogical bytes within 2x of the new content: " + "; ".join(verdicts) + "."


def main() -> None:
    """Measure and write the `scale` section of RESULTS.md."""
    rows, per_item = [], {8: [], 10: []}
    states = {}
    for n in SIZES:
        state = states[n] = make_state(n)
        size = len(msgspec.json.encode(state))
        encode = median(sample(lambda: msgspec.json.encode(state), REPEAT[n]))
        row = [f"{n:,}", f"{size:,}", ms(encode)]
        for v in (8, 10):
            took = median(sample(lambda: ENCODERS[v].render(state, "H1"), REPEAT[n], warmup=1))
            per_item[v].append(took / n)
            chars = ENCODERS[v].render(state, "H1").chars
            row += [f"{chars:,}", ms(took), f"{took / n * 1e6:.1f}", f"{took / encode:.2f}x"]
        rows.append(row)
    headers = ["evidence items", "state JSON bytes", "msgspec encode ms",
               "v8 chars", "v8 render ms", "v8 µs per item", "v8 vs encode",
               "v10 chars", "v10 render ms", "v10 µs per item", "v10 vs encode"]  # fmt: skip
    table = tabulate(rows, headers=headers, tablefmt="github", colalign=["right"] * len(headers), disable_numparse=True)
    growth = []
    for v, costs in per_item.items():
        steps = [f"{SIZES[i]:,}→{SIZES[i + 1]:,}: {costs[i + 1] / costs[i] * 10:.1f}x"
                 for i in range(len(SIZES) - 1)]  # fmt: skip
        linear = costs[-1] <= LINEAR_SLACK * costs[-2]
        verdict = "met" if linear else f"missed (per-item time grew {costs[-1] / costs[-2]:.2f}x)"
        growth.append(f"- v{v}: render time growth per tenfold size {', '.join(steps)} (linear would be 10x); "
                      f"linear-growth target {verdict}.")  # fmt: skip
    body = [
        "Render of hypothesis H1 (it has a recall selection of two items). Medians of "
        + ", ".join(f"{REPEAT[n]} ({n:,} items)" for n in SIZES) + " calls.\n",
        table, "", *growth, "",
        "### Turn time and bytes written per turn\n",
        "Turns (after 3 warm-up turns) with encoder v10 on a fresh store created from each state; see "
        "`benchmarks/turns.py` for what a turn does and how bytes are counted. Target: logical bytes "
        "per turn within 2x of the new content.\n",
        _turn_table(states),
    ]  # fmt: skip
    write_section("scale", "Scale: 100, 1,000 and 10,000 evidence items", "\n".join(body))


if __name__ == "__main__":
    main()
