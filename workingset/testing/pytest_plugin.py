"""The pytest plugin that pins a user's runs (docs/testing.md); pytest loads it by its `pytest11` entry point.

Inert unless asked: with neither `--workingset-runs` nor the `workingset_runs` ini option it
adds no test and imports nothing more. Asked, it adds one test per run it finds under each
folder (`pins.find_runs`): every stored context verified, the export replayed, and the run's
`compare --json` compared with the golden beside it; `--workingset-update` writes the goldens
instead, in syrupy's manner. The `workingset_pin` fixture runs the same checks on a run a
test names.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("workingset", "pin workingset runs (docs/testing.md)")
    group.addoption("--workingset-runs", action="append", default=[], metavar="DIR",
                    help="A folder of runs (or one run) to pin: one test per run. Repeatable.")  # fmt: skip
    group.addoption("--workingset-update", action="store_true", default=False,
                    help="Write each run's golden compare --json instead of comparing with it.")  # fmt: skip
    parser.addini(
        "workingset_runs",
        "Folders of runs to pin (relative to the ini file).",
        type="paths",
        default=[],
    )
    parser.addini("workingset_compare_args", "The arguments of each golden's `compare RUN --json` (default --summary).",
                  default="--summary")  # fmt: skip


def _roots(config: pytest.Config) -> list[Path]:
    given = [Path(p) for p in config.getoption("workingset_runs")]
    return given or [Path(p) for p in config.getini("workingset_runs")]


def _compare_args(config: pytest.Config) -> list[str]:
    return shlex.split(str(config.getini("workingset_compare_args")))


@pytest.hookimpl(
    tryfirst=True
)  # before `-k` and `-m` deselect: the runs' tests can be selected too
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    roots = _roots(config)
    if not roots:
        return
    for root in roots:
        folder = RunsFolder.from_parent(session, name=f"workingset-runs[{root}]", root=root)
        items.extend(folder.collect())


class RunsFolder(pytest.Collector):
    """The runs under one folder: one `RunTest` each."""

    def __init__(self, *, root: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.root = root

    def collect(self) -> list[pytest.Item]:
        from .pins import find_runs

        return [RunTest.from_parent(self, name=run.name, run=run) for run in find_runs(self.root)]


class RunTest(pytest.Item):
    """One pinned run: verify, replay, golden."""

    def __init__(self, *, run: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.run = run

    def runtest(self) -> None:
        from .pins import pin

        pin(self.run, _compare_args(self.config), update=self.config.getoption("workingset_update"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .pins import PinFailed

        if isinstance(excinfo.value, PinFailed):
            return str(excinfo.value)
        from ..errors import WorkingsetError

        if isinstance(excinfo.value, WorkingsetError):
            return f"{self.run}: {excinfo.value.code}: {excinfo.value.message}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.run, None, f"workingset run {self.run}"


@pytest.fixture
def workingset_pin(request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """`workingset_pin(run, compare_args=None)`: the plugin's checks of one run, honouring `--workingset-update`."""
    from .pins import pin

    config = request.config

    def check(run: str | Path, compare_args: Sequence[str] | None = None) -> str:
        args = _compare_args(config) if compare_args is None else list(compare_args)
        return pin(run, args, update=config.getoption("workingset_update"))

    yield check
