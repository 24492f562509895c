"""Runs: a directory of stored-context files (sorted by name = by turn), or one run file.

A run is kept in one of two layouts, and every reader takes both: `contexts`, one
`stored-context@1` file per turn named `<request_id>.json`; or `run`, one run file
(`workingset/run@1`, `run.json` in the directory, see `runfile.py`) in which every payload
and repeated record is stored once. `convert_run` turns either into the other.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..encoders import ENCODERS, get_encoder
from ..errors import InvalidFile, UsageError, WorkingsetError
from ..io.files import check_new_run_dir, describe, os_code, write_new_files
from ..model.state import (
    STORED_CONTEXT_FORMAT,
    Rendered,
    State,
    StoredContext,
    dump_json,
    load_stored_context,
    read_file,
)
from .fixed_prompt import FIXED_PROMPT_FILE, FixedPrompt
from .fixed_prompt import dump as dump_fixed_prompt
from .fixed_prompt import load as load_fixed_prompt
from .runfile import RUN_FILE, RUN_FORMAT, is_run_file, pack, unpack, unpack_fixed_prompt


def make_stored_context(request_id: str, encoder: str, hypothesis: str, state: State,
                        rendered: Rendered | None = None) -> StoredContext:  # fmt: skip
    """Render `state` for `hypothesis` and wrap it as a stored context with its size and hash.

    `rendered`, when given, is that size and hash computed by the caller without the text
    (`importers._stream`); it must be what `render` would record.
    """
    enc = get_encoder(encoder)
    if rendered is None:
        out = enc.render(state, hypothesis)
        rendered = Rendered(chars=out.chars, hash=out.hash)
    return StoredContext(
        format=STORED_CONTEXT_FORMAT,
        request_id=request_id,
        encoder=enc.name,
        hypothesis=hypothesis,
        rendered=rendered,
        state=state,
    )


def load_context_file(path: str | os.PathLike) -> StoredContext:
    """Read and validate one stored-context file."""
    return load_stored_context(read_file(str(path)), str(path))


LAYOUTS = ("run", "contexts")


def pick_context(path: str | os.PathLike, request: str | None = None) -> StoredContext:
    """One stored context: a stored-context file, or the context `request` of a run."""
    root = Path(path)
    if request is None:
        if holds_a_run(root) or is_run_file(
            data := read_file(str(root))
        ):  # unreadable: `invalid_file`
            raise UsageError(
                f"{root} is a run: name the context to render with --request <request ID>"
            )
        return load_stored_context(data, str(root))
    run = read_run(root)
    for _, ctx in run:
        if ctx.request_id == request:
            return ctx
    ids = [ctx.request_id for _, ctx in run]
    raise UsageError(
        f"no request {request!r} in {root}; it holds {ids[0]} … {ids[-1]} ({len(ids)} contexts)",
        details={"valid": ids},
    )


def read_run(directory: str | os.PathLike) -> list[tuple[Path, StoredContext]]:
    """Every stored context of a run, in turn order, each with the path it is known by.

    `directory` is a run directory (stored-context files, or a `run.json` run file) or a run
    file itself; a context of a run file is known as `<run file>#<request_id>`. In a directory,
    entries named `*.json` that are directories are skipped; any other must be a readable
    regular file (a FIFO or a dangling link is `invalid_file`, never skipped in silence).
    """
    root = Path(directory)
    try:
        if _packed(root):
            path = root if root.is_file() else root / RUN_FILE
            if root.is_dir() and any(
                p.suffix == ".json" and p.name not in (RUN_FILE, FIXED_PROMPT_FILE)
                for p in root.iterdir()
            ):
                raise InvalidFile(f"{root}: holds both a run file ({RUN_FILE}) and stored-context files; keep one layout",
                                  details={"file": str(root), "path": "$"})  # fmt: skip
            data = read_file(str(path))
            if not is_run_file(data):
                raise InvalidFile(f"{path}: not a run file (format {RUN_FORMAT}); a run is a directory or a run file",
                                  details={"file": str(path), "path": "$.format"})  # fmt: skip
            return [
                (path.with_name(f"{path.name}#{ctx.request_id}"), ctx)
                for ctx in unpack(data, str(path))
            ]
        if not stat.S_ISDIR(os.stat(root).st_mode):
            raise InvalidFile(
                f"{root}: not a directory",
                details={"file": str(root), "path": "$", "reason": "not_a_directory"},
            )
        files = sorted(
            p
            for p in root.iterdir()
            if p.suffix == ".json" and p.name != FIXED_PROMPT_FILE and not p.is_dir()
        )
    except OSError as exc:
        raise InvalidFile(f"{root}: cannot list ({describe(exc)})",
                          details={"file": str(root), "path": "$", "reason": os_code(exc)}) from None  # fmt: skip
    if not files:
        raise InvalidFile(
            f"{root}: no stored-context files (*.json)", details={"file": str(root), "path": "$"}
        )
    return [(p, load_context_file(p)) for p in files]


def read_fixed_prompt(directory: str | os.PathLike) -> FixedPrompt | None:
    """The source agent's fixed prompt kept with a run (`fixed_prompt.py`), or None when it keeps none.

    A run file keeps it under `fixed_prompt`; a directory of stored-context files as
    `fixed-prompt.json` beside them. Runs written before it existed have none.
    """
    root = Path(directory)
    if _packed(root):
        path = root if root.is_file() else root / RUN_FILE
        return unpack_fixed_prompt(read_file(str(path)), str(path))
    path = root / FIXED_PROMPT_FILE
    return load_fixed_prompt(read_file(str(path)), str(path)) if path.is_file() else None


def read_retries(
    directory: str | os.PathLike, contexts: Iterable[StoredContext]
) -> dict[str, list]:
    """The retry turns an exported analysis records, by request ID (`eventlog.exports.retry_turns`); {} for any other run.

    An export keeps `answers.jsonl` beside its stored-context files; a run imported from a
    trajectory, a run file or a converted run keeps none, so it has no retry turns. A retry
    turn of a request the run holds no stored context for is `invalid_file`.
    """
    from ..eventlog.exports import ANSWERS, retry_turns

    root = Path(directory)
    path = root / ANSWERS
    if _packed(root) or not path.is_file():
        return {}
    try:
        turns = retry_turns(path)
    except OSError as exc:
        raise InvalidFile(f"{path}: cannot read ({describe(exc)})",
                          details={"file": str(path), "path": "$", "reason": os_code(exc)}) from None  # fmt: skip
    known = {ctx.request_id for ctx in contexts}
    for request_id in turns:
        if request_id not in known:
            raise InvalidFile(f"{path}: rejected answers to {request_id}, which {root} holds no stored context of",
                              details={"file": str(path), "request_id": request_id})  # fmt: skip
    return turns


def write_run(
    directory: str | os.PathLike,
    contexts: Iterable[StoredContext],
    fixed_prompt: FixedPrompt | None = None,
) -> list[Path]:
    """Write each context as `<request_id>.json` into a new directory or one holding no `.json` files.

    Each context is encoded and written as it comes (an iterator is never held whole); all
    files are written or none (see `files.write_new_files`); returns the paths written. A
    fixed prompt goes first, as `fixed-prompt.json`.
    """
    root = check_new_run_dir(directory)
    head = [] if fixed_prompt is None else [(FIXED_PROMPT_FILE, dump_fixed_prompt(fixed_prompt))]
    files = ((f"{ctx.request_id}.json", dump_json(ctx)) for ctx in contexts)
    return write_new_files(root, (item for group in (head, files) for item in group))


def holds_a_run(path: Path) -> bool:
    """Whether `path` is a directory holding a run (any other directory is no stored context either)."""
    try:
        return path.is_dir() and any(p.suffix == ".json" for p in path.iterdir())
    except OSError:
        return False


def _packed(path: Path) -> bool:
    """Whether `path` is kept in the `run` layout: a file, or a directory holding `run.json`."""
    return path.is_file() or (path / RUN_FILE).is_file()


def write_run_file(
    directory: str | os.PathLike,
    contexts: list[StoredContext],
    fixed_prompt: FixedPrompt | None = None,
) -> list[Path]:
    """Write the contexts as one run file, `<directory>/run.json` (created, never overwritten); returns its path."""
    root = check_new_run_dir(directory)
    return write_new_files(root, [(RUN_FILE, pack(contexts, fixed_prompt))])


def check_layout(layout: str) -> None:
    """Refuse a layout that is not one of `LAYOUTS` (`usage_error`, listing them)."""
    if layout not in LAYOUTS:
        raise UsageError(
            f"no run layout {layout!r}; available: {', '.join(LAYOUTS)}",
            details={"valid": list(LAYOUTS)},
        )


def write_layout(directory: str | os.PathLike, contexts: list[StoredContext], layout: str,
                 fixed_prompt: FixedPrompt | None = None) -> list[Path]:  # fmt: skip
    """Write a run in `layout` (`run` or `contexts`) into a new directory or one holding no `.json` files."""
    check_layout(layout)
    return (write_run_file if layout == "run" else write_run)(directory, contexts, fixed_prompt)


def convert_run(
    source: str | os.PathLike, out: str | os.PathLike, layout: str | None = None
) -> tuple[str, list[Path]]:
    """Rewrite a run in the other layout (or `layout`), its fixed prompt included; returns (the layout written, its paths)."""
    src = Path(source)
    if layout is None:
        layout = "contexts" if _packed(src) else "run"
    contexts = [ctx for _, ctx in read_run(src)]
    return layout, write_layout(out, contexts, layout, read_fixed_prompt(src))


@dataclass(frozen=True)
class Verdict:
    """The outcome of re-rendering one stored context with its own encoder."""

    file: str
    request_id: str
    encoder: str
    status: str  # "ok", "mismatch", "unrecorded" (rendered is null), "error"
    recorded_chars: int | None = None
    recorded_hash: str | None = None
    chars: int | None = None
    hash: str | None = None
    diff: tuple[str, ...] = ()


def verify_context(path: str, ctx: StoredContext) -> Verdict:
    """Re-render `ctx` with its frozen encoder and compare with the recorded size and hash.

    Only the size and hash of the original text are stored, so the structural diff says
    what can be known: the size change, the re-rendered section sizes, and which other
    version (if any) would reproduce the recorded hash.
    """
    base: dict[str, Any] = dict(file=path, request_id=ctx.request_id, encoder=ctx.encoder)
    try:
        out = get_encoder(ctx.encoder).render(ctx.state, ctx.hypothesis)
    except WorkingsetError as err:
        return Verdict(**base, status="error", diff=(f"{err.code}: {err.message}",))
    if ctx.rendered is None:
        return Verdict(**base, status="unrecorded", chars=out.chars, hash=out.hash)
    rec = ctx.rendered
    if rec.hash == out.hash and rec.chars == out.chars:
        return Verdict(
            **base,
            status="ok",
            recorded_chars=rec.chars,
            recorded_hash=rec.hash,
            chars=out.chars,
            hash=out.hash,
        )
    diff = [
        f"chars: recorded {rec.chars}, re-rendered {out.chars} ({out.chars - rec.chars:+d})",
        f"hash: recorded {rec.hash}, re-rendered {out.hash}",
        "re-rendered sections: " + ", ".join(f"{name} {n}" for name, n in out.sections),
    ]
    for enc in ENCODERS.values():
        if enc.name != out.encoder and enc.render(ctx.state, ctx.hypothesis).hash == rec.hash:
            diff.append(
                f"the recorded hash is what {enc.name} renders: the file's encoder field is wrong"
            )
            break
    else:
        diff.append(
            "no encoder version reproduces the recorded hash: the state or the recorded hash was changed"
        )
    return Verdict(
        **base, status="mismatch", recorded_chars=rec.chars, recorded_hash=rec.hash,
        chars=out.chars, hash=out.hash, diff=tuple(diff),
    )  # fmt: skip
