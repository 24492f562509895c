"""Trajectories: real agent runs imported from the corpus, workingset versions against baselines.

Run: .venv/bin/python benchmarks/trajectories.py [--corpus DIR] [--check]

Every trajectory under the corpus (default `../shared/corpus/raw` beside the repository,
or `$WORKINGSET_CORPUS`) is imported with `workingset import` into a temporary directory, read back as a run, and
measured like `workingset compare RUN --all --baselines` (the same library calls): per
strategy the total and last-turn characters and tokens and the tokens a prefix cache
could not serve. For the last turn it also counts the earlier outputs that became
unrecoverable: replaced by a placeholder in a masking baseline; for an encoder, an output
neither shown nor listed in its evidence index (none: an archived output is one recall
away). Writes the `trajectories` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import CHECK_FLAG, ROOT, write_section  # noqa: E402

from workingset.compare.baselines import BASELINES, unrecoverable  # noqa: E402
from workingset.compare.engine import baseline_renderers, compare_contexts, version_renderer  # noqa: E402
from workingset.encoders import render  # noqa: E402
from workingset.importers import import_trajectory, write_import  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

DEFAULT_CORPUS = "../shared/corpus/raw"  # as written in RESULTS.md, whichever directory is read
CORPUS = Path(os.environ.get("WORKINGSET_CORPUS") or ROOT / DEFAULT_CORPUS).resolve()
VERSIONS = ("v7", "v8", "v9", "v10")


def detect(path: Path) -> str | None:
    """The import format of a corpus entry, told by its layout (the corpus names say no more)."""
    if path.is_dir():
        return "openhands"
    if path.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if path.suffix == ".traj":
        return "swe-agent"
    return None


def _lost(strategy: str, state, hypothesis: str) -> int:
    if strategy in BASELINES:
        return unrecoverable(strategy, state, hypothesis)
    out = render(state, hypothesis, "investigation_project_" + strategy)
    reachable = set(out.shown) | set(out.indexed)
    return sum(1 for ev in state.evidence if ev.payload is not None and ev.id not in reachable)


def measure(path: Path, fmt: str, workdir: Path) -> tuple[str, dict[str, dict[str, int]]]:
    """Import one trajectory, compare every strategy; return its caption and per-strategy numbers."""
    imported = import_trajectory(fmt, path)
    write_import(imported, workdir / path.name)
    run = [ctx for _, ctx in read_run(workdir / path.name)]
    renderers = {v: version_renderer(v) for v in VERSIONS} | baseline_renderers()
    cmp = compare_contexts(run, renderers)
    last = run[-1]
    schema = dict(cmp.sizes["v7"][-1].sections).get("output_schema", 0)
    numbers = {}
    for s in cmp.strategies:
        t, end = cmp.total(s), cmp.last(s)
        numbers[s] = {
            "chars": t.chars, "tokens": t.tokens, "uncached": t.uncached, "cached_share": t.cached / t.tokens,
            "last_chars": end.chars, "last_tokens": end.tokens, "lost": _lost(s, last.state, last.hypothesis),
        }  # fmt: skip
    traj = imported.trajectory
    outputs = sum(
        len(e.payload.text)
        for e in last.state.evidence
        if e.payload is not None and e.scope != "feedback"
    )
    caption = (
        f"### `{path.name}`\n\nFormat `{fmt}`; {traj.agent}"
        + (f", model {traj.model}" if traj.model else "")
        + f"; {len(run)} steps, {outputs:,} characters of output. Reproduce: "
        f"`.venv/bin/workingset import {fmt} $CORPUS/{path.name} --out RUN && .venv/bin/workingset compare RUN --all --baselines`. "
        f"Each encoder text includes its output schema ({schema:,} characters per turn); baselines carry none.\n"
    )
    return caption, numbers


def table(numbers: dict[str, dict[str, int]]) -> str:
    """One trajectory's strategies as rows."""
    rows = [
        [s, f"{n['chars']:,}", f"{n['tokens']:,}", f"{n['uncached']:,}", f"{100 * n['cached_share']:.1f}%",
         f"{n['last_chars']:,}", f"{n['last_tokens']:,}", f"{n['lost']:,}"]
        for s, n in numbers.items()
    ]  # fmt: skip
    headers = ["strategy", "total chars", "total tokens", "uncached tokens", "cached share",
               "last-turn chars", "last-turn tokens", "outputs unrecoverable (last turn)"]  # fmt: skip
    return tabulate(
        rows,
        headers=headers,
        tablefmt="github",
        colalign=["left"] + ["right"] * 7,
        disable_numparse=True,
    )


def summary(results: dict[str, dict[str, dict[str, int]]], key: str) -> str:
    """Trajectories as rows, strategies as columns, for one measure."""
    strategies = list(next(iter(results.values())))
    rows = [[name] + [f"{nums[s][key]:,}" for s in strategies] for name, nums in results.items()]
    return tabulate(rows, headers=["trajectory", *strategies], tablefmt="github",
                    colalign=["left"] + ["right"] * len(strategies), disable_numparse=True)  # fmt: skip


def corpus_entries(description: str) -> tuple[Path, list[Path]]:
    """Parse a corpus script's command line (`--corpus`, `--check`); return the corpus and its trajectories."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="directory of trajectories (default: %(default)s)",
    )
    parser.add_argument(
        CHECK_FLAG, action="store_true", help="compare with RESULTS.md instead of writing it"
    )
    corpus = parser.parse_args().corpus
    return corpus, sorted(p for p in corpus.iterdir() if detect(p)) if corpus.is_dir() else []


def main() -> None:
    """Measure every corpus trajectory and write the `trajectories` section of RESULTS.md."""
    corpus, entries = corpus_entries(__doc__.splitlines()[0])
    if not entries:
        sys.exit(f"no trajectories under {corpus}")
    results, sections = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for path in entries:
            caption, numbers = measure(path, detect(path), Path(tmp))
            results[path.name] = numbers
            sections.append(f"{caption}\n{table(numbers)}\n")
    intro = (
        f"Corpus: `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories; see its SOURCES.md). "
        "Each is imported "
        "(one stored context per agent step, the state after that step, hypothesis H1) and every "
        "context is rendered by each strategy. Tokens: cl100k_base (tiktoken, bundled offline). "
        "Uncached tokens: each context's tokens minus the longest common token prefix with the "
        "previous context under the same strategy (the first context has none cached); summed "
        f"over the run. Baselines (`workingset.compare.baselines`): `full-transcript` resends every action "
        "and output; `masking-10` masks outputs older than the last 10 steps (`<MASKED>`; a step is an action "
        "and its output: messages that answer no action, such as format errors, are neither counted nor masked); `last-5` "
        "is SWE-agent's LastNObservations(n=5). Workingset versions: v7 and v10 show every output "
        "in full; v8 and v9 show the previous result in full and list every other item in the "
        "evidence index, from which the agent can recall it.\n"
    )
    body = "\n".join([
        intro,
        "#### Uncached tokens over the whole run (what a prefix cache cannot serve)\n\n" + summary(results, "uncached") + "\n",
        "#### Last-turn tokens (the context size the agent ends with)\n\n" + summary(results, "last_tokens") + "\n",
        "#### Earlier outputs unrecoverable at the last turn\n\n" + summary(results, "lost") + "\n",
        *sections,
    ])  # fmt: skip
    write_section("trajectories", "Trajectories", body)


if __name__ == "__main__":
    main()
