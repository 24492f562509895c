"""Cache-true costs: bug17, the corpus runs and the 167-step run under the ideal, anthropic, openai-auto and openai-5.6 models.

Run: .venv/bin/python benchmarks/cache.py [--corpus DIR] [--check]

bug17, every trajectory under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`) and the 167-step OpenHands run of
`../shared/corpus/all/` (imported with `workingset import`, as benchmarks/trajectories.py does)
are measured like
`workingset compare RUN --all --baselines --cache ideal,anthropic,openai-auto,openai-5.6` (the same
library call, default options: 5-minute TTL, 1,024-token minimum, reads at 0.1, writes at 1.25
for anthropic and openai-5.6 and 1.0 for openai-auto), each context billed from the request body
`workingset requests` prints: per strategy the tokens billed uncached, written and read
over the run, and the effective cost in full-price tokens. Writes the `cache` section of
RESULTS.md.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import LONG_RUNS, long_runs  # noqa: E402
from _results import ROOT, write_section  # noqa: E402
from trajectories import DEFAULT_CORPUS, corpus_entries, detect  # noqa: E402

from workingset.compare.baselines import BASELINES  # noqa: E402
from workingset.compare.billing import MODELS, CacheOptions  # noqa: E402
from workingset.compare.engine import Comparison, compare_contexts, strategies  # noqa: E402
from workingset.compare.tables import availability_data  # noqa: E402
from workingset.encoders import get_encoder  # noqa: E402
from workingset.importers import import_trajectory, write_import  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

BUG17 = ROOT / "fixtures" / "bug17"
TRANSCRIPT = "full-transcript"
CACHE_NATIVE = ("v11", "v12", "v13")


def _source(path: Path) -> str:
    """How the reproduce line names a run's source: in the corpus, or the long run in ../shared/corpus/all."""
    return f"../shared/corpus/all/{path.name}" if path.name in LONG_RUNS else f"$CORPUS/{path.name}"


def measure(directory: Path) -> Comparison:
    """Every version and baseline of one run under every cache model (default options)."""
    contexts = [ctx for _, ctx in read_run(directory)]
    renderers = strategies("v7", "v8", all_versions=True, baselines=True)
    return compare_contexts(contexts, renderers, cache=tuple(MODELS), cache_options=CacheOptions())


def _order(cmp: Comparison) -> list[str]:
    versions = sorted((s for s in cmp.strategies if s not in BASELINES), key=lambda s: int(s[1:]))
    return versions + [s for s in cmp.strategies if s in BASELINES]


def _model_table(
    first: str, rows: list[list[str]], columns: tuple[str, ...], extra: tuple[str, ...] = ()
) -> str:
    """A GitHub table: the first column, then `columns` (formatted with the model's name) per model, then `extra`."""
    headers = [first] + [c.format(m) for m in MODELS for c in columns] + list(extra)
    return tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                    disable_numparse=True)  # fmt: skip


def split_table(cmp: Comparison) -> str:
    """Per strategy and model: uncached / written / read tokens and the effective cost against the transcript."""
    rows = []
    for s in _order(cmp):
        row = [s]
        for model in MODELS:
            t, ref = cmp.cache_total(model, s), cmp.cache_total(model, TRANSCRIPT)
            row += [
                f"{t.uncached:,} / {t.written:,} / {t.read:,}",
                f"{t.cost:,.1f}",
                f"{t.cost / ref.cost:.2f}x",
            ]
        reach = cmp.availability_total(s)
        lowest = availability_data(cmp, s)["min_reachable_share"]
        row += [
            " / ".join(_pct(reach.share(part)) for part in ("visible", "addressable", "gone")),
            _pct(lowest),
        ]
        rows.append(row)
    return _model_table(
        "strategy",
        rows,
        ("{} uncached / written / read", "{} cost", "{} vs transcript"),
        ("identifiers visible / addressable / gone", "lowest reachable"),
    )


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


def targets(results: dict[str, Comparison], version: str) -> str:
    """Issue 9's targets for a cache-native version (v11 and later) on each run: cost, bound, availability."""
    budget = get_encoder(version).budget
    rows = []
    for name, cmp in results.items():
        cost = cmp.cache_total("anthropic", version).cost
        largest = {
            s: max(size.chars for size in cmp.sizes[s])
            for s in (version, "v7", TRANSCRIPT, "masking-10")
        }
        over = largest[TRANSCRIPT] > budget
        lowest = availability_data(cmp, version)["min_reachable_share"]
        rows.append([
            name,
            f"{cost / cmp.cache_total('anthropic', TRANSCRIPT).cost:.3f}x",
            f"{cost / cmp.cache_total('anthropic', 'v7').cost:.2f}x",
            f"{largest[version]:,}", "yes" if largest[version] <= budget else "no",
            f"{largest['masking-10']:,}" if over else "(transcript within the budget)",
            ("yes" if largest[version] <= largest["masking-10"] else "no") if over else "n/a",
            _pct(lowest),
        ])  # fmt: skip
    headers = ["run", f"{version} / transcript (≤ 1.10x)", f"{version} / v7 (≤ 0.50x)", f"{version} largest chars",
               f"≤ budget {budget:,}", "masking-10 largest chars", f"{version} ≤ masking-10",
               f"{version} lowest reachable (100%)"]  # fmt: skip
    return tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                    disable_numparse=True)  # fmt: skip


