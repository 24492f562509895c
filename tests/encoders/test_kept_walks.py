"""A journal version's walk kept from one stored context of a run to the next (`compare`'s renderers).

A run's contexts are loaded apart: each holds equal copies of the entries of the one before,
not the same objects, and bug17's evidence items and notes change status from one context to
the next (unsettled, then settled; open, then answered). The kept walk resumes over them all
and every text is a fresh render's, byte for byte.
"""

from __future__ import annotations

import pytest

from tests.helpers.strategies import BUG17
from workingset.compare.engine import version_renderer
from workingset.encoders import get_encoder
from workingset.encoders.journal import walk, walk14, walk15
from workingset.encoders.journal.v16 import Walk16
from workingset.model.state import copy_state

WALKS = {
    "v11": walk._Walk,
    "v12": walk._Walk,
    "v13": walk._Walk,
    "v14": walk14.Walk14,
    "v15": walk15.Walk15,
    "v16": Walk16,
}


@pytest.mark.parametrize("version", sorted(WALKS))
def test_a_stored_runs_contexts_resume_the_walk_from_equal_copies(monkeypatch, version):
    walks = []
    start = WALKS[version].__init__

    def counted(self, *args, **kwargs):
        walks.append(self)
        start(self, *args, **kwargs)

    monkeypatch.setattr(WALKS[version], "__init__", counted)
    enc = get_encoder(version)
    fresh = [enc.render(copy_state(ctx.state), ctx.hypothesis).text for ctx in BUG17]
    renderer = version_renderer(version)
    before = len(walks)
    assert [renderer(ctx.state, ctx.hypothesis).text for ctx in BUG17] == fresh
    assert len(walks) - before == 1, (
        "the first context made the walk, and every later one resumed it"
    )


def test_any_other_change_walks_afresh_with_the_same_bytes():
    """A context that is not the last one with entries appended (a run's contexts out of order, another run) walks
    from the first entry again; the kept journal then resumes from it."""
    for version in sorted(WALKS):
        renderer, enc = version_renderer(version), get_encoder(version)
        for ctx in [BUG17[10], BUG17[3], BUG17[4], BUG17[17], BUG17[0]]:
            assert (
                renderer(ctx.state, ctx.hypothesis).text
                == enc.render(ctx.state, ctx.hypothesis).text
            ), version
