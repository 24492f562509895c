"""The `workingset` command line: a thin typer layer over the library, and its one error boundary.

Every command is a few lines over the library. A `WorkingsetError` becomes one line
`error: <code>: <message>` on stderr (and with `--json` the object `{"error": {...}}` on
stdout) and exit code 2; a usage error does the same with code `usage_error`. Exit 1 is
left for bugs.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import typer

try:  # typer >= 0.29 vendors click
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - older typer on top of click
    from click.exceptions import UsageError as ClickUsageError

from ..compare.engine import ALL_BASE, DEFAULT_BASE, DEFAULT_CACHED_PRICE, DEFAULT_CANDIDATE
from ..encoders import DEFAULT_ENCODER
from ..errors import UsageError, WorkingsetError
from ..io.limits import MAX_COUNT
from ..tokens.count import DEFAULT_ENCODING

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Lossless, deterministic, versioned prompt contexts for investigation agents.",
)

# A cached or written token priced at most 1,000 full tokens keeps every cost finite (counts stay under 2^53).
MAX_CACHED_PRICE = 1000.0
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print the result (or the error) as JSON on stdout.")
]
MessagesOpt = Annotated[
    str | None,
    typer.Option(
        "--messages",
        metavar="PROVIDER",
        help="Print the request as provider JSON: anthropic, openai or openai-responses.",
    ),
]
TtlOpt = Annotated[
    str | None,
    typer.Option("--ttl", help="Anthropic cache TTL of the breakpoints: 5m (default) or 1h."),
]
StrictOpt = Annotated[
    bool | None,
    typer.Option(
        "--strict/--no-strict",
        help="OpenAI: the strict transformed schema (default), or the frozen one unenforced.",
    ),
]

# The cache models' options, shared by compare and report (`workingset.compare.billing`); prices are
# checked by `check_prices`.
CachedPriceOpt = Annotated[
    float, typer.Option(help="Price of a cached token as a fraction of the full price (0 to 1000).")
]
CacheOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Bill under cache models: ideal, anthropic, openai-auto (alias openai), openai-5.6 (repeatable or a comma list)."
    ),
]
CacheTtlOpt = Annotated[
    str, typer.Option("--ttl", help="Cache entry lifetime for anthropic and openai: 5m or 1h.")
]
CacheMinOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=MAX_COUNT,
        help="Fewest tokens a cache entry holds (default: the --model's minimum, else 1,024).",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The provider model billed, for its minimum cacheable length (e.g. claude-opus-4-6: 4,096).",
    ),
]
WritePriceOpt = Annotated[
    float | None,
    typer.Option(
        help="Price of a cache-written token, 0 to 1000 (default: anthropic 1.25 for 5m, 2.0 for 1h; openai-auto 1.0; openai-5.6 1.25)."
    ),
]


def check_prices(cached_price: float, write_price: float | None) -> None:
    """Refuse a price outside 0 to MAX_CACHED_PRICE (NaN too) before anything is rendered."""
    for flag, price in (("--cached-price", cached_price), ("--write-price", write_price)):
        if price is not None and not 0.0 <= price <= MAX_CACHED_PRICE:  # NaN fails this too
            raise UsageError(f"{flag} must be a number from 0 to {MAX_CACHED_PRICE:g}, not {price}")


def provider_options(messages: str | None, ttl: str | None, strict: bool | None) -> bool:
    """Check --messages and its options before anything is rendered; True when provider JSON is asked for."""
    from ..providers import check_options

    if messages is None:
        if ttl is not None or strict is not None:
            raise UsageError("--ttl and --strict/--no-strict go with --messages PROVIDER")
        return False
    check_options(messages, ttl, strict)
    return True


def emit_json(value: Any) -> None:
    """Print a JSON document on stdout (the machine-readable form of every command)."""
    try:
        data = msgspec.json.encode(value)
    except UnicodeEncodeError:  # a path argument with bytes that are not UTF-8: shown as U+FFFD
        from ..io.process import json_safe

        data = msgspec.json.encode(json_safe(value))
    sys.stdout.write(data.decode("utf-8") + "\n")


def report_error(err: WorkingsetError, as_json: bool) -> None:
    """Print an error in the CLI contract's form (docs/protocol.md#errors); a name that was not UTF-8 never makes it crash."""
    line = "error: {}: {}\n".format(err.code, " ".join(err.message.split("\n")))
    try:
        sys.stderr.write(
            line
        )  # `main` lets stderr write a path's non-UTF-8 bytes back as they were given
    except (
        UnicodeEncodeError
    ):  # a stream that cannot, or a lone surrogate no byte gave: shown as U+FFFD
        from ..io.process import json_safe

        sys.stderr.write(json_safe(line))
    if as_json:
        emit_json({"error": err.to_dict()})


def guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    """The error boundary: library errors become exit 2 with one line, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WorkingsetError as err:
            report_error(err, bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None
        except BrokenPipeError:  # stdout's reader went away (typer would exit 1 in silence)
            from ..io.process import broken_pipe

            raise typer.Exit(broken_pipe()) from None
        except (
            OSError
        ) as exc:  # a failure of the world the library did not name: its OS code (files.OS_CODES)
            from ..io.files import os_error

            report_error(os_error(exc), bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None
        except UnicodeEncodeError:  # an ID argument with bytes that are not UTF-8 reached the store
            from ..io.process import non_text_argument

            err = non_text_argument(kwargs)
            if err is None:
                raise
            report_error(err, bool(kwargs.get("as_json")))
            raise typer.Exit(2) from None

    return wrapper


@app.command()
@guarded
def render(
    file: Annotated[
        str,
        typer.Argument(help="A stored-context file, or a run (file or directory) with --request."),
    ],
    encoder: Annotated[
        str | None, typer.Option(help="Encoder version (default: the file's own).")
    ] = None,
    request: Annotated[
        str | None,
        typer.Option("--request", help="The request ID of the context to render from a run."),
    ] = None,
    messages: MessagesOpt = None,
    ttl: TtlOpt = None,
    strict: StrictOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Re-render one stored context (with its own encoder unless --encoder says otherwise)."""
    from ..encoders import get_encoder
    from ..runs.layout import pick_context
    from ..session.replies import Request

    as_messages = provider_options(messages, ttl, strict)
    ctx = pick_context(file, request)
    out = get_encoder(encoder or ctx.encoder).render(ctx.state, ctx.hypothesis)
    if as_messages:
        emit_json(
            Request.of(out, ctx.request_id, ctx.state).messages(messages, ttl=ttl, strict=strict)
        )
    elif as_json:
        doc = {
            "encoder": out.encoder, "hypothesis": out.hypothesis, "text": out.text,
            "shown": list(out.shown), "indexed": list(out.indexed), "chars": out.chars, "hash": out.hash,
        }  # fmt: skip
        budget = getattr(get_encoder(out.encoder), "budget", None)
        if (
            budget is not None
        ):  # v11 and later: the context budget `chars` is held to (v14: at most it)
            doc["budget"] = budget
        emit_json(doc)
    else:
        sys.stdout.write(out.text)


