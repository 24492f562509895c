"""Speed: render and load of the last bug17 context against msgspec, the compare process, the turn.

Run: .venv/bin/python benchmarks/speed.py

Each render time is a median over many calls, divided by the median time of
`msgspec.json.encode(state)` of the same state, the two calls alternating in the same
process, so the ratio says how much work rendering adds over serializing. Loading a
stored context (strict decode plus full validation, content hashes included) is compared
with msgspec decoding the same bytes into the same Structs and into plain objects.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, median, ms, paired, sample, write_section  # noqa: E402
from turns import HEADERS, describe, run_turns  # noqa: E402

from workingset.encoders import ENCODERS  # noqa: E402
from workingset.model import StoredContext, load_stored_context  # noqa: E402

BUG17 = ROOT / "fixtures" / "bug17"
TARGETS = {8: 3.0, 10: 5.0}  # render within N x msgspec-encode
REPEAT = 200
TURNS = 40
TURN_TARGET_MS = 5.0


def _table(headers: list[str], rows: list) -> str:
    return tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                    disable_numparse=True)  # fmt: skip


def render_rows(ctx: StoredContext) -> tuple[list, dict[int, float]]:
    """Median render time per version and its ratio to msgspec-encoding the same state."""
    rows, ratios = [], {}
    for number, encoder in ENCODERS.items():
        base_t, took_t = paired(lambda: msgspec.json.encode(ctx.state),
                                lambda: encoder.render(ctx.state, ctx.hypothesis), REPEAT)  # fmt: skip
        base, took = median(base_t), median(took_t)
        ratios[number] = took / base
        target = TARGETS.get(number)
        verdict = "" if target is None else ("met" if took / base <= target else "missed") + f" (≤ {target:g}x)"
        chars = encoder.render(ctx.state, ctx.hypothesis).chars
        rows.append([f"v{number}", f"{chars:,}", ms(took), ms(base), f"{took / base:.2f}x", verdict])
    return rows, ratios


def load_rows(data: bytes) -> list:
    """Loading a stored context (decode + validation) against msgspec decodes of the same bytes."""
    typed = msgspec.json.Decoder(StoredContext)
    plain_t, load_t = paired(lambda: msgspec.json.decode(data), lambda: load_stored_context(data), REPEAT)
    plain_u, struct_t = paired(lambda: msgspec.json.decode(data), lambda: typed.decode(data), REPEAT)
    load, struct, plain = median(load_t), median(struct_t), median(plain_t + plain_u)
    return [
        ["msgspec.json.decode into plain objects", ms(plain), "1.00x", f"{plain / struct:.2f}x"],
        ["msgspec.json.decode into the StoredContext Structs", ms(struct), f"{struct / plain:.2f}x", "1.00x"],
        ["workingset load_stored_context (decode + validate + hashes)", ms(load), f"{load / plain:.2f}x",
         f"{load / struct:.2f}x"],
    ]  # fmt: skip


def process_rows(run_dir: Path) -> tuple[list, float]:
    """Wall time of whole `workingset compare fixtures/bug17 --all` processes (and of bare Python)."""
    rel = os.path.relpath(run_dir, ROOT)
    cmd = [str(ROOT / ".venv" / "bin" / "workingset"), "compare", rel, "--all"]

    def run(args: list[str]) -> None:
        subprocess.run(args, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)

    whole = sample(lambda: run(cmd), 7, warmup=1)
    bare = sample(lambda: run([sys.executable, "-c", "pass"]), 7, warmup=1)
    rows = [
        [f"workingset compare {rel} --all", ms(median(whole)), ms(max(whole))],
        ["python -c pass (interpreter start)", ms(median(bare)), ms(max(bare))],
    ]
    return rows, median(whole)


def main() -> None:
    """Measure and write the `speed` section of RESULTS.md."""
    last = sorted(BUG17.glob("*.json"))[-1]
    data = last.read_bytes()
    ctx = load_stored_context(data, str(last))
    rrows, ratios = render_rows(ctx)
    lrows = load_rows(data)
    prows, whole = process_rows(BUG17)
    stats = run_turns(ctx.state, TURNS)
    turn_ms = median(stats.submit_next) * 1000
    turn = "\n".join([
        f"{TURNS} turns (after 3 warm-up turns) starting from the last bug17 state with encoder v10; "
        "see `benchmarks/turns.py` for what a turn does and how bytes are counted.\n",
        _table(HEADERS, [describe(f"bug17 last ({len(ctx.state.evidence)} items)", stats)]),
        f"\nTarget: turn median under {TURN_TARGET_MS:g} ms: "
        + ("met" if turn_ms < TURN_TARGET_MS else f"missed by {turn_ms / TURN_TARGET_MS:.1f}x") + f" ({turn_ms:.2f} ms).",
    ])  # fmt: skip
    body = [
        f"Context: `{os.path.relpath(last, ROOT)}` ({len(data):,} bytes, {len(ctx.state.evidence)} evidence items, "
        f"hypothesis {ctx.hypothesis}). Medians of {REPEAT} calls after 2 warm-up calls, each render call alternating with an encode call (and each load with a decode) so that both see the same machine state.\n",
        "### Render vs `msgspec.json.encode(state)`\n",
        _table(["version", "chars", "render ms", "msgspec encode ms", "ratio", "target"], rrows),
        "\n### Load vs msgspec decode of the same bytes\n",
        _table(["operation", "median ms", "vs plain decode", "vs Struct decode"], lrows),
        "\n### The whole compare process (7 runs after 1 warm-up)\n",
        _table(["process", "median ms", "max ms"], prows),
        f"\nTarget: under 2 s: {'met' if whole < 2.0 else 'missed'} ({whole:.2f} s median).\n",
        "### The controller's turn (submit + next on the SQLite store)\n",
        turn,
    ]
    summary = [f"v{n} render is {ratios[n]:.2f}x msgspec-encode (target ≤ {t:g}x: "
               f"{'met' if ratios[n] <= t else 'missed'})" for n, t in TARGETS.items()]  # fmt: skip
    body.append("\nSummary: " + "; ".join(summary) + ".")
    write_section("speed", "Speed: render, load, compare, turn", "\n".join(body))


if __name__ == "__main__":
    main()
