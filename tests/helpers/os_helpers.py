"""Running the CLI against failures of the world: in process, in a subprocess with a timeout, as another user, on a read-only mount."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from workingset.cli.commands import main

HANG = (
    60  # seconds: a command still running then is hanging (each of these returns in well under one)
)


class Outcome:
    """Exit code and both streams of one CLI run."""

    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    @property
    def error(self) -> dict:
        """The `--json` error object."""
        return json.loads(self.out)["error"]

    def rejected(self, code: str) -> Outcome:
        """Assert exit 2 with exactly one line `error: <code>: …` and no traceback; return self."""
        assert self.code == 2, (self.code, self.out, self.err)
        assert self.err.startswith(f"error: {code}: "), self.err
        assert self.err.count("\n") == 1 and "Traceback" not in self.err + self.out, self.err
        return self


def cli(*args: str) -> Outcome:
    """Run the CLI in this process (as the console script would)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Outcome(code, out.getvalue(), err.getvalue())


def cli_process(*args: str | bytes, stdin: int | None = None, close_fds: tuple[int, ...] = (), env: dict | None = None,
                timeout: float = HANG) -> Outcome:  # fmt: skip
    """Run the console script in a subprocess (for what could hang, or needs its own file descriptors)."""
    code = "import sys; from workingset.cli.commands import run; run()"
    argv = [sys.executable, "-c", code, *args]
    closer = (lambda: [os.close(fd) for fd in close_fds]) if close_fds else None
    res = subprocess.run(argv, stdin=stdin, capture_output=True, timeout=timeout, preexec_fn=closer,
                         env={**os.environ, **(env or {})})  # fmt: skip
    return Outcome(
        res.returncode, res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace")
    )


def can_mount_read_only(tmp_path: Path) -> bool:
    """Whether this machine lets us bind-mount a directory read-only in a private mount namespace."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    src, dst = tmp_path / "probe-src", tmp_path / "probe-dst"
    src.mkdir(exist_ok=True)
    dst.mkdir(exist_ok=True)
    res = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {src} {dst} && mount -o remount,bind,ro {dst}"],
                         capture_output=True, timeout=HANG)  # fmt: skip
    return res.returncode == 0


def cli_read_only(src: Path, mnt: Path, *args: str) -> Outcome:
    """Run the CLI with `src` bind-mounted read-only at `mnt` (a private mount namespace: nothing leaks)."""
    mnt.mkdir(exist_ok=True)
    inner = " ".join(subprocess.list2cmdline([a]) for a in [sys.executable, "-c",
                     "import sys; from workingset.cli.commands import run; run()", *args])  # fmt: skip
    script = f"mount --bind {src} {mnt} && mount -o remount,bind,ro {mnt} && exec {inner}"
    res = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, timeout=HANG)
    return Outcome(res.returncode, res.stdout.decode(), res.stderr.decode())


def cli_as_nobody(*args: str) -> Outcome:
    """Run the CLI in a forked child that dropped root for uid 65534, so permissions really apply."""
    import workingset.encoders  # noqa: F401 - imported before the fork: the child may not read the interpreter's files
    import workingset.runs.layout  # noqa: F401
    import workingset.session.investigation  # noqa: F401

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            res = cli(*args)
            os.write(write, json.dumps([res.code, res.out, res.err]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    code, out, err = json.loads(data)
    return Outcome(code, out, err)


def snapshot(path: Path) -> tuple[bytes, bytes | None]:
    """The store file's bytes and its write-ahead log's (None: absent): equal snapshots mean nothing was written."""
    wal = Path(str(path) + "-wal")
    return path.read_bytes(), wal.read_bytes() if wal.exists() and wal.stat().st_size else None
