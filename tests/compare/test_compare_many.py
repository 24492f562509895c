"""`compare RUN…`: many runs, their aggregate, `--shard I/N` and `--merge`, through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.common import BUG17, ROOT, invoke
from tests.helpers.real_corpus import CORPUS
from workingset.compare import many as compare_many
from workingset.compare.engine import DEFAULT_LABEL
from workingset.errors import UsageError
from workingset.importers import import_trajectory, write_import

DATA = ROOT / "tests" / "data"
EXCERPTS = {  # a run name -> (format, source in tests/data)
    "mini-1x": ("mini-swe-agent", "mini-swe-agent-1.15-pylint-6386.excerpt.traj.json"),
    "mini-2x": ("mini-swe-agent", "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"),
    "openhands": ("openhands", "openhands-v1-astropy-14309.excerpt"),
    "swe-0x": ("swe-agent", "swe-agent-0.x-pydicom-1458.excerpt.traj"),
}
OPTIONS = ("--all", "--baselines", "--cache", "ideal,anthropic")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A folder of runs: bug17 and each excerpt of tests/data imported (run file layout)."""
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(BUG17, root / "bug17", ignore=shutil.ignore_patterns("*.py", "*.md"))
    for name, (fmt, source) in EXCERPTS.items():
        write_import(import_trajectory(fmt, str(DATA / source)), root / name)
    return root


