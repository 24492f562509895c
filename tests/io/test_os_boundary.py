"""Failures of the operating system through the CLI: each is exit 2 with a code, never a traceback or a hang.

Inputs that cannot be read are `invalid_file` (docs/protocol.md, "Errors") with the OS reason in
`details.reason`; an `--out` that cannot be written gets the OS code itself
(`files.OS_CODES`); special files are refused without being opened for reading.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.os_helpers import (
    HANG,
    can_mount_read_only,
    cli,
    cli_as_nobody,
    cli_process,
    cli_read_only,
    snapshot,
)
from tests.helpers.session_helpers import (
    answer_bytes,
    answer_events,
    db_dump,
    decision,
    query,
    state_bytes,
)
from workingset.io.files import write_new_files
from workingset.session.investigation import Investigation

# Cross-process: the CLI in subprocesses with timeouts, as another user, on a read-only mount.
pytestmark = pytest.mark.slow

LONG = "n" * 300  # over NAME_MAX (255) on every common file system


@pytest.fixture
def store(tmp_path) -> Path:
    """A store holding analysis `demo` with two requests (so that export writes two files)."""
    path = tmp_path / "store.sqlite3"
    with Investigation.create(str(path), state_bytes(), encoder="v8") as inv:
        req = inv.next_request("H1")
        inv.submit(req.request_id, decision(query()))
        inv.next_request("H2")
    return path


@pytest.fixture
def places(tmp_path) -> dict[str, str]:
    """Paths that are not readable regular files, built in a temp dir."""
    (tmp_path / "a-file").write_text("{}")
    (tmp_path / "a-dir").mkdir()
    os.mkfifo(tmp_path / "a-fifo")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "a-socket"))
    sock.close()
    return {
        "missing": str(tmp_path / "missing.json"),
        "directory": str(tmp_path / "a-dir"),
        "fifo": str(tmp_path / "a-fifo"),
        "socket": str(tmp_path / "a-socket"),
        "dev-zero": "/dev/zero",
        "dev-null": "/dev/null",
        "dangling-link": str(tmp_path / "dangling"),
        "under-a-file": str(tmp_path / "a-file" / "x.json"),
        "name-too-long": str(tmp_path / LONG),
    }


INPUT_REASONS = {
    "missing": "not_found", "directory": "is_a_directory", "fifo": "not_regular_file", "socket": "not_regular_file",
    "dev-zero": "not_regular_file", "dev-null": "not_regular_file", "dangling-link": "not_found",
    "under-a-file": "not_a_directory", "name-too-long": "invalid_path",
}  # fmt: skip


@pytest.mark.parametrize("place", sorted(INPUT_REASONS))
def test_an_input_that_is_not_a_readable_regular_file_is_invalid_file_with_its_reason(
    places, store, place
):
    """render FILE, init --state, submit FILE and record FILE (what could block runs in a subprocess with a timeout)."""
    path = places[place]
    run = cli_process if place in ("fifo", "dev-zero") else cli
    before = snapshot(store)
    for args in (["render", path], ["init", "--state", path, "--store", str(store)],
                 ["submit", "--analysis", "demo", "--request", "demo-r0002", path, "--store", str(store)],
                 ["record", "--analysis", "demo", "--action", "B000006", path, "--store", str(store)]):  # fmt: skip
        res = run(*args, "--json").rejected("invalid_file")
        assert res.error["details"]["reason"] == INPUT_REASONS[place], (args, res.error)
        assert path in res.err or place == "name-too-long"
    assert snapshot(store) == before


@pytest.mark.skipif(not os.access("/proc/kmsg", os.R_OK), reason="/proc/kmsg is not readable here")
def test_a_pseudo_file_that_would_wait_is_refused_without_blocking():
    """/proc/kmsg looks like a regular file but waits for kernel messages: it is refused as a clean `invalid_file`, at once.

    Where no kernel message is pending the read would wait and is refused as such; where one
    is, it arrives and is refused as the malformed JSON it is. Either way: no hang, no traceback.
    """
    res = cli_process("render", "/proc/kmsg", "--json").rejected("invalid_file")
    assert "Traceback" not in res.err
    if res.error["details"].get("reason") == "io_error":
        assert "would wait" in res.error["message"]
    else:
        assert "not valid JSON" in res.error["message"]


def test_an_import_source_that_is_a_special_file_is_refused_without_blocking(tmp_path, places):
    conversation = tmp_path / "conversation" / "events"
    conversation.mkdir(parents=True)
    os.mkfifo(conversation / "event-00000-x.json")
    for fmt, source in (("mini-swe-agent", places["fifo"]), ("swe-agent", "/dev/zero"),
                        ("openhands", str(conversation.parent))):  # fmt: skip
        res = cli_process("import", fmt, source, "--out", str(tmp_path / "run")).rejected(
            "invalid_file"
        )
        assert "not a regular file" in res.err
    assert not (tmp_path / "run").exists()


def test_a_run_directory_with_a_special_file_or_no_access_is_invalid_file(tmp_path, places, store):
    run = tmp_path / "run"
    cli("export", "--analysis", "demo", "--store", store, "--out", run)
    os.mkfifo(
        run / "zz.json"
    )  # sorted last: a FIFO among good files is refused, not skipped or read
    for command in ("verify", "compare"):
        res = cli_process(command, str(run), "--json", timeout=HANG).rejected("invalid_file")
        assert res.error["details"]["reason"] == "not_regular_file"
    for place in ("missing", "under-a-file", "dev-null"):
        for command in ("verify", "compare"):
            cli(command, places[place]).rejected("invalid_file")


@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root to drop to another user (as root, permissions do not apply)",
)
def test_an_unreadable_directory_or_file_is_invalid_file_permission_denied(store):
    base = Path(
        tempfile.mkdtemp(prefix="ws-perm-", dir="/tmp")
    )  # pytest's own temp root is closed to others
    base.chmod(0o755)
    run = base / "run"
    assert cli("export", "--analysis", "demo", "--store", store, "--out", run).code == 0
    secret = base / "secret"
    secret.mkdir(mode=0o700)
    (secret / "ctx.json").write_bytes((run / "demo-r0001.json").read_bytes())
    locked = run / "demo-r0002.json"
    locked.chmod(0o600)
    for args, reason in ((["verify", str(secret)], "permission_denied"), (["render", str(locked)], "permission_denied"),
                         (["verify", str(run)], "permission_denied")):  # fmt: skip
        res = cli_as_nobody(*args, "--json").rejected("invalid_file")
        assert res.error["details"]["reason"] == reason
    shutil.rmtree(base)


# -- --out: checked before any work, written all-or-nothing ------------------------------------------

OUT_CODES = {
    "dev-null": "not_a_directory", "a-file": "not_a_directory", "fifo": "not_a_directory",
    "under-a-file": "not_a_directory", "dangling-link": "not_found", "name-too-long": "invalid_path",
    "proc": "not_found", "empty": "usage_error", "holds-json": "usage_error",
}  # fmt: skip


@pytest.mark.parametrize("place", sorted(OUT_CODES))
def test_an_out_that_cannot_be_a_new_run_directory_is_refused_before_any_work(
    tmp_path, places, store, place
):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.json").write_text("mine")
    special = {"a-file": str(tmp_path / "a-file"), "proc": "/proc/self/no/such/dir", "empty": "", "holds-json": str(full),
               "under-a-file": str(tmp_path / "a-file" / "run")}  # fmt: skip
    out = special[place] if place in special else places[place]
    store_before = snapshot(store)

    def listing():
        return sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm")))  # noqa: E731

    before = (
        listing()
    )  # SQLite's side files of a reader may appear (see the README); the store itself is unchanged
    res = cli("export", "--analysis", "demo", "--store", store, "--out", out, "--json").rejected(
        OUT_CODES[place]
    )
    assert out.startswith(
        res.error["details"].get("path", out)
    )  # the path, or the part of it that failed
    traj = Path(__file__).parents[1] / "data"
    source = next(p for p in sorted(traj.rglob("*.traj.json")))
    cli("import", "mini-swe-agent", source, "--out", out).rejected(OUT_CODES[place])
    assert listing() == before and (full / "keep.json").read_text() == "mine"
    assert snapshot(store) == store_before


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    root = tmp_path / "new" / "run"
    with pytest.raises(Exception) as info:
        write_new_files(root, [("a.json", b"1"), ("b.json", b"2"), (LONG + ".json", b"3")])
    assert (
        info.value.code == "invalid_path"
        and info.value.details["errno"] == errno.errorcode[errno.ENAMETOOLONG]
    )
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(Exception):
        write_new_files(existing, [("a.json", b"1"), (LONG + ".json", b"3")])
    assert existing.is_dir() and not any(existing.iterdir())


def test_a_failure_producing_the_files_leaves_nothing_behind_and_is_raised_as_it_was(tmp_path):
    """Files come lazily (export streams them): an error of the producer, not of the OS, also undoes the writes."""
    produced = []

    def files():
        for name in ("a.json", "b.json"):
            produced.append(name)
            yield name, b"1"
        raise KeyError("the replay broke")

    root = tmp_path / "new" / "run"
    with pytest.raises(KeyError, match="the replay broke"):
        write_new_files(root, files())
    assert produced == ["a.json", "b.json"] and not (tmp_path / "new").exists()


def test_export_refuses_a_directory_holding_a_run_and_never_overwrites(tmp_path, store):
    run = tmp_path / "run"
    assert cli("export", "--analysis", "demo", "--store", store, "--out", run).code == 0
    first = {p.name: p.read_bytes() for p in run.iterdir()}
    cli("export", "--analysis", "demo", "--store", store, "--out", run).rejected("usage_error")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == first


# -- the store path --------------------------------------------------------------------------------


@pytest.mark.parametrize("place", ["fifo", "socket", "dev-null", "dev-zero", "directory"])
def test_a_store_that_is_a_special_file_is_store_corrupt_at_once(places, place):
    for args in (["show", "--analysis", "demo"], ["pause", "--analysis", "demo"], ["export", "--analysis", "demo",
                 "--out", "/tmp/never-written"]):  # fmt: skip
        run = cli_process if place in ("fifo", "dev-zero") else cli
        res = run(*args, "--store", places[place]).rejected("store_corrupt")
        assert "not a workingset store" in res.err


@pytest.mark.parametrize("url", ["mysql://db/x", "sqlite:///tmp/x.db", "HTTP://x"])
def test_a_store_url_of_a_scheme_not_served_is_a_usage_error_and_creates_nothing(
    tmp_path, monkeypatch, url
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "state.json").write_bytes(state_bytes())
    res = cli("init", "--state", "state.json", "--store", url, "--json").rejected("usage_error")
    assert "not served" in res.error["message"] and res.error["details"]["served"] == [
        "postgresql",
        "postgres",
    ]
    cli("show", "--analysis", "demo", "--store", url).rejected("usage_error")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    with pytest.raises(Exception) as info:
        Investigation.create(url, state_bytes())
    assert info.value.code == "usage_error"
    cli("show", "--analysis", "demo", "--store", "").rejected("usage_error")


# -- the edges of the process ------------------------------------------------------------------------


def test_an_id_argument_that_is_not_utf8_is_a_usage_error(store):
    before = snapshot(store)
    for args in (["show", "--analysis", b"\xff"], ["pause", "--analysis", b"d\xffmo"],
                 ["submit", "--analysis", "demo", "--request", b"\xfe", "{}"],
                 ["record", "--analysis", "demo", "--action", b"B\xff", "{}"]):  # fmt: skip
        res = cli_process(*args, "--store", str(store), "--json").rejected("usage_error")
        assert "not valid UTF-8" in res.error["message"]
    assert snapshot(store) == before
    logical = db_dump(str(store), answers=False)
    res = cli_process(
        "submit",
        "--analysis",
        "demo",
        "--request",
        "demo-r0002",
        b'{"next": "\xff"}',
        "--store",
        str(store),
    )
    res.rejected("malformed_json")
    # A rejected answer changes nothing but the answers log, which keeps it as received.
    assert db_dump(str(store), answers=False) == logical
    assert answer_bytes(answer_events(str(store))[-1]) == b'{"next": "\xff"}'


def test_a_path_that_is_not_utf8_works_and_prints_as_json(tmp_path, store):
    out = os.fsencode(str(tmp_path)) + b"/run-\xff"
    res = cli_process("export", "--analysis", "demo", "--store", str(store), "--out", out, "--json")
    assert res.code == 0 and len(json.loads(res.out)["files"]) == 2 and "\ufffd" in res.out
    assert os.path.isdir(out)
    res = cli_process("render", out + b"/missing.json", "--json").rejected("invalid_file")
    assert res.error["details"]["reason"] == "not_found"


def test_closed_standard_streams_and_a_broken_pipe_are_codes(store):
    before = snapshot(store)
    cli_process("submit", "--analysis", "demo", "--request", "demo-r0002", "-", "--store", str(store),
                close_fds=(0,)).rejected("usage_error")  # fmt: skip
    cli_process("pause", "--analysis", "demo", "--store", str(store), close_fds=(1,)).rejected(
        "io_error"
    )
    assert snapshot(store) == before  # a closed stdout is found before the command changes anything
    proc = subprocess.Popen([sys.executable, "-c",
                             "from workingset.cli.commands import run; run()", "show", "--analysis", "demo", "--store", str(store),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    proc.stdout.close()  # the reader goes away before the answer is written
    err = proc.stderr.read().decode()
    assert (
        proc.wait(timeout=60) == 2
        and err == "error: io_error: stdout was closed before all of the output was written\n"
    )


# -- read-only media ---------------------------------------------------------------------------------


def test_read_only_commands_never_write_the_store(tmp_path, store):
    before = snapshot(store)
    assert cli("show", "--analysis", "demo", "--store", store, "--json").code == 0
    assert (
        cli("export", "--analysis", "demo", "--store", store, "--out", tmp_path / "run").code == 0
    )
    assert snapshot(store) == before
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    for verb in ("show", "pause", "export"):
        extra = ["--out", str(tmp_path / "e")] if verb == "export" else []
        cli(verb, "--analysis", "demo", "--store", empty, *extra).rejected("unknown_analysis")
    assert empty.read_bytes() == b"" and not (tmp_path / "e").exists()
    blank = (
        tmp_path / "blank.sqlite3"
    )  # a SQLite database with no tables: not ours to write a schema into
    conn = sqlite3.connect(blank)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.close()
    blank_bytes = blank.read_bytes()
    for verb in ("show", "pause", "resume"):
        cli(verb, "--analysis", "demo", "--store", blank).rejected("unknown_analysis")
    assert blank.read_bytes() == blank_bytes
    with Investigation.open(str(store), "demo", read_only=True) as inv:
        assert inv.show().open_request == "demo-r0002"
        with pytest.raises(Exception) as info:
            inv.pause()
        assert info.value.code == "store_unavailable"
    assert snapshot(store) == before


def test_show_and_export_work_on_a_read_only_mount(tmp_path, store):
    if not can_mount_read_only(tmp_path):
        pytest.skip("cannot bind-mount read-only here (needs root, unshare and mount)")
    src, mnt = tmp_path / "media", tmp_path / "mnt"
    src.mkdir()
    shutil.copy(
        store, src / store.name
    )  # closed cleanly: no -wal or -shm beside it, as on a burnt medium
    ro = str(mnt / store.name)
    res = cli_read_only(src, mnt, "show", "--analysis", "demo", "--store", ro, "--json")
    assert res.code == 0 and json.loads(res.out)["open_request"] == "demo-r0002", res.err
    res = cli_read_only(
        src, mnt, "export", "--analysis", "demo", "--store", ro, "--out", str(tmp_path / "run")
    )
    assert res.code == 0 and len(list((tmp_path / "run").glob("*.json"))) == 2, res.err
    res = cli_read_only(src, mnt, "pause", "--analysis", "demo", "--store", ro).rejected(
        "store_unavailable"
    )
    assert "read-only file system" in res.err
    res = cli_read_only(
        src, mnt, "export", "--analysis", "demo", "--store", str(store), "--out", str(mnt / "run")
    )
    res.rejected("permission_denied")
    # A write-ahead log with changes that cannot be read without its index: refused, never an older state.
    Path(str(src / store.name) + "-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(60))
    cli_read_only(src, mnt, "show", "--analysis", "demo", "--store", ro).rejected(
        "store_unavailable"
    )
