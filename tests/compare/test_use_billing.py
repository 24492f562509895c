"""The bill with recalls, billed independently: `requests --with-recalls` lines by the providers' rules, plus every answer's output tokens.

`compare --use` simulates the turns a real agent adds (recall turns, re-runs) and bills them
in its own meter. Here the same requests come out of the public CLI, and
`tests/helpers/independent_billing.py` (no workingset cache model, no body walker) bills them;
the output tokens of each turn's `answer` are counted with tiktoken at the output prices of
docs/billing.md. The two must agree on every strategy and model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.common import BUG17
from tests.helpers.independent_billing import MODELS, Tokenizer, bill_run, invoke, request_lines
from tests.helpers.real_corpus import CORPUS, needs_corpus
from workingset.importers import import_trajectory, write_import

# Output price over input price, as docs/billing.md quotes the providers ("Output and tool-use tokens").
OUTPUT = {"anthropic": 5.0, "openai-auto": 8.0, "openai-5.6": 6.0}
STRATEGIES = ("v14", "v13", "full-transcript", "masking-10", "last-5-polling-5")


def _check(run: Path) -> int:
    """Check every strategy and model of `run`; the number of added turns checked."""
    args = ("--baselines", "--all", "--use", "--cache", ",".join(MODELS), "--json")
    ours = json.loads(invoke("compare", str(run), *args))["with_recalls"]
    added = 0
    for strategy in STRATEGIES:
        tokenize = Tokenizer()
        for model in MODELS:
            lines = request_lines(run, strategy, model, "--with-recalls")
            added += sum("added" in line for line in lines)
            billed = bill_run(run, strategy, model, tokenize, "--with-recalls")
            output = sum(len(tokenize(line["answer"])) for line in lines if line.get("answer"))
            got = ours[model][strategy]
            assert got["tokens"] == billed.uncached + billed.written + billed.read, (
                strategy,
                model,
            )
            assert got["output_tokens"] == output, (strategy, model)
            assert got["effective_cost"] == pytest.approx(
                billed.cost + OUTPUT[model] * output, abs=0.2
            )
            assert got["recall_turns"] + got["rerun_turns"] == sum("added" in x for x in lines)
    return added


def test_bug17_with_recalls_bills_as_compare_use_bills_it():
    assert _check(BUG17) > 0  # v14's recall turns


@needs_corpus
def test_a_corpus_run_with_recalls_and_re_runs_bills_as_compare_use_bills_it(tmp_path):
    path = CORPUS / "mini-v2-deepseek-sqlfluff-1625.traj.json"
    write_import(import_trajectory("mini-swe-agent", path), tmp_path / "run")
    lines = request_lines(tmp_path / "run", "masking-10", "anthropic", "--with-recalls")
    assert any(line.get("added") == "rerun" for line in lines)  # masked outputs re-run
    assert _check(tmp_path / "run") > 0


def test_plain_requests_are_the_recorded_lines_of_with_recalls():
    plain = request_lines(BUG17, "v14", "anthropic")
    full = request_lines(BUG17, "v14", "anthropic", "--with-recalls")
    recorded = [
        {k: v for k, v in line.items() if k != "answer"} for line in full if "added" not in line
    ]
    assert recorded == plain
    assert any(line.get("added") == "recall" for line in full)
