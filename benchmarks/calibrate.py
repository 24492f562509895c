"""`workingset calibrate` on every OpenHands run that recorded its bill: the anthropic model against Anthropic's.

Run: .venv/bin/python benchmarks/calibrate.py [--corpus DIR] [--check]

Each OpenHands V1 conversation under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`) whose `base_state.json` records token usage, and the
167-step run of `../shared/corpus/all/`, is calibrated as `workingset calibrate RUN` does
(default options: 5-minute TTL, 1,024-token minimum), cold and with `--warm`. Per run: the
calls whose predicted read and write shares are both within 2 points of the recorded ones
(the target is 95% of calls), the mean and largest share error, and for every other call
what explains it: a warm start (the first call read a prefix another conversation wrote),
a read the model takes from further back than Anthropic looks (the number of blocks
between that read and the request's last breakpoint), or the tokenizer. It also checks
how the recorded counts add up: each call's recorded cost against the Claude Sonnet 4 price
list with writes on top of `prompt_tokens`, and the reads each call makes of the previous
one's prefix. Writes the `calibrate` section of RESULTS.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import long_runs  # noqa: E402
from _results import write_section  # noqa: E402
from trajectories import DEFAULT_CORPUS, corpus_entries  # noqa: E402

from workingset.compare import wire  # noqa: E402
from workingset.compare.calibrate import (  # noqa: E402
    SERVICE,
    TARGET_CALLS,
    TARGET_POINTS,
    Call,
    Row,
    calibrate,
    read_calls,
)

LOOKBACK = (
    20  # blocks Anthropic checks before a breakpoint (the README's account of the anthropic model)
)
# Claude Sonnet 4, $ per million tokens: base input, 5m cache write, cache hit, output (docs/calibrate.md).
SONNET_4 = (3.0, 3.75, 0.30, 15.0)


def usage_runs(entries: list[Path]) -> list[Path]:
    """The OpenHands conversation directories among the corpus entries that recorded token usage."""
    out = []
    for path in entries:
        base = path / "base_state.json"
        if path.is_dir() and base.is_file():
            metrics = (
                json.loads(base.read_text())
                .get("stats", {})
                .get("service_to_metrics", {})
                .get(SERVICE, {})
            )
            if metrics.get("token_usages"):
                out.append(path)
    return out


def bill_check(path: Path) -> str:
    """How the recorded counts add up: the cost identity and the chain of reads."""
    base = json.loads((path / "base_state.json").read_text())
    metrics = base["stats"]["service_to_metrics"][SERVICE]
    usages, costs = metrics["token_usages"], metrics["costs"]
    inp, write, hit, out = SONNET_4
    worst = max(
        abs(c["cost"] - (inp * (u["prompt_tokens"] - u["cache_read_tokens"]) + write * u["cache_write_tokens"]
                         + hit * u["cache_read_tokens"] + out * u["completion_tokens"]) / 1e6)
        for u, c in zip(usages, costs)
    )  # fmt: skip
    inside = sum(
        u["prompt_tokens"] - u["cache_read_tokens"] - u["cache_write_tokens"] < 0 for u in usages
    )
    chained = sum(
        u["cache_read_tokens"] == p["cache_read_tokens"] + p["cache_write_tokens"]
        for p, u in zip(usages, usages[1:])
    )
    rest = [u["prompt_tokens"] - u["cache_read_tokens"] for u in usages]
    sonnet = "claude-sonnet-4-2" in str(usages[0].get("model"))
    cost = (f"every recorded cost equals the Sonnet 4 price of (prompt_tokens − reads) uncached + writes + reads + "
            f"output to ${worst:.2g}" if sonnet else "not Claude Sonnet 4: cost identity not checked")  # fmt: skip
    return (f"{cost}; were writes inside prompt_tokens, {inside} of {len(usages)} calls would have a negative "
            f"uncached count; {chained} of {len(usages) - 1} calls read exactly the previous call's reads + writes; "
            f"{min(rest)} to {max(rest)} tokens a call are uncached")  # fmt: skip


def _why(row: Row) -> str:
    """What explains one call outside the target, when it is not the lookback."""
    dr, dw = row.errors()
    if row.call == 1 and row.predicted.read == 0 and row.recorded.cache_read > 0:
        return (f"warm start: the first call read {row.recorded.cache_read} recorded tokens that no earlier call "
                f"of this run wrote (read {dr:+.1f}, write {dw:+.1f} points)")  # fmt: skip
    return (f"tokenizer: the model read the previous call's whole prompt, as Anthropic did, but the new tokens' "
            f"share differs (read {dr:+.2f}, write {dw:+.2f} points)")  # fmt: skip


def _lookback(calls: dict[int, Call], row: Row) -> str | None:
    """When the model read further back than Anthropic looks: the distance, and the bill with the read at a breakpoint."""
    call = calls[row.call]
    prompt = wire.to_prompt(wire.body_blocks(call.body, "anthropic"))
    if row.predicted.read not in prompt.blocks or len(prompt.breakpoints) < 2:
        return None
    behind = prompt.blocks.index(prompt.breakpoints[-1]) - prompt.blocks.index(row.predicted.read)
    if behind <= LOOKBACK:
        return None
    # The nearest earlier breakpoint of this request (the system prompt's): an entry every call refreshes.
    at = max(b for b in prompt.breakpoints[:-1] if b <= row.predicted.read)
    tokens = row.predicted.tokens
    want = row.recorded
    read_err = 100 * (at / tokens - want.cache_read / want.input)
    write_err = 100 * ((prompt.breakpoints[-1] - at) / tokens - want.cache_write / want.input)
    ok = "within" if max(abs(read_err), abs(write_err)) <= TARGET_POINTS else "outside"
    return (f"lookback: the model read an entry {behind} blocks behind the last breakpoint (more than {LOOKBACK}); "
            f"read at the system breakpoint instead, the shares are {read_err:+.2f} / {write_err:+.2f} points ({ok})")  # fmt: skip


def measure(path: Path, source: str) -> tuple[list[list[object]], list[str]]:
    """One run's table rows (cold, warm) and its notes."""
    rows, notes = [], [f"#### `{path.name}` ({source})", "", bill_check(path) + ".", ""]
    _, _, calls = read_calls(path)
    by_index = {c.index: c for c in calls}
    for warm in (False, True):
        cal = calibrate(path, warm=warm)
        errors = [abs(e) for r in cal.rows for e in r.errors()]
        share = cal.within / len(cal.rows)
        rows.append([path.name, "warm" if warm else "cold", len(cal.rows), cal.within, f"{100 * share:.1f}%",
                     "yes" if share >= TARGET_CALLS else "no", f"{sum(errors) / len(errors):.2f}", f"{max(errors):.2f}",
                     f"{cal.tokenizer_ratio:.4f}"])  # fmt: skip
        misses = [r for r in cal.rows if not r.within()]
        notes.append(
            f"{'With --warm' if warm else 'Cold'}: {len(misses)} call(s) outside the target"
            + (":" if misses else ".")
        )
        for r in misses:
            why = _lookback(by_index, r) or _why(r)
            notes.append(f"- call {r.call}: {why}")
        notes.append("")
    return rows, notes


