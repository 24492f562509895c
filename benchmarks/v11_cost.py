"""Where the cost of v11 and later goes: their anthropic bill against the transcript's, split into parts.

Run: .venv/bin/python benchmarks/v11_cost.py [--corpus DIR] [--check]

bug17, every trajectory under the corpus (default `../shared/corpus/raw` beside the
repository, or `$WORKINGSET_CORPUS`) and the 167-step run of `../shared/corpus/all/`,
imported as the cache section imports them, are
billed under the `anthropic` model with its defaults (5-minute TTL, writes 1.25x, reads
0.1x, nothing under 1,024 tokens; each context sent at its state's latest capture time),
exactly as `compare --cache anthropic` bills them: from the request body, the `submit_decision`
tool included, the journal one block per iteration. Then each version's contexts are billed
again with one part taken away at a time, which splits what it costs beyond the transcript
into:

- `tail`: the version's cost less that of the same contexts without "This turn" (the prompt ends
  at the journal's breakpoint);
- `preamble`: that, less the same without the preamble as well (its breakpoint dropped);
- `compaction`: that (case and journal alone), less case and journal rendered under a
  budget too large to ever compact (`:budget=100000000`): negative where compacting
  made the run cheaper;
- `journal and case`: the unbounded case and journal, less the transcript (the agents'
  messages: the task, each note, action and output): what the journal's records, the case's
  tables and the entries' layout add to the transcript's own content.

The parts add up exactly to the version's cost less the transcript's; each is shown as a
share of the transcript's cost, so the version/transcript ratio is 1 plus their sum. Each part is
sent as a request of its own (the tool, then the kept sections' blocks), so the tool's tokens fall
in `journal and case`. Writes the `v11_cost` section of RESULTS.md (deterministic).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import cost_runs  # noqa: E402
from _results import write_section  # noqa: E402
from trajectories import DEFAULT_CORPUS, corpus_entries  # noqa: E402

from workingset.compare.billing import CacheOptions, Meter, state_time  # noqa: E402
from workingset.compare.engine import (  # noqa: E402
    Rendering,
    baseline_renderers,
    compare_contexts,
    sent_prompts,
    version_renderer,
)
from workingset.encoders import get_encoder  # noqa: E402
from workingset.model.state import StoredContext  # noqa: E402
from workingset.providers import section_ends  # noqa: E402
from workingset.runs.layout import read_run  # noqa: E402
from workingset.session.replies import Request  # noqa: E402

UNBOUNDED_BUDGET = 100_000_000
PARTS = ("tail", "preamble", "compaction", "journal and case")
VERSIONS = ("v11", "v12", "v13", "v14", "v15")


def _ends(rendered) -> dict[str, tuple[int, int]]:
    """Each section's (start, end) character offsets in the text."""
    spans: dict[str, tuple[int, int]] = {}
    at = 0
    for category, n in rendered.chunks:
        start = spans.get(category, (at, at))[0]
        at += n
        spans[category] = (start, at)
    return spans


def _cut(rendered, spans: dict[str, tuple[int, int]], keep: Sequence[str]) -> Rendering:
    """The request of the sections `keep` (consecutive): its blocks as sent, a breakpoint at the end of each but the tail."""
    start, end = spans[keep[0]][0], spans[keep[-1]][1]
    text = rendered.text[start:end]
    stable = [spans[k][1] - start for k in keep if k != "tail"]
    ends = section_ends([(c, n) for c, n in rendered.chunks if c in keep])
    req = Request(request_id="", encoder=rendered.encoder, hypothesis=rendered.hypothesis, text=text, shown=[],
                  indexed=[], chars=len(text), hash="", block_ends=ends, cache_ends=stable)  # fmt: skip
    return Rendering(
        text,
        (),
        tuple(stable),
        tuple(ends),
        None,
        lambda provider, model: req.messages(provider, model=model),
    )


