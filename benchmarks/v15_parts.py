"""What each part v15 adds to the transcript costs, on runs where no bound acts: the floor of a protocol format.

Run: .venv/bin/python benchmarks/v15_parts.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

`benchmarks/use.py` finds v15 over the full transcript's bill even with no bound on almost every
run of 20+ contexts from lean agents: its format alone passes the transcript. This script says
which part of the format does it. Each run's requests under v15 with no bound (`v15:budget=` the
largest budget, so nothing is compacted or paged) are billed as Anthropic bills them (the
`anthropic` cache model, as recorded: no recall is needed with nothing hidden, and the answers'
output tokens, the same under every strategy, are left out), then billed again with one part
taken out of every request, and once with all of them out:

- *schema*: the decision tool (its JSON schema) every request carries;
- *preamble*: the block explaining the conventions;
- *tail*: the "This turn" block (iteration, budget, hypotheses, the result to assess);
- *heads*: what an entry's head line says after its ID (iteration, capture time, fields differing
  from the case's evidence defaults, `action=`, `cost=`; a note's hypothesis, iteration and kind);
- *rows*: decision rows without text (an importer writes one assessment per step).

A part's column is what taking it out saves, as a share of the transcript's bill; *protocol only*
is v15 with the heads and rows out (entries written with their IDs alone, the schema, preamble and
tail kept: the floor of a format with v15's protocol), and *none of them* v15 with all five out,
each over the transcript: what is left then is the case, the notes, the queries and the outputs,
each fenced. Taking text out of a request is not a format anyone can send (the
model needs the schema and the conventions); it measures what each part costs where it sits,
its cache reads and writes included. The parts overlap a little in what they save (taking one
out moves the others' cache boundaries), so the columns need not add up to v15's excess; on a
short run, taking text out can bring a cached prefix under the 1,024 tokens Anthropic caches at
least, so taking more out can save less.

Measured: bug17 and every entry of the manifest present under the corpus root (`--root`,
default `$WORKINGSET_CORPUS` or `../shared/corpus/raw`), imported with the project's importers.
Writes the section `--section` (default `v15_parts`) of RESULTS.md (deterministic).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, write_section  # noqa: E402
from use import (  # noqa: E402
    TRANSCRIPT,
    UNBOUNDED,
    corpus_arguments,
    corpus_jobs,
    load_run,
    run_jobs,
    shown_root,
)

PARTS = ("schema", "preamble", "tail", "heads", "rows")
BARE = "protocol only"  # v15 with heads and rows out: the protocol kept, every entry written with its ID alone
ALL = "none of them"
MODEL = "anthropic"
LONG = 20  # issue 32's per-run targets start at runs of 20 contexts

_FENCE = re.compile(r"(`{3,})")
_ENTRY_HEAD = re.compile(r"([EN][0-9]{6}) ")  # an evidence or note head line: its ID, then the rest
_ROW = re.compile(r"H[0-9]+ #[0-9]+ [a-z_]+( |$)")  # a decision row: hypothesis, iteration, kind


def journal_lines(text: str, heads: bool, rows: bool) -> str:
    """`text` (a v15 journal block) with each entry's head cut to its ID (`heads`) and each decision row without
    text dropped (`rows`). Lines inside a fence (a payload, a note's or a decision's text) are never touched."""
    lines = text.split("\n")
    out: list[str] = []
    fence = ""
    for k, line in enumerate(lines):
        if fence:
            out.append(line)
            if line == fence:
                fence = ""
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            out.append(line)
            continue
        if heads and _ENTRY_HEAD.match(line):
            out.append(line.split(" ", 1)[0])
            continue
        if rows and _ROW.match(line):
            following = lines[k + 1] if k + 1 < len(lines) else ""
            if not _FENCE.match(following):  # no text: the row is all there is
                if out and out[-1] == "" and following == "":
                    out.pop()  # and the blank line that parted it from the entry before
                continue
        out.append(line)
    return "\n".join(out)


def cut(blocks: list[Any], parts: tuple[str, ...]) -> list[Any]:
    """The request's blocks with `parts` taken out (a block taken out keeps its place and cache mark, empty)."""
    heads, rows = "heads" in parts, "rows" in parts
    out = []
    for block in blocks:
        text = block.text
        if block.part == "tools":
            text = "" if "schema" in parts else text
        elif text.startswith("# Investigation context"):
            text = "" if "preamble" in parts else text
        elif text.startswith("## This turn"):
            text = "" if "tail" in parts else text
        elif heads or rows:
            text = journal_lines(text, heads, rows)
        out.append(replace(block, text=text))
    return out


