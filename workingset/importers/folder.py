"""Import a folder of trajectories: each into `OUT/NAME`, past the bad ones, skipping runs already there.

`find_sources` walks the folder in sorted order. A trajectory is a `.traj` or `.traj.json`
file, another `.json` file whose shape `_sniff.identify` recognises, or an OpenHands
conversation directory (which is not walked into); any other directory is walked, and other
files (logs, patches, `preds.json`) are passed over. Names starting with `.` and symbolic
links to directories are passed over too, and so is `OUT` when it lies inside the folder.
Links are never followed: one named like a trajectory is failed unread (as the OpenHands
importer refuses a link in a conversation), and a directory that cannot be listed is
failed; the rest of the folder is imported either way.

Each trajectory's run is named after its file or directory: the name without `.traj.json`,
`.traj` or `.json`, folded into an analysis ID as `analysis_id` folds one; the second
trajectory (in sorted path order) with a name already taken gets `-2`, the next `-3`; so
does one whose `OUT/NAME` holds the run of another trajectory (as its `.source` records). The
name is also the run's analysis ID, so request IDs differ across the folder's runs.

A run is complete when `OUT/NAME` is a directory holding a run: it is written into a fresh
`OUT/.NAME.*.partial` directory and renamed to `OUT/NAME` only once every file is written,
so an import that was interrupted leaves no `OUT/NAME` and is done again by the next one
(a process that was killed can leave its `.partial` directory behind; it is safe to delete).
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError, WorkingsetError
from ..io.files import check_new_run_dir, os_error
from ..model.state import ANALYSIS_ID_MAX_CHARS
from ..runs.layout import check_layout, holds_a_run
from . import ENCODER, FORMATS, import_trajectory, write_import
from ._sniff import identify
from ._trajectory import analysis_id, fail

_SUFFIXES = (".traj.json", ".traj", ".json")


# Written into each run a folder import makes: the trajectory's path relative to the folder,
# so that a rerun tells which source a run came from (names that fold alike never swap runs).
SOURCE_FILE = ".source"


@dataclass(frozen=True)
class Source:
    """One trajectory of a folder: its path, the format to read it with, and its run's name.

    `error` is set for an entry that cannot be imported at all (an unreadable directory, a
    symbolic link): it is reported as failed and the rest of the folder is imported.
    """

    path: Path
    format: str
    name: str
    error: WorkingsetError | None = None


@dataclass
class FolderImport:
    """What `import_folder` did with each trajectory (the `--json` summary's three lists)."""

    imported: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"imported": self.imported, "skipped": self.skipped, "failed": self.failed}


def detect(path: Path) -> str:
    """The format to read `path` with: the one its shape shows, else the one its name suggests.

    A source whose shape is no format (unreadable, not JSON, a V0 event list) still gets one,
    so that reading it gives the parser's own error: what is wrong with it, and where.
    """
    found = identify(path)
    if found in FORMATS:
        return found
    if path.is_dir():
        return "openhands"
    if path.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if path.name.endswith(".traj") or found is not None:
        return "swe-agent"  # for a shape that is no format, import_trajectory says what it is
    raise fail(path, "$", f"not a trajectory of a format workingset reads ({', '.join(FORMATS)}): "
                          "name the FORMAT to see what its parser says")  # fmt: skip


def _trajectory_file(path: Path) -> bool:
    """Whether a file in a folder is a trajectory to import (any `.traj`, a `.json` of a known shape)."""
    name = path.name
    if name.endswith((".traj", ".traj.json")):
        return True
    return name.endswith(".json") and identify(path) is not None


def _walk(directory: Path, skip: str | None, bad: dict[Path, WorkingsetError]) -> list[Path]:
    """The trajectories under `directory`; an entry that cannot be read goes into `bad`, and the walk goes on."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        bad[directory] = os_error(exc, directory, "list")
        return [directory]
    found: list[Path] = []
    for entry in entries:
        path = Path(entry.path)
        # realpath, not resolve: a symbolic link loop is a path like any other here, not an error.
        if entry.name.startswith(".") or (skip is not None and os.path.realpath(path) == skip):
            continue
        if entry.is_symlink():
            # Not followed (as in an OpenHands conversation): a link to a directory is passed over,
            # and one named like a trajectory is refused, unread, wherever it points.
            if entry.name.endswith(_SUFFIXES):
                bad[path] = fail(
                    path,
                    "$",
                    "is a symbolic link; a folder's trajectories must be regular files in it",
                )
                found.append(path)
            continue
        if entry.is_dir(follow_symlinks=False):
            found.extend([path] if identify(path) == "openhands" else _walk(path, skip, bad))
        elif _trajectory_file(path):
            found.append(path)
    return found


def run_name(path: Path) -> str:
    """The run name a trajectory's file or directory name gives, before collisions are resolved."""
    stem = path.name
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and stem != suffix:
            stem = stem[: -len(suffix)]
            break
    return analysis_id(stem)


