"""Sizes: every encoder version on every run under fixtures/ (chars, tokens, prompt-cache split).

Run: .venv/bin/python benchmarks/sizes.py

The numbers are those of `workingset compare <run> --all` (the same library call), so
each table can be checked against that command's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import ROOT, write_section  # noqa: E402

from workingset.compare.engine import DEFAULT_CACHED_PRICE, compare_contexts, strategies  # noqa: E402
from workingset.errors import WorkingsetError  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

FIXTURES = ROOT / "fixtures"


def runs() -> list[Path]:
    """Every directory under fixtures/ that holds JSON files, in name order."""
    return sorted({p.parent for p in FIXTURES.rglob("*.json")})


def _pct(base: float, value: float) -> str:
    return f"{(value - base) / base * 100:+.1f}%"


def run_table(directory: Path) -> str:
    """The per-version totals of one run, as a Markdown table with a one-line caption."""
    contexts = [ctx for _, ctx in read_run(directory)]
    cmp = compare_contexts(contexts, strategies("v7", "v8", all_versions=True, baselines=False))
    order = sorted(cmp.strategies, key=lambda s: int(s[1:]))
    base = cmp.total("v7")
    rows = []
    for s in order:
        t, last = cmp.total(s), cmp.last(s)
        vs = (lambda b, v: "") if s == "v7" else _pct  # v7 is the base: no change against itself
        rows.append([s, f"{t.chars:,}", vs(base.chars, t.chars), f"{t.tokens:,}", vs(base.tokens, t.tokens),
                     f"{t.cached:,}", f"{t.uncached:,}", f"{100 * t.cached / t.tokens:.1f}%", f"{t.cost:,.1f}",
                     vs(base.cost, t.cost), f"{last.chars:,}", f"{last.tokens:,}"])  # fmt: skip
    headers = ["version", "chars", "vs v7", "tokens", "vs v7", "cached tokens", "uncached tokens",
               "cached share", "effective cost", "vs v7", "last chars", "last tokens"]  # fmt: skip
    table = tabulate(
        rows,
        headers=headers,
        tablefmt="github",
        colalign=["left"] + ["right"] * 11,
        disable_numparse=True,
    )
    rel = directory.relative_to(ROOT)
    bare = compare_contexts(
        contexts, strategies("v8", "v9", all_versions=False, baselines=False), recall=False
    )
    no_recall = []
    for s in bare.strategies:
        kept, dropped = cmp.total(s), bare.total(s)
        no_recall.append(f"{s} {dropped.chars:,} chars, {dropped.tokens:,} tokens, effective cost {dropped.cost:,.1f}"
                         + (" (unchanged)" if (kept.chars, kept.tokens) == (dropped.chars, dropped.tokens) else ""))  # fmt: skip
    return (
        f"### `{rel}`: {len(contexts)} contexts, recall selections kept\n\n"
        f"Reproduce: `.venv/bin/workingset compare {rel} --all` (the totals table).\n\n{table}\n\n"
        f"With `--no-recall` (every state's recall selections removed): {'; '.join(no_recall)}.\n"
    )


def main() -> None:
    """Measure every run and write the `sizes` section of RESULTS.md."""
    parts = [
        "Tokens: cl100k_base (tiktoken, bundled offline). Cached tokens: the longest common token "
        "prefix of each context with the previous context of the same run rendered by the same "
        f"version (the first context has none). Effective cost: uncached + {DEFAULT_CACHED_PRICE:g} x "
        "cached, in full-price tokens. `vs v7`: change relative to v7.\n"
    ]
    for directory in runs():
        try:
            parts.append(run_table(directory))
        except WorkingsetError as err:
            parts.append(
                f"### `{directory.relative_to(ROOT)}`: skipped ({err.code}: {err.message})\n"
            )
    if len(parts) == 1:
        parts.append("No runs under fixtures/ yet.\n")
    write_section("sizes", "Sizes: every version on every run", "\n".join(parts))


if __name__ == "__main__":
    main()
