"""Issue 21's "done when": an independent billing of `workingset requests` equals `compare` everywhere.

On bug17, every corpus run and the 167-step run kept in `benchmarks/data`, for every strategy
`compare --all --baselines` knows (v1–v13 and every baseline) under `anthropic`, `openai-auto`
and `openai-5.6`, the bill of `tests/independent_billing.py` — the providers' documented rules,
tiktoken and the CLI's JSON only, tools and system included — is within 2% of `compare`'s
effective cost. The corpus is required in CI and skipped elsewhere when absent.
"""

from __future__ import annotations

import os

import pytest

from conftest import BUG17, CORPUS, CORPUS_SOURCES
from independent_billing import MODELS, check_run, import_run, kept_runs

from workingset.baselines import BASELINES

LONG = "openhands-v1-sonnet4-pylint-167"
RUNS = ["fixtures/bug17", *CORPUS_SOURCES, LONG]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run's directory by name, each imported once for the module (bug17 is stored already)."""
    into, done = tmp_path_factory.mktemp("runs"), {"fixtures/bug17": BUG17}

    def get(name: str):
        if name not in done:
            if name == LONG:
                (path,) = kept_runs(into)
                done[name] = import_run(path, into)
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
    assert strategies == {f"v{n}" for n in range(1, 14)} | set(BASELINES)
    assert len(cells) == len(strategies) * len(MODELS)
    off = [f"{c.strategy} {c.model}: ours {c.ours:,.1f}, compare {c.compare:,.1f}" for c in cells if c.difference > 0.02]
    assert not off, f"{len(off)} of {len(cells)} cells differ by more than 2%: " + "; ".join(off)
