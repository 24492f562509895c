"""v13's cost against the transcript at several context budgets, on every run.

Run: .venv/bin/python benchmarks/v13_budget.py [--corpus DIR] [--check]

bug17, every trajectory under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`) and the 167-step run of `../shared/corpus/all/`,
imported as the cache section imports them, are billed under the `anthropic` model with its
defaults (as `compare --cache anthropic` bills them) for v13 at each budget of `BUDGETS`
and for the full transcript. A cell is v13's cost over the transcript's, then its largest
context in thousands of characters. This is what v13's default budget was chosen from: the
largest budget measured at which every run stays within 1.1 times the transcript's cost (see
the README, "v13"). Writes the
`v13_budget` section of RESULTS.md (deterministic).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import cost_runs  # noqa: E402
from _results import write_section  # noqa: E402
from trajectories import DEFAULT_CORPUS, corpus_entries  # noqa: E402

from workingset.compare.billing import CacheOptions  # noqa: E402
from workingset.compare.engine import baseline_renderers, compare_contexts, version_renderer  # noqa: E402
from workingset.encoders import get_encoder  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

BUDGETS = (40_000, 48_000, 64_000, 80_000, 90_000, 100_000, 110_000, 120_000)
TARGET = 1.1  # issue 9: at most 1.1 times the transcript's cost


def measure(contexts) -> dict[int | str, tuple[float, int]]:
    """Per budget: v13's anthropic cost over the transcript's, and its largest context in characters;
    under "masking-10", that baseline's largest context (its cost left at 0)."""
    renderers = {b: version_renderer(f"v13:budget={b}") for b in BUDGETS}
    renderers.update(
        {name: baseline_renderers()[name] for name in ("full-transcript", "masking-10")}
    )
    cmp = compare_contexts(contexts, renderers, cache=("anthropic",), cache_options=CacheOptions())
    cost = {name: sum(b.cost for b in cmp.caches["anthropic"][name]) for name in renderers}
    out: dict[int | str, tuple[float, int]] = {
        b: (cost[b] / cost["full-transcript"], max(size.chars for size in cmp.sizes[b]))
        for b in BUDGETS
    }
    out["masking-10"] = (0.0, max(size.chars for size in cmp.sizes["masking-10"]))
    return out


def main() -> None:
    """Bill v13 at every budget on bug17, every corpus run and the long run; write the `v13_budget` section."""
    corpus, entries = corpus_entries(__doc__.splitlines()[0])
    results: dict[str, dict[int | str, tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, directory in cost_runs(entries, Path(tmp)):
            results[name] = measure([ctx for _, ctx in read_run(directory)])
    rows = [[name, *(f"{r[b][0]:.3f}x / {r[b][1] / 1000:.0f}k" for b in BUDGETS), f"{r['masking-10'][1] / 1000:.0f}k"]
            for name, r in results.items()]  # fmt: skip
    over = [sum(r[b][0] > TARGET for r in results.values()) for b in BUDGETS]
    worst = [max(r[b][0] for r in results.values()) for b in BUDGETS]
    rows.append(["runs over 1.10x", *(str(n) for n in over), ""])
    rows.append(["highest", *(f"{w:.3f}x" for w in worst), ""])
    default = get_encoder("v13").budget
    headers = [
        "run",
        *(f"{b:,}" + (" (default)" if b == default else "") for b in BUDGETS),
        "masking-10 largest",
    ]
    table = tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(BUDGETS) + 1),
                     disable_numparse=True)  # fmt: skip
    body = (
        f"bug17, the corpus `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories) and the "
        "167-step run of `../shared/corpus/all/`, billed under the `anthropic` model with its defaults, as in the "
        "cache section. Each cell: v13's cost over the transcript's / v13's largest context in thousands of "
        "characters, at the budget of its column (characters, `v13:budget=N`); the last column is masking-10's "
        "largest context, which issue 9 asks v13's not to pass where the transcript passes the budget. The cost depends on when "
        "compactions fall, so it does not fall steadily with the budget; v13's default is the largest budget "
        "here at which no run passes 1.1 times the transcript's cost.\n\n" + table + "\n"
    )
    write_section("v13_budget", "v13's cost at each context budget", body)


if __name__ == "__main__":
    main()
