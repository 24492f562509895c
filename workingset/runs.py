"""Runs: directories of stored-context files, named so that sorting orders them by turn."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .encoders import ENCODERS, get_encoder
from .errors import InvalidFile, WorkingsetError
from .files import check_new_run_dir, describe, os_code, write_new_files
from .model import STORED_CONTEXT_FORMAT, Rendered, State, StoredContext, dump_json, load_stored_context, read_file


def make_stored_context(request_id: str, encoder: str, hypothesis: str, state: State) -> StoredContext:
    """Render `state` for `hypothesis` and wrap it as a stored context with its size and hash."""
    enc = get_encoder(encoder)
    out = enc.render(state, hypothesis)
    return StoredContext(
        format=STORED_CONTEXT_FORMAT,
        request_id=request_id,
        encoder=enc.name,
        hypothesis=hypothesis,
        rendered=Rendered(chars=out.chars, hash=out.hash),
        state=state,
    )


def load_context_file(path: str | os.PathLike) -> StoredContext:
    """Read and validate one stored-context file."""
    return load_stored_context(read_file(str(path)), str(path))


def read_run(directory: str | os.PathLike) -> list[tuple[Path, StoredContext]]:
    """Every `*.json` stored context in `directory`, sorted by file name (= by turn).

    Directories named `*.json` are skipped; any other entry so named must be a readable
    regular file (a FIFO or a dangling link is `invalid_file`, never skipped in silence).
    """
    root = Path(directory)
    try:
        if not stat.S_ISDIR(os.stat(root).st_mode):
            raise InvalidFile(f"{root}: not a directory", details={"file": str(root), "path": "$", "reason": "not_a_directory"})
        files = sorted(p for p in root.iterdir() if p.suffix == ".json" and not p.is_dir())
    except OSError as exc:
        raise InvalidFile(f"{root}: cannot list ({describe(exc)})",
                          details={"file": str(root), "path": "$", "reason": os_code(exc)}) from None  # fmt: skip
    if not files:
        raise InvalidFile(f"{root}: no stored-context files (*.json)", details={"file": str(root), "path": "$"})
    return [(p, load_context_file(p)) for p in files]


def write_run(directory: str | os.PathLike, contexts: list[StoredContext]) -> list[Path]:
    """Write each context as `<request_id>.json` into a new directory or one holding no `.json` files.

    All files are written or none (see `files.write_new_files`); returns the paths written.
    """
    root = check_new_run_dir(directory)
    return write_new_files(root, [(f"{ctx.request_id}.json", dump_json(ctx)) for ctx in contexts])


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
    base = dict(file=path, request_id=ctx.request_id, encoder=ctx.encoder)
    try:
        out = get_encoder(ctx.encoder).render(ctx.state, ctx.hypothesis)
    except WorkingsetError as err:
        return Verdict(**base, status="error", diff=(f"{err.code}: {err.message}",))
    if ctx.rendered is None:
        return Verdict(**base, status="unrecorded", chars=out.chars, hash=out.hash)
    rec = ctx.rendered
    if rec.hash == out.hash and rec.chars == out.chars:
        return Verdict(**base, status="ok", recorded_chars=rec.chars, recorded_hash=rec.hash, chars=out.chars, hash=out.hash)
    diff = [
        f"chars: recorded {rec.chars}, re-rendered {out.chars} ({out.chars - rec.chars:+d})",
        f"hash: recorded {rec.hash}, re-rendered {out.hash}",
        "re-rendered sections: " + ", ".join(f"{name} {n}" for name, n in out.sections),
    ]
    for enc in ENCODERS.values():
        if enc.name != out.encoder and enc.render(ctx.state, ctx.hypothesis).hash == rec.hash:
            diff.append(f"the recorded hash is what {enc.name} renders: the file's encoder field is wrong")
            break
    else:
        diff.append("no encoder version reproduces the recorded hash: the state or the recorded hash was changed")
    return Verdict(
        **base, status="mismatch", recorded_chars=rec.chars, recorded_hash=rec.hash,
        chars=out.chars, hash=out.hash, diff=tuple(diff),
    )  # fmt: skip