def _json(*args: str) -> dict:
    result = invoke("compare", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_run_object_is_the_single_run_json(runs: Path):
    many = _json(str(runs), "--cache", "ideal")
    assert [r["run"] for r in many["runs"]] == sorted(str(p) for p in runs.iterdir())
    for data in many["runs"]:
        assert data == _json(data["run"], "--cache", "ideal")


@pytest.mark.slow  # corpus
def test_each_run_bills_its_baselines_with_its_own_fixed_prompt(runs: Path, tmp_path: Path):
    """An imported run keeps its agent's fixed prompt; compare of many runs sends each run's own, as one run's compare does."""
    source = CORPUS / "openhands-v1-sonnet4-matplotlib-24570"
    if not source.is_dir():
        pytest.skip(f"{source} is not here")
    own = tmp_path / "openhands-full"
    write_import(import_trajectory("openhands", str(source)), own)
    first = json.loads(
        invoke("requests", str(own), "--strategy", "full-transcript").stdout.splitlines()[0]
    )
    assert (
        first["body"]["system"] and first["body"]["tools"]
    )  # the agent's own system prompt and tools are sent
    args = ("--baselines", "--cache", "anthropic", "--summary")
    many = _json(str(own), str(runs / "bug17"), *args)
    for data in many["runs"]:
        assert data == _json(data["run"], *args)


def test_aggregate_sums_the_runs(runs: Path):
    many = _json(str(runs), *OPTIONS, "--summary")
    agg, names = many["aggregate"], many["aggregate"]["options"]["strategies"]
    assert agg["runs"] == 5 and [r["contexts"] for r in agg["rows"]][0] == 18
    assert agg["contexts"] == sum(len(_json(r["run"])["contexts"]) for r in many["runs"])
    for model, key in (("prefix", None), ("ideal", "ideal"), ("anthropic", "anthropic")):
        for s in names:
            costs = [r["cache"][key]["total"][s]["effective_cost"] if key else r["total"][s]["effective_cost"]
                     for r in many["runs"]]  # fmt: skip
            assert agg["models"][model][s]["total"] == pytest.approx(
                sum(costs), abs=0.05 * len(costs)
            )  # each rounded
        wins = sum(agg["models"][model][s]["wins"] for s in names)
        assert wins >= agg["runs"]  # every run has at least one cheapest strategy
        assert agg["models"][model][names[0]]["ratio"] == 1.0
    largest = agg["largest"]["v7"]
    assert (
        largest["run"].endswith("bug17") and largest["tokens"] == 46_946
    )  # the README's bug17 last v7 context


def test_shards_merged_give_the_unsharded_output(runs: Path, tmp_path: Path):
    whole = _json(str(runs), *OPTIONS, "--summary")
    files = []
    for i in range(1, 5):
        part = _json(str(runs), *OPTIONS, "--summary", "--shard", f"{i}/4")
        assert part["aggregate"]["shard"] == f"{i}/4"
        files.append(tmp_path / f"shard{i}.json")
        files[-1].write_text(json.dumps(part))
    sizes = [len(json.loads(f.read_text())["runs"]) for f in files]
    assert sorted(sizes) == [1, 1, 1, 2] and sum(sizes) == 5
    merged = _json("--merge", *map(str, reversed(files)))
    assert merged == whole  # the aggregate to the last bit, and the runs in the same order
    assert merged["aggregate"] == whole["aggregate"]


@pytest.mark.slow  # cross-process: --jobs workers
def test_jobs_give_the_numbers_of_one_process(runs: Path):
    assert _json(str(runs), "--summary", "--jobs", "2") == _json(str(runs), "--summary")


def test_text_puts_the_aggregate_first_and_summary_drops_the_runs(runs: Path):
    full = invoke("compare", str(runs))
    short = invoke("compare", str(runs), "--summary")
    assert full.exit_code == short.exit_code == 0
    assert full.stdout.startswith("5 runs, ") and full.stdout.startswith(
        short.stdout.split("\n")[0]
    )
    assert "Each run" in full.stdout and "Each run" not in short.stdout
    assert all(str(runs / name) in full.stdout for name in ["bug17", *EXCERPTS])


def test_one_run_is_unchanged(runs: Path):
    """One run (no --shard) takes the single-run command: its tables, not an aggregate."""
    result = invoke("compare", str(BUG17))
    assert result.stdout.startswith("18 contexts; tokens: cl100k_base")


def test_merge_refuses_outputs_of_other_options(runs: Path, tmp_path: Path):
    a, b, c = (tmp_path / f"{n}.json" for n in "abc")
    a.write_text(json.dumps(_json(str(runs), "--summary", "--shard", "1/2")))
    b.write_text(
        json.dumps(_json(str(runs), "--summary", "--shard", "2/2", "--cached-price", "0.5"))
    )
    c.write_text(json.dumps(_json(str(BUG17))))  # a single run's output has no aggregate to merge
    for files, code, says in (([a, b], "usage_error", "cached_price"), ([a, a], "usage_error", "more than one output"),
                              ([a, c], "invalid_file", "not an output")):  # fmt: skip
        result = invoke("compare", "--merge", *map(str, files))
        assert result.exit_code == 2 and result.stdout == ""
        assert (
            result.stderr.startswith(f"error: {code}: ")
            and says in result.stderr
            and result.stderr.count("\n") == 1
        )


@pytest.mark.parametrize("spec", ["0/4", "5/4", "2", "a/b", "1/0", "-1/2"])
def test_bad_shard_is_a_usage_error(runs: Path, spec: str):
    result = invoke("compare", str(runs), "--shard", spec)
    assert result.exit_code == 2 and result.stderr.startswith("error: usage_error: --shard")


def test_a_folder_without_runs_and_a_run_named_twice(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    result = invoke("compare", str(tmp_path / "empty"))
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid_file: ")
    result = invoke("compare", str(BUG17), str(BUG17))
    assert result.exit_code == 2 and result.stderr.startswith(
        "error: usage_error: a run is named twice"
    )


def test_shards_cover_the_sorted_list_once():
    names = [f"run{i:02d}" for i in range(11)]
    for count in range(1, 13):
        parts = [compare_many.shard(list(reversed(names)), i, count) for i in range(1, count + 1)]
        assert [n for p in parts for n in p] == names
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    with pytest.raises(UsageError):
        compare_many.parse_shard("3/2")


def test_summary_json_keeps_nothing_per_context(runs: Path):
    """Issue 33, item 12: `--summary --json` shard files leave out the per-context billings (MBs on real runs)."""
    args = (
        str(runs),
        "--base",
        "v10",
        "--cache",
        "anthropic",
        "--availability",
        "--summary",
        "--shard",
        "1/2",
    )
    short, full = _json(*args), _json(*args[:-3], "--shard", "1/2")

    def keys(node: object) -> set[str]:
        if isinstance(node, dict):
            return set(node) | {k for v in node.values() for k in keys(v)}
        return {k for v in node for k in keys(v)} if isinstance(node, list) else set()

    assert "contexts" in keys(full["runs"]) and "contexts" not in keys(short["runs"])
    for a, b in zip(short["runs"], full["runs"]):
        assert a["cache"]["anthropic"]["total"] == b["cache"]["anthropic"]["total"]
    assert short["aggregate"]["rows"] == full["aggregate"]["rows"]


# -- tampered shards: each is one error line with a code, and only one complete, consistent set merges --


@pytest.fixture(scope="module")
def shard_set(runs: Path) -> list[dict]:
    return [
        _json(str(runs), "--summary", "--cache", "ideal", "--shard", f"{i}/3") for i in (1, 2, 3)
    ]


def _at(obj, *path):
    for key in path:
        obj = obj[key]
    return obj


def _put(*path, value):
    def tamper(shard):
        _at(shard, *path[:-1])[path[-1]] = value

    return tamper


def _drop(*path):
    def tamper(shard):
        del _at(shard, *path[:-1])[path[-1]]

    return tamper


def _first_cost(shard) -> dict:
    return shard["aggregate"]["rows"][0]["cost"]["prefix"]


def _set_cost(value):
    def tamper(shard):
        costs = _first_cost(shard)
        costs[next(iter(costs))] = value

    return tamper


TAMPERED = {
    "no-options": _drop("aggregate", "options"),
    "no-rows": _drop("aggregate", "rows"),
    "no-runs": _drop("runs"),
    "no-aggregate": _drop("aggregate"),
    "no-format": _drop("aggregate", "format"),
    "other-format": _put("aggregate", "format", value="workingset/compare-many@9"),
    "run-a-number": _put("aggregate", "rows", 0, "run", value=7),
    "run-object-run-a-number": _put("runs", 0, "run", value=7),
    "run-empty": _put("aggregate", "rows", 0, "run", value=""),
    "cost-a-string": _set_cost("1.5"),
    "cost-null": _set_cost(None),
    "cost-negative": _set_cost(-1.0),
    "cost-huge": _set_cost(1e300),
    "cost-edited": lambda s: _set_cost(_first_cost(s)[next(iter(_first_cost(s)))] + 1)(s),
    "strategies-empty": _put("aggregate", "options", "strategies", value=[]),
    "strategies-a-string": _put("aggregate", "options", "strategies", value="v7"),
    "strategy-a-number": _put("aggregate", "options", "strategies", 0, value=3),
    "cache-a-string": _put("aggregate", "options", "cache", value="ideal"),
    "encoding-a-number": _put("aggregate", "options", "encoding", value=5),
    "recall-a-string": _put("aggregate", "options", "recall", value="yes"),
    "rows-a-dict": _put("aggregate", "rows", value={}),
    "runs-a-dict": _put("runs", value={}),
    "row-a-list": _put("aggregate", "rows", 0, value=[]),
    "row-cost-missing-model": _drop("aggregate", "rows", 0, "cost", "ideal"),
    "row-cost-a-list": _put("aggregate", "rows", 0, "cost", value=[]),
    "row-largest-missing": _put("aggregate", "rows", 0, "largest", value={}),
    "row-largest-tokens-a-string": lambda s: _at(s, "aggregate", "rows", 0, "largest").update(
        {k: {"tokens": "9", "request_id": "x"} for k in _at(s, "aggregate", "rows", 0, "largest")}),
    "contexts-negative": _put("aggregate", "rows", 0, "contexts", value=-1),
    "contexts-edited": lambda s: _at(s, "aggregate", "rows", 0).update(contexts=_at(s, "aggregate", "rows", 0, "contexts") + 1),
    "total-edited": lambda s: _at(s, "aggregate", "models", "prefix", DEFAULT_LABEL).update(total=0.5),
    "wins-edited": lambda s: _at(s, "aggregate", "models", "prefix", DEFAULT_LABEL).update(wins=99),
    "runs-count-edited": _put("aggregate", "runs", value=99),
    "extra-top-key": _put("extra", value=1),
    "extra-aggregate-key": _put("aggregate", "extra", value=1),
    "shard-a-number": _put("aggregate", "shard", value=1),
    "shard-garbage": _put("aggregate", "shard", value="x/y"),
    "shard-zero": _put("aggregate", "shard", value="0/3"),
    "shard-index-past-count": _put("aggregate", "shard", value="4/3"),
    "shard-runs-a-string": _put("aggregate", "shard_runs", value="5"),
    "shard-runs-edited": _put("aggregate", "shard_runs", value=6),
    "runs-and-rows-differ": lambda s: s["runs"].reverse() if len(s["runs"]) > 1 else _put("runs", 0, "run", value="zzz")(s),
    "an-array": lambda s: s.clear(),
}  # fmt: skip


@pytest.mark.parametrize("name", TAMPERED, ids=str)
def test_a_tampered_shard_is_one_error_line(shard_set, tmp_path: Path, name: str):
    import copy

    parts = copy.deepcopy(shard_set)
    TAMPERED[name](parts[0])
    files = []
    for i, part in enumerate(parts, 1):
        files.append(tmp_path / f"s{i}.json")
        files[-1].write_text(json.dumps([] if part == {} else part))
    result = invoke("compare", "--merge", *map(str, files))
    assert result.exit_code == 2, result.output
    assert (
        result.stdout == "" and result.stderr.count("\n") == 1 and "Traceback" not in result.output
    )
    assert result.stderr.split(":")[1].strip() in {"invalid_file", "usage_error"}, result.stderr


def test_a_deeply_nested_shard_is_invalid_file(tmp_path: Path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = invoke("compare", "--merge", str(path))
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid_file: ")


def test_only_a_complete_set_of_shards_merges(shard_set, tmp_path: Path):
    files = []
    for i, part in enumerate(shard_set, 1):
        files.append(tmp_path / f"s{i}.json")
        files[-1].write_text(json.dumps(part))
    assert invoke("compare", "--merge", *map(str, files)).exit_code == 0
    missing = invoke("compare", "--merge", str(files[0]), str(files[2]))
    assert missing.exit_code == 2 and "shard 2/3 missing" in missing.stderr
    twice = invoke("compare", "--merge", str(files[0]), str(files[0]), str(files[1]), str(files[2]))
    assert twice.exit_code == 2 and "more than one output" in twice.stderr
    old = [
        dict(p, aggregate={k: v for k, v in p["aggregate"].items() if k != "shard_runs"})
        for p in shard_set
    ]
    for path, part in zip(files, old):  # made before shard_runs was recorded: still merged
        path.write_text(json.dumps(part))
    assert invoke("compare", "--merge", *map(str, files)).exit_code == 0
    swapped = [json.loads(f.read_text()) for f in files]
    swapped[0]["aggregate"]["shard"], swapped[2]["aggregate"]["shard"] = (
        "3/3",
        "1/3",
    )  # out of order
    for path, part in zip(files, swapped):
        path.write_text(json.dumps(part))
    assert invoke("compare", "--merge", *map(str, files)).exit_code == 2
