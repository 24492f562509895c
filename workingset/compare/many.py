"""`compare RUN…`: many runs compared at once, an aggregate over them, shards and their merge.

Each run is compared exactly as `compare RUN` compares it (`bench.compare_contexts`), and its
`--json` object is kept as is. From each run's `Comparison` one *row* is taken: its number of
contexts, each strategy's total effective cost under each cost model (`prefix`, the ideal
prefix cache at `--cached-price`, then each `--cache` model) and its largest context in
tokens. The aggregate is computed from the rows alone, in the order of the sorted run list,
so the rows of the shards of a run list, merged, give the same aggregate to the last bit as
the whole list in one process (`merge`). Sums use `math.fsum`, which does not depend on the
order of the terms either.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import statistics
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from ..errors import InvalidFile, UsageError
from .engine import Comparison, Renderer
from .verdict import PREFIX  # the cost model of `total.effective_cost`: the ideal prefix cache

MANY_FORMAT = "workingset/compare-many@1"

# What the forked workers read: set by `compare_runs` before the pool starts (see parallel.py).
_WORK: dict[str, Any] = {}


def is_run(path: str | Path) -> bool:
    """Whether `path` is one run: a run file, or a directory holding a run file or stored-context files."""
    path = Path(path)
    try:
        return path.is_file() or (
            path.is_dir() and any(p.suffix == ".json" and not p.is_dir() for p in path.iterdir())
        )
    except OSError:
        return False


def expand(paths: Sequence[str]) -> list[str]:
    """The sorted run list of the arguments: each a run, or a folder whose entries that are runs are taken."""
    runs: list[str] = []
    for arg in paths:
        root = Path(arg)
        if is_run(root) or not root.is_dir():
            runs.append(arg)  # a path that is no run fails in `read_run` with its own error
            continue
        # A name starting with `.` is no run: a killed folder import's `.NAME.*.partial` directory.
        found = sorted(str(p) for p in root.iterdir() if not p.name.startswith(".") and is_run(p))
        if not found:
            raise InvalidFile(
                f"{arg}: neither a run nor a folder holding runs",
                details={"file": arg, "path": "$"},
            )
        runs.extend(found)
    twice = sorted({r for r in runs if runs.count(r) > 1})
    if twice:
        raise UsageError(f"a run is named twice: {', '.join(twice)}", details={"runs": twice})
    return sorted(runs)


def parse_shard(spec: str) -> tuple[int, int]:
    """`I/N` as (I, N), 1 <= I <= N (`shards.shard_of`); anything else is `usage_error`."""
    from .shards import shard_of

    got = shard_of(spec)
    if got is None:
        raise UsageError(f"--shard must be I/N with 1 <= I <= N (e.g. 2/4), not {spec[:100]!r}",
                         details={"shard": spec[:100]})  # fmt: skip
    return got


def shard(runs: Sequence[str], index: int, count: int) -> list[str]:
    """The `index`-th of `count` contiguous slices of the sorted run list (sizes differ by at most one)."""
    ordered = sorted(runs)
    return ordered[(index - 1) * len(ordered) // count : index * len(ordered) // count]


def settings(strategies: Sequence[str], encoding: str, cached_price: float, recall: bool,
             cache: Sequence[str], cache_options: Any, use: bool = False) -> dict[str, Any]:  # fmt: skip
    """The options that decide every number: outputs made with different ones are never merged."""
    out: dict[str, Any] = {"strategies": list(strategies), "encoding": encoding, "cached_price": cached_price,
                           "recall": recall, "cache": list(cache)}  # fmt: skip
    if use:
        out["use"] = True
    if cache:
        out["cache_options"] = {
            f.name: getattr(cache_options, f.name)
            for f in dataclasses.fields(cache_options)
            if f.init
        }
    return out


def row(run: str, cmp: Comparison) -> dict[str, Any]:
    """What the aggregate needs of one run: contexts, each strategy's cost per model, its largest context."""
    costs = {PREFIX: {s: cmp.total(s).cost for s in cmp.strategies}}
    for model in cmp.caches:
        costs[model] = {s: cmp.cache_total(model, s).cost for s in cmp.strategies}
    largest = {}
    for s in cmp.strategies:
        sizes = cmp.sizes[s]
        at = max(range(len(sizes)), key=lambda i: sizes[i].tokens) if sizes else None
        largest[s] = (
            None if at is None else {"tokens": sizes[at].tokens, "request_id": cmp.labels[at]}
        )
    from .verdict import idle

    return {
        "run": run,
        "contexts": len(cmp.labels),
        "cost": costs,
        "largest": largest,
        "idle": idle(cmp),
    }