def _unique(name: str, taken: set[str], claimed: Callable[[str], bool]) -> str:
    n = 1
    candidate = name
    while candidate in taken or claimed(candidate):
        n += 1
        tail = f"-{n}"
        candidate = name[: ANALYSIS_ID_MAX_CHARS - len(tail)] + tail
    taken.add(candidate)
    return candidate


def _recorded_source(run: Path) -> str | None:
    """The source a folder import recorded in `run` (None: none recorded, an import before it was)."""
    try:
        return (run / SOURCE_FILE).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _key(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def find_sources(
    folder: str | os.PathLike[str], out: str | os.PathLike[str] | None = None
) -> list[Source]:
    """Every trajectory under `folder`, in sorted path order, each with its format and unique run name."""
    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder of trajectories; import one trajectory with "
                         f"`workingset import FORMAT {root} --out DIR` (FORMAT auto tells it)", details={"path": str(root)})  # fmt: skip
    if identify(root) == "openhands":
        raise UsageError(f"{root} is an OpenHands conversation, not a folder of trajectories: import it with "
                         f"`workingset import openhands {root} --out DIR`", details={"path": str(root)})  # fmt: skip
    bad: dict[Path, WorkingsetError] = {}
    paths = _walk(root, os.path.realpath(out) if out is not None else None, bad)
    taken: set[str] = set()
    sources = []
    for p in paths:
        if p in bad:
            sources.append(Source(path=p, format="", name="", error=bad[p]))
            continue

        def claimed(name: str, key: str = _key(p, root)) -> bool:
            """Whether OUT/name holds the run of another source (as recorded there)."""
            if out is None or not holds_a_run(Path(out) / name):
                return False
            recorded = _recorded_source(Path(out) / name)
            return recorded is not None and recorded != key

        try:
            fmt = detect(p)
        except WorkingsetError as err:
            sources.append(Source(path=p, format="", name="", error=err))
            continue
        sources.append(Source(path=p, format=fmt, name=_unique(run_name(p), taken, claimed)))
    return sources


def import_folder(folder: str | os.PathLike[str], out: str | os.PathLike[str], layout: str = "run",
                  encoder: str = ENCODER, step: Callable[[int], None] | None = None,
                  sources: list[Source] | None = None) -> FolderImport:  # fmt: skip
    """Import every trajectory under `folder` into `out/NAME`; `step(1)` after each one.

    A run already complete in `out/NAME` is skipped unread. A trajectory that cannot be
    imported is recorded with its error code and message, and the next one is imported.
    """
    check_layout(layout)  # not once per trajectory
    if sources is None:
        sources = find_sources(folder, out)
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, root, "write to") from None
    result = FolderImport()
    for src in sources:
        target = root / src.name
        entry = {"source": str(src.path), "name": src.name, "out": str(target)}
        if src.error is not None:
            result.failed.append(
                {"source": str(src.path), "code": src.error.code, "message": src.error.message}
            )
        elif holds_a_run(target):
            result.skipped.append(entry)
        else:
            try:
                steps = _import_one(src, target, layout, encoder, _key(src.path, Path(folder)))
                result.imported.append({**entry, "format": src.format, "steps": steps})
            except WorkingsetError as err:
                result.failed.append(
                    {"source": str(src.path), "code": err.code, "message": err.message}
                )
            except OSError as exc:
                named = os_error(exc)
                result.failed.append(
                    {"source": str(src.path), "code": named.code, "message": named.message}
                )
        if step is not None:
            step(1)
    return result


def _new_partial(target: Path) -> Path:
    """A new, empty `.NAME.<pid>-<n>.partial` directory beside `target` (made with the umask's modes, unlike mkdtemp)."""
    for n in itertools.count():
        partial = target.parent / f".{target.name}.{os.getpid()}-{n}.partial"
        try:
            partial.mkdir()
            return partial
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _import_one(src: Source, target: Path, layout: str, encoder: str, key: str) -> int:
    """Import one trajectory into a new `.partial` directory beside `target`, then rename it to `target`."""
    check_new_run_dir(target)  # a file in the way fails here, before the source is read
    imported = import_trajectory(src.format, src.path, src.name)
    partial = _new_partial(target)
    try:
        write_import(imported, partial, layout, encoder=encoder)
        (partial / SOURCE_FILE).write_text(key, "utf-8")
        os.rename(partial, target)  # atomic; replaces an empty directory, never a full one
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    return len(imported.states)


__all__ = ["FolderImport", "Source", "detect", "find_sources", "import_folder", "run_name"]
