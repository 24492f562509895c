"""`workingset import DIR --out OUT`: a folder of trajectories of every format, bad ones, re-runs, interruptions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.common import invoke
from workingset.importers import folder as folder_module
from workingset.importers.folder import find_sources, import_folder, run_name

DATA = Path(__file__).resolve().parents[1] / "data"
SWE = DATA / "swe-agent-0.x-pydicom-1458.excerpt.traj"
MINI = DATA / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"
OPENHANDS = DATA / "openhands-v1-astropy-14309.excerpt"
GOOD = ["mini", "pydicom", "astropy"]  # the run names, in the folder's sorted path order


def _folder(root: Path, bad: bool = True) -> Path:
    """A folder as benchmark runs leave them: files of two formats, a nested OpenHands conversation, other files."""
    src = root / "trajs"
    (src / "instances" / "mini").mkdir(parents=True)
    shutil.copy(MINI, src / "instances" / "mini" / "mini.traj.json")
    (src / "instances" / "mini" / "mini.patch").write_text("diff\n", encoding="utf-8")
    shutil.copy(SWE, src / "pydicom.traj")
    shutil.copytree(OPENHANDS, src / "zz-conversations" / "astropy")
    (src / "preds.json").write_text(
        '{"x": {"model_patch": ""}}', encoding="utf-8"
    )  # no trajectory: passed over
    (src / "run.log").write_text("log\n", encoding="utf-8")
    if bad:
        (src / "broken.traj").write_text('{"trajectory": [', encoding="utf-8")
    return src


def _json(result) -> dict:
    return json.loads(result.stdout)


def test_a_folder_of_every_format_imports_each_run_and_reports_the_bad_file(tmp_path: Path):
    src, out = _folder(tmp_path), tmp_path / "runs"
    result = invoke("import", str(src), "--out", str(out), "--json")
    assert result.exit_code == 2, result.output
    summary = _json(result)
    assert set(summary) == {"imported", "skipped", "failed"}
    assert [(r["name"], r["format"]) for r in summary["imported"]] == [
        ("mini", "mini-swe-agent"), ("pydicom", "swe-agent"), ("astropy", "openhands")]  # fmt: skip
    assert summary["skipped"] == []
    assert summary["failed"] == [{
        "source": str(src / "broken.traj"), "code": "invalid_file",
        "message": f"{src / 'broken.traj'}: not valid JSON (Input data was truncated) (at $)",
    }]  # fmt: skip
    assert result.stderr.startswith("error: invalid_file: ")
    assert sorted(p.name for p in out.iterdir()) == sorted(GOOD)  # no .partial left behind
    for name in GOOD:
        check = invoke("verify", str(out / name), "--json")
        assert check.exit_code == 0, check.output
        assert {c["request_id"].rsplit("-r", 1)[0] for c in _json(check)["contexts"]} == {
            name
        }  # the name is the analysis ID


def test_the_runs_are_those_a_single_import_writes(tmp_path: Path):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    assert invoke("import", str(src), "--out", str(out)).exit_code == 0
    one = invoke(
        "import", "swe-agent", str(SWE), "--out", str(tmp_path / "one"), "--analysis", "pydicom"
    )
    assert one.exit_code == 0, one.output
    assert (out / "pydicom" / "run.json").read_bytes() == (
        tmp_path / "one" / "run.json"
    ).read_bytes()


def test_a_rerun_skips_what_is_imported_and_exits_0_when_nothing_failed(tmp_path: Path):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    first = invoke("import", str(src), "--out", str(out))
    assert first.exit_code == 0, first.output
    assert (
        first.stdout.splitlines()[-1]
        == f"3 imported, 0 skipped, 0 failed of 3 trajectories in {src}"
    )
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    again = invoke("import", str(src), "--out", str(out), "--json")
    assert again.exit_code == 0, again.output
    summary = _json(again)
    assert summary["imported"] == [] and summary["failed"] == []
    assert [r["name"] for r in summary["skipped"]] == GOOD
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # nothing rewritten


def test_an_interrupted_import_leaves_no_run_and_is_redone(tmp_path: Path, monkeypatch):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    real = folder_module.write_import
    calls = []

    def interrupted(imported, where, *args, **kwargs):
        calls.append(where)
        if len(calls) == 2:  # the second run: its files are half written when the user presses ^C
            real(imported, where, *args, **kwargs)
            raise KeyboardInterrupt
        return real(imported, where, *args, **kwargs)

    monkeypatch.setattr(folder_module, "write_import", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_folder(src, out)
    assert calls[1].name.startswith(".pydicom.") and calls[1].name.endswith(".partial")
    assert sorted(p.name for p in out.iterdir()) == [
        "mini"
    ]  # the partial directory went with the interruption
    # A killed process leaves its partial directory; it is not a run, so the next import redoes the run.
    stale = out / ".pydicom.1-0.partial"
    stale.mkdir()
    (stale / "run.json").write_text("{", encoding="utf-8")
    monkeypatch.setattr(folder_module, "write_import", real)
    result = import_folder(src, out)
    assert [r["name"] for r in result.skipped] == ["mini"]
    assert [r["name"] for r in result.imported] == ["pydicom", "astropy"] and result.failed == []
    assert invoke("verify", str(out / "pydicom")).exit_code == 0


def test_an_empty_run_directory_is_filled_and_a_file_in_the_way_fails(tmp_path: Path):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    (out / "mini").mkdir(parents=True)  # empty: not a complete run
    (out / "pydicom").write_text("not a directory", encoding="utf-8")
    result = invoke("import", str(src), "--out", str(out), "--json")
    assert result.exit_code == 2
    summary = _json(result)
    assert [r["name"] for r in summary["imported"]] == ["mini", "astropy"]
    assert [(f["source"], f["code"]) for f in summary["failed"]] == [
        (str(src / "pydicom.traj"), "not_a_directory")
    ]
    assert (out / "pydicom").read_text(encoding="utf-8") == "not a directory"


def test_names_are_folded_and_collisions_numbered_in_path_order(tmp_path: Path):
    src = tmp_path / "src"
    for rel in ("a/My Run.traj", "b/my-run.traj", "my_run.traj.json", "c/My Run.traj"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SWE if rel.endswith(".traj") else MINI, src / rel)
    found = find_sources(src)
    assert [(s.path.relative_to(src).as_posix(), s.name) for s in found] == [
        ("a/My Run.traj", "my-run"), ("b/my-run.traj", "my-run-2"), ("c/My Run.traj", "my-run-3"), ("my_run.traj.json", "my_run")]  # fmt: skip
    assert [s.format for s in found] == ["swe-agent", "swe-agent", "swe-agent", "mini-swe-agent"]
    assert run_name(Path("x" * 80 + ".traj")) == "x" * 64
    taken = find_sources(src)  # the same folder, the same names
    assert [s.name for s in taken] == [s.name for s in found]


def test_an_out_folder_inside_the_folder_is_not_imported_again(tmp_path: Path):
    src = _folder(tmp_path, bad=False)
    first = invoke("import", str(src), "--out", str(src / "runs"), "--json")
    assert first.exit_code == 0, first.output
    again = invoke("import", str(src), "--out", str(src / "runs"), "--json")
    assert [r["name"] for r in _json(again)["skipped"]] == GOOD and _json(again)["imported"] == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["swe-agent"], "import swe-agent needs a SOURCE"),
        (["auto"], "import auto needs a SOURCE"),
        ([str(SWE)], "not a folder of trajectories"),
        ([str(OPENHANDS)], "is an OpenHands conversation, not a folder"),
        ([str(DATA), "--analysis", "x"], "--analysis names one run"),
        ([str(DATA / "nope")], "not a folder of trajectories"),
        ([str(DATA), "--layout", "rows"], "no run layout 'rows'"),
    ],
)  # fmt: skip
def test_usage_errors_change_nothing(tmp_path: Path, args, needle):
    out = tmp_path / "out"
    result = invoke("import", *args, "--out", str(out), "--json")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: usage_error: ") and needle in result.stderr
    assert _json(result)["error"]["code"] == "usage_error"
    assert not out.exists()


@pytest.mark.parametrize(
    ("source", "fmt"), [(SWE, "swe-agent"), (MINI, "mini-swe-agent"), (OPENHANDS, "openhands")]
)
def test_format_auto_tells_one_trajectory_by_its_shape(tmp_path: Path, source: Path, fmt: str):
    result = invoke("import", "auto", str(source), "--out", str(tmp_path / "r"), "--json")
    assert result.exit_code == 0, result.output
    assert _json(result)["format"] == fmt


def test_format_auto_on_a_folder_or_a_file_of_no_shape(tmp_path: Path):
    result = invoke("import", "auto", str(DATA), "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "give it alone: workingset import" in result.stderr
    plain = tmp_path / "notes.json"
    plain.write_text('{"x": 1}', encoding="utf-8")
    result = invoke("import", "auto", str(plain), "--out", str(tmp_path / "r"))
    assert (
        result.exit_code == 2
        and result.stderr.startswith("error: invalid_file: ")
        and "not a trajectory" in result.stderr
    )
    v0 = tmp_path / "traj_v0.json"
    v0.write_text('[{"action": "run", "args": {}}]', encoding="utf-8")
    result = invoke("import", "auto", str(v0), "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "OpenHands V0 event list" in result.stderr
    assert not (tmp_path / "r").exists()


# -- hostile folders: links, loops, unreadable parts, names that fold alike, a killed import's leftovers --


def test_a_rerun_with_a_name_that_folds_to_a_run_imports_it_under_its_own_name(tmp_path: Path):
    src, out = tmp_path / "src", tmp_path / "runs"
    src.mkdir()
    shutil.copy(SWE, src / "b.traj")
    assert invoke("import", str(src), "--out", str(out)).exit_code == 0
    shutil.copy(SWE, src / "B.traj")  # sorts first and folds to `b`, which b.traj's run holds
    again = _json(invoke("import", str(src), "--out", str(out), "--json"))
    assert [(r["source"], r["name"]) for r in again["imported"]] == [(str(src / "B.traj"), "b-2")]
    assert [(r["source"], r["name"]) for r in again["skipped"]] == [(str(src / "b.traj"), "b")]
    third = _json(invoke("import", str(src), "--out", str(out), "--json"))
    assert third["imported"] == [] and len(third["skipped"]) == 2


def test_symbolic_links_are_not_followed_and_loops_are_no_traceback(tmp_path: Path):
    src, out = tmp_path / "src", tmp_path / "runs"
    src.mkdir()
    shutil.copy(SWE, src / "real.traj")
    outside = tmp_path / "outside.traj"
    shutil.copy(SWE, outside)
    (src / "out.traj").symlink_to(outside)  # a file link out of the folder: refused unread
    (src / "loop.traj").symlink_to(src / "loop.traj")  # a link to itself
    (src / "a.json").symlink_to(src / "b.json")
    (src / "b.json").symlink_to(src / "a.json")  # a loop of two
    (src / "sub").symlink_to(src)  # a directory link (a loop back to the folder): passed over
    result = invoke("import", str(src), "--out", str(out), "--json")
    assert result.exit_code == 2 and "Traceback" not in result.output
    summary = _json(result)
    assert [r["name"] for r in summary["imported"]] == ["real"]
    failed = {Path(f["source"]).name: f for f in summary["failed"]}
    assert sorted(failed) == ["a.json", "b.json", "loop.traj", "out.traj"]
    assert all(
        f["code"] == "invalid_file" and "symbolic link" in f["message"] for f in failed.values()
    )
    assert result.stderr.count("\n") == 4 and result.stderr.startswith("error: invalid_file: ")


def test_an_out_that_is_a_symbolic_link_loop_is_one_error_line(tmp_path: Path):
    src = _folder(tmp_path, bad=False)
    (tmp_path / "o1").symlink_to(tmp_path / "o2")
    (tmp_path / "o2").symlink_to(tmp_path / "o1")
    result = invoke("import", str(src), "--out", str(tmp_path / "o1"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    loop = invoke("import", str(tmp_path / "o1"), "--out", str(tmp_path / "runs"))  # DIR a loop
    assert (
        loop.exit_code == 2
        and loop.stderr.startswith("error: usage_error: ")
        and loop.stderr.count("\n") == 1
    )


def test_an_unreadable_subdirectory_is_reported_and_the_rest_imported(tmp_path: Path, monkeypatch):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    locked = src / "instances" / "locked"
    locked.mkdir()
    real = folder_module.os.scandir

    def scandir(path):  # the test runs as root, for whom permissions do not apply
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(folder_module.os, "scandir", scandir)
    result = invoke("import", str(src), "--out", str(out), "--json")
    assert result.exit_code == 2
    summary = _json(result)
    assert [r["name"] for r in summary["imported"]] == GOOD
    assert [(f["source"], f["code"]) for f in summary["failed"]] == [
        (str(locked), "permission_denied")
    ]


def test_a_killed_imports_partial_directory_is_not_a_run_to_compare(tmp_path: Path):
    src, out = _folder(tmp_path, bad=False), tmp_path / "runs"
    assert invoke("import", str(src), "--out", str(out)).exit_code == 0
    shutil.copytree(out / "mini", out / ".mini.123-0.partial")  # what a killed import leaves
    result = invoke("compare", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert ".partial" not in result.stdout
    assert sorted(Path(r["run"]).name for r in json.loads(result.stdout)["runs"]) == sorted(GOOD)