def bill(requests: list[tuple[list[Any], float]], parts: tuple[str, ...] = ()) -> float:
    """The run's requests (blocks, send time) billed under `MODEL`, with `parts` taken out."""
    from workingset.compare.billing import CacheOptions
    from workingset.compare.billing import bill as billed
    from workingset.compare.wire import to_prompt

    prompts = [
        to_prompt(cut(blocks, parts) if parts else blocks, time) for blocks, time in requests
    ]
    return math.fsum(b.cost for b in billed(MODEL, prompts, CacheOptions()))


def requests(
    contexts: list[Any], strategy: str, options: dict[str, Any]
) -> list[tuple[list[Any], float]]:
    """Each request of the run under `strategy` as Anthropic receives it: its blocks and its send time."""
    from datetime import datetime

    from workingset.compare.engine import request_bodies
    from workingset.compare.wire import billed_blocks

    out = []
    for line in request_bodies(
        contexts, strategy, "anthropic", None, options["fixed"], options["retries"]
    ):
        blocks, _ = billed_blocks(line["body"], "anthropic")  # Anthropic has no implicit breakpoint
        out.append((blocks, datetime.fromisoformat(line["sent_at"]).timestamp()))
    return out


def measure(job: tuple[str, str, str, str]) -> dict[str, Any]:
    """One run: the transcript's bill, v15's with no bound, and v15's with each part and with all taken out."""
    from workingset.encoders import get_encoder

    contexts, fixed, options = load_run(job)
    v15 = requests(contexts, UNBOUNDED, options)
    # A request's first message is its context's text, block by block (`providers` checks that they cover it).
    largest = max(
        sum(len(b.text) for b in blocks if b.part == "messages" and b.message == 0)
        for blocks, _ in v15
    )
    row = {
        "contexts": len(contexts),
        # No context passes v15's budget: no bound would act on the run.
        "under": largest <= get_encoder("v15").budget,
        # What the trajectory recorded of what the agent sent besides its steps (the transcript is billed with it).
        "fixed": "none" if fixed is None else ("tools" if fixed.tools else "no tools"),
        TRANSCRIPT: bill(requests(contexts, TRANSCRIPT, options)),
        "v15": bill(v15),
        ALL: bill(v15, PARTS),
        BARE: bill(v15, ("heads", "rows")),
    }
    for part in PARTS:
        row[part] = bill(v15, (part,))
    return row


def _cells(rows: list[dict[str, Any]]) -> list[str]:
    base = math.fsum(r[TRANSCRIPT] for r in rows)
    v15 = math.fsum(r["v15"] for r in rows)
    saved = [(v15 - math.fsum(r[p] for r in rows)) / base for p in PARTS]
    rest = [f"{math.fsum(r[k] for r in rows) / base:.3f}" for k in (BARE, ALL)]
    return [f"{v15 / base:.3f}", *(f"{s:.1%}" for s in saved), *rest]


def table(measured: list[tuple[str, dict[str, Any]]]) -> str:
    """Per run and over the runs of 20+ contexts and all runs: v15's bill, each part's, and v15 without them."""
    headers = ["run", "contexts", "v15, no bound", *PARTS, BARE, ALL]
    out = [[name, str(r["contexts"]), *_cells([r])] for name, r in measured]
    long = [r for _, r in measured if r["contexts"] >= LONG]
    if long:
        out.append([f"runs of {LONG}+ contexts ({len(long)})", "", *_cells(long)])
    out.append([f"all ({len(measured)})", "", *_cells([r for _, r in measured])])
    return tabulate(out, headers=headers, tablefmt="github", disable_numparse=True)