@app.command()
@guarded
def verify(
    directory: Annotated[
        str, typer.Argument(help="A run: a directory of stored-context files, or a run file.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Re-render every stored context with its frozen encoder and check its recorded hash."""
    from ..errors import HashMismatch
    from ..io.progress import progress
    from ..runs.layout import read_run, verify_context

    run = read_run(directory)
    verdicts = []
    with progress("verifying", len(run)) as step:
        for path, ctx in run:
            verdicts.append(verify_context(str(path), ctx))
            step(1)
    failed = [v for v in verdicts if v.status in ("mismatch", "error")]
    contexts = [dict(v.__dict__, diff=list(v.diff)) for v in verdicts]
    if as_json and not failed:
        emit_json({"ok": True, "contexts": contexts})
    elif not as_json:
        for v in verdicts:
            sys.stdout.write(
                f"{v.status:<10} {v.file}  {v.encoder}  {v.chars if v.chars is not None else '-'} chars\n"
            )
            for line in v.diff:
                sys.stdout.write(f"    {line}\n")
        ok = sum(v.status == "ok" for v in verdicts)
        unrecorded = len(verdicts) - ok - len(failed)
        tail = f" ({unrecorded} with no recorded hash)" if unrecorded else ""
        noun = "stored context" if len(verdicts) == 1 else "stored contexts"
        sys.stdout.write(f"{ok} of {len(verdicts)} {noun} verified{tail}\n")
    if failed:
        names = ", ".join(v.request_id for v in failed)
        # With --json the error object carries every verdict, so the per-file diffs are not lost.
        err = HashMismatch(f"{len(failed)} of {len(verdicts)} stored contexts do not reproduce their hash: {names}",
                           details={"failed": [v.file for v in failed], "contexts": contexts})  # fmt: skip
        raise err


@app.command()
@guarded
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
            help=f"Base encoder version; changes are relative to it (default {DEFAULT_BASE}, with --all {ALL_BASE})."
        ),
    ] = None,
    candidate: Annotated[str, typer.Option(help="Candidate encoder version.")] = DEFAULT_CANDIDATE,
    all_versions: Annotated[
        bool, typer.Option("--all", help="Every version side by side, the base first.")
    ] = False,
    baselines: Annotated[
        bool, typer.Option("--baselines", help="Add the baselines of workingset.compare.baselines.")
    ] = False,
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
    token_cache: Annotated[
        bool,
        typer.Option(
            "--token-cache/--no-token-cache",
            help="Keep token counts on disk across runs (see README).",
        ),
    ] = True,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            help="Worker processes: one strategy at a time each (one run), one run at a time each (several).",
        ),
    ] = 1,
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
    from ..compare.parallel import compare_parallel
    from ..compare.tables import run_data, to_text
    from ..compare.verdict import verdict
    from ..io.progress import progress
    from ..runs.layout import read_fixed_prompt, read_run
    from ..tokens.count import get_encoding

    check_prices(cached_price, write_price)
    get_encoding(encoding)  # fail before rendering anything
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
            base, candidate, all_versions, baselines
        )  # the columns; each run's own below

        def per_run(run: str) -> dict:
            return strategies(base, candidate, all_versions, baselines, read_fixed_prompt(run))

        many = merged(runs) if merge else compare_runs_cli(runs, shard, renderers, jobs, per_run=per_run, summary=summary,
            token_cache=token_cache, recall=recall, encoding=encoding, cached_price=cached_price, cache=models,
            cache_options=cache_options, sections=sections, availability=availability)  # fmt: skip
        emit_json(many) if as_json else sys.stdout.write(many_text(many, summary=summary))
        return
    directory = runs[0]
    run = read_run(directory)
    renderers = strategies(base, candidate, all_versions, baselines, read_fixed_prompt(directory))
    contexts = [ctx for _, ctx in run]
    options = dict(
        recall=recall,
        encoding=encoding,
        cached_price=cached_price,
        cache=models,
        cache_options=cache_options,
    )
    with progress("comparing", len(contexts) * len(renderers)) as step:
        result = compare_parallel(
            contexts, renderers, jobs, step=step, token_cache=token_cache, **options
        )
    if as_json:
        data = run_data(
            directory, run, result, recall=recall, sections=sections, availability=availability
        )
        if summary:
            del data["contexts"]
        emit_json(data)
    else:
        sys.stdout.write(
            to_text(
                result, sections=sections, recall=recall, availability=availability, summary=summary
            )
        )
        sys.stdout.write("\n" + verdict(result))