def cheapest(cmp: Comparison, model: str) -> tuple[str, float]:
    """The encoder version with the lowest effective cost under `model`, and that cost."""
    versions = [s for s in cmp.strategies if s not in BASELINES]
    best = min(versions, key=lambda s: cmp.cache_total(model, s).cost)
    return best, cmp.cache_total(model, best).cost


def summary(results: dict[str, Comparison]) -> str:
    """Per run and model: the transcript's cost, the cheapest encoder's, and their ratio."""
    rows = []
    for name, cmp in results.items():
        row = [name]
        for model in MODELS:
            ref = cmp.cache_total(model, TRANSCRIPT).cost
            best, cost = cheapest(cmp, model)
            row += [f"{ref:,.1f}", f"{best} {cost:,.1f}", f"{cost / ref:.2f}x"]
        rows.append(row)
    return _model_table("run", rows, ("{} transcript", "{} cheapest encoder", "{} ratio"))


def main() -> None:
    """Measure bug17 and every corpus trajectory and write the `cache` section of RESULTS.md."""
    corpus, entries = corpus_entries(__doc__.splitlines()[0])
    results: dict[str, Comparison] = {}
    sections = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("fixtures/bug17", BUG17, "`.venv/bin/workingset compare fixtures/bug17 --all --baselines "
                 "--cache ideal,anthropic,openai-auto,openai-5.6`")]  # fmt: skip
        for path in entries + long_runs():
            fmt = detect(path)
            write_import(import_trajectory(fmt, path), Path(tmp) / path.name)
            runs.append((path.name, Path(tmp) / path.name,
                         f"`.venv/bin/workingset import {fmt} {_source(path)} --out RUN && .venv/bin/workingset compare "
                         "RUN --all --baselines --cache ideal,anthropic,openai-auto,openai-5.6`"))  # fmt: skip
        for name, directory, reproduce in runs:
            cmp = results[name] = measure(directory)
            when = (
                "timed by their capture times"
                if cmp.timed
                else "no distinct times: all turns within the TTL"
            )
            sections.append(f"### `{name}`\n\n{len(cmp.labels)} contexts, {when}. Reproduce: {reproduce}.\n\n"
                            f"{split_table(cmp)}\n")  # fmt: skip
    options = CacheOptions()
    intro = (
        f"bug17, the corpus `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories) and the "
        "167-step OpenHands run of `../shared/corpus/all/`, imported as in the trajectories section. Tokens: cl100k_base. "
        "Each context is billed from its request body (`workingset requests`: tools, structured-output schema and "
        'messages, each content block tokenized on its own) under four cache models (see README, "Cache-true '
        'costs"): `ideal` (the longest common token prefix with the previous context, free to write, never '
        f"expiring), `anthropic` (TTL {options.ttl}, writes {options.write('anthropic'):g}x, reads "
        f"{options.cached_price:g}x, nothing under {options.cache_min:,} tokens; reads only at a block boundary within "
        "20 blocks of a breakpoint; breakpoints at the ends of each encoder's declared stable sections — header and "
        "case for v1–v10; preamble, case and journal for v11 to v13, whose journal is one block per iteration — and a "
        "baseline's on its last block), `openai-auto` (models before GPT-5.6: every prompt an entry, reads in "
        f"128-token blocks from {options.cache_min:,}, writes 1x) and `openai-5.6` (GPT-5.6 family: explicit "
        "breakpoints at the encoders' stable ends with the implicit one off, a baseline's implicit one at its last "
        f"user message; entries matched exactly, writes {options.write('openai-5.6'):g}x, 30-minute TTL). Each context "
        "is sent at its state's latest capture time; a gap longer than the TTL empties the cache. "
        "A cell `u / w / r` is the tokens billed uncached / written / read over the run; cost is "
        "`u + write price × w + read price × r` in full-price tokens; `vs transcript` divides by "
        "`full-transcript`'s cost under the same model; the last two columns are availability (see README): "
        "the identifiers of earlier evidence visible in full / addressable by recall / gone, summed over the run, "
        "and the lowest share visible or addressable at any context. Bodies are tokenized block by block, which "
        "adds a few tokens per turn over the whole-text counts of the other sections.\n"
    )
    goals = [f"#### {v} against issue 9's targets (anthropic model, 5-minute TTL, default budget)\n\n"
             "Characters per context; a run's transcript that fits the budget makes the masking-10 comparison "
             "moot. Availability: identifiers harvested from earlier evidence that the context shows in full or "
             "can recall, at the context where the share is lowest.\n\n" + targets(results, v) + "\n"
             for v in CACHE_NATIVE]  # fmt: skip
    body = "\n".join(
        [
            intro,
            "#### Cheapest encoder against the transcript\n\n" + summary(results) + "\n",
            *goals,
            *sections,
        ]
    )
    write_section("cache", "Cache-true costs", body)


if __name__ == "__main__":
    main()
