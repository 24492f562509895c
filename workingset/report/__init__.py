"""`workingset report`: one self-contained HTML file showing a run's costs and contexts.

The numbers are `compare --json`'s data for the chosen strategies, embedded as they are
(the page's charts read them through `cache_series`); the context viewer's texts are
re-rendered here and stored once (`texts`); an exported run's decisions, rejections and
outcomes come from its journal (`record`). The page is `page.render_page`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..compare.baselines import BASELINES
from ..compare.billing import CacheOptions, model_names
from ..compare.engine import (
    DEFAULT_CACHED_PRICE,
    DEFAULT_LABEL,
    Renderer,
    baseline_renderers,
    compare_contexts,
    version_label,
    version_renderer,
)
from ..errors import UnknownEncoder, UsageError
from ..io.files import os_error
from ..runs.fixed_prompt import FixedPrompt
from ..runs.layout import read_fixed_prompt, read_retries, read_run
from ..tokens.count import DEFAULT_ENCODING, get_encoding
from .tradeoff import tradeoff_figure

DEFAULT_STRATEGIES = (
    DEFAULT_LABEL,
    *BASELINES,
)  # and first the run's own encoder: `default_strategies`
DEFAULT_CACHE = ("anthropic", "openai-auto", "ideal")  # the first is the one the page opens with


def resolve_strategies(
    names: Sequence[str], fixed: FixedPrompt | None = None
) -> tuple[dict[str, Renderer], dict[str, str | None]]:
    """Resolve strategy names to compare's renderers and to encoder names (None for a baseline).

    An encoder is named as `compare` names it (`v11`, `v11:budget=60000`); a baseline by
    its name in `workingset.compare.baselines`. The first is the base the changes are relative to.
    """
    baselines = baseline_renderers(fixed)
    renderers: dict[str, Renderer] = {}
    encoders: dict[str, str | None] = {}
    for name in names:
        if name in baselines:
            label, renderer, encoder = name, baselines[name], None
        else:
            try:
                label = version_label(name)
            except UnknownEncoder as err:
                if ":" in name:  # a version's options are wrong: its own message says how
                    raise
                # say what else a strategy can be
                raise UnknownEncoder(
                    f"no strategy {name!r}: {err.message}; or a baseline: {', '.join(baselines)}",
                    code="unknown_strategy",
                    details={"baselines": list(baselines)},
                ) from None
            renderer, encoder = version_renderer(label), "investigation_project_" + label
        if label in renderers:
            raise UsageError(f"strategy {label} is named twice")
        renderers[label], encoders[label] = renderer, encoder
    if not renderers:
        raise UsageError("no strategies named")
    return renderers, encoders


def default_strategies(run: Sequence[tuple[Any, Any]]) -> list[str]:
    """`report`'s strategies when none are named: the run's own encoder, the default encoder, every baseline."""
    own = run[-1][1].encoder if run else None
    label = version_label(own) if own else None
    return [*([label] if label and label != DEFAULT_LABEL else []), *DEFAULT_STRATEGIES]


def cache_series(data: dict[str, Any]) -> dict[str, dict[str, dict[str, list]]]:
    """Per cache model and strategy, the per-turn read, written and uncached tokens and effective cost.

    Taken as they are from the per-model billings of compare's data (`cache`).
    """
    keys = {
        "read": "read_tokens",
        "written": "written_tokens",
        "uncached": "uncached_tokens",
        "cost": "effective_cost",
    }
    return {
        model: {
            s: {k: [c[s][field] for c in m["contexts"]] for k, field in keys.items()}
            for s in data["strategies"]
        }
        for model, m in data["cache"].items()
    }


def budgets(encoders: dict[str, str | None]) -> dict[str, int]:
    """The context budget (characters) of each strategy that has one (v11 and later)."""
    from ..encoders import get_encoder

    out = {}
    for label, encoder in encoders.items():
        budget = getattr(get_encoder(encoder), "budget", None) if encoder else None
        if budget is not None:
            out[label] = budget
    return out


def report_data(
    directory: str,
    strategies: Sequence[str] | None = None,
    *,
    cache: Sequence[str] = DEFAULT_CACHE,
    cache_options: CacheOptions | None = None,
    recall: bool = True,
    encoding: str = DEFAULT_ENCODING,
    cached_price: float = DEFAULT_CACHED_PRICE,
) -> dict[str, Any]:
    """Everything the page shows: compare's data, the cache series, budgets and the viewer's texts.

    `cache` names the cache models (`workingset.compare.billing`), `DEFAULT_CACHE` when empty;
    `strategies` are `default_strategies` when None.
    """
    from ..compare.tables import run_data
    from .record import turn_records
    from .viewer import recording, view_data

    get_encoding(encoding)
    models = model_names(cache) or DEFAULT_CACHE
    options = cache_options or CacheOptions(cached_price=cached_price)
    run = read_run(directory)
    strategies = default_strategies(run) if strategies is None else strategies
    renderers, encoders = resolve_strategies(strategies, read_fixed_prompt(directory))
    contexts = [ctx for _, ctx in run]
    sent: dict[str, list] = {name: [] for name in renderers}
    recorded = {name: recording(renderer, sent[name]) for name, renderer in renderers.items()}
    result = compare_contexts(contexts, recorded, recall=recall, encoding=encoding, cached_price=cached_price,
                              cache=models, cache_options=options, retries=read_retries(directory, contexts))  # fmt: skip
    data = run_data(directory, run, result, recall=recall, availability=True)
    series = cache_series(data)
    used = use_data_of(directory, contexts, renderers, result, recall=recall, encoding=encoding,
                       cache=models, cache_options=options)  # fmt: skip
    return {
        "compare": data, "series": series, "budgets": budgets(encoders), "own": own_strategy(contexts, encoders),
        "verdicts": {model: verdict_of(data, model, used) for model in data["cache"]},
        "use": used, "tradeoff": {model: tradeoff_figure(used, model) for model in data["cache"]},
        "record": turn_records(directory, [ctx.request_id for ctx in contexts]),  # None: a plain run
        "viewer": view_data(contexts, encoders, sent, series, recall=recall, encoding=encoding),
    }  # fmt: skip


def own_strategy(contexts: Sequence[Any], encoders: dict[str, str | None]) -> str | None:
    """The strategy that is the run's own encoder (its last context's), which the viewer opens on; None if not shown."""
    if not contexts:
        return None
    return next((label for label, enc in encoders.items() if enc == contexts[-1].encoder), None)


def use_data_of(directory: str, contexts: Sequence[Any], renderers: dict[str, Renderer], result: Any, *,
                recall: bool, encoding: str, cache: Sequence[str], cache_options: CacheOptions) -> dict[str, Any]:  # fmt: skip
    """`compare --use --json`'s objects for the run (`use`, `with_recalls`), with its strategies."""
    from ..compare.recalls import compare_use
    from ..compare.use_tables import use_data

    uc = compare_use(contexts, renderers, fixed=read_fixed_prompt(directory), recall=recall, encoding=encoding,
                     cache=cache, cache_options=cache_options, retries=read_retries(directory, contexts))  # fmt: skip
    return {"strategies": list(renderers), **use_data(uc, result)}


