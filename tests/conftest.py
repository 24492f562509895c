"""Shared fixtures and helpers: every encoder version, the bug17 run, the CLI runner, text snapshots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from typer.testing import CliRunner

from workingset.cli.commands import app
from workingset.encoders import ENCODERS

ROOT = Path(__file__).resolve().parents[1]
BUG17 = ROOT / "fixtures" / "bug17"
VERSIONS = sorted(ENCODERS)

# The public trajectories beside the project, or where $WORKINGSET_CORPUS says (read-only,
# not part of the repository; tests skip where they are absent).
CORPUS = Path(os.environ.get("WORKINGSET_CORPUS") or ROOT.parent / "shared" / "corpus" / "raw")
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the trajectory corpus is not at {CORPUS}"
)
CORPUS_SOURCES = {  # name -> (format, agent actions)
    "sweagent-gpt4-pydicom-1458.traj": ("swe-agent", 12),
    "mini-v2-deepseek-sqlfluff-1625.traj.json": ("mini-swe-agent", 48),
    "mini-v1-gemini3pro-pylint-6386.traj.json": ("mini-swe-agent", 54),
    "openhands-v1-sonnet4-astropy-14309": ("openhands", 51),
    "openhands-v1-sonnet4-matplotlib-24570": ("openhands", 44),
}


# A fixed, plain terminal, so that CLI output (tables, no colour, no progress bar) is stable.
CLI_ENV = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}


def invoke(*args: str):
    """Run the CLI in-process with a fixed terminal width."""
    return CliRunner().invoke(app, list(args), env=CLI_ENV, terminal_width=200)


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


@pytest.fixture(params=VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def encoder(request):
    """Each test using this runs once per encoder version (the shared invariants)."""
    return ENCODERS[request.param]


# -- stores: every store and session test runs on SQLite and on PostgreSQL ---------------------------

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL server for the session; skipped where there is none (a failure in CI)."""
    import os

    import pg_server as pg

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (`CI=true`) a PostgreSQL test that skips is a failure: the backend must have been tested."""
    import os

    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and os.environ.get("CI") == "true"
        and ("postgresql" in item.nodeid or "psycopg" in str(report.longrepr))
    ):
        report.outcome = "failed"
        report.longrepr = f"CI=true: a PostgreSQL test may not skip ({report.longrepr})"
