"""`compare --jobs N`: the strategies of a comparison measured in N worker processes.

Each strategy's measures depend only on its own texts in run order (the shared prefix is
with the previous text of the same strategy), so strategies are independent: each worker
process runs `compare_contexts` for one strategy at a time and the results are joined in
the command line's column order. The numbers are exactly those of one process (a test
checks it). Workers are forked, so they start with the run already read; each opens its
own connection to the on-disk token cache. Without `--jobs`, `compare` uses the CPUs this
process may run on, at most `MAX_DEFAULT_JOBS` (`default_jobs`).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from ..errors import UsageError
from ..model.state import StoredContext
from .engine import Comparison, Renderer, compare_contexts

# What the forked workers read: set by `compare_parallel` before the pool starts.
_WORK: dict[str, Any] = {}
MAX_DEFAULT_JOBS = (
    8  # past this, one worker's slowest strategy bounds the run and workers only add memory
)


def default_jobs() -> int:
    """`compare`'s worker processes without `--jobs`: the CPUs this process may run on, 1 to `MAX_DEFAULT_JOBS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux: every CPU of the machine
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_JOBS))


def _measure(name: str) -> Comparison:
    from ..tokens.count import counted_on_disk

    with counted_on_disk(_WORK["token_cache"]):
        return compare_contexts(
            _WORK["contexts"], {name: _WORK["renderers"][name]}, **_WORK["options"]
        )


def _join(parts: Mapping[str, Comparison], order: Sequence[str]) -> Comparison:
    """One comparison from one per strategy: every per-strategy mapping joined in `order`."""
    first = parts[order[0]]
    joined: dict[str, Any] = {"strategies": tuple(order)}
    for f in dataclasses.fields(first):
        value = getattr(first, f.name)
        if f.name == "strategies" or not isinstance(value, Mapping):
            continue
        if set(value) == {order[0]}:  # keyed by strategy
            joined[f.name] = {name: getattr(parts[name], f.name)[name] for name in order}
        else:  # keyed by something else (a cache model), then by strategy
            joined[f.name] = {
                key: {name: getattr(parts[name], f.name)[key][name] for name in order}
                for key in value
            }
    return dataclasses.replace(first, **joined)


def compare_parallel(
    contexts: Sequence[StoredContext],
    renderers: Mapping[str, Renderer],
    jobs: int,
    *,
    step: Callable[[int], None] | None = None,
    token_cache: bool = True,
    **options: Any,
) -> Comparison:
    """`compare_contexts` with the strategies spread over `jobs` processes (1: in this one)."""
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if jobs == 1 or len(renderers) == 1:
        from ..tokens.count import counted_on_disk

        with counted_on_disk(token_cache):
            return compare_contexts(contexts, renderers, step=step, **options)
    _WORK.update(contexts=contexts, renderers=renderers, options=options, token_cache=token_cache)
    parts: dict[str, Comparison] = {}
    try:
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(renderers)), mp_context=multiprocessing.get_context("fork")
        ) as pool:
            futures = {pool.submit(_measure, name): name for name in renderers}
            for future in as_completed(futures):
                parts[futures[future]] = future.result()
                if step is not None:
                    step(len(contexts))
    finally:
        _WORK.clear()
    return _join(parts, list(renderers))