def _ratio(value: float, base: float) -> float | None:
    return value / base if base else None


def aggregate(rows: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    """Per cost model and strategy: total, ratio to the base, median and worst per-run ratio, wins, largest context."""
    rows = sorted(rows, key=lambda r: r["run"])
    names = options["strategies"]
    base = names[0]
    models: dict[str, Any] = {}
    for model in [PREFIX, *options["cache"]]:
        totals = {s: math.fsum(r["cost"][model][s] for r in rows) for s in names}
        per: dict[str, Any] = {}
        for s in names:
            ratios = [
                x
                for x in (_ratio(r["cost"][model][s], r["cost"][model][base]) for r in rows)
                if x is not None
            ]
            wins = sum(r["cost"][model][s] == min(r["cost"][model].values()) for r in rows)
            per[s] = {"total": totals[s], "ratio": _ratio(totals[s], totals[base]),
                      "median_ratio": statistics.median(ratios) if ratios else None,
                      "worst_ratio": max(ratios) if ratios else None, "wins": wins}  # fmt: skip
        models[model] = per
    largest = {}
    for s in names:
        seen = [
            (r["largest"][s]["tokens"], r["run"], r["largest"][s]["request_id"])
            for r in rows
            if r["largest"][s]
        ]
        top = (
            max(seen, key=lambda t: t[0]) if seen else None
        )  # the first run of the sorted list on a tie
        largest[s] = (
            None if top is None else {"tokens": top[0], "run": top[1], "request_id": top[2]}
        )
    out = {"format": MANY_FORMAT, "options": dict(options), "base": base, "runs": len(rows),
           "contexts": sum(r["contexts"] for r in rows), "models": models, "largest": largest,
           "rows": list(rows)}  # fmt: skip
    if options.get("use"):
        from .use_tables import aggregate_use, aggregate_with_recalls

        out["use"] = aggregate_use(rows, names)
        out["with_recalls"] = aggregate_with_recalls(rows, names, options["cache"])
    return out


class _Count(msgspec.Struct):
    contexts: list[msgspec.Raw]


def count_contexts(run: str) -> int:
    """How many contexts a run holds, for the progress line (0 where it cannot be read: its read fails later)."""
    from ..runs.layout import FIXED_PROMPT_FILE, RUN_FILE

    path = Path(run)
    try:
        if path.is_file() or (path / RUN_FILE).is_file():
            data = (path if path.is_file() else path / RUN_FILE).read_bytes()
            return len(msgspec.json.decode(data, type=_Count).contexts)
        return sum(1 for p in path.iterdir() if p.suffix == ".json" and p.name != FIXED_PROMPT_FILE)
    except (OSError, msgspec.MsgspecError):
        return 0


def _one(run: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Compare one run as `compare RUN --json` does; returns (its JSON object, its row)."""
    from ..runs.layout import read_retries, read_run
    from .parallel import compare_parallel
    from .tables import run_data, summarize

    work = _WORK
    contexts = read_run(run)
    renderers = work["per_run"](run) if work["per_run"] is not None else work["renderers"]
    stored = [ctx for _, ctx in contexts]
    cmp = compare_parallel(stored, renderers, 1, token_cache=work["token_cache"],
                           retries=read_retries(run, stored), **work["options"])  # fmt: skip
    data = run_data(run, contexts, cmp, **work["report"])
    if work["summary"]:
        summarize(data)
    out = row(run, cmp)
    if work.get("use"):
        from ..runs.layout import read_fixed_prompt
        from .recalls import compare_use
        from .use_tables import use_data

        used = use_data(compare_use(stored, renderers, fixed=read_fixed_prompt(run), retries=read_retries(run, stored),
                                    **work["options"]), cmp)  # fmt: skip
        data.update(used)
        out.update(used)
    return data, out


def compare_runs(
    runs: Sequence[str],
    renderers: Mapping[str, Renderer],
    jobs: int,
    *,
    options: Mapping[str, Any],
    report: Mapping[str, Any],
    settings: Mapping[str, Any],
    summary: bool = False,
    token_cache: bool = True,
    step: Callable[[int, str], None] | None = None,
    per_run: Callable[[str], Mapping[str, Renderer]] | None = None,
    use: bool = False,
) -> dict[str, Any]:
    """`{"runs": [...], "aggregate": {...}}` of a run list, the runs spread over `jobs` forked processes.

    `options` are `compare_contexts`'s keyword arguments, `report` `run_data`'s; each run's
    object is what `compare RUN --json` prints (without its contexts when `summary`).
    `per_run(run)`, where given, makes each run's renderers (the same strategies as
    `renderers`, e.g. its baselines sending the run's own fixed prompt). `use` adds each
    run's `compare --use` objects (`use`, `with_recalls`) to its object and its row.
    """
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    _WORK.update(renderers=renderers, per_run=per_run, options=options, report=report, summary=summary,
                 token_cache=token_cache, use=use)  # fmt: skip
    results: list[tuple[dict[str, Any], dict[str, Any]]] = []
    try:
        if jobs == 1 or len(runs) < 2:
            for run in runs:
                results.append(_one(run))
                if step is not None:  # the run's contexts done
                    step(results[-1][1]["contexts"], f"{len(results)}/{len(runs)} runs, {run}")
        else:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=min(jobs, len(runs)), mp_context=context) as pool:
                for result in pool.map(_one, runs):  # in run order; a worker's error is raised here
                    results.append(result)
                    if step is not None:
                        step(
                            result[1]["contexts"],
                            f"{len(results)}/{len(runs)} runs, {result[1]['run']}",
                        )
    finally:
        _WORK.clear()
    return {
        "runs": [data for data, _ in results],
        "aggregate": aggregate([r for _, r in results], settings),
    }


def merge(outputs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Join the outputs of `compare … --json` (shards) into one, its aggregate computed afresh from their rows."""
    if not outputs:
        raise UsageError("--merge needs at least one output of compare --json")
    from .shards import check_one, check_set

    options = None
    runs: list[Any] = []
    rows: list[Any] = []
    cut = [
        check_one(name, out, MANY_FORMAT, PREFIX, aggregate) for name, out in zip(names, outputs)
    ]
    for name, out in zip(names, outputs):
        agg = out["aggregate"]
        if options is None:
            options, first = agg["options"], name
        elif agg["options"] != options:
            differ = sorted(
                k for k in {*options, *agg["options"]} if options.get(k) != agg["options"].get(k)
            )
            raise UsageError(f"{name} was made with other options than {first} ({', '.join(differ)}); "
                             "merge only outputs of one command line", details={"differ": differ})  # fmt: skip
        if len(out["runs"]) != len(agg["rows"]):
            raise InvalidFile(f"{name}: {len(out['runs'])} runs but {len(agg['rows'])} aggregate rows",
                              details={"file": name, "path": "$.aggregate.rows"})  # fmt: skip
        runs.extend(out["runs"])
        rows.extend(agg["rows"])
    check_set(names, outputs, cut)
    seen = [r["run"] for r in rows]
    twice = sorted({r for r in seen if seen.count(r) > 1})
    if twice:
        raise UsageError(
            f"a run is in more than one output: {', '.join(twice)}", details={"runs": twice}
        )
    order = sorted(range(len(rows)), key=lambda i: rows[i]["run"])
    assert options is not None
    return {"runs": [runs[i] for i in order], "aggregate": aggregate(rows, options)}


def compare_runs_cli(paths: Sequence[str], shard_spec: str | None, renderers: Mapping[str, Renderer], jobs: int, *,
                     per_run: Callable[[str], Mapping[str, Renderer]] | None = None, summary: bool, token_cache: bool, recall: bool, encoding: str, cached_price: float,
                     cache: Sequence[str], cache_options: Any, sections: bool, availability: bool,
                     use: bool = False) -> dict[str, Any]:  # fmt: skip
    """What `compare RUN… [--shard I/N]` prints as JSON, from its options (with a progress bar on a terminal)."""
    from ..io.progress import progress

    runs = expand(paths)
    whole = len(runs)
    if shard_spec is not None:
        runs = shard(runs, *parse_shard(shard_spec))
    total = sum(count_contexts(run) for run in runs)
    with progress("compare", total, unit="contexts", lines=True) as step:
        out = compare_runs(
            runs, renderers, jobs, summary=summary, token_cache=token_cache, step=step, per_run=per_run, use=use,
            options=dict(recall=recall, encoding=encoding, cached_price=cached_price, cache=cache, cache_options=cache_options),
            report=dict(recall=recall, sections=sections, availability=availability),
            settings=settings(list(renderers), encoding, cached_price, recall, cache, cache_options, use),
        )  # fmt: skip
    if shard_spec is not None:
        out["aggregate"]["shard"] = shard_spec
        out["aggregate"]["shard_runs"] = whole  # so that a merge can tell a shard is missing
    return out


def merged(files: Sequence[str]) -> dict[str, Any]:
    """`compare --merge FILE…`: read each output of `compare … --json` and merge them."""
    import msgspec

    from ..io.limits import check_json
    from ..model.state import read_file

    outputs = []
    for name in files:
        data = read_file(name)
        check_json(data, "file", name)  # bounded nesting, no key given twice
        try:
            outputs.append(msgspec.json.decode(data))
        except msgspec.DecodeError as exc:
            raise InvalidFile(
                f"{name}: not JSON ({exc})", details={"file": name, "path": "$"}
            ) from None
    return merge(outputs, files)


def to_text(result: Mapping[str, Any], summary: bool = False) -> str:
    """The aggregate's tables (one per cost model), then one summary line per run unless `summary`."""
    from .tables import _table, _wrap, ratio_text

    agg = result["aggregate"]
    base, names = agg["base"], agg["options"]["strategies"]
    parts = [_wrap(f"{agg['runs']} runs, {agg['contexts']:,} contexts; tokens: {agg['options']['encoding']}; "
                   f"ratios relative to {base}; wins: runs where a strategy costs least (ties count for each)")]  # fmt: skip
    for model, per in agg["models"].items():
        title = (
            f"Cost model {PREFIX}: the longest common token prefix with the previous context is read at "
            f"{agg['options']['cached_price']:g}x"
            if model == PREFIX
            else f"Cost model {model} (--cache {model})"
        )
        rows = []
        for s in names:
            top = agg["largest"][s]
            largest = "" if top is None else f"{top['tokens']:,} ({top['run']} {top['request_id']})"
            rows.append([s, f"{per[s]['total']:,.1f}", ratio_text(per[s]["ratio"]), ratio_text(per[s]["median_ratio"]),
                         ratio_text(per[s]["worst_ratio"]), f"{per[s]['wins']}", largest])  # fmt: skip
        headers = ["strategy", "total effective cost", "ratio", "median run ratio", "worst run ratio", "wins",
                   "largest context (tokens)"]  # fmt: skip
        parts += ["", title, _table(headers, rows)]
    if "use" in agg:
        from .use_tables import aggregate_text

        parts.append(aggregate_text(agg).rstrip("\n"))
    from .verdict import billed_by, many_verdict

    model = billed_by(agg["options"])
    totals = {s: agg["models"][model][s]["total"] for s in names}
    if not summary:
        rows = []
        for r in agg["rows"]:
            costs = r["cost"][model]
            low = min(costs[s] for s in names)
            idle = set(r.get("idle", ()))
            # every strategy that ties, an idle baseline aside (it is the transcript again)
            cheapest = ", ".join(s for s in names if costs[s] == low and s not in idle)
            rows.append([r["run"], f"{r['contexts']}", f"{costs[base]:,.1f}", cheapest, ratio_text(_ratio(low, costs[base]))]
                        + ["idle" if s in idle else ratio_text(_ratio(costs[s], costs[base])) for s in names[1:]])  # fmt: skip
        headers = ["run", "contexts", f"{base} cost", "cheapest", "its ratio"] + [
            f"{s}" for s in names[1:]
        ]
        parts += ["", _wrap(f"Each run (cost model {model}; ratio of each strategy's cost to {base}'s; idle: a baseline "
                            f"that never fired on the run, the same as full-transcript)"), _table(headers, rows)]  # fmt: skip
    parts += ["", many_verdict(agg, totals, model)]
    return "\n".join(parts) + "\n"
