"""The two encoder families: v1–v10 and v11 and later share no class, each version states its delta."""

from __future__ import annotations

import pytest

from tests.helpers.factory import sample_state
from workingset.encoders import ENCODERS
from workingset.encoders.journal.base import JournalEncoder
from workingset.encoders.journal.v13 import V13
from workingset.encoders.v01 import V1


def test_the_two_families_share_no_class():
    for n, enc in ENCODERS.items():
        assert isinstance(enc, V1) == (n <= 10), f"v{n}"
        assert isinstance(enc, JournalEncoder) == (n >= 11), f"v{n}"


def test_every_encoder_has_what_the_registry_type_promises():
    state = sample_state()
    for n, enc in ENCODERS.items():
        assert enc.version == n and enc.name == f"investigation_project_v{n}"
        assert isinstance(enc.supports_recall, bool) and isinstance(enc.supports_spans, bool)
        out = enc.render(state, "H1")
        categories = [category for category, _ in out.chunks]
        assert out.encoder == enc.name
        assert (
            categories[: len(enc.stable_sections)] == list(enc.stable_sections)[: len(categories)]
        )
        assert enc.decision_schema["title"] == f"investigation_project_v{n} decision"


@pytest.mark.parametrize("version", [11, 12, 13])
def test_v11_to_v13_override_the_tail_s_lines_not_the_tail(version):
    cls = type(ENCODERS[version])
    for name in ("tail_section", "render", "select", "layout", "preamble", "journal_blocks"):
        assert name not in vars(cls), f"v{version} writes {name} again"


def test_a_journal_version_that_cites_spans_has_them_in_its_schema():
    class Citing(V13):
        supports_spans = True

    def conclude(enc: JournalEncoder) -> dict:
        return enc.decision_schema["properties"]["next"]["oneOf"][-1]["properties"]

    assert "spans" in conclude(Citing())
    assert "spans" not in conclude(ENCODERS[13])
