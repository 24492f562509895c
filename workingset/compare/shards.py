"""The outputs `compare --merge` joins, checked: each one's shape, then that they are one complete, consistent set.

An output of `compare RUN… --shard I/N --json` records its shard (`aggregate.shard`, `I/N`)
and, since this check, the number of runs of the whole list it was cut from
(`aggregate.shard_runs`). Before merging, each output is decoded strictly (`Shard`: a field
missing, of the wrong type or, at the top and in the aggregate, unknown is `invalid_file`
with its JSON path), its rows must hold every cost model and strategy of its options, its
aggregate must be what its rows give (an edited cost is found), and its runs must be its
rows' runs. Then the set: the same options, shards `1/N` … `N/N` each exactly once, each
the slice of the sorted run list its number says, and with `shard_runs`, the whole list.
An output of this format made before `shard_runs` was recorded is still merged, without the
count check; outputs with no `shard` (made without `--shard`) are not a set of shards.

Per-strategy objects (a row's costs, an aggregate model's entries) and a run's object are
read for the fields named here and may hold more: a new field is one line in a Struct.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import msgspec

from ..errors import InvalidFile, UsageError
from ..io.limits import MAX_COST, MAX_COUNT
from ..io.numbers import ascii_int

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
Cost = Annotated[float, msgspec.Meta(ge=0, le=MAX_COST)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class Options(msgspec.Struct):
    """The options that decide every number (`many.settings`); other keys are kept and compared."""

    strategies: Annotated[list[Name], msgspec.Meta(min_length=1)]
    encoding: str
    cached_price: float
    recall: bool
    cache: list[Name]


class Largest(msgspec.Struct):
    tokens: Count
    request_id: str


class Row(msgspec.Struct):
    """One run's row (`many.row`)."""

    run: Name
    contexts: Count
    cost: dict[str, dict[str, Cost]]
    largest: dict[str, Largest | None]


