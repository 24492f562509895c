"""Fuzz: a damaged stored context is accepted or rejected with a stable code, never a crash."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.factory import sample_state
from tests.helpers.json_paths import paths
from workingset.cli.commands import main
from workingset.runs.layout import make_stored_context

pytestmark = pytest.mark.slow  # fuzz

VALID = msgspec.to_builtins(make_stored_context("sample-r0001", "v8", "H1", sample_state()))
GARBAGE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False),
    st.text(max_size=12), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["E000001", "E999999", "H1", "H9", "B000001", "2026-13-01T00:00:00Z", "xxh3-128:" + "0" * 32, "v11"]),
    # Numbers as text that int() refuses (issue 30, item 3): past 4,300 digits, or not ASCII.
    st.sampled_from(["1" * 4_301, "sample-r" + "1" * 4_301, "²", "v" + "1" * 4_301, "v14:budget=" + "1" * 4_301, "H1/٣"]),
)  # fmt: skip


ALL_PATHS = [p for p, _ in paths(VALID) if p]


@st.composite
def damaged(draw):
    doc = json.loads(json.dumps(VALID))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["replace", "delete", "add"]))
            if action == "delete" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif action == "delete" and isinstance(parent, list) and path[-1] < len(parent):
                parent.pop(path[-1])
            elif action == "add" and isinstance(parent, dict):
                parent[draw(st.text(min_size=1, max_size=6))] = draw(GARBAGE)
            else:
                parent[path[-1]] = draw(GARBAGE)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    raw = json.dumps(doc).encode()
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]  # truncated file
    return raw


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(raw=damaged())
def test_damaged_stored_contexts_never_crash(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "sample-r0001.json").write_bytes(raw)
    for args in (
        ["render", str(folder / "sample-r0001.json"), "--json"],
        ["verify", str(folder), "--json"],
    ):
        code = main(args)  # an exception here is the bug this test exists to find
        assert code in (0, 2)