@app.command()
@guarded
def requests(
    directory: Annotated[
        str,
        typer.Argument(
            metavar="RUN", help="A run: a directory of stored-context files, or a run file."
        ),
    ],
    strategy: Annotated[
        str, typer.Option(help="An encoder version (v13) or a baseline compare knows.")
    ] = "v13",
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
) -> None:
    """Print each turn's request body as the provider receives it, one JSON object a line (see docs/billing.md)."""
    from ..compare.engine import request_bodies
    from ..errors import UsageError
    from ..runs.layout import read_fixed_prompt, read_run

    if provider not in ("anthropic", "openai"):
        raise UsageError(f"no provider {provider!r}; available: anthropic, openai", code="unknown_provider",
                         details={"valid": ["anthropic", "openai"]})  # fmt: skip
    run = read_run(directory)
    bodies = request_bodies(
        [ctx for _, ctx in run], strategy, provider, model, read_fixed_prompt(directory)
    )
    lines = [msgspec.json.encode(line) for line in bodies]
    sys.stdout.buffer.write(b"".join(line + b"\n" for line in lines))
    sys.stdout.flush()


@app.command()
@guarded
def report(
    directory: Annotated[
        str,
        typer.Argument(
            metavar="RUN", help="A run: a directory of stored-context files, or a run file."
        ),
    ],
    out: Annotated[str, typer.Option("--out", help="The HTML file to write.")],
    strategies: Annotated[
        list[str] | None,
        typer.Option(
            help="Strategies, the base first (repeatable or a comma list; default v7,v10,v11,v12,v13,full-transcript,masking-10,last-5)."
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
    """Write a self-contained HTML report of a run: cost per turn per strategy, and what each context showed."""
    from ..compare.billing import CacheOptions
    from ..report import DEFAULT_STRATEGIES, check_output, report_data, write_report

    check_prices(cached_price, write_price)
    check_output(out)
    names = [n.strip() for arg in strategies or () for n in arg.split(",") if n.strip()] or list(
        DEFAULT_STRATEGIES
    )
    options = CacheOptions(
        ttl=ttl, cache_min=cache_min, cached_price=cached_price, write_price=write_price
    )
    data = report_data(directory, names, cache=cache or (), cache_options=options, recall=recall, encoding=encoding,
                       cached_price=cached_price)  # fmt: skip
    size = write_report(out, data)
    summary = {"run": directory, "out": out, "bytes": size, "contexts": len(data["compare"]["contexts"]),
               "strategies": data["compare"]["strategies"], "cache": list(data["series"])}  # fmt: skip
    if as_json:
        emit_json(summary)
    else:
        sys.stdout.write(
            f"wrote {out} ({size:,} bytes): {summary['contexts']} contexts, {', '.join(summary['strategies'])}\n"
        )


@app.command("import")
@guarded
def import_(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT",
            help="swe-agent, mini-swe-agent, openhands or auto (told by its shape); or, alone, a folder of trajectories.",
        ),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            help="The run directory to write (new or empty); for a folder, the directory of its runs.",
        ),
    ],
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="SOURCE",
            help="A .traj/.traj.json file, or an OpenHands conversation directory.",
        ),
    ] = None,
    analysis: Annotated[
        str | None, typer.Option(help="Analysis ID (default: from the instance ID or file name).")
    ] = None,
    layout: Annotated[
        str,
        typer.Option(
            help="run: one run file, each payload stored once; contexts: one stored-context file per step."
        ),
    ] = "run",
    encoder: Annotated[
        str,
        typer.Option(
            help="The encoder each stored context records and is hashed with (v14 unless told; e.g. v7)."
        ),
    ] = DEFAULT_ENCODER,
    as_json: JsonFlag = False,
) -> None:
    """Import an agent trajectory (or a folder of them) as runs of stored contexts, one per agent step."""
    from pathlib import Path

    from ..encoders import get_encoder
    from ..importers import import_trajectory, write_import
    from ..io.files import check_new_run_dir
    from ..io.progress import progress

    name = get_encoder(encoder).name  # unknown_encoder before anything is read
    if source is None:
        return _import_folder(fmt, out, analysis, layout, name, as_json)
    check_new_run_dir(out)  # before reading the source
    if fmt == "auto":
        fmt = _detect(Path(source))
    imported = import_trajectory(fmt, source, analysis)
    with progress("importing", len(imported.states)) as step:
        paths = write_import(imported, out, layout, step=step, encoder=name)
    remarks = list(imported.trajectory.remarks)
    steps = len(imported.states)
    if as_json:
        emit_json({
            "format": fmt, "source": source, "out": out, "analysis": imported.analysis, "encoder": name,
            "steps": steps, "layout": layout, "files": [p.name for p in paths], "remarks": remarks,
        })  # fmt: skip
        return
    sys.stdout.write(
        f"imported {steps} steps of {source} as analysis {imported.analysis} into {out} ({name}, layout {layout})\n"
    )
    for remark in remarks:
        sys.stderr.write(f"note: {remark}\n")


