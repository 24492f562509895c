"""The commands that measure what contexts cost: compare, requests, report and calibrate."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import msgspec
import typer

from ..compare.engine import (
    ALL_BASE,
    DEFAULT_BASE,
    DEFAULT_CACHE,
    DEFAULT_CACHED_PRICE,
    DEFAULT_CANDIDATE,
    DEFAULT_LABEL,
)
from ..tokens.count import DEFAULT_ENCODING
from .boundary import emit_json
from .options import (
    CachedPriceOpt,
    CacheMinOpt,
    CacheOpt,
    CacheTtlOpt,
    JsonFlag,
    ModelOpt,
    WritePriceOpt,
    check_prices,
)


def compare(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN…",
            help="A run (a directory of stored-context files, or a run file), several runs, or folders holding runs; with --merge, compare --json outputs.",
        ),
    ],
    base: Annotated[
        str | None,
        typer.Option(
            help=f"Base strategy, an encoder version or a baseline; changes are relative to it (default {DEFAULT_BASE}, with --all {ALL_BASE})."
        ),
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option(
            help=f"Candidate strategy (default {DEFAULT_CANDIDATE}, the default encoder)."
        ),
    ] = None,
    all_versions: Annotated[
        bool, typer.Option("--all", help="Every version side by side, the base first.")
    ] = False,
    baselines: Annotated[
        bool | None,
        typer.Option(
            "--baselines/--no-baselines",
            help="Add the baselines of workingset.compare.baselines (default: on when no strategy option and no --cache is given).",
        ),
    ] = None,
    recall: Annotated[
        bool,
        typer.Option(
            "--recall/--no-recall", help="Keep the states' recall selections, or simulate none."
        ),
    ] = True,
    sections: Annotated[
        bool, typer.Option("--sections", help="Break the sizes down by section category.")
    ] = False,
    encoding: Annotated[
        str, typer.Option(help="Token encoding (only encodings bundled for offline use).")
    ] = DEFAULT_ENCODING,
    cached_price: CachedPriceOpt = DEFAULT_CACHED_PRICE,
    cache: CacheOpt = None,
    ttl: CacheTtlOpt = "5m",
    cache_min: CacheMinOpt = None,
    model: ModelOpt = None,
    write_price: WritePriceOpt = None,
    availability: Annotated[
        bool,
        typer.Option(
            "--availability",
            help="Add how much of earlier evidence each strategy keeps visible, addressable or gone.",
        ),
    ] = False,
    use: Annotated[
        bool,
        typer.Option(
            "--use",
            help="Add what each step used and whether each strategy showed it, and the bill with the recall and re-run turns that implies (docs/compare.md).",
        ),
    ] = False,
    token_cache: Annotated[
        bool,
        typer.Option(
            "--token-cache/--no-token-cache",
            help="Keep token counts on disk across runs (see README).",
        ),
    ] = True,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            help="Worker processes: one strategy at a time each (one run), one run at a time each (several); default: the available CPUs, at most 8.",
        ),
    ] = None,
    summary: Annotated[
        bool,
        typer.Option(
            "--summary",
            help="Totals only: no per-context tables (with --json, no contexts; several runs: the aggregate only).",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Compare only the I-th of N slices of the sorted run list (see docs/compare.md).",
        ),
    ] = None,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="The arguments are compare --json outputs of several runs (shards): print their runs and one aggregate.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Compare runs' sizes, tokens and prompt-cache cost across encoder versions; several runs get an aggregate (docs/compare.md)."""
    from ..compare.billing import CacheOptions, model_names
    from ..compare.engine import strategies
    from ..compare.many import compare_runs_cli, is_run, merged
    from ..compare.many import to_text as many_text
    from ..compare.parallel import compare_parallel, default_jobs
    from ..compare.tables import run_data, summarize, to_text
    from ..compare.verdict import verdict
    from ..io.progress import progress
    from ..runs.layout import read_fixed_prompt, read_retries, read_run
    from ..tokens.count import get_encoding

    check_prices(cached_price, write_price)
    get_encoding(encoding)  # fail before rendering anything
    jobs = default_jobs() if jobs is None else jobs  # the same numbers whatever it is
    if (
        base is None
        and candidate is None
        and baselines is None
        and cache is None
        and not all_versions
    ):
        # `compare RUN` alone: the README's headline, the bill a real agent pays beside what it could see
        baselines, cache, use = True, list(DEFAULT_CACHE), True
    candidate = candidate or DEFAULT_CANDIDATE
    models = model_names(cache or ())
    cache_options = CacheOptions(
        ttl=ttl,
        cache_min=cache_min,
        cached_price=cached_price,
        write_price=write_price,
        model=model,
    )
    base = base or (ALL_BASE if all_versions else DEFAULT_BASE)
    if merge or shard is not None or len(runs) > 1 or not is_run(runs[0]):
        renderers = strategies(
            base, candidate, all_versions, bool(baselines)
        )  # the columns; each run's own below

        def per_run(run: str) -> dict:
            return strategies(
                base, candidate, all_versions, bool(baselines), read_fixed_prompt(run)
            )

        many = merged(runs) if merge else compare_runs_cli(runs, shard, renderers, jobs, per_run=per_run, summary=summary,
            token_cache=token_cache, recall=recall, encoding=encoding, cached_price=cached_price, cache=models,
            cache_options=cache_options, sections=sections, availability=availability, use=use)  # fmt: skip
        emit_json(many) if as_json else sys.stdout.write(many_text(many, summary=summary))
        return
    directory = runs[0]
    run = read_run(directory)
    renderers = strategies(
        base, candidate, all_versions, bool(baselines), read_fixed_prompt(directory)
    )
    contexts = [ctx for _, ctx in run]
    options: dict[str, Any] = dict(
        recall=recall,
        encoding=encoding,
        cached_price=cached_price,
        cache=models,
        cache_options=cache_options,
        retries=read_retries(directory, contexts),
    )
    with progress("comparing", len(contexts) * len(renderers)) as step:
        result = compare_parallel(
            contexts, renderers, jobs, step=step, token_cache=token_cache, **options
        )
    used = None
    if use:
        from ..compare.recalls import compare_use

        used = compare_use(contexts, renderers, fixed=read_fixed_prompt(directory), **options)
    if as_json:
        data = run_data(
            directory, run, result, recall=recall, sections=sections, availability=availability
        )
        if summary:
            summarize(data)
        if used is not None:
            from ..compare.use_tables import use_data

            data.update(use_data(used, result))
        emit_json(data)
    else:
        sys.stdout.write(
            to_text(
                result, sections=sections, recall=recall, availability=availability, summary=summary
            )
        )
        if used is not None:
            from ..compare.use_tables import use_text, use_verdict

            sys.stdout.write("\n" + use_text(used, result))
            sys.stdout.write("\n" + (use_verdict(used, result) or verdict(result)))
        else:
            sys.stdout.write("\n" + verdict(result))


