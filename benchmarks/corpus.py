"""The benchmark corpus: `benchmarks/corpus.json` resolved to local files and verified by git object id.

Run: .venv/bin/python benchmarks/corpus.py --check [--root DIR] [--manifest FILE] [--recount]

Each manifest entry names one public agent run (see `benchmarks/CORPUS.md`): a single file,
verified by its git blob id (`sha1(b"blob <len>\\0" + bytes)`, what `git hash-object` prints),
or an OpenHands V1 conversation directory, verified by its git tree id (every file mode
100644, as in the source trees). The files themselves are not in this repository; they sit
under a corpus root, `$WORKINGSET_CORPUS` or `../shared/corpus/raw` beside the repository,
as `<root>/<name>`. `--check` prints one row per entry (agent, model, steps, present) and
exits 1 when an entry is present but its bytes differ from the manifest's id; a missing
entry is reported, not an error. `--recount` also parses every present entry with the
project's own importer and checks the manifest's `steps` and `max_output_chars` against it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "benchmarks" / "corpus.json"
DEFAULT_ROOT = (
    "../shared/corpus/raw"  # beside the repository, as the other benchmark scripts read it
)
FIELDS = ("name", "repository", "commit", "path", "blob", "licence", "format", "agent", "model", "steps",
          "max_output_chars", "usage", "bytes")  # fmt: skip
FORMATS = ("swe-agent", "mini-swe-agent", "openhands")
SPLITS = ("main", "holdout")


class ManifestError(Exception):
    """The manifest cannot be read or an entry is malformed; the message names the entry and field."""


@dataclass(frozen=True)
class Entry:
    """One corpus run as the manifest records it."""

    name: str
    format: str
    agent: str
    model: str | None
    steps: int
    max_output_chars: int
    usage: bool
    bytes: int
    blob: str | None  # a single file's git blob id
    tree: str | None  # a directory's git tree id
    split: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Resolved:
    """An entry and what the corpus root holds for it: `present`, `missing` or `mismatch`."""

    entry: Entry
    path: Path
    status: str
    found: str | None = None  # the id computed from the local bytes, when there are any


def corpus_root() -> Path:
    """The corpus root: `$WORKINGSET_CORPUS`, else `../shared/corpus/raw` beside the repository."""
    return Path(os.environ.get("WORKINGSET_CORPUS") or ROOT / DEFAULT_ROOT).resolve()


def _git_id(kind: bytes, body: bytes) -> str:
    return hashlib.sha1(kind + b" %d\0" % len(body) + body).hexdigest()


def blob_id(data: bytes) -> str:
    """The git blob id of `data`, as `git hash-object` prints it."""
    return _git_id(b"blob", data)


def tree_id(directory: Path) -> str:
    """The git tree id of `directory`, every file taken as a plain (100644) blob."""
    entries = []
    for child in directory.iterdir():
        if child.is_symlink() or not (child.is_file() or child.is_dir()):
            raise ManifestError(
                f"{child}: neither a regular file nor a directory; a corpus tree holds only those"
            )
        if child.is_dir():
            entries.append(
                (
                    child.name + "/",
                    b"40000 %s\0" % child.name.encode() + bytes.fromhex(tree_id(child)),
                )
            )
        else:
            entries.append(
                (
                    child.name,
                    b"100644 %s\0" % child.name.encode()
                    + bytes.fromhex(blob_id(child.read_bytes())),
                )
            )
    # git orders tree entries by name, a directory's name compared as if it ended in "/"
    return _git_id(
        b"tree", b"".join(body for _, body in sorted(entries, key=lambda e: e[0].encode()))
    )


def _field(raw: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in raw:
        raise ManifestError(f"{where}: no field {key!r}")
    value = raw[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ManifestError(
            f"{where}: field {key!r} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}"
        )
    return value


def _hex40(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 40 and all(c in "0123456789abcdef" for c in value)
    )


def _entry(raw: Any, i: int) -> Entry:
    where = f"entries[{i}]"
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: not an object")
    missing = [k for k in FIELDS if k not in raw]
    if missing:
        raise ManifestError(f"{where}: missing field(s) {', '.join(missing)}")
    name = _field(raw, "name", str, where)
    where = f"{where} ({name!r})"
    if not name or "/" in name or name in (".", ".."):
        raise ManifestError(f"{where}: a name is one path component under the corpus root")
    fmt = _field(raw, "format", str, where)
    if fmt not in FORMATS:
        raise ManifestError(f"{where}: no format {fmt!r}; available: {', '.join(FORMATS)}")
    blob, tree = raw.get("blob"), raw.get("tree")
    if (blob is None) == (tree is None) or not _hex40(blob if tree is None else tree):
        raise ManifestError(
            f"{where}: give either 'blob' (a file) or 'tree' (a directory), 40 lowercase hex digits"
        )
    split = raw.get("split", "main")
    if split not in SPLITS:
        raise ManifestError(f"{where}: no split {split!r}; available: {', '.join(SPLITS)}")
    model = raw["model"]
    if model is not None and not isinstance(model, str):
        raise ManifestError(f"{where}: field 'model' is {type(model).__name__}, not str or null")
    return Entry(
        name=name, format=fmt, agent=_field(raw, "agent", str, where), model=model,
        steps=_field(raw, "steps", int, where), max_output_chars=_field(raw, "max_output_chars", int, where),
        usage=_field(raw, "usage", bool, where), bytes=_field(raw, "bytes", int, where),
        blob=blob, tree=tree, split=split, raw=raw,
    )  # fmt: skip


def load_manifest(path: Path = MANIFEST) -> list[Entry]:
    """The manifest's entries, each checked for its fields; names are unique."""
    try:
        data = json.loads(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: cannot read the manifest: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ManifestError(f"{path}: a manifest is an object with an 'entries' list")
    entries = [_entry(raw, i) for i, raw in enumerate(data["entries"])]
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise ManifestError(f"{path}: the name {e.name!r} is given twice")
        seen.add(e.name)
    return entries


def resolve(entry: Entry, root: Path) -> Resolved:
    """Where `entry` sits under `root` and whether its bytes match the manifest's git id."""
    path = root / entry.name
    if entry.tree is not None:
        if not path.is_dir():
            return Resolved(entry, path, "missing")
        found = tree_id(path)
        return Resolved(entry, path, "present" if found == entry.tree else "mismatch", found)
    if not path.is_file():
        return Resolved(entry, path, "missing")
    found = blob_id(path.read_bytes())
    return Resolved(entry, path, "present" if found == entry.blob else "mismatch", found)


def recount(resolved: Resolved) -> list[str]:
    """How the manifest's `steps` and `max_output_chars` differ from the project's importer on the local copy."""
    from workingset.errors import WorkingsetError
    from workingset.importers import FORMATS as PARSERS
    from workingset.importers._trajectory import Action

    e = resolved.entry
    try:
        traj = PARSERS[e.format](resolved.path)
    except WorkingsetError as exc:
        return [f"does not parse: {exc.code}: {exc.message}"]
    outputs = [len(i.output or "") for i in traj.items if isinstance(i, Action)]
    counted = {"steps": traj.actions, "max_output_chars": max(outputs, default=0)}
    return [
        f"{k} {getattr(e, k)} in the manifest, {v} by the importer"
        for k, v in counted.items()
        if getattr(e, k) != v
    ]


def _table(rows: list[Resolved]) -> str:
    head = ("name", "agent", "model", "steps", "split", "present")
    body = [(r.entry.name, r.entry.agent, r.entry.model or "(not recorded)", str(r.entry.steps), r.entry.split,
             {"present": "yes", "missing": "no", "mismatch": "MISMATCH"}[r.status]) for r in rows]  # fmt: skip
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [head, *body]
    ]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def main(argv: list[str] | None = None) -> int:
    """The `--check` command: print the table and a summary; 1 on a mismatch or a failed recount, 2 on a bad manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="verify every entry under the corpus root"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help=f"corpus root (default: $WORKINGSET_CORPUS or {DEFAULT_ROOT})",
    )
    parser.add_argument(
        "--manifest", type=Path, default=MANIFEST, help="manifest (default: benchmarks/corpus.json)"
    )
    parser.add_argument(
        "--recount",
        action="store_true",
        help="also count steps and the largest output with the importer",
    )
    args = parser.parse_args(argv)
    if not args.check:
        parser.error("nothing to do: give --check")
    root = (args.root or corpus_root()).resolve()
    try:
        rows = [resolve(e, root) for e in load_manifest(args.manifest)]
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(_table(rows))
    status = {s: [r for r in rows if r.status == s] for s in ("present", "missing", "mismatch")}
    print(f"\n{len(rows)} entries under {root}: {len(status['present'])} present, {len(status['missing'])} missing, "
          f"{len(status['mismatch'])} mismatched")  # fmt: skip
    for r in status["mismatch"]:
        print(
            f"mismatch: {r.entry.name}: {r.found} here, {r.entry.blob or r.entry.tree} in the manifest"
        )
    failed = bool(status["mismatch"])
    if args.recount:
        for r in status["present"]:
            for problem in recount(r):
                print(f"recount: {r.entry.name}: {problem}")
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