def _detect(source: Any) -> str:
    """FORMAT auto: the format of one trajectory, told by its shape (`importers.folder.detect`)."""
    from ..importers import FORMATS
    from ..importers._sniff import identify
    from ..importers.folder import detect

    if not source.exists():
        return next(iter(FORMATS))  # the import says that the source does not exist
    if source.is_dir() and identify(source) is None:
        raise UsageError(f"{source}: not an OpenHands conversation (no events/ in it); to import a folder of "
                         f"trajectories, give it alone: workingset import {source} --out DIR", details={"path": str(source)})  # fmt: skip
    return detect(source)


def _import_folder(
    folder: str, out: str, analysis: str | None, layout: str, encoder: str, as_json: bool
) -> None:
    """`import DIR --out OUT`: every trajectory under DIR into OUT/NAME; exit 2 when any failed."""
    import os

    from ..importers import FORMATS
    from ..importers.folder import find_sources, import_folder
    from ..io.progress import progress
    from ..runs.layout import check_layout

    if (folder in FORMATS or folder == "auto") and not os.path.exists(folder):
        raise UsageError(
            f"import {folder} needs a SOURCE: workingset import {folder} SOURCE --out DIR"
        )
    if analysis is not None:
        raise UsageError("--analysis names one run; a folder's runs are named after their files")
    check_layout(layout)
    sources = find_sources(folder, out)
    with progress("importing", len(sources)) as step:
        result = import_folder(folder, out, layout, encoder, step=step, sources=sources)
    if as_json:
        emit_json(result.to_dict())
    else:
        for done in result.imported:
            sys.stdout.write(
                f"imported {done['steps']} steps of {done['source']} into {done['out']} ({done['format']})\n"
            )
        for done in result.skipped:
            sys.stdout.write(f"skipped  {done['source']}: {done['out']} holds its run already\n")
        sys.stdout.write(f"{len(result.imported)} imported, {len(result.skipped)} skipped, {len(result.failed)} failed "
                         f"of {len(sources)} trajectories in {folder}\n")  # fmt: skip
    for bad in result.failed:
        report_error(WorkingsetError(bad["message"], code=bad["code"]), False)
    if result.failed:
        raise typer.Exit(2)