def verdict_of(data: dict[str, Any], model: str, used: dict[str, Any] | None = None) -> str:
    """The first screen's verdict under one cache model: with `used`, the bill with recalls, and as recorded beside it."""
    from ..compare.verdict import WITH_RECALLS, cheapest

    costs = {s: data["cache"][model]["total"][s]["effective_cost"] for s in data["strategies"]}
    recorded = cheapest(costs, data["base"], f"billed under the {model} cache model")
    if used is None:
        return recorded
    bills = {s: used["with_recalls"][model][s]["effective_cost"] for s in data["strategies"]}
    how = f"with recalls: billed under the {model} cache model, {WITH_RECALLS}"
    return f"{cheapest(bills, data['base'], how)}; as recorded: {recorded}"


def check_output(out: str) -> None:
    """Fail before any rendering when `out` cannot be written: a directory, or in no directory.

    The errors are the file-system boundary's codes (`files.os_error`): `is_a_directory`,
    `not_found`, `not_a_directory`.
    """
    path = Path(out)
    if path.is_dir():
        raise os_error(
            IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), out), out, "write"
        )
    if not path.parent.is_dir():
        code = errno.ENOTDIR if path.parent.exists() else errno.ENOENT
        raise os_error(OSError(code, os.strerror(code), str(path.parent)), out, "write")


def write_report(out: str, data: dict[str, Any], html: str | None = None) -> int:
    """Write the page for `report_data`'s data (or `html`, a page made already) to `out` whole, through a temporary file.

    Returns its size in bytes.
    """
    from .page import render_page

    page = (render_page(data) if html is None else html).encode("utf-8")
    tmp = Path(f"{out}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(page)
        os.replace(tmp, out)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise os_error(err, out, "write") from None
    return len(page)
