"""An unknown strategy names the encoder versions the registry has (issue 30, item 15: it said v1 to v13)."""

from __future__ import annotations

import pytest

from tests.helpers.common import BUG17, invoke
from workingset.compare.engine import strategy_renderer
from workingset.encoders import ENCODERS
from workingset.errors import WorkingsetError


def test_an_unknown_strategy_lists_the_registered_versions():
    with pytest.raises(WorkingsetError) as err:
        strategy_renderer("v99")
    assert err.value.code == "unknown_encoder"
    assert f"v{min(ENCODERS)} to v{max(ENCODERS)}" in err.value.message


def test_requests_with_an_unknown_strategy_says_the_versions():
    res = invoke("requests", str(BUG17), "--strategy", "v99")
    assert res.exit_code == 2 and "Traceback" not in res.stdout + res.stderr
    message = res.stderr
    assert f"(v1 to v{max(ENCODERS)}, from the registry)" in message