@app.command()
@guarded
def convert(
    source: Annotated[
        str,
        typer.Argument(
            help="A run: a directory of stored-context files, or a run file (or its directory)."
        ),
    ],
    out: Annotated[str, typer.Option("--out", help="The directory to write (new or empty).")],
    layout: Annotated[
        str | None,
        typer.Option(help="run or contexts (default: the other layout than the source's)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rewrite a run in the other layout: stored-context files to one run file, or back."""
    from ..runs.layout import convert_run

    written, paths = convert_run(source, out, layout)
    if as_json:
        emit_json(
            {"source": source, "out": out, "layout": written, "files": [p.name for p in paths]}
        )
    else:
        sys.stdout.write(
            f"wrote {source} as layout {written} into {out} ({len(paths)} file{'s' if len(paths) != 1 else ''})\n"
        )


# -- sessions (docs/protocol.md#the-turn): init, next, submit, record, show, pause, resume, cancel, export ----------

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="The store: a SQLite file or a postgresql:// URL (default: $WORKINGSET_STORE, else .workingset/store.sqlite3).",
    ),
]
AnalysisOpt = Annotated[str, typer.Option("--analysis", help="The analysis ID.")]


def _store(store: str | None) -> str:
    from ..session.investigation import default_store_path

    return (
        store if store is not None else default_store_path()
    )  # an empty --store is refused, not the default


def _input(arg: str, kind: str) -> tuple[bytes, str]:
    """`-` is stdin; an argument starting with `{` is inline JSON; anything else is a file path.

    Every way in reads at most the limit of its `kind` (file, result, decision) + 1 bytes.
    """
    from ..io.limits import Limits, read_path, too_large

    limits = Limits.current()
    if arg == "-":
        from ..io.process import stdin_bytes

        return stdin_bytes(kind, limits), "<stdin>"
    if arg.lstrip().startswith("{"):
        data = _inline_bytes(arg)
        if len(data) > limits.max_bytes(kind):
            raise too_large(kind, "<argument>", len(data), limits)
        return data, "<argument>"
    return read_path(arg, kind, limits), arg


def _inline_bytes(arg: str) -> bytes:
    try:  # an argument's bytes that are not UTF-8, as given: the decoder refuses them as malformed
        return arg.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte gave (inline JSON from Python)
        return arg.encode("utf-8", "surrogatepass")


def _decision_input(arg: str) -> tuple[bytes, int | None]:
    """An answer as `_input` reads it, but one over the limit is not refused here: the API refuses and keeps it.

    Returns the bytes and None, or, for a file or stdin over the limit, the first `limit` bytes
    and the whole size (`limits.read_counted`): what `submit` keeps of a too large answer it is
    given whole. Inline JSON is given whole.
    """
    from ..io.limits import read_path_counted
    from ..io.process import stdin_counted

    if arg == "-":
        return stdin_counted("decision")
    if arg.lstrip().startswith("{"):
        return _inline_bytes(arg), None
    return read_path_counted(arg, "decision")


def _session(store: str | None, analysis: str, read_only: bool = False) -> Any:
    from ..session.investigation import Investigation

    return Investigation.open(_store(store), analysis, read_only=read_only)


@app.command()
@guarded
def init(
    state: Annotated[
        str, typer.Option("--state", help="A state file or a stored context; - for stdin.")
    ],
    encoder: Annotated[
        str, typer.Option(help="Encoder version for the analysis's new requests.")
    ] = DEFAULT_ENCODER,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an analysis from a state file (a bare state, or a stored context whose state is taken)."""
    from ..model.state import load_start
    from ..session.investigation import Investigation

    data, source = _input(state, "file")
    start, before = load_start(data, source)
    with Investigation.create(_store(store), start, encoder=encoder, requests_before=before) as inv:
        out = inv.show()
    if as_json:
        emit_json({"analysis_id": inv.analysis_id, "encoder": out.encoder, "status": out.status,
                   "termination_reason": out.termination_reason})  # fmt: skip
    else:
        reason = f" ({out.termination_reason})" if out.termination_reason else ""
        sys.stdout.write(
            f"created analysis {inv.analysis_id}: {out.status}{reason}, encoder {out.encoder}\n"
        )


@app.command("next")
@guarded
def next_(
    analysis: AnalysisOpt,
    hypothesis: Annotated[
        str | None, typer.Option(help="The hypothesis to serve (default: the scheduler's pick).")
    ] = None,
    messages: MessagesOpt = None,
    ttl: TtlOpt = None,
    strict: StrictOpt = None,
    retry: Annotated[
        str | None,
        typer.Option(
            help='With --messages: earlier rejected tries of the open request, a JSON array of {"answer", "error"} (file or -).'
        ),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Render and persist the next request (or return the open one); the text goes to stdout."""
    from ..providers import load_retry

    as_messages = provider_options(messages, ttl, strict)
    if retry is not None and not as_messages:
        raise UsageError("--retry goes with --messages PROVIDER")
    tries = load_retry(*_input(retry, "file")) if retry is not None else []
    with _session(store, analysis) as inv:
        if retry is not None and inv.show().open_request is None:
            # The tries answered a request that is no longer open: never pin them on a new one.
            raise UsageError(
                "--retry needs an open request: the tries answer it again, and none is open"
            )
        req = inv.next_request(hypothesis)
    if as_messages:
        emit_json(req.messages(messages, ttl=ttl, strict=strict, retry=tries))
    elif as_json:
        emit_json(req.spec())
    else:
        sys.stderr.write(
            f"request {req.request_id} for {req.hypothesis} ({req.encoder}, {req.chars} chars)\n"
        )
        sys.stdout.write(req.text)


@app.command()
@guarded
def submit(
    decision: Annotated[
        str, typer.Argument(help="The decision: a JSON file, inline JSON, or - for stdin.")
    ],
    analysis: AnalysisOpt,
    request: Annotated[str, typer.Option("--request", help="The request the decision answers.")],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Validate a decision (docs/protocol.md#decisions) and apply it; a rejected decision changes nothing."""
    data, size = _decision_input(decision)
    with _session(store, analysis) as inv:
        out = inv.submit(request, data, size=size)
    if as_json:
        emit_json(out.spec())
    else:
        todo = f"; record its result against {out.action}" if out.action else ""
        sys.stdout.write(
            f"applied {out.applied} for {out.request_id} at iteration {out.iteration}{todo}; status {out.status}\n"
        )


@app.command()
@guarded
def record(
    capture: Annotated[
        str,
        typer.Argument(
            help='The result {"scope","capture","payload","cost"?}: a file, inline JSON, or -.'
        ),
    ],
    analysis: AnalysisOpt,
    action: Annotated[
        str, typer.Option("--action", help="The pending budget action (from submit).")
    ],
    captured_at: Annotated[
        str | None, typer.Option(help="Capture time, RFC 3339 with offset (default: now).")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Record the result of a pending query as new, unsettled evidence."""
    data, source = _input(capture, "result")
    with _session(store, analysis) as inv:
        out = inv.record(action, data, captured_at=captured_at, source=source)
    if as_json:
        emit_json(out)
    else:
        sys.stdout.write(
            f"recorded {out.evidence} for {out.action} ({out.hypothesis}); status {out.status}\n"
        )


@app.command()
@guarded
def show(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Status, iteration, budget, hypotheses, open request, pending actions and recall selections."""
    from ..session.replies import describe

    with _session(store, analysis, read_only=True) as inv:
        out = inv.show()
    if as_json:
        # The protocol names the pending actions; their queries are in `state` and the API's show().
        emit_json(
            dict(msgspec.to_builtins(out), pending_actions=[p.action for p in out.pending_actions])
        )
    else:
        sys.stdout.write(describe(out))


def _lifecycle(verb: str, store: str | None, analysis: str, as_json: bool) -> None:
    with _session(store, analysis) as inv:
        out = getattr(inv, verb)()
    if as_json:
        emit_json(out)
    else:
        reason = f" ({out.termination_reason})" if out.termination_reason else ""
        sys.stdout.write(f"analysis {out.analysis_id}: {out.status}{reason}\n")


@app.command()
@guarded
def pause(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Pause an active analysis (resume restores its exact prior status)."""
    _lifecycle("pause", store, analysis, as_json)


@app.command()
@guarded
def resume(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Resume a paused analysis."""
    _lifecycle("resume", store, analysis, as_json)


@app.command()
@guarded
def cancel(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Cancel an analysis (terminal, reason cancelled)."""
    _lifecycle("cancel", store, analysis, as_json)


@app.command()
@guarded
def export(
    analysis: AnalysisOpt,
    out: Annotated[
        str, typer.Option("--out", help="The directory to write the stored contexts to.")
    ],
    as_stored: Annotated[
        bool,
        typer.Option(
            "--as-stored",
            help=(
                "Write only journal.jsonl and answers.jsonl, the events as stored, unchecked: for an analysis the store "
                "can no longer render."
            ),
        ),
    ] = False,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write every request as a stored-context file (a run verify and compare accept), with journal.jsonl and answers.jsonl."""
    from ..io.files import check_new_run_dir

    check_new_run_dir(out)  # before opening the store
    with _session(store, analysis, read_only=True) as inv:
        paths = inv.export(out, as_stored=as_stored)
    if as_json:
        emit_json(
            {"analysis_id": analysis, "files": [str(p) for p in paths], "as_stored": as_stored}
        )
    elif as_stored:
        sys.stdout.write(
            f"wrote journal.jsonl and answers.jsonl to {out}: the events as stored, unchecked\n"
        )
    else:
        noun = "stored context" if len(paths) == 1 else "stored contexts"
        sys.stdout.write(f"wrote {len(paths)} {noun}, journal.jsonl and answers.jsonl to {out}\n")


@app.command()
@guarded
def schema(
    kind: Annotated[
        str, typer.Argument(metavar="KIND", help="state, context, result or decision.")
    ],
    encoder: Annotated[
        str | None, typer.Option(help="The version whose decisions to describe (default v14).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the JSON Schema of a state, stored context, result or decision, from the types that validate them."""
    from ..session.schemas import json_schema

    out = json_schema(kind, encoder)
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(out), indent=2).decode("utf-8") + "\n")


@app.command()
@guarded
def replay(
    directory: Annotated[
        str, typer.Argument(help="An export: stored contexts, journal.jsonl and answers.jsonl.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Rebuild an exported analysis in a fresh store from its recorded inputs and compare every step."""
    from ..errors import ReplayDiverged
    from ..session.frozen_replay import replay_export

    report = replay_export(directory)
    div = report.divergence
    if div is not None:
        if not as_json:
            sys.stdout.write("\n".join(div.lines()) + "\n")
        # With --json the error object (the one contract for every error) carries the whole divergence.
        raise ReplayDiverged(f"{div.step}: {div.path} differs from the export",
                             details={"analysis_id": report.analysis_id, **div.__dict__})  # fmt: skip
    if as_json:
        emit_json({
            "ok": report.ok, "analysis_id": report.analysis_id, "events": report.events, "requests": report.requests,
            "answers": report.answers, "rejected": report.rejected, "results": report.results,
            "state_hash": report.state_hash, "divergence": None,
        })  # fmt: skip
    else:
        sys.stdout.write(
            f"replayed {report.analysis_id}: {report.events} events, {report.requests} requests, {report.answers} answers "
            f"({report.rejected} rejected), {report.results} results; every step matches the export\n"
            f"final state {report.state_hash}\n"
        )


@app.command()
@guarded
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


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app, turning usage errors into the error contract."""
    from ..io.process import broken_pipe, prepare_streams

    args = list(sys.argv[1:] if argv is None else argv)
    closed = prepare_streams()
    if closed is not None:
        report_error(closed, as_json=False)
        return 2
    try:
        result = app(args=args, prog_name="workingset", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit, so that a reader gone away is an error we report
    except BrokenPipeError:
        return broken_pipe()
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 1
    except ClickUsageError as exc:
        message = exc.format_message() or "no command given; see `workingset --help`"
        report_error(UsageError(message), as_json="--json" in args)
        return 2
    return result if isinstance(result, int) else 0


def run() -> None:
    """The `workingset` console script."""
    sys.exit(main())
