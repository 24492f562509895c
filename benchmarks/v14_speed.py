"""v14's speed: a fresh render against msgspec-encoding the same state, and a session turn at 10,000 items.

Run: .venv/bin/python benchmarks/v14_speed.py

Issue 22's targets: a fresh render within 3 times `msgspec.json.encode(state)` (the floor,
measured in the same run, alternating with the render), and a session turn (submit + next on
the SQLite store, `turns.run_turns`) at 10,000 items with a median within 20 ms. Renders are
measured on `fixtures/bug17/bug17-r0018.json` (as the speed section measures v8 and v10) and
on 1,000- and 10,000-item synthetic states (`synthetic.make_state`), each a fresh walk (no
kept journal), medians of the process's CPU time after two warm-up calls; v13 beside v14.
The turn keeps v14's walk between turns, as every session does (`new_journal`). Writes the
`v14_speed` section of RESULTS.md (timed).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import msgspec
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_section  # noqa: E402
from synthetic import make_state  # noqa: E402
from turns import run_turns  # noqa: E402

from workingset.encoders import get_encoder  # noqa: E402
from workingset.model.state import load_stored_context  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RENDER_TARGET, TURN_TARGET_MS, TURN_ITEMS = 3.0, 20.0, 10_000


def medians(state, hypothesis: str, encoder: str, calls: int) -> tuple[float, float, int]:
    """(render CPU ms, msgspec encode CPU ms, chars), medians over `calls` alternating calls after two warm-ups."""
    enc = get_encoder(encoder)
    for _ in range(2):
        out = enc.render(state, hypothesis)
        msgspec.json.encode(state)
    render, encode = [], []
    for _ in range(calls):
        start = time.process_time()
        enc.render(state, hypothesis)
        render.append(time.process_time() - start)
        start = time.process_time()
        msgspec.json.encode(state)
        encode.append(time.process_time() - start)
    return statistics.median(render) * 1000, statistics.median(encode) * 1000, out.chars


def renders(versions: tuple[str, ...]) -> tuple[str, list[str]]:
    """Fresh renders of bug17-r0018 and 1,000- and 10,000-item states under each version: the table, and each later
    version's verdict per state against `RENDER_TARGET` (named by version when there are more than one)."""
    ctx = load_stored_context((ROOT / "fixtures" / "bug17" / "bug17-r0018.json").read_bytes())
    cases = [("bug17-r0018 (28 items)", ctx.state, ctx.hypothesis, 200)]
    cases += [
        (f"synthetic, {n:,} items", make_state(n), "H1", calls)
        for n, calls in ((1_000, 25), (10_000, 7))
    ]
    rows, verdicts = [], []
    for label, state, hypothesis, calls in cases:
        for encoder in versions:
            render, encode, chars = medians(state, hypothesis, encoder, calls)
            ratio = render / encode
            rows.append(
                [label, encoder, f"{chars:,}", f"{render:.3f}", f"{encode:.3f}", f"{ratio:.2f}x"]
            )
            if encoder != versions[0]:
                named = f"{encoder}, " if len(versions) > 2 else ""
                verdicts.append(
                    f"{named}{label}: {ratio:.2f}x ({'met' if ratio <= RENDER_TARGET else 'missed'})"
                )
    table = tabulate(rows, headers=["state", "version", "chars", "render CPU ms", "msgspec encode CPU ms", "ratio"],
                     tablefmt="github", disable_numparse=True, colalign=["left", "left"] + ["right"] * 4)  # fmt: skip
    return table, verdicts


def main() -> None:
    """Time fresh renders and a 10,000-item session turn; write the `v14_speed` section."""
    table, verdicts = renders(("v13", "v14"))
    turns = run_turns(make_state(TURN_ITEMS), 9, encoder="v14")
    turn_ms = statistics.median(turns.submit_next) * 1000
    render_ms = statistics.median(turns.render) * 1000
    body = (
        "Fresh renders (no kept walk) against `msgspec.json.encode` of the same state, medians of CPU time. "
        f"Target, v14 within {RENDER_TARGET:g}x: " + "; ".join(verdicts) + ".\n\n" + table + "\n\n"
        f"Session turn at {TURN_ITEMS:,} items (`turns.run_turns`, encoder v14, 9 turns after 3 warm-up turns, the "
        f"walk kept between turns): submit+next median {turn_ms:.3f} ms, of it v14's render {render_ms:.3f} ms; "
        f"target within {TURN_TARGET_MS:g} ms: {'met' if turn_ms <= TURN_TARGET_MS else 'missed'}.\n\n"
        "What a fresh render costs beyond v13's (and, where it misses, why): it walks every entry of the state, notes and decision rows included (about "
        "25,000 at 10,000 items), and writes an index row for each archived one before the oldest fold into ranges, "
        "where v13 archives evidence only; a session pays that walk once and then resumes it each turn. The turn "
        "shares the machine's two cores with other processes (the load average above): its median moves with them.\n"
    )
    write_section("v14_speed", "v14's speed: fresh render and a 10,000-item turn", body, timed=True)


if __name__ == "__main__":
    main()
