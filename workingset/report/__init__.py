"""`workingset report`: one self-contained HTML file showing a run's costs and contexts.

The numbers are `compare --json`'s data for the chosen strategies, embedded as they are
(the page's charts read them through `cache_series`); the context viewer's texts are
re-rendered here and stored once (`texts`). The page is `page.render_page`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..bench import DEFAULT_CACHED_PRICE, Renderer, baseline_renderers, compare_contexts, version_label, version_renderer
from ..errors import UnknownEncoder, UsageError, WorkingsetError
from ..runs import read_run
from ..tokens import DEFAULT_ENCODING, get_encoding

DEFAULT_STRATEGIES = ("v7", "v10", "v11", "full-transcript", "masking-10", "last-5")
CACHE_MODELS = ("ideal",)  # the models `compare` bills under


def resolve_strategies(names: Sequence[str]) -> tuple[dict[str, Renderer], dict[str, str | None]]:
    """Resolve strategy names to compare's renderers and to encoder names (None for a baseline).

    An encoder is named as `compare` names it (`v11`, `v11:budget=60000`); a baseline by
    its name in `workingset.baselines`. The first is the base the changes are relative to.
    """
    baselines = baseline_renderers()
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
                raise UnknownEncoder(f"no strategy {name!r}: {err.message}; or a baseline: {', '.join(baselines)}",
                                     code="unknown_strategy", details={"baselines": list(baselines)}) from None
            renderer, encoder = version_renderer(label), "investigation_project_" + label
        if label in renderers:
            raise UsageError(f"strategy {label} is named twice")
        renderers[label], encoders[label] = renderer, encoder
    if not renderers:
        raise UsageError("no strategies named")
    return renderers, encoders


def check_cache_models(models: Sequence[str]) -> tuple[str, ...]:
    """Return the cache models named, in order and without repeats; an unknown one lists the valid."""
    out: list[str] = []
    for model in models:
        if model not in CACHE_MODELS:
            raise UsageError(f"no cache model {model!r}; available: {', '.join(CACHE_MODELS)}",
                             details={"valid": list(CACHE_MODELS)})  # fmt: skip
        if model not in out:
            out.append(model)
    return tuple(out or CACHE_MODELS[:1])


def cache_series(data: dict[str, Any]) -> dict[str, dict[str, dict[str, list]]]:
    """Per cache model and strategy, the per-turn read, written and uncached tokens and effective cost.

    Taken from compare's data as it is: the per-model billings under `cache` where compare
    was given cache models, else its own prefix rule (`ideal`: cached tokens are read,
    nothing is written).
    """
    strategies = data["strategies"]
    if "cache" in data:
        return {
            model: {s: {"read": [c[s]["read_tokens"] for c in m["contexts"]],
                        "written": [c[s]["written_tokens"] for c in m["contexts"]],
                        "uncached": [c[s]["uncached_tokens"] for c in m["contexts"]],
                        "cost": [c[s]["effective_cost"] for c in m["contexts"]]} for s in strategies}
            for model, m in data["cache"].items()
        }  # fmt: skip
    sizes = [c["sizes"] for c in data["contexts"]]
    return {"ideal": {s: {"read": [z[s]["cached_tokens"] for z in sizes], "written": [0] * len(sizes),
                          "uncached": [z[s]["uncached_tokens"] for z in sizes],
                          "cost": [z[s]["effective_cost"] for z in sizes]} for s in strategies}}  # fmt: skip


def budgets(encoders: dict[str, str | None]) -> dict[str, int]:
    """The context budget (characters) of each strategy that has one (v11)."""
    from ..encoders import get_encoder

    out = {}
    for label, encoder in encoders.items():
        budget = getattr(get_encoder(encoder), "budget", None) if encoder else None
        if budget is not None:
            out[label] = budget
    return out


def report_data(
    directory: str,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    *,
    cache: Sequence[str] = (),
    recall: bool = True,
    encoding: str = DEFAULT_ENCODING,
    cached_price: float = DEFAULT_CACHED_PRICE,
) -> dict[str, Any]:
    """Everything the page shows: compare's data, the cache series, budgets and the viewer's texts."""
    from ..bench_report import run_data
    from .viewer import view_data

    get_encoding(encoding)
    models = check_cache_models(cache)
    renderers, encoders = resolve_strategies(strategies)
    run = read_run(directory)
    contexts = [ctx for _, ctx in run]
    result = compare_contexts(contexts, renderers, recall=recall, encoding=encoding, cached_price=cached_price)
    data = run_data(directory, run, result, recall=recall)
    series = {m: s for m, s in cache_series(data).items() if m in models}
    return {
        "compare": data, "series": series, "budgets": budgets(encoders),
        "viewer": view_data(contexts, encoders, series, recall=recall, encoding=encoding),
    }  # fmt: skip


def check_output(out: str) -> None:
    """Fail before any rendering when `out` cannot be written (no such directory, or a directory)."""
    path = Path(out)
    if path.is_dir() or not path.parent.is_dir():
        why = "is a directory" if path.is_dir() else f"no directory {str(path.parent)!r}"
        raise WorkingsetError(f"cannot write {out}: {why}", code="output_unavailable", details={"out": out})


def write_report(out: str, data: dict[str, Any]) -> int:
    """Write the page for `report_data`'s data to `out`; return its size in bytes."""
    from .page import render_page

    page = render_page(data).encode("utf-8")
    try:
        Path(out).write_bytes(page)
    except OSError as err:
        raise WorkingsetError(f"cannot write {out}: {err.strerror}", code="output_unavailable", details={"out": out}) from None
    return len(page)