def requests(
    directory: Annotated[
        str,
        typer.Argument(
            metavar="RUN", help="A run: a directory of stored-context files, or a run file."
        ),
    ],
    strategy: Annotated[
        str,
        typer.Option(
            help="An encoder version (the default encoder if not given) or a baseline compare knows."
        ),
    ] = DEFAULT_LABEL,
    provider: Annotated[
        str,
        typer.Option(
            help="The API the bodies are for: anthropic (Messages) or openai (Chat Completions)."
        ),
    ] = "anthropic",
    model: Annotated[
        str | None,
        typer.Option(
            help="The API model, put in each body; from gpt-5.6 on OpenAI bodies carry cache breakpoints."
        ),
    ] = None,
    with_recalls: Annotated[
        bool,
        typer.Option(
            "--with-recalls",
            help="Also the recall and re-run turns of compare --use's bill, each marked \"added\", with every turn's answer.",
        ),
    ] = False,
) -> None:
    """Print each turn's request body as the provider receives it, one JSON object a line (see docs/billing.md)."""
    from ..compare.engine import request_bodies
    from ..compare.recalls import request_lines
    from ..errors import UsageError
    from ..runs.layout import read_fixed_prompt, read_retries, read_run

    if provider not in ("anthropic", "openai"):
        raise UsageError(f"no provider {provider!r}; available: anthropic, openai", code="unknown_provider",
                         details={"valid": ["anthropic", "openai"]})  # fmt: skip
    contexts = [ctx for _, ctx in read_run(directory)]
    retries = read_retries(directory, contexts)
    make = request_lines if with_recalls else request_bodies
    bodies = make(contexts, strategy, provider, model, read_fixed_prompt(directory), retries)
    lines = [msgspec.json.encode(line) for line in bodies]
    sys.stdout.buffer.write(b"".join(line + b"\n" for line in lines))
    sys.stdout.flush()


