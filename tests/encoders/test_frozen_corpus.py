"""Every encoder version renders every state of the frozen corpus exactly as when it was released.

The corpus (`tests/frozen/`) holds a few hundred generated and imported states reaching
every branch of every encoder, plus the bug17 run; `hashes.txt` pins each version's text
and manifest on each state. A version without lines fails here until its lines are added
once (`tests/frozen/corpus.py add-version N`); existing lines are never rewritten. See
tests/README.md for the mutation check.
"""

from __future__ import annotations

import pytest

from tests.frozen.corpus import ADD_COMMAND, HASHES, cases, committed, hash_line
from tests.helpers.common import VERSIONS
from workingset.encoders import ENCODERS


def test_every_committed_version_is_registered():
    assert set(committed()) <= set(ENCODERS), "hashes.txt names a version that is not in ENCODERS"


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def test_version_renders_the_corpus_as_frozen(version: int):
    lines = committed().get(version)
    if lines is None:
        pytest.fail(
            f"v{version} has no frozen lines in {HASHES.name}: once its format is final, run "
            f"`{ADD_COMMAND.format(n=version)}`, review the diff and commit it"
        )
    corpus = cases()
    assert sorted(lines) == sorted(case.name for case in corpus), (
        "the corpus and hashes.txt name different states"
    )
    changed = [case.name for case in corpus if hash_line(case, version) != lines[case.name]]
    assert not changed, (
        f"v{version} output changed on {len(changed)} of {len(corpus)} states: {', '.join(changed[:20])}"
    )
