"""v15 with leaner entries: heads without capture time, action and cost, or written by rules; fewer decision rows.

Run: .venv/bin/python benchmarks/v15_lean.py [--root DIR] [--manifest FILE] [--section NAME] [--jobs N] [--check]

`benchmarks/v15_parts.py` finds the entries' heads the largest part of what v15's format adds to
the transcript's bill, and the decision rows without text (an importer writes one assessment a
step) another. Most of a head on an imported run is its capture time (on some runs to the
microsecond), its `action=` and its `cost=`. This script measures what v15 would show and cost with its entries
written without them: every evidence head without the capture time, `action=` and `cost=`, and
no decision row without text, at each of v15_keep.py's shares of the room a compaction keeps (a
third, a half, two thirds), each with v15's page (a tenth of the budget: an entry is whole up to
it) and with v14's (the tail's reserve less a fifth, shared by its five entries: 4,000 characters
at the default budget), beside v14 and v15 as released. Lean entries are a measurement, not a
format: a format that wrote entries this way would have to keep what they leave out one recall
away (v15's index rows carry the full head; a recall would have to show it too), and a decision
row's verdict with it. So it also measures *compact* entries, written by rules a format could
state and a reader undo: a head's capture time without its date when that is the case's opening
date; no `action=` when the analysis numbers its actions like its evidence (`B` with the item's
number, as the first item's is) and this one's is too; `cost=` kept; no assessment row that is
neutral with neither confidence nor text (as v15 writes no query row without text). Compact
entries are measured at two thirds with v15's page and at a third with v14's. While it renders
these variants, each worker process has v15 write its entries with a format of its own (`Lean`,
`Compact`: `V15.format_of` replaced) and empties the per-process text caches before and after,
so nothing written one way is read back the other.

Measured as `benchmarks/use.py` measures (`compare_use`, `anthropic` and `openai-5.6`, every
recall billed): every entry of the manifest present under the corpus root (`--root`, default
`$WORKINGSET_CORPUS` or `../shared/corpus/raw`), and bug17 apart. Tables: the main split, the
holdout split, all runs, bug17. Writes the section `--section` (default `v15_lean`) of RESULTS.md
(deterministic).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, write_section  # noqa: E402
from use import (  # noqa: E402
    MODELS,
    TRANSCRIPT,
    corpus_arguments,
    corpus_jobs,
    load_run,
    run_jobs,
    shown_root,
)
from v15_keep import SHARES, _in_view, _row, table  # noqa: E402

from workingset.encoders.journal.v15 import V15Format  # noqa: E402

BUG17_NAME = "fixtures/bug17"
_ACTION, _COST = re.compile(r" action=\S+"), re.compile(r" cost=\S+")


# v15's page (a tenth of the budget) or v14's (4,000 characters at the default budget).
PAGES = ("v15", "v14")
# (share kept, page, entries): "lean" leaves the capture time, action and cost out of every head and writes no decision
# row without text; "compact" writes what a format could state as rules instead (`compact_head`, `compact_row`).
VARIANTS = [(share, page, "lean") for page in PAGES for share in SHARES] + [
    ((2, 3), "v15", "compact"),
    ((1, 3), "v14", "compact"),
]


def _label(variant: tuple[tuple[int, int], str, str]) -> str:
    (a, b), page, entries = variant
    return f"v15 {entries}, keep {a}/{b}" + (", v14's page" if page == "v14" else "")


def lean_head(text: str, captured_at: str) -> str:
    """A v15 evidence entry's text with its head line written without the capture time, `action=` and `cost=`."""
    head, newline, rest = text.partition("\n")
    head = head.replace(f" {captured_at}", "", 1)
    return _COST.sub("", _ACTION.sub("", head)) + newline + rest


def compact_head(text: str, ev: Any, date: str, numbered: bool) -> str:
    """A v15 evidence entry's text with its head line written by two rules a format could state: the capture time
    without its date when that is `date` (the case's opening date), and no `action=` when the analysis numbers its
    actions like its evidence (`numbered`: the first item's action is `B` with its number) and this one's is too."""
    head, newline, rest = text.partition("\n")
    day, _, clock = ev.captured_at.partition("T")
    if day == date:
        head = head.replace(f" {ev.captured_at}", f" {clock}", 1)
    if numbered and ev.budget.action == f"B{ev.id[1:]}":
        head = head.replace(f" action={ev.budget.action}", "", 1)
    return head + newline + rest


