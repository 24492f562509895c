"""v14's hard bound: the largest context of every run against its budget, beside v13's.

Run: .venv/bin/python benchmarks/v14_bound.py [--corpus DIR] [--check]

bug17, every trajectory under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`), the 167-step run of `../shared/corpus/all/`, the state
of issue 22's worst output (the sample state and one 868,167-character diff, as
tests/helpers/factory.py builds it) and a 100,000-item synthetic state (`synthetic.make_state`) are
rendered under v14 and v13 at the default budget (100,000 characters) and at 20,000. Per
run and budget: the contexts, v14's and v13's largest context, the journal rewrites v14 made
between consecutive contexts (its compactions that fell between them), and how many contexts
needed the shrinking rerun of the walk (the safety net; the rules alone held where it is 0).
Writes the `v14_bound` section of RESULTS.md (deterministic).
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

from workingset.encoders import get_encoder  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402

BUDGETS = ("", ":budget=20000")


def measure(
    contexts: list[tuple], with_v13: bool = True, new: str = "v14", old: str = "v13"
) -> list[str]:
    """[contexts, then per budget: `new`'s largest, `old`'s largest, `new`'s journal rewrites, `new`'s reruns]."""
    cells = [str(len(contexts))]
    for budget in BUDGETS:
        enc, other = get_encoder(new + budget), get_encoder(old + budget)
        largest_new = largest_old = rewrites = reruns = 0
        previous = None
        for state, hypothesis in contexts:
            out = enc.render_view(
                enc.select(state, enc.selected(state, hypothesis))
            )  # the walk within its room
            if out.chars > enc.budget:  # what `render` then does: shrink the room and walk again
                reruns += 1
                out = enc.render(state, hypothesis)
            assert out.chars <= enc.budget
            largest_new = max(largest_new, out.chars)
            largest_old = max(largest_old, other.render(state, hypothesis).chars) if with_v13 else 0
            journal = out.text.split("\n## Journal\n", 1)[1].split("\n## This turn\n", 1)[0]
            if previous is not None and not journal.startswith(previous):
                rewrites += 1
            previous = journal
        cells += [
            f"{largest_new:,}",
            f"{largest_old:,}" if with_v13 else "not rendered",
            str(rewrites),
            str(reruns),
        ]
    return cells


def main() -> None:
    """Render every run under v14 and v13 at both budgets; write the `v14_bound` section."""
    from factory import huge_state  # the worst output (tests/helpers), built for the tests and here

    _corpus, entries = corpus_entries(__doc__.splitlines()[0])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, directory in cost_runs(entries, Path(tmp)):
            rows.append(
                [name, *measure([(ctx.state, ctx.hypothesis) for _, ctx in read_run(directory)])]
            )
    rows.append(["one 868,167-character output", *measure([(huge_state(), "H1")])])
    # v13 writes this state whole (tens of millions of characters, minutes to render): not rendered here.
    rows.append(
        ["synthetic, 100,000 items", *measure([(make_state(100_000), "H1")], with_v13=False)]
    )
    headers = ["run", "contexts"]
    for budget in ("100,000", "20,000"):
        headers += [
            f"v14 largest ({budget})",
            f"v13 largest ({budget})",
            "v14 rewrites",
            "v14 reruns",
        ]
    table = tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                     disable_numparse=True)  # fmt: skip
    body = (
        f"bug17, the corpus `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories), the 167-step "
        "run of `../shared/corpus/all/`, issue 22's worst output and a 100,000-item synthetic state, rendered at the "
        "default budget (100,000 characters) and at `:budget=20000`. Largest: the longest context of the run, in "
        "characters (v14's is at most its budget by construction; v13's is not, and on the synthetic state, which it "
        "writes whole, it is not rendered). Rewrites: consecutive contexts whose "
        "journal is not an extension of the previous one (a compaction fell between them). Reruns: contexts whose "
        "walk, within the room its rules give, still passed the budget, so the room shrank and the walk ran again.\n\n"
        + table
        + "\n"
    )
    write_section("v14_bound", "v14's bound: the largest context of every run", body)


if __name__ == "__main__":
    main()
