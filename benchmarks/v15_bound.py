"""v15's and v16's bound: the largest context of every run, at the default budget and at 20,000 (v14's: `v14_bound.py`).

Run: .venv/bin/python benchmarks/v15_bound.py [--corpus DIR] [--check]

bug17, every trajectory under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`), the 167-step run, the state of issue 22's worst output
(one 868,167-character diff) and a 100,000-item synthetic state, rendered under v15
and v16 at the default budget (100,000 characters) and at 20,000: per run, version and budget
the largest context of each, the journal rewrites between consecutive contexts and the contexts
that needed the shrinking rerun of the walk. Writes the `v15_bound` section of RESULTS.md
(deterministic).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from _data import cost_runs  # noqa: E402
from _results import write_section  # noqa: E402
from synthetic import make_state  # noqa: E402
from trajectories import DEFAULT_CORPUS, corpus_entries  # noqa: E402
from v14_bound import measure  # noqa: E402

from workingset.runs.layout import read_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("v15", "v16")


def bound() -> None:
    from factory import huge_state  # the worst output (tests/helpers), built for the tests and here

    _corpus, entries = corpus_entries(__doc__.splitlines()[0])

    # v14's largest contexts of the same runs are in its own section ("v14's bound"): v15 and v16 are rendered here.
    def cells(contexts: list[tuple]) -> list[str]:
        out: list[str] = []
        for version in VERSIONS:
            got = measure(contexts, with_v13=False, new=version, old="v14")
            out += [got[0]] if not out else []
            out += [c for k, c in enumerate(got[1:]) if k % 4 != 1]
        return out

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, directory in cost_runs(entries, Path(tmp)):
            rows.append([name, *cells([(c.state, c.hypothesis) for _, c in read_run(directory)])])
    rows.append(["one 868,167-character output", *cells([(huge_state(), "H1")])])
    rows.append(["synthetic, 100,000 items", *cells([(make_state(100_000), "H1")])])
    headers = ["run", "contexts"]
    for version in VERSIONS:
        for budget in ("100,000", "20,000"):
            headers += [f"{version} largest ({budget})", f"{version} rewrites", f"{version} reruns"]
    table = tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                     disable_numparse=True)  # fmt: skip
    body = (
        f"bug17, the corpus `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories), the 167-step "
        "run, issue 22's worst output and a 100,000-item synthetic state, rendered at the default budget (100,000 "
        "characters) and at `:budget=20000`. Largest: the longest context of the run, in characters (each at most its "
        "budget: the script asserts it). Rewrites: consecutive contexts whose journal is not an extension of "
        "the previous one (a compaction fell between them). v14's largest contexts of the same runs: \"v14's bound\". Reruns: contexts whose walk, within the room its rules "
        "give, still passed the budget, so the room shrank and the walk ran again.\n\n"
        + table
        + "\n"
    )
    write_section("v15_bound", "v15's and v16's bound: the largest context of every run", body)


if __name__ == "__main__":
    bound()
