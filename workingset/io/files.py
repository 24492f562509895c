"""The file-system boundary: OS errors as stable codes, inputs that must be regular files, new run directories.

An `OSError` from the operating system becomes one of a few codes (`OS_CODES`), with the
path it concerns in the message and `details`. Inputs are opened only after `stat` says they
are regular files, and with `O_NONBLOCK`, so a FIFO, socket or device given as input is
refused at once instead of blocking or reading forever.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from ..errors import UsageError, WorkingsetError

# errno -> code; everything else is `io_error`. Read-only media count as permission_denied:
# to the user both mean "this place cannot be written".
OS_CODES = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.EROFS: "permission_denied",
    errno.EISDIR: "is_a_directory",
    errno.ENOTDIR: "not_a_directory",
    errno.EEXIST: "already_exists",
    errno.ENAMETOOLONG: "invalid_path",
    errno.ELOOP: "invalid_path",
    errno.EINVAL: "invalid_path",
    errno.ENXIO: "not_regular_file",  # opening a socket
}


class SpecialFile(OSError):
    """A FIFO, socket, device or directory where a regular file is needed."""


def os_code(exc: OSError) -> str:
    """The stable code of an OS error (`io_error` when no more specific one applies)."""
    if isinstance(exc, SpecialFile):
        return "is_a_directory" if exc.errno == errno.EISDIR else "not_regular_file"
    return OS_CODES.get(exc.errno or 0, "io_error")


def describe(exc: OSError) -> str:
    """What went wrong, in the system's words (`No such file or directory`)."""
    return exc.strerror or str(exc) or type(exc).__name__


def os_error(
    exc: OSError, path: str | os.PathLike[str] | None = None, doing: str = "use"
) -> WorkingsetError:
    """The error to report for an OS error on `path` (default: the path the error names)."""
    where = os.fspath(path) if path is not None else exc.filename
    name = errno.errorcode.get(exc.errno or 0)
    target = f" {where}" if where is not None else ""
    return WorkingsetError(f"cannot {doing}{target}: {describe(exc)}", code=os_code(exc),
                           details={"path": None if where is None else str(where), "errno": name})  # fmt: skip


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip


def special_kind(mode: int) -> str | None:
    """'a FIFO', 'a directory', … for a file mode that is not a regular file; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str, mode: int) -> None:
    kind = special_kind(mode)
    if kind is not None:
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        raise SpecialFile(code, f"is {kind}, not a regular file", path)


class _NonBlockingReader(io.BufferedReader):
    """A reader that raises instead of waiting: a regular file never waits, a pseudo-file like /proc/kmsg would."""

    path: str  # the path it was opened from, set by `open_regular`

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if data is None:
            raise BlockingIOError(
                errno.EAGAIN, "a pseudo-file that would wait for data", getattr(self, "path", None)
            )
        return data


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a regular file for reading; a FIFO, socket, device or directory raises `SpecialFile` without blocking.

    `stat` refuses those before opening; `O_NONBLOCK` keeps the open itself from waiting on a
    FIFO that replaced the file in between, and `fstat` checks what was actually opened. The
    file stays non-blocking: reading a regular file never waits anyway, and a kernel
    pseudo-file that looks like one but produces data over time raises `BlockingIOError`.
    """
    path = os.fspath(path)
    if "\0" in path:  # os.stat would raise ValueError: the same failure as any other bad path
        raise OSError(errno.EINVAL, "a path cannot hold a NUL byte", path)
    _refuse(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _refuse(path, os.fstat(fd).st_mode)
        reader = _NonBlockingReader(io.FileIO(fd, "rb", closefd=True))
        reader.path = path
        return reader
    except BaseException:
        os.close(fd)
        raise


def check_new_run_dir(out: str | os.PathLike[str]) -> Path:
    """Check that `out` can become a run directory (new, or a directory holding no `.json` files), before any work.

    The parent need not exist (it is created). The checks give the OS codes of `OS_CODES`:
    a file, device or path under a file is `not_a_directory`, a dangling symbolic link
    `not_found`, an unreadable directory `permission_denied`, a name too long `invalid_path`.
    """
    text = os.fspath(out)
    if not text.strip():
        raise UsageError("--out must name a directory; an empty path names none")
    root = Path(text)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        if os.path.islink(root):
            raise WorkingsetError(f"cannot write to {root}: it is a symbolic link to {os.readlink(root)}, which does not exist",
                                  code="not_found", details={"path": text, "errno": "ENOENT"}) from None  # fmt: skip
        return root  # new: created when written
    except OSError as exc:
        raise os_error(exc, root, "write to") from None
    if not stat.S_ISDIR(st.st_mode):
        kind = special_kind(st.st_mode) or "a file"
        raise WorkingsetError(f"cannot write to {root}: it exists and is {kind}, not a directory",
                              code="not_a_directory", details={"path": text, "errno": "ENOTDIR"})  # fmt: skip
    try:
        names = os.listdir(root)
    except OSError as exc:
        raise os_error(exc, root, "list") from None
    if any(name.endswith(".json") for name in names):
        raise UsageError(f"{root}: already holds .json files; write into a new or empty directory",
                         details={"path": text})  # fmt: skip
    return root


def write_new_files(root: Path, files: Iterable[tuple[str, bytes]]) -> list[Path]:
    """Write each (name, data) as a new file in `root` (created if needed): all of them, or none.

    `files` is iterated lazily, so a generator keeps one file's bytes in memory at a time.
    Files are created exclusively, never overwriting one; if a write fails, or producing the
    next file raises anything at all, the files written so far and the directories created are
    removed again; an OS error is reported as such, any other exception re-raised.
    """
    created_dirs: list[Path] = []
    missing = root
    while not missing.exists() and not missing.is_symlink() and missing != missing.parent:
        created_dirs.append(missing)
        missing = missing.parent
    written: list[Path] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for name, data in files:
            path = root / name
            with open(path, "xb") as fh:
                written.append(path)
                fh.write(data)
    except BaseException as exc:
        for path in written:
            path.unlink(missing_ok=True)
        for directory in created_dirs:  # innermost first
            try:
                directory.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError):
            raise os_error(exc, getattr(exc, "filename", None) or root, "write") from None
        raise
    return written