def compact_row(row: Any) -> bool:
    """Whether a decision row is written: as v15 writes it (not a query row without text), and not a neutral
    assessment with neither confidence nor text (a rule a format could state the same way)."""
    neutral = row.kind == "assessment" and row.verdict == "neutral" and row.confidence is None
    return V15Format.writes_row(row) and not (neutral and row.text is None)


class Lean(V15Format):
    """v15's entries, every head via `lean_head`, no decision row without text."""

    def __init__(self, defaults: tuple[tuple[str, Any], ...]):
        super().__init__(defaults)
        self.key = ("v15 lean", defaults)  # type: ignore[assignment]  # its texts are cached apart from v15's

    def evidence(self, ev: Any, same_as: str | None) -> str:
        return lean_head(super().evidence(ev, same_as), ev.captured_at)

    @staticmethod
    def writes_row(row: Any) -> bool:
        return row.text is not None


class Compact(V15Format):
    """v15's entries, every head via `compact_head`, the decision rows `compact_row` writes."""

    def __init__(self, defaults: tuple[tuple[str, Any], ...], date: str, numbered: bool):
        super().__init__(defaults)
        self.date, self.numbered = date, numbered
        self.key = ("v15 compact", defaults, date, numbered)  # type: ignore[assignment]

    def evidence(self, ev: Any, same_as: str | None) -> str:
        return compact_head(super().evidence(ev, same_as), ev, self.date, self.numbered)

    writes_row = staticmethod(compact_row)


@contextmanager
def lean(page: str, entries: str = "lean") -> Iterator[None]:
    """v15 writes `entries` ("lean": `Lean`, or "compact": `Compact`) while inside; with `page` "v14", its page is
    v14's (`V14.page_size`: the tail's reserve less a fifth, shared by its five entries)."""
    from workingset.encoders.journal import v15
    from workingset.encoders.journal.v14 import V14
    from workingset.io import caches

    released_page, released_format = v15.V15.__dict__["page_size"], v15.V15.format_of
    formats: dict[
        tuple[Any, ...], V15Format
    ] = {}  # one per key: a kept journal checks its format by identity

    def format_of(self: Any, state: Any) -> V15Format:
        defaults = v15.defaults_of(state)
        if entries == "lean":
            key: tuple[Any, ...] = (defaults,)
        else:
            first = state.evidence[0] if state.evidence else None
            numbered = first is not None and first.budget.action == f"B{first.id[1:]}"
            key = (defaults, state.case.opened_at.partition("T")[0], numbered)
        if key not in formats:
            formats[key] = Lean(*key) if entries == "lean" else Compact(*key)
        return formats[key]

    caches.clear()  # texts written the released way are not read back
    v15.V15.format_of = format_of  # type: ignore[method-assign]
    if page == "v14":
        v15.V15.page_size = V14.__dict__["page_size"]  # type: ignore[method-assign]
    try:
        yield
    finally:
        v15.V15.page_size = released_page  # type: ignore[method-assign]
        v15.V15.format_of = released_format  # type: ignore[method-assign]
        caches.clear()  # and the lean texts are not read back by a released render


def measure(job: tuple[str, str, str, str]) -> dict[str, Any]:
    """One run: v14's and v15's use counts and with-recalls bills, v15's lean at each share, and the transcript's."""
    from workingset.compare.engine import baseline_renderers, version_renderer
    from workingset.compare.recalls import compare_use
    from workingset.encoders.journal import walk15

    contexts, fixed, options = load_run(job)
    renderers = {"v14": version_renderer("v14"), "v15": version_renderer("v15"),
                 TRANSCRIPT: baseline_renderers(fixed)[TRANSCRIPT]}  # fmt: skip
    base = compare_use(contexts, renderers, **options)
    out = {name: _row(base, name) for name in renderers}
    released = walk15.KEEP
    try:
        for share, page, entries in VARIANTS:
            walk15.KEEP = share  # read at each compaction; this process only
            with lean(page, entries):
                measured = compare_use(contexts, {"v15": version_renderer("v15")}, **options)
            out[_label((share, page, entries))] = _row(measured, "v15")
    finally:
        walk15.KEEP = released
    return out


