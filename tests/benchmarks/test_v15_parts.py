"""benchmarks/v15_parts.py: what each part of v15's format costs, measured by taking it out of every request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import v15_parts  # noqa: E402 (benchmarks/ is put on the path just above)
from use import BUG17, TRANSCRIPT, UNBOUNDED, load_run  # noqa: E402

from workingset.encoders import get_encoder  # noqa: E402

JOURNAL = """N000002 H1 #2 note
```
THOUGHT: look at the log
E000009 #9 2026-01-01T00:00:00Z action=B000009
H1 #3 assessment E000001 verdict=neutral
```

H1 #2 assessment E000001 verdict=neutral

E000002 #2 2026-04-10T03:36:23.150146Z action=B000002 cost=0.000257992
query: grep -n timeout app.log
````
E000001 #1 inside a payload
```
H1 #1 query E000001
```
````

H1 #3 conclusion E000002 disposition=supported
```
the pool is exhausted
```"""


def test_heads_are_cut_to_their_ids_and_fenced_lines_never_change():
    out = v15_parts.journal_lines(JOURNAL, heads=True, rows=False)
    lines = out.split("\n")
    assert (
        lines[0] == "N000002" and "E000002" in lines and "query: grep -n timeout app.log" in lines
    )
    # Inside a fence (a note's text, a payload, with a longer fence around a shorter one) nothing is touched.
    for kept in ("E000009 #9 2026-01-01T00:00:00Z action=B000009", "E000001 #1 inside a payload",
                 "H1 #1 query E000001", "H1 #3 assessment E000001 verdict=neutral"):  # fmt: skip
        assert kept in lines, kept
    assert "H1 #2 assessment E000001 verdict=neutral" in lines  # rows are another part


def test_decision_rows_without_text_go_and_rows_with_text_stay():
    out = v15_parts.journal_lines(JOURNAL, heads=False, rows=True)
    assert "H1 #2 assessment E000001 verdict=neutral" not in out
    assert "H1 #3 conclusion E000002 disposition=supported\n```\nthe pool is exhausted\n```" in out
    assert "H1 #3 assessment E000001 verdict=neutral" in out  # fenced: a note's text, not a row
    assert "\n\n\n" not in out  # the row's blank line went with it
    assert v15_parts.journal_lines(JOURNAL, heads=False, rows=False) == JOURNAL


@pytest.fixture(scope="module")
def bug17():
    contexts, _, options = load_run(("fixtures/bug17", str(BUG17), "", ""))
    return contexts, options


def test_each_part_is_taken_out_of_the_blocks_it_names(bug17):
    contexts, options = bug17
    blocks, _ = v15_parts.requests(contexts, UNBOUNDED, options)[-1]
    # `measure` reads each context's size off its request: the first message is the context's text.
    last = contexts[-1]
    context = "".join(b.text for b in blocks if b.part == "messages" and b.message == 0)
    assert context == get_encoder(UNBOUNDED).render(last.state, last.hypothesis).text
    text = lambda bs: "".join(b.text for b in bs)  # noqa: E731
    whole = text(blocks)
    assert any(b.part == "tools" and b.text for b in blocks)
    cut = {part: v15_parts.cut(blocks, (part,)) for part in v15_parts.PARTS}
    assert [b.cache for b in cut["preamble"]] == [b.cache for b in blocks]  # places and marks kept
    assert not any(b.text for b in cut["schema"] if b.part == "tools")
    assert "# Investigation context" in whole and "# Investigation context" not in text(
        cut["preamble"]
    )
    assert "## This turn" in whole and "## This turn" not in text(cut["tail"])
    assert len(text(cut["heads"])) < len(whole)
    # bug17's decisions all carry text: taking the text-less rows out changes nothing there.
    assert text(cut["rows"]) == whole


def test_the_bill_with_nothing_taken_out_is_compares(bug17):
    """The script's own billing of `requests` is compare's as-recorded anthropic bill, for v15 and the transcript."""
    from workingset.compare.engine import baseline_renderers, version_renderer
    from workingset.compare.recalls import compare_use

    contexts, options = bug17
    renderers = {
        UNBOUNDED: version_renderer(UNBOUNDED),
        TRANSCRIPT: baseline_renderers(options["fixed"])[TRANSCRIPT],
    }
    uc = compare_use(contexts, renderers, **{**options, "cache": ("anthropic",)})
    for strategy in (UNBOUNDED, TRANSCRIPT):
        ours = v15_parts.bill(v15_parts.requests(contexts, strategy, options))
        assert ours == pytest.approx(uc.bills["anthropic"][strategy].as_recorded.cost, rel=1e-9), (
            strategy
        )
    row = v15_parts.measure(("fixtures/bug17", str(BUG17), "", ""))
    assert (
        row[TRANSCRIPT] < row[v15_parts.BARE] < row["v15"]
        and row[v15_parts.ALL] < row[v15_parts.BARE]
    )
    assert all(row[part] < row["v15"] for part in ("schema", "preamble", "tail", "heads"))


def test_a_corpus_without_long_runs_gets_its_table_and_a_sentence_not_an_error():
    row = {"contexts": 18, TRANSCRIPT: 100.0, "v15": 120.0, v15_parts.ALL: 95.0, v15_parts.BARE: 110.0,
           "under": True, "fixed": "none", **{part: 115.0 for part in v15_parts.PARTS}}  # fmt: skip
    measured = [("fixtures/bug17", row)]
    table = v15_parts.table(measured)
    assert "| fixtures/bug17 " in table and "runs of 20+" not in table and "| all (1) " in table
    assert v15_parts.reading(measured).startswith("No run here has 20+ contexts")