def _bill(contexts: Sequence[StoredContext], make: Callable[[StoredContext], Rendering]) -> float:
    meter, options = Meter("anthropic", CacheOptions()), CacheOptions()
    return sum(meter(sent_prompts(make(ctx), ("anthropic",), state_time(ctx.state), options)["anthropic"]).cost
               for ctx in contexts)  # fmt: skip


def decompose(contexts: Sequence[StoredContext], label: str = "v11") -> dict[str, float]:
    """The transcript's and a version's (v11 or later) anthropic costs and the parts of their difference."""
    renderers = {
        label: version_renderer(label),
        "full-transcript": baseline_renderers()["full-transcript"],
    }
    cmp = compare_contexts(contexts, renderers, cache=("anthropic",), cache_options=CacheOptions())
    cost = {name: sum(b.cost for b in cmp.caches["anthropic"][name]) for name in renderers}
    bounded, unbounded = get_encoder(label), get_encoder(f"{label}:budget={UNBOUNDED_BUDGET}")

    def sections(encoder, keep: Sequence[str]) -> Callable[[StoredContext], Rendering]:
        def make(ctx: StoredContext) -> Rendering:
            rendered = encoder.render(ctx.state, ctx.hypothesis)
            return _cut(rendered, _ends(rendered), keep)

        return make

    whole = _bill(contexts, sections(bounded, ("preamble", "case", "journal", "tail")))
    assert abs(whole - cost[label]) < 1e-6, (whole, cost[label])  # billed as compare bills it
    no_tail = _bill(contexts, sections(bounded, ("preamble", "case", "journal")))
    body = _bill(contexts, sections(bounded, ("case", "journal")))
    body_unbounded = _bill(contexts, sections(unbounded, ("case", "journal")))
    return {
        "transcript": cost["full-transcript"], "version": cost[label],
        "tail": whole - no_tail, "preamble": no_tail - body, "compaction": body - body_unbounded,
        "journal and case": body_unbounded - cost["full-transcript"],
    }  # fmt: skip


def _share(part: float, whole: float) -> str:
    return f"{part / whole:+.1%}"


def table(results: dict[tuple[str, str], dict[str, float]]) -> str:
    rows = []
    for (name, version), r in results.items():
        t = r["transcript"]
        rows.append([name, version, f"{t:,.1f}", f"{r['version']:,.1f}", f"{r['version'] / t:.2f}x",
                     *(_share(r[p], t) for p in PARTS)])  # fmt: skip
    headers = ["run", "version", "transcript cost", "version cost", "version / transcript", *PARTS]
    return tabulate(rows, headers=headers, tablefmt="github", colalign=["left"] + ["right"] * (len(headers) - 1),
                    disable_numparse=True)  # fmt: skip


def main() -> None:
    """Split the anthropic cost of v11 and later on bug17, every corpus run and the long run; write the `v11_cost` section."""
    corpus, entries = corpus_entries(__doc__.splitlines()[0])
    results: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, directory in cost_runs(entries, Path(tmp)):
            contexts = [ctx for _, ctx in read_run(directory)]
            for version in VERSIONS:
                results[(name, version)] = decompose(contexts, version)
    body = (
        f"bug17, the corpus `CORPUS={DEFAULT_CORPUS}` beside the repository ({len(entries)} trajectories) and the "
        "167-step run of `../shared/corpus/all/`, billed under the `anthropic` model with its defaults, as in the "
        f"cache section. What {', '.join(VERSIONS[:-1])} and {VERSIONS[-1]} cost beyond the "
        "transcript is split into four parts by billing their contexts again with one part taken away at a time (see the "
        'script\'s docstring): `tail` ("This turn", billed uncached every turn), `preamble` (written once, read '
        "every turn), `compaction` (what compacting at the default budget adds, or saves where negative, against "
        "never compacting) and `journal and case` (the unbounded case and journal against the transcript's "
        "messages: the records of the journal, the case's tables and the layout). Each part is a share of the "
        "transcript's cost; `version / transcript` is 1 plus their sum.\n\n" + table(results) + "\n"
    )
    write_section("v11_cost", "Where the cost of v11 and later goes", body)


if __name__ == "__main__":
    main()