def main() -> None:
    _, entries = corpus_entries(__doc__.splitlines()[0])
    table, notes = [], []
    corpus_runs = usage_runs(entries)
    runs = [(p, f"$CORPUS/{p.name}") for p in corpus_runs]
    runs += [(p, f"../shared/corpus/all/{p.name}") for p in long_runs()]
    for path, source in runs:
        rows, lines = measure(path, source)
        table += rows
        notes += lines
    headers = ["run", "start", "calls", "within 2 points", "share", "target met", "mean error (points)",
               "largest error (points)", "tokenizer ratio"]  # fmt: skip
    body = (
        f"Corpus: `CORPUS={DEFAULT_CORPUS}` ({len(corpus_runs)} OpenHands runs with usage) and the 167-step run. "
        "Each agent LLM call's Anthropic body is rebuilt from the events (docs/calibrate.md) and billed by the "
        "`anthropic` cache model as `workingset calibrate RUN` does; a call meets the target when its predicted "
        f"read and write shares are both within {TARGET_POINTS:g} points of the recorded ones, a run when "
        f"{100 * TARGET_CALLS:g}% of its calls do. Cold: the cache is empty before the first call; warm "
        "(`--warm`): the tools and system prompt were cached by another conversation. Errors are the absolute "
        "share differences in percentage points, over both shares of every call.\n\n"
        + tabulate(table, headers=headers, tablefmt="github")
        + "\n\n"
        + "\n".join(notes)
    )
    write_section(
        "calibrate", "Calibration: the anthropic model against OpenHands' real bills", body
    )


if __name__ == "__main__":
    main()
