"""The speed of v11 and later: a turn of a growing analysis, and a fresh render, against msgspec-encoding the state.

Run: `.venv/bin/python benchmarks/v11.py` (writes the `v11-speed` section of RESULTS.md).

A session keeps a v11-or-later journal walk on its replayed state (`session.render_kept`), so a turn
renders only the entries appended since the last one; a fresh render (another process, or
`workingset render`) walks every entry. Both give the same bytes (tests/encoders/test_v11.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, median, ms, paired, write_section  # noqa: E402
from synthetic import make_state  # noqa: E402
from turns import HEADERS, describe, run_turns  # noqa: E402

from workingset.encoders import get_encoder  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

TURNS, SIZES = 20, (1_000, 10_000)
TURN_TARGET_MS, RENDER_TARGET = 20.0, 3.0
VERSIONS = ("v11", "v12", "v13")


def render_row(version: str, label: str, state, hypothesis: str) -> tuple[list[str], float]:
    enc = get_encoder(version)
    render_t, encode_t = paired(
        lambda: enc.render(state, hypothesis), lambda: msgspec.json.encode(state), 5, warmup=1
    )
    ratio = median(render_t) / median(encode_t)
    chars = enc.render(state, hypothesis).chars
    return [
        version,
        label,
        f"{chars:,}",
        ms(median(render_t)),
        ms(median(encode_t)),
        f"{ratio:.2f}x",
    ], ratio


def main() -> None:
    rows, verdicts = [], []
    for version in VERSIONS:
        for n in SIZES:
            stats = run_turns(make_state(n), TURNS, encoder=version)
            rows.append(describe(f"{version}, synthetic, {n:,} items", stats))
            turn = median(stats.submit_next) * 1000
            verdicts.append(f"a {version} turn at {n:,} items under {TURN_TARGET_MS:g} ms: "
                            + ("met" if turn <= TURN_TARGET_MS else f"missed by {turn / TURN_TARGET_MS:.1f}x") + f" ({turn:.1f} ms)")  # fmt: skip
    _, last = read_run(ROOT / "fixtures" / "bug17")[-1]
    render_rows = []
    cases = [
        ("bug17 last", last.state, last.hypothesis),
        *((f"synthetic, {n:,} items", make_state(n), "H1") for n in SIZES),
    ]
    for version, (label, state, hyp) in ((v, c) for v in VERSIONS for c in cases):
        row, ratio = render_row(version, label, state, hyp)
        render_rows.append(row)
        verdicts.append(f"a fresh {version} render of {label} within {RENDER_TARGET:g}x of msgspec-encode: "
                        + ("met" if ratio <= RENDER_TARGET else f"missed by {ratio / RENDER_TARGET:.1f}x") + f" ({ratio:.2f}x)")  # fmt: skip
    body = [
        "Targets: " + "; ".join(verdicts) + ".\n",
        f"### Turns (submit + next on the SQLite store, {TURNS} turns after 3 warm-up turns)\n",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
        *("| " + " | ".join(r) + " |" for r in rows),
        "\n### A fresh render (no kept journal) vs `msgspec.json.encode(state)`, wall-clock medians of 5 alternating calls\n",
        "| version | state | chars | render ms | msgspec encode ms | ratio |",
        "|---|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in render_rows),
        "\nWhy the turn's render is cheap and the fresh render is not: a turn resumes the journal walk and "
        "appends the new entries' texts (each rendered once per process and reused), so what remains is "
        "the work proportional to the output: joining, hashing and sizing the text. A fresh render walks "
        "every entry; the first render in a process also harvests the identifiers of every archived "
        "payload (a regular-expression pass), which the later ones reuse. The synthetic states archive "
        "almost every item (their journal passes the 120,000-character budget many times over), so their "
        "text is mostly `evidence_index` rows, which grow with the run: the budget bounds the payloads "
        "shown in full, not the index.",
    ]
    write_section(
        "v11-speed", "v11, v12 and v13 speed: turns and renders", "\n".join(body), timed=True
    )


if __name__ == "__main__":
    main()