def reading(measured: list[tuple[str, dict[str, Any]]]) -> str:
    """What the table says about issue 32's target of at most the transcript on every run of 20+ contexts."""
    long = [(n, r) for n, r in measured if r["contexts"] >= LONG]
    if not long:
        return f"No run here has {LONG}+ contexts, so nothing is said of issue 32's per-run target."
    over = [n for n, r in long if r["v15"] > r[TRANSCRIPT]]
    still = [n for n, r in long if r[ALL] > r[TRANSCRIPT]]
    bare = [n for n, r in long if r[BARE] > r[TRANSCRIPT]]
    under = [n for n, r in long if r["under"]]
    under_over = [n for n in under if n in bare]
    base = math.fsum(r[TRANSCRIPT] for _, r in long)
    v15 = math.fsum(r["v15"] for _, r in long)
    ranked = sorted(PARTS, key=lambda p: -(v15 - math.fsum(r[p] for _, r in long)))
    shares = ", ".join(f"{p} {(v15 - math.fsum(r[p] for _, r in long)) / base:.1%}" for p in ranked)
    return (
        f"On the {len(long)} runs of {LONG}+ contexts v15 with no bound costs more than the transcript on "
        f"{len(over)}. What each part costs there, as a share of the transcript's bill, largest first: {shares}. "
        f"With the heads and rows out and the protocol kept (the schema, the preamble and the tail: the answer's "
        f"shape, the conventions, what to assess this turn), {len(bare)} of the {len(long)} cost more than the "
        f"transcript ({math.fsum(r[BARE] for _, r in long) / base:.3f}x over them); with all five out, {len(still)}"
        + (f" ({_recorded([r for n, r in long if n in still])})" if still else "")
        + f". On {len(under)} of the {len(long)} no context passes v15's budget, so no bound acts and nothing pays "
        f"for the protocol: there the protocol-only floor costs more than the transcript on {len(under_over)}."
    )


def _recorded(rows: list[dict[str, Any]]) -> str:
    """What the runs' trajectories recorded of the agent's fixed prompt: the transcript is billed with that alone."""
    said = {"none": "no fixed prompt", "no tools": "a fixed prompt without tool definitions",
            "tools": "a fixed prompt with its tool definitions"}  # fmt: skip
    counts = [(k, sum(r["fixed"] == k for r in rows)) for k in said]
    return ", ".join(f"{n} with {said[k]} recorded" for k, n in counts if n)


def main() -> None:
    """Import and measure every run of the manifest present; write the section."""
    args, root = corpus_arguments(__doc__.splitlines()[0], "v15_parts")
    entries, present, _, jobs = corpus_jobs(root, args.manifest)
    rows = run_jobs(measure, jobs, args.jobs)
    measured = [(name, row) for (name, _, _), row in zip(jobs, rows)]
    shown = shown_root(root)
    body = "\n".join([
        f"Corpus root `{shown}` ({len(present)} of the {len(entries)} entries of "
        f"`{args.manifest.resolve().relative_to(ROOT)}` present) and bug17. Each run's requests under v15 with no bound "
        f"(`{UNBOUNDED}`: nothing compacted or paged, everything in view), billed as `anthropic` bills them as recorded "
        "(no recall is needed; the answers' output tokens, the same under every strategy, left out), then again with "
        "one part taken out of every request: the decision tool's *schema*, the *preamble*, the *tail* (\"This "
        "turn\"), the entries' *heads* after their IDs, the decision *rows* without text. *v15, no bound*: its bill "
        "over the transcript's (with its fixed prompt); a part's column: what taking it out saves, as a share of the "
        f"transcript's bill; *{BARE}*: v15 with the heads and rows out (the schema, preamble and tail kept), and *{ALL}*: v15 with all five out, each over the transcript's. Taking text out is a measurement, "
        "not a format anyone can send; the parts overlap a little in what they save, and on a short run taking more "
        "out can save less (a cached prefix falls under the 1,024-token minimum).",
        "",
        table(measured),
        "",
        reading(measured),
    ])  # fmt: skip
    write_section(
        args.section, f"What each part of v15's format costs with no bound ({shown})", body
    )


if __name__ == "__main__":
    main()