def _bill(rows: list[dict[str, Any]], s: str, m: str) -> float:
    return math.fsum(r[s]["bill"][m] for r in rows) / math.fsum(
        r[TRANSCRIPT]["bill"][m] for r in rows
    )


def against_v14(title: str, rows: list[dict[str, Any]]) -> str:
    """Which variants show at least as much as v14 for no more under every model, on `rows` (or the cheapest)."""
    v14 = _in_view(rows, "v14")
    both = [
        _label(v)
        for v in VARIANTS
        if _in_view(rows, _label(v)) >= v14
        and all(_bill(rows, _label(v), m) <= _bill(rows, "v14", m) for m in MODELS)
    ]
    if both:
        return (f"on {title}, {'; '.join(both)} show{'s' if len(both) == 1 else ''} at least as much as v14 for no "
                f"more under {' and '.join(MODELS)}")  # fmt: skip
    cheapest = _label(min(VARIANTS, key=lambda v: _bill(rows, _label(v), MODELS[0])))
    return (
        f"on {title}, no variant shows as much as v14 for no more (the cheapest, {cheapest}, "
        f"{_bill(rows, cheapest, MODELS[0]):.3f}x against v14's {_bill(rows, 'v14', MODELS[0]):.3f}x under "
        f"{MODELS[0]}, with {100 * _in_view(rows, cheapest):.1f}% in view against {100 * _in_view(rows, 'v14'):.1f}%)"
    )


def main() -> None:
    """Import and measure bug17 and every run of the manifest present; write the section."""
    args, root = corpus_arguments(__doc__.splitlines()[0], "v15_lean")
    entries, present, info, jobs = corpus_jobs(root, args.manifest)
    measured = run_jobs(measure, jobs, args.jobs)
    by_name = {name: row for (name, _, _), row in zip(jobs, measured)}
    runs = [row for name, row in by_name.items() if name != BUG17_NAME]
    split = {name: info[name]["split"] for name in by_name}
    main_rows = [row for name, row in by_name.items() if split[name] == "main"]
    holdout = [row for name, row in by_name.items() if split[name] == "holdout"]
    names = ["v14", "v15", *(_label(v) for v in VARIANTS)]
    shown = shown_root(root)
    parts = [
        f"Corpus root `{shown}` ({len(present)} of the {len(entries)} entries of "
        f"`{args.manifest.resolve().relative_to(ROOT)}` present) and bug17 apart. v15 writing its entries lean (every "
        "evidence head without its capture time, `action=` and `cost=`; no decision row without text) at each share "
        "of the journal's room a compaction keeps, with v15's page (a tenth of the budget) and with v14's (4,000 "
        "characters at the default budget), beside v14 and v15 as released (not lean; two thirds; v15's page), "
        "measured as "
        "`benchmarks/use.py` measures them: *in view*, the share of the identifiers each next step used that its "
        "context holds; *recall steps*, the steps with something one recall away; bills with every recall billed, "
        "as ratios to the full transcript's (with its fixed prompt) over the runs' sums. Lean entries are a "
        "measurement, not a format: what they leave out would have to be one recall away. *Compact* entries leave "
        "out only what rules a reader can undo let them: a head's capture time without its date when that is the case's "
        "opening date, no `action=` when the analysis numbers its actions like its evidence and this one's is too, "
        "`cost=` kept, no neutral assessment row with neither confidence nor text.",
    ]
    groups = [
        ("main", main_rows),
        ("holdout", holdout),
        ("all", runs),
        ("bug17", [by_name[BUG17_NAME]]),
    ]
    for title, picked in groups:
        if picked:
            parts += ["", f"### {title} ({len(picked)} {'run' if len(picked) == 1 else 'runs'})", "",
                      table(picked, names)]  # fmt: skip
    said = [against_v14(f"the {len(runs)} runs", runs)] if runs else []
    said.append(against_v14("bug17", [by_name[BUG17_NAME]]))
    parts += ["", "Against v14: " + "; ".join(said) + "."]
    write_section(args.section, f"v15 with leaner entries ({shown})", "\n".join(parts))


if __name__ == "__main__":
    main()
