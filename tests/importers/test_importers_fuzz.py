"""Mutated real trajectories: an importer either imports or says `invalid_file`, never crashes.

Each case takes one trimmed real trajectory from `tests/data/` (for OpenHands, one file of the
conversation), replaces the value at one JSON path with a hostile one (wrong type, huge or
out-of-range number, deep nesting) and imports it. The only acceptable failure is a
`WorkingsetError`; anything else is a bug. The named cases are the crashes found by the
adversarial pass of issue 10.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.excerpts import EXCERPTS, MINI_2X, OPENHANDS, SWE_0X
from tests.helpers.json_paths import paths
from workingset.errors import InvalidFile, WorkingsetError
from workingset.importers import import_trajectory

pytestmark = pytest.mark.slow  # fuzz


def _set(value: Any, at: tuple, new: Any) -> Any:
    if not at:
        return new
    value[at[0]] = _set(value[at[0]], at[1:], new)
    return value


# (format, source, file inside the source or None, its JSON, every JSON path in it)
TARGETS = []
for _source, (_fmt, _) in EXCERPTS.items():
    _files = [_source] if _source.is_file() else sorted(_source.rglob("*.json"))
    for _file in _files:
        _raw = json.loads(_file.read_text(encoding="utf-8"))
        TARGETS.append((_fmt, _source, _file, _raw, [at for at, _ in paths(_raw)]))

HOSTILE = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1e20, 1e300, -1e300, 2**64, -(2**70), "", "x", [], {}, [[]], {"a": None}]),
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.integers(min_value=1, max_value=100_000).map(lambda n: Deep(n)),
)  # fmt: skip


class Deep:
    """An array nested `depth` levels deep, spliced into the file's text (json cannot write it)."""

    MARK = "\u0000deep\u0000"

    def __init__(self, depth: int):
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


def _text(raw: Any, at: tuple, new: Any) -> str:
    if not isinstance(new, Deep):
        return json.dumps(_set(json.loads(json.dumps(raw)), at, new))
    text = json.dumps(_set(json.loads(json.dumps(raw)), at, Deep.MARK))
    return text.replace(json.dumps(Deep.MARK), "[" * new.depth + "]" * new.depth)


def _import_mutated(target: tuple, at: tuple, new: Any) -> None:
    """Import the target with the value at `at` replaced; raises what the importer raises."""
    fmt, source, file, raw, _ = target
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if source.is_dir():
            shutil.copytree(source, root / source.name)
            dest = root / source.name / file.relative_to(source)
            src = root / source.name
        else:
            dest = src = root / source.name
        dest.write_text(_text(raw, at, new), encoding="utf-8")
        import_trajectory(fmt, src)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_mutation_of_a_real_trajectory_crashes_an_importer(data):
    target = data.draw(st.sampled_from(TARGETS), label="file")
    at = data.draw(st.sampled_from(target[4]), label="path")
    try:
        _import_mutated(target, at, data.draw(HOSTILE, label="value"))
    except WorkingsetError:
        pass


def _target(file: Path) -> tuple:
    return next(t for t in TARGETS if t[2] == file)


@pytest.mark.parametrize(
    ("file", "at", "value", "named"),
    [
        (MINI_2X, ("messages", 2, "extra", "timestamp"), 1e20, r"\$\.messages\[2\]\.extra\.timestamp"),
        (MINI_2X, ("messages", 3, "extra", "timestamp"), 1e300, r"\$\.messages\[3\]\.extra\.timestamp"),
        (OPENHANDS / "base_state.json", ("stats", "service_to_metrics"), [1], r"\$\.stats\.service_to_metrics"),
        (OPENHANDS / "base_state.json", ("stats", "service_to_metrics", "default", "costs"), 5, r"costs"),
        (OPENHANDS / "base_state.json", ("stats", "service_to_metrics", "default", "costs", 0, "timestamp"), 1e300, r"costs\[0\]\.timestamp"),
        (SWE_0X, ("trajectory", 0, "observation"), 1e20, r"\$\.trajectory\[0\]\.observation"),
    ],
)  # fmt: skip
def test_the_crashes_of_the_adversarial_pass_are_invalid_file_naming_the_field(
    file, at, value, named
):
    target = _target(file)
    with pytest.raises(InvalidFile, match=named):
        _import_mutated(target, at, value)


def _conversation(tmp_path: Path) -> Path:
    """A copy of the OpenHands excerpt to damage."""
    return Path(shutil.copytree(OPENHANDS, tmp_path / OPENHANDS.name))


def _refused(source: Path, out: Path, named: str) -> None:
    """The import is `invalid_file` matching `named`, through the API and the CLI, and writes nothing."""
    from typer.testing import CliRunner

    from workingset.cli.commands import app

    with pytest.raises(InvalidFile, match=named):
        import_trajectory("openhands", source)
    res = CliRunner().invoke(app, ["import", "openhands", str(source), "--out", str(out), "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "invalid_file"
    assert not out.exists()


@pytest.mark.parametrize("outside", [False, True], ids=["link-inside", "link-outside"])
def test_an_openhands_event_file_that_is_a_symbolic_link_is_refused(tmp_path, outside):
    source = _conversation(tmp_path)
    event = min((source / "events").iterdir())
    target = (tmp_path / "elsewhere.json") if outside else (source / "events" / "kept.json")
    event.rename(target)
    event.symlink_to(target)
    _refused(source, tmp_path / "out", "symbolic link")


def test_an_openhands_events_folder_that_resolves_outside_the_conversation_is_refused(tmp_path):
    source = _conversation(tmp_path)
    (source / "events").rename(tmp_path / "events-elsewhere")
    (source / "events").symlink_to(tmp_path / "events-elsewhere")
    _refused(source, tmp_path / "out", "outside the conversation directory")


def test_an_openhands_base_state_that_is_a_symbolic_link_is_refused(tmp_path):
    source = _conversation(tmp_path)
    (source / "base_state.json").rename(tmp_path / "base.json")
    (source / "base_state.json").symlink_to(tmp_path / "base.json")
    _refused(source, tmp_path / "out", "symbolic link")


@pytest.mark.parametrize("number", ["00001", "1", "001"])
def test_two_openhands_events_of_one_number_are_refused(tmp_path, number):
    source = _conversation(tmp_path)
    first = min((source / "events").iterdir())
    assert first.name.startswith("event-00001-")
    shutil.copy(first, source / "events" / f"event-{number}-copy.json")
    _refused(source, tmp_path / "out", "two event files have the number 1")


@pytest.mark.parametrize("value", [-5, 0, -1, 2**60, 1.5, "40", True])
def test_an_invalid_openhands_max_iterations_is_refused(tmp_path, value):
    source = _conversation(tmp_path)
    base = json.loads((source / "base_state.json").read_text(encoding="utf-8"))
    base["max_iterations"] = value
    (source / "base_state.json").write_text(json.dumps(base), encoding="utf-8")
    _refused(source, tmp_path / "out", r"\$\.max_iterations")
