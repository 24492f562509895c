"""Shared fixtures: every encoder version, text snapshots, the stores of both backends, the CLI built once (helpers live in tests/helpers/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from tests.helpers.common import SECTION_TEST, VERSIONS, long_run_path
from workingset.encoders import ENCODERS

pytest_plugins = [
    "pytester"
]  # tests/testing/test_pytest_plugin.py runs pytest with workingset's plugin


class TextSnapshot(SingleFileSnapshotExtension):
    """One UTF-8 `.txt` file per snapshot, compared byte for byte (no newline translation)."""

    _write_mode = WriteMode.BINARY
    file_extension = "txt"
    _file_extension = "txt"  # syrupy < 5


@pytest.fixture
def snapshot_txt(snapshot):
    """syrupy's snapshot, one readable text file per snapshot."""
    return snapshot.use_extension(TextSnapshot)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Keep the on-disk caches (token counts, vocabularies) of the test run out of the user's."""
    os.environ["WORKINGSET_CACHE_DIR"] = str(tmp_path_factory.mktemp("workingset-cache"))


@pytest.fixture(autouse=True, scope="session")
def _cli_built_once():
    """typer's CliRunner builds the app's click command on every `invoke` (about 15 ms, from the
    commands' signatures); hand it the one `main()` builds once per process, as the console script
    runs it. Any other typer app is built as before (and every app, on a typer whose CliRunner
    does not look the builder up there)."""
    import typer.testing

    from workingset.cli import commands

    build = getattr(typer.testing, "_get_command", None)
    if build is None:
        yield
        return

    def get_command(app):
        return commands._click_command() if app is commands.app else build(app)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", get_command)
        yield


@pytest.fixture(scope="session")
def long_run():
    """The 167-step OpenHands run's states (../shared/corpus/all), imported once.

    Shared by the v13, v14 and v15 tests, which only render them (rendering never changes a state).
    """
    from workingset.importers import import_trajectory

    return import_trajectory("openhands", long_run_path()).states


@pytest.fixture(params=VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def encoder(request):
    """Each test using this runs once per encoder version (the shared invariants)."""
    return ENCODERS[request.param]


# -- stores: every store and session test runs on SQLite and on PostgreSQL ---------------------------

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL server for the session; skipped where there is none (a failure in CI)."""
    from tests.helpers import pg_server as pg

    why = pg.missing()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {why}")
        pytest.skip(why)
    server = pg.Server()
    yield server
    server.stop()


def make_store(backend: str, tmp_path: Path, request) -> str:
    """A new empty store of `backend`: a file path, or the URL of a fresh database."""
    if backend == "sqlite":
        return str(tmp_path / "store.sqlite3")
    server = request.getfixturevalue("pg_server")
    url = server.database()
    request.addfinalizer(lambda: server.drop(url))
    return url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> str:
    """A new empty store, once per backend (a SQLite file path, a PostgreSQL URL)."""
    return make_store(request.param, tmp_path, request)


def pytest_collection_modifyitems(config, items):
    """Mark `slow` every test on the PostgreSQL server (a server per session, a database per test) and every hypothesis property test.

    A `-m` given on the command line replaces addopts' `-m 'not soak'`: unless it names `soak`
    itself, the soak tests stay out (`-m "not slow"` and `-m slow` leave them out, `-m soak` runs them).
    """
    soak_named = "soak" in (config.option.markexpr or "")
    kept, dropped = [], []
    for item in items:
        if "postgresql" in item.nodeid or "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        # Property tests generate their inputs (hypothesis): fuzzing by another name.
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)
        (dropped if item.get_closest_marker("soak") and not soak_named else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    # The RESULTS sections' reproduction checks go last, in the order they were otherwise in: they
    # start in the background when collection is done (`pytest_collection_finish`) and take minutes of
    # another process's time, so their tests find them done.
    items[:] = sorted(kept, key=lambda item: getattr(item, "originalname", "") == SECTION_TEST)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (`CI=true`) a PostgreSQL test that skips is a failure: the backend must have been tested."""
    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and os.environ.get("CI") == "true"
        and ("postgresql" in item.nodeid or "psycopg" in str(report.longrepr))
    ):
        report.outcome = "failed"
        report.longrepr = f"CI=true: a PostgreSQL test may not skip ({report.longrepr})"


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    if any(getattr(item, "originalname", "") == SECTION_TEST for item in session.items):
        from tests.docs.test_results import start_section_checks

        start_section_checks(session)