def report(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN…",
            help="A run (a directory of stored-context files, or a run file); several runs or folders of runs: the aggregate, then each run.",
        ),
    ],
    out: Annotated[str, typer.Option("--out", help="The HTML file to write.")],
    strategies: Annotated[
        list[str] | None,
        typer.Option(
            help="Strategies, the base first (repeatable or a comma list; default: the run's own encoder, the default encoder and every baseline)."
        ),
    ] = None,
    cache: CacheOpt = None,
    ttl: CacheTtlOpt = "5m",
    cache_min: CacheMinOpt = None,
    write_price: WritePriceOpt = None,
    recall: Annotated[
        bool,
        typer.Option(
            "--recall/--no-recall", help="Keep the states' recall selections, or simulate none."
        ),
    ] = True,
    encoding: Annotated[
        str, typer.Option(help="Token encoding (only encodings bundled for offline use).")
    ] = DEFAULT_ENCODING,
    cached_price: CachedPriceOpt = DEFAULT_CACHED_PRICE,
    as_json: JsonFlag = False,
) -> None:
    """Write a self-contained HTML report of a run (cost per turn per strategy, what each context showed) or of many."""
    from pathlib import Path

    from ..compare.billing import CacheOptions
    from ..compare.many import is_run
    from ..report import check_output, report_data, write_report

    check_prices(cached_price, write_price)
    check_output(out)
    names = [n.strip() for arg in strategies or () for n in arg.split(",") if n.strip()] or None
    options = CacheOptions(
        ttl=ttl, cache_min=cache_min, cached_price=cached_price, write_price=write_price
    )
    where = str(Path(out).resolve())  # said in full: where to open it
    if len(runs) > 1 or not is_run(runs[0]):
        from ..compare.parallel import default_jobs
        from ..report.aggregate import aggregate_data, render_aggregate

        many = aggregate_data(runs, names, cache=cache or (), cache_options=options, recall=recall,
                              encoding=encoding, cached_price=cached_price, jobs=default_jobs())  # fmt: skip
        size, agg = write_report(out, many, render_aggregate(many)), many["aggregate"]
        summary = {"runs": agg["runs"], "out": out, "path": where, "bytes": size, "contexts": agg["contexts"],
                   "strategies": agg["options"]["strategies"], "cache": agg["options"]["cache"]}  # fmt: skip
        text = f"{summary['runs']} runs, {summary['contexts']:,} contexts"
    else:
        data = report_data(runs[0], names, cache=cache or (), cache_options=options, recall=recall,
                           encoding=encoding, cached_price=cached_price)  # fmt: skip
        size = write_report(out, data)
        summary = {"run": runs[0], "out": out, "path": where, "bytes": size, "contexts": len(data["compare"]["contexts"]),
                   "strategies": data["compare"]["strategies"], "cache": list(data["series"])}  # fmt: skip
        text = f"{summary['contexts']} contexts"
    if as_json:
        emit_json(summary)
    else:
        sys.stdout.write(
            f"wrote {where} ({size:,} bytes): {text}, {', '.join(summary['strategies'])}\n"
        )


def calibrate(
    trajectory: Annotated[
        str,
        typer.Argument(
            help="An OpenHands V1 conversation directory (base_state.json and events/)."
        ),
    ],
    warm: Annotated[
        bool,
        typer.Option(
            "--warm",
            help="Take the tools and system prompt as cached by another conversation before the first call.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Bill each recorded LLM call with the anthropic cache model and set it beside what Anthropic billed."""
    from ..compare.calibrate import calibrate as run_calibration
    from ..compare.calibrate import lines

    result = run_calibration(trajectory, warm=warm)
    if as_json:
        emit_json(result.to_json())
    else:
        sys.stdout.write("".join(line + "\n" for line in lines(result)))