class Aggregate(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    options: Options
    base: str
    runs: Count
    contexts: Count
    models: dict[str, dict[str, dict[str, Any]]]
    largest: dict[str, Any]
    rows: list[Row]
    shard: str | None = None
    shard_runs: Count | None = None
    use: dict[str, Any] | None = None  # `--use`: what the rows' steps used
    with_recalls: dict[str, Any] | None = None  # `--use`: the bill with recalls


class RunObject(msgspec.Struct):
    run: Name


class Shard(msgspec.Struct, forbid_unknown_fields=True):
    runs: list[RunObject]
    aggregate: Aggregate


_SHARD = msgspec.json.Decoder(Shard)


def _bad(name: str, message: str, path: str) -> InvalidFile:
    return InvalidFile(f"{name}: {message}", details={"file": name, "path": path})


def check_one(
    name: str,
    out: Mapping[str, Any],
    fmt: str,
    prefix: str,
    aggregate: Callable[..., dict[str, Any]],
) -> tuple[int, int] | None:
    """Refuse an output that is not a whole, self-consistent output of `compare … --json`; its shard (I, N) or None.

    `aggregate` is `many.aggregate`, which recomputes the aggregate from the rows.
    """
    try:
        parsed = msgspec.convert(out, Shard)
    except msgspec.ValidationError as exc:
        where = str(exc).rpartition(" - at `")[2].rstrip("`") if " - at `" in str(exc) else "$"
        raise _bad(
            name, f"not an output of compare RUN… --json ({str(exc).partition(' - at')[0]})", where
        ) from None
    agg = parsed.aggregate
    if agg.format != fmt:
        raise _bad(
            name,
            f"not an output of compare RUN… --json (no aggregate of format {fmt})",
            "$.aggregate.format",
        )
    strategies, models = agg.options.strategies, [prefix, *agg.options.cache]
    for i, row in enumerate(agg.rows):
        for model in models:
            if set(row.cost.get(model, {})) != set(strategies):
                raise _bad(name, f"row {row.run!r} lacks the costs of {model} for its strategies",
                           f"$.aggregate.rows[{i}].cost.{model}")  # fmt: skip
        if set(row.largest) != set(strategies):
            raise _bad(name, f"row {row.run!r} lacks the largest context of its strategies",
                       f"$.aggregate.rows[{i}].largest")  # fmt: skip
    if [r.run for r in parsed.runs] != [r.run for r in agg.rows]:
        raise _bad(
            name,
            f"its {len(parsed.runs)} runs are not its {len(agg.rows)} aggregate rows",
            "$.aggregate.rows",
        )
    raw = out["aggregate"]
    again = aggregate(raw["rows"], raw["options"])
    for key in ("base", "runs", "contexts", "largest", "use", "with_recalls"):
        if raw.get(key) != again.get(key):
            raise _bad(
                name,
                f"its aggregate {key} is not what its rows give (edited?)",
                f"$.aggregate.{key}",
            )
    for model, per in again["models"].items():
        for s, entry in per.items():
            stored = raw["models"].get(model, {}).get(s, {})
            for field, value in entry.items():  # the fields `aggregate` makes; others are another's
                if stored.get(field) != value:
                    raise _bad(name, f"its {model} {field} of {s} is not what its rows give (edited?)",
                               f"$.aggregate.models.{model}.{s}.{field}")  # fmt: skip
    return None if agg.shard is None else _shard(name, agg.shard)


def shard_of(spec: str) -> tuple[int, int] | None:
    """`I/N` as (I, N) with 1 <= I <= N, each 1 to 18 ASCII digits; None for anything else."""
    index, _, count = (ascii_int(part) for part in spec.partition("/"))
    if index is None or count is None or not 1 <= index <= count:
        return None
    return index, count


def _shard(name: str, spec: str) -> tuple[int, int]:
    got = shard_of(spec)
    if got is None:
        raise _bad(
            name, f"its shard {spec[:40]!r} is not I/N with 1 <= I <= N", "$.aggregate.shard"
        )
    return got


def check_set(
    names: Sequence[str],
    outputs: Sequence[Mapping[str, Any]],
    shards: Sequence[tuple[int, int] | None],
) -> None:
    """Refuse outputs that are not the shards 1/N … N/N of one run list, each the slice its number says."""
    if len(outputs) == 1 and shards[0] is None:
        return  # one whole output: merging it recomputes its aggregate
    missing = [n for n, s in zip(names, shards) if s is None]
    if missing:
        raise UsageError(f"{missing[0]} is no shard (no aggregate.shard): --merge joins the outputs of "
                         "compare RUN… --shard I/N --json, one per I", details={"file": missing[0]})  # fmt: skip
    counts = sorted({s[1] for s in shards if s is not None})
    if len(counts) > 1:
        raise UsageError(f"the shards are cut {' and '.join(f'{n} ways' for n in counts)}: merge one --shard I/N set",
                         details={"counts": counts})  # fmt: skip
    count = counts[0]
    by_index: dict[int, str] = {}
    for name, s in zip(names, shards):
        assert s is not None
        if s[0] in by_index:
            raise UsageError(f"shard {s[0]}/{count} is in more than one output: {by_index[s[0]]}, {name}",
                             details={"shard": f"{s[0]}/{count}"})  # fmt: skip
        by_index[s[0]] = name
    absent = [i for i in range(1, count + 1) if i not in by_index]
    if absent:
        raise UsageError(f"shard{'s' * (len(absent) > 1)} {', '.join(f'{i}/{count}' for i in absent)} "
                         f"missing: a merge needs every shard of the set", details={"missing": absent})  # fmt: skip
    order = sorted(range(len(outputs)), key=lambda k: shards[k][0])  # type: ignore[index]
    totals = {outputs[k]["aggregate"].get("shard_runs") for k in order}
    total = sum(len(outputs[k]["aggregate"]["rows"]) for k in order)
    if totals - {None} and totals != {total}:
        raise UsageError(f"the shards hold {total} runs, but they were cut from {sorted(totals - {None})} runs",
                         details={"runs": total})  # fmt: skip
    last: str | None = None
    for k in order:
        rows = sorted(r["run"] for r in outputs[k]["aggregate"]["rows"])
        i = shards[k][0]  # type: ignore[index]
        if totals == {total} and len(rows) != i * total // count - (i - 1) * total // count:
            raise _bad(
                names[k], f"shard {i}/{count} of {total} runs holds {len(rows)}", "$.aggregate.rows"
            )
        if rows and last is not None and rows[0] <= last:
            raise _bad(names[k], f"shard {i}/{count} holds {rows[0]}, which sorts before a run of the shard before it",
                       "$.aggregate.rows")  # fmt: skip
        last = rows[-1] if rows else last
