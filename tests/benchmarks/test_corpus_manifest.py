"""benchmarks/corpus.py: a manifest resolved under a corpus root, each run verified by its git id."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import corpus  # noqa: E402 (benchmarks/ is put on the path just above)

EXCERPT = ROOT / "tests" / "data" / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"


def _entry(name: str, fmt: str = "mini-swe-agent", **ids: str | None) -> dict:
    return {
        "name": name, "repository": "example/repo", "commit": "0" * 40, "path": f"runs/{name}",
        "blob": None, "licence": "MIT", "format": fmt, "agent": "mini-swe-agent 2.2.7", "model": "m",
        "steps": 1, "max_output_chars": 2, "usage": False, "bytes": 3, **ids,
    }  # fmt: skip


def _write(tmp_path: Path, entries: list[dict]) -> Path:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"version": 1, "entries": entries}))
    return path


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_blob_id_is_git_hash_object(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_bytes(b'{"a": "\xc3\xa9"}\n')
    assert corpus.blob_id(f.read_bytes()) == _git("hash-object", str(f), cwd=tmp_path)


def test_tree_id_is_what_git_records(tmp_path: Path) -> None:
    # names chosen so that git's "directory sorts as name/" rule matters: "events" vs "events.json"
    run = tmp_path / "repo" / "conv"
    (run / "events").mkdir(parents=True)
    (run / "events" / "event-00000-a.json").write_text('{"kind": "MessageEvent"}')
    (run / "events.json").write_text("[]")
    (run / "base_state.json").write_text("{}")
    repo = tmp_path / "repo"
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    assert corpus.tree_id(run) == _git("write-tree", "--prefix=conv/", cwd=repo)


def test_resolve_present_missing_mismatch(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    (root / "conv").mkdir(parents=True)
    (root / "conv" / "base_state.json").write_text("{}")
    (root / "a.traj.json").write_bytes(b"one")
    (root / "b.traj.json").write_bytes(b"two")
    manifest = _write(tmp_path, [
        _entry("a.traj.json", blob=corpus.blob_id(b"one")),
        _entry("b.traj.json", blob=corpus.blob_id(b"not two")),
        _entry("c.traj.json", blob=corpus.blob_id(b"three")),
        _entry("conv", "openhands", tree=corpus.tree_id(root / "conv")),
    ])  # fmt: skip
    got = {
        r.entry.name: r.status
        for r in (corpus.resolve(e, root) for e in corpus.load_manifest(manifest))
    }
    assert got == {
        "a.traj.json": "present",
        "b.traj.json": "mismatch",
        "c.traj.json": "missing",
        "conv": "present",
    }
    (root / "conv" / "base_state.json").write_text(
        "{ }"
    )  # one byte more in one file of the directory
    conv = next(e for e in corpus.load_manifest(manifest) if e.name == "conv")
    assert corpus.resolve(conv, root).status == "mismatch"


def test_check_prints_table_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    (root / "a.traj.json").write_bytes(b"one")
    ok = _write(
        tmp_path,
        [
            _entry("a.traj.json", blob=corpus.blob_id(b"one")),
            _entry("gone.traj", "swe-agent", blob="1" * 40),
        ],
    )
    assert corpus.main(["--check", "--root", str(root), "--manifest", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "a.traj.json" in out and "gone.traj" in out and "agent" in out.splitlines()[0]
    assert "2 entries under" in out and "1 present, 1 missing, 0 mismatched" in out
    (root / "a.traj.json").write_bytes(b"One")
    assert corpus.main(["--check", "--root", str(root), "--manifest", str(ok)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_env_var_sets_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKINGSET_CORPUS", str(tmp_path))
    assert corpus.corpus_root() == tmp_path.resolve()
    monkeypatch.delenv("WORKINGSET_CORPUS")
    assert corpus.corpus_root() == (ROOT / "../shared/corpus/raw").resolve()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e.pop("licence"), "missing field(s) licence"),
        (
            lambda e: e.update(format="aider"),
            "no format 'aider'; available: swe-agent, mini-swe-agent, openhands",
        ),
        (lambda e: e.update(blob=None), "give either 'blob'"),
        (lambda e: e.update(tree="2" * 40), "give either 'blob'"),
        (lambda e: e.update(blob="ABC"), "40 lowercase hex digits"),
        (lambda e: e.update(steps="12"), "field 'steps' is str, not int"),
        (lambda e: e.update(usage=1), "field 'usage' is int, not bool"),
        (lambda e: e.update(name="../x"), "one path component"),
        (lambda e: e.update(split="test"), "no split 'test'; available: main, holdout"),
    ],
)
def test_bad_entry_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str
) -> None:
    entry = _entry("a.traj.json", blob="1" * 40)
    change(entry)
    manifest = _write(tmp_path, [entry])
    with pytest.raises(corpus.ManifestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        corpus.load_manifest(manifest)
    assert corpus.main(["--check", "--root", str(tmp_path), "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_duplicate_name_and_unreadable_manifest(tmp_path: Path) -> None:
    twice = _write(tmp_path, [_entry("a.traj", blob="1" * 40), _entry("a.traj", blob="2" * 40)])
    with pytest.raises(corpus.ManifestError, match="given twice"):
        corpus.load_manifest(twice)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(corpus.ManifestError, match="cannot read the manifest"):
        corpus.load_manifest(tmp_path / "bad.json")


def test_recount_uses_the_importer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = EXCERPT
    root = tmp_path / "raw"
    root.mkdir()
    shutil.copy(src, root / src.name)
    from workingset.importers import FORMATS
    from workingset.importers._trajectory import Action

    traj = FORMATS["mini-swe-agent"](root / src.name)
    right = _entry(src.name, blob=corpus.blob_id(src.read_bytes()))
    right |= {
        "steps": traj.actions,
        "max_output_chars": max(
            (len(i.output or "") for i in traj.items if isinstance(i, Action)), default=0
        ),
    }
    assert (
        corpus.main(
            [
                "--check",
                "--recount",
                "--root",
                str(root),
                "--manifest",
                str(_write(tmp_path, [right])),
            ]
        )
        == 0
    )
    wrong = right | {"steps": right["steps"] + 1}
    assert (
        corpus.main(
            [
                "--check",
                "--recount",
                "--root",
                str(root),
                "--manifest",
                str(_write(tmp_path, [wrong])),
            ]
        )
        == 1
    )
    assert (
        f"steps {right['steps'] + 1} in the manifest, {right['steps']} by the importer"
        in capsys.readouterr().out
    )


def test_repository_manifest_is_well_formed() -> None:
    entries = corpus.load_manifest()
    assert len(entries) >= 30
    assert {e.split for e in entries} == {"main", "holdout"}


def test_the_unseen_manifest_holds_no_corpus_run() -> None:
    """benchmarks/unseen.json's runs are outside the corpus (by git id, by repository and path, by name)
    and all holdout: the figures measured on them (RESULTS.md, `use_unseen`) rest on that."""
    seen = corpus.load_manifest()
    unseen = corpus.load_manifest(ROOT / "benchmarks" / "unseen.json")
    assert unseen and {e.split for e in unseen} == {"holdout"}

    def ids(entries: list[corpus.Entry]) -> set[str]:
        return {e.blob or e.tree for e in entries if e.blob or e.tree}

    def places(entries: list[corpus.Entry]) -> set[tuple[str, str]]:
        return {(e.raw["repository"], e.raw["path"]) for e in entries}

    assert len(ids(unseen)) == len(unseen)
    assert not ids(unseen) & ids(seen)
    assert not places(unseen) & places(seen)
    assert not {e.name for e in unseen} & {e.name for e in seen}
