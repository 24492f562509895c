"""Issue 21's "done when": an independent billing of `workingset requests` equals `compare` everywhere.

On bug17, every corpus run and the 167-step run of `../shared/corpus/all` (two corpus runs and the
long one with `-m soak`), for every strategy
`compare --all --baselines` knows (v1–v15 and every baseline) under `anthropic`, `openai-auto`
and `openai-5.6`, the bill of `tests/helpers/independent_billing.py` — the providers' documented rules,
tiktoken and the CLI's JSON only, tools and system included — is within 2% of `compare`'s
effective cost. The corpus is required in CI and skipped elsewhere when absent.
"""

from __future__ import annotations

import os
from array import array

import pytest

from tests.helpers.common import BUG17, long_run_path
from tests.helpers.independent_billing import (
    MODELS,
    Prompt,
    bill_anthropic,
    bill_openai_56,
    bill_openai_auto,
    check_run,
    import_run,
)
from tests.helpers.real_corpus import CORPUS, CORPUS_SOURCES
from workingset.compare.baselines import BASELINES
from workingset.encoders import ENCODERS

LONG = "openhands-v1-sonnet4-pylint-167"
# Every run of the suite bills bug17 and one run of each trajectory format's shortest (SWE-agent,
# mini-swe-agent, OpenHands); the other corpus runs and the 167-step run (minutes: 23 strategies
# × 3 models over 167 contexts) run with the long tests (`-m soak`), so the suite stays in time.
EVERY_RUN = ("sweagent-gpt4-pydicom-1458.traj", "mini-v2-deepseek-sqlfluff-1625.traj.json",
             "openhands-v1-sonnet4-matplotlib-24570")  # fmt: skip
RUNS = ["fixtures/bug17", *(name if name in EVERY_RUN else pytest.param(name, marks=pytest.mark.soak) for name in CORPUS_SOURCES),
        pytest.param(LONG, marks=pytest.mark.soak)]  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run's directory by name, each imported once for the module (bug17 is stored already)."""
    into, done = tmp_path_factory.mktemp("runs"), {"fixtures/bug17": BUG17}

    def get(name: str):
        if name not in done:
            if name == LONG:
                done[name] = import_run(long_run_path(), into)
            elif CORPUS.is_dir():
                done[name] = import_run(CORPUS / name, into)
            elif os.environ.get("CI"):
                pytest.fail(f"CI is set and the trajectory corpus is not at {CORPUS}")
            else:
                pytest.skip(f"the trajectory corpus is not at {CORPUS}")
        return done[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNS)
def test_an_independent_billing_of_requests_equals_compare(name, run_dir):
    cells = check_run(run_dir(name), name)
    strategies = {cell.strategy for cell in cells}
    assert strategies == {f"v{n}" for n in ENCODERS} | set(BASELINES)
    assert len(cells) == len(strategies) * len(MODELS)
    off = [
        f"{c.strategy} {c.model}: ours {c.ours:,.1f}, compare {c.compare:,.1f}"
        for c in cells
        if c.difference > 0.02
    ]
    assert not off, f"{len(off)} of {len(cells)} cells differ by more than 2%: " + "; ".join(off)


# -- the independent billing follows the documented rules (so that agreeing with compare means something) --


def prompt(tokens: list[int], ends: list[int], marked: list[bool], time: float = 0.0) -> Prompt:
    return Prompt(array("I", tokens), ends, marked, ["user"] * len(ends), time)


def test_anthropic_reads_only_at_a_block_end_within_20_blocks_of_a_breakpoint():
    first = prompt(list(range(2000)), [1000, 2000], [False, True])
    grown = list(range(2000)) + list(range(5000, 5250))  # 25 blocks of 10 tokens appended
    ends = [1000, 2000, *range(2010, 2251, 10)]
    far = prompt(grown, ends, [False] * 26 + [True])  # 2000 is 25 blocks behind the breakpoint
    near = prompt(
        grown, ends, [False] * 20 + [True] + [False] * 5 + [True]
    )  # 2000 is 19 blocks behind the first
    inside = prompt(grown, [1000, 2250], [False, True])  # 2000 ends inside a block
    assert (
        bill_anthropic([first, prompt(grown, ends, [False] * 21 + [True] + [False] * 5)]).read == 0
    )  # 20 behind
    assert bill_anthropic([first, far]).read == 0
    assert bill_anthropic([first, inside]).read == 0
    assert (bill_anthropic([first, near]).read, bill_anthropic([first, near]).written) == (
        2000,
        2000 + 250,
    )
    assert (
        bill_anthropic([first, prompt(grown, ends, [False, True] + [False] * 25, time=301.0)]).read
        == 0
    )  # expired


def test_openai_auto_reads_in_128_token_increments_and_gpt_56_matches_a_breakpoint_whole():
    # README "Cache-true costs": a 1,300-token prompt, then one sharing its first 1,200 tokens.
    auto = bill_openai_auto(
        [
            prompt(list(range(1300)), [1300], [False]),
            prompt(list(range(1200)) + [9] * 100, [1300], [False]),
        ]
    )
    assert (auto.read, auto.written, auto.uncached, round(auto.cost, 1)) == (
        1152,
        1280 + 128,
        40,
        1300 + 263.2,
    )
    first = prompt(list(range(1500)), [1500], [True])
    shorter = prompt(
        list(range(1400)) + [9] * 200, [1400, 1600], [False, True]
    )  # shares 1,400 of the 1,500
    assert (
        bill_openai_56([first, shorter], [True, True]).read == 0
    )  # an entry is matched whole or not at all
    again = prompt(list(range(1500)) + [9] * 100, [1500, 1600], [True, False])
    assert bill_openai_56([first, again], [True, True]).read == 1500
