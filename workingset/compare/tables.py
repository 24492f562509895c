"""A `Comparison` as tables (tabulate) or as JSON-ready data, with the same numbers in both.

Percentages are the change from the base strategy (the first one), rounded to one decimal;
effective cost is rounded to one decimal; counts are exact.
"""

from __future__ import annotations

from typing import Any

from tabulate import SEPARATING_LINE, tabulate

from .availability import Availability
from .billing import Billing
from .engine import SECTION_ORDER, UNASSIGNED, Comparison, Size, Totals, change_percent


def _pct(base: float, value: float) -> float | None:
    change = change_percent(base, value)
    return None if change is None else round(change, 1)


def _numbers(size: Size | Totals, cost: float) -> dict[str, Any]:
    """One context's or the run's numbers, as the JSON output names them."""
    return {
        "chars": size.chars, "tokens": size.tokens, "cached_tokens": size.cached,
        "uncached_tokens": size.uncached, "effective_cost": round(cost, 1),
    }  # fmt: skip


def _size_dict(size: Size, cached_price: float) -> dict[str, Any]:
    return _numbers(size, size.cost(cached_price))


CHANGE_KEYS = (
    "chars",
    "tokens",
    "uncached_tokens",
    "effective_cost",
)  # the numbers `change_percent` compares


def _changes(base: dict[str, Any], other: dict[str, Any]) -> dict[str, float | None]:
    return {k: _pct(base[k], other[k]) for k in CHANGE_KEYS}


def to_data(
    cmp: Comparison, *, sections: bool = False, availability: bool = False
) -> dict[str, Any]:
    """Return the comparison as plain data (the `--json` output, minus what the CLI adds)."""
    base = cmp.strategies[0]
    contexts = []
    for i, label in enumerate(cmp.labels):
        sizes = {s: _size_dict(cmp.sizes[s][i], cmp.cached_price) for s in cmp.strategies}
        if sections:
            for s in cmp.strategies:
                sizes[s]["sections"] = cmp.sections(s, i)
        contexts.append({
            "request_id": label, "hypothesis": cmp.hypotheses[i], "sizes": sizes,
            "change_percent": {s: _changes(sizes[base], sizes[s]) for s in cmp.strategies[1:]},
        })  # fmt: skip
    total, last = {}, {}
    for s in cmp.strategies:
        t = cmp.total(s)
        total[s] = _numbers(t, t.cost)
        last[s] = _size_dict(cmp.last(s), cmp.cached_price) if cmp.labels else None
    for block in (total, last):
        for s in cmp.strategies[1:]:
            row, first = block[s], block[base]
            if row is not None:
                assert first is not None  # a block's rows are all there, or all None (no contexts)
                row["change_percent"] = _changes(first, row)
    data: dict[str, Any] = {
        "encoding": cmp.encoding, "cached_price": cmp.cached_price, "base": base,
        "strategies": list(cmp.strategies), "contexts": contexts, "total": total, "last": last,
    }  # fmt: skip
    if cmp.caches:
        data["cache"] = _cache_data(cmp)
    if availability and cmp.availability:
        data["availability"] = {
            s: availability_data(cmp, s) for s in cmp.strategies if s in cmp.availability
        }
    if sections:
        data["sections"] = {
            "total": {s: cmp.sections(s) for s in cmp.strategies},
            "last": {
                s: cmp.sections(s, len(cmp.labels) - 1) if cmp.labels else {}
                for s in cmp.strategies
            },
        }
    return data


def _billing(bill: Billing) -> dict[str, Any]:
    return {"tokens": bill.tokens, "uncached_tokens": bill.uncached, "written_tokens": bill.written,
            "read_tokens": bill.read, "effective_cost": round(bill.cost, 1)}  # fmt: skip


def _cache_data(cmp: Comparison) -> dict[str, Any]:
    """Per cache model: its options, and per strategy the billing of each context, the total and the last."""
    opts = cmp.cache_options
    assert opts is not None
    base = cmp.strategies[0]
    out: dict[str, Any] = {}
    for model, runs in cmp.caches.items():
        total = {s: _billing(cmp.cache_total(model, s)) for s in cmp.strategies}
        for s in cmp.strategies[1:]:
            total[s]["change_percent"] = _pct(
                total[base]["effective_cost"], total[s]["effective_cost"]
            )
        out[model] = {
            "ttl": None if model == "ideal" else "30m" if model == "openai-5.6" else opts.ttl,
            "cache_min": None if model == "ideal" else opts.cache_min,
            "cached_price": opts.cached_price, "write_price": None if model == "ideal" else opts.write(model),
            "timed": cmp.timed, "total": total,
            "last": {s: _billing(runs[s][-1]) if runs[s] else None for s in cmp.strategies},
            "contexts": [{s: _billing(runs[s][i]) for s in cmp.strategies} for i in range(len(cmp.labels))],
        }  # fmt: skip
    return out


def _cache_caption(cmp: Comparison, model: str) -> str:
    opts = cmp.cache_options
    assert opts is not None
    price = f"reads {opts.cached_price:g}x"
    if model == "ideal":
        return f"Cache model ideal: the longest common token prefix with the previous context is read; {price}, nothing written"
    where = {
        "anthropic": "each request body's cache_control breakpoints, reads at a block boundary within 20 blocks of one",
        "openai-auto": "models before GPT-5.6: every prompt an entry, reads in 128-token blocks",
        "openai-5.6": "GPT-5.6 family: entries at the explicit and implicit breakpoints, matched exactly",
    }.get(model, model)  # fmt: skip
    ttl = "30m" if model == "openai-5.6" else opts.ttl
    when = (
        "the contexts' capture times"
        if cmp.timed
        else "no distinct times in the run: all turns taken to be within the TTL"
    )
    return (f"Cache model {model}: {where}; TTL {ttl} ({when}); nothing under {opts.cache_min:,} tokens "
            f"cached; {price}, writes {opts.write(model):g}x")  # fmt: skip


def _cache_model_table(cmp: Comparison, model: str) -> str:
    """One row per strategy: uncached, written, read and effective cost, total and last context."""
    base = cmp.cache_total(model, cmp.strategies[0])
    rows = []
    for s in cmp.strategies:
        t = cmp.cache_total(model, s)
        change = "" if s == cmp.strategies[0] else _p(_pct(base.cost, t.cost))
        row = [s, _n(t.uncached), _n(t.written), _n(t.read), _n(round(t.cost, 1)), change]
        if cmp.labels:
            last = cmp.caches[model][s][-1]
            row += [_n(last.uncached), _n(last.written), _n(last.read), _n(round(last.cost, 1))]
        rows.append(row)
    headers = ["strategy", "uncached", "written", "read", "effective cost", "change"]
    headers += ["last uncached", "last written", "last read", "last cost"] if cmp.labels else []
    return _table(headers, rows)


def _n(value: int | float) -> str:
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


WIDTH = 120  # the widest a text table may be: wider ones are cut into column groups


def _table(headers: list[str], rows: list, left: int = 1) -> str:
    """A table whose first `left` columns are its keys; wider than `WIDTH`, one table per column group, keys in each."""
    align = ["left"] * left + ["right"] * (len(headers) - left)
    whole = tabulate(
        rows, headers=headers, tablefmt="simple", colalign=align, disable_numparse=True
    )
    if max(map(len, whole.splitlines()), default=0) <= WIDTH or len(headers) <= left + 1:
        return whole
    cells = [r for r in rows if r is not SEPARATING_LINE]

    def width(col: int) -> int:  # tabulate pads a header by 2, and sets columns 2 apart
        return max([len(headers[col]) + 2, *(len(str(r[col])) for r in cells)]) + 2

    keys = sum(width(c) for c in range(left))
    groups: list[list[int]] = [[]]
    for col in range(left, len(headers)):
        if groups[-1] and keys + sum(width(c) for c in groups[-1]) + width(col) > WIDTH:
            groups.append([])
        groups[-1].append(col)
    parts = []
    for group in groups:
        cols = [*range(left), *group]
        part = [r if r is SEPARATING_LINE else [r[c] for c in cols] for r in rows]
        parts.append(tabulate(part, headers=[headers[c] for c in cols], tablefmt="simple",
                              colalign=[align[c] for c in cols], disable_numparse=True))  # fmt: skip
    return "\n\n".join(parts)


def _summary_rows(cmp: Comparison, field: str) -> list:
    """Per-context rows then total and last, of one Size field, one column per strategy."""
    rows: list = []
    for i, label in enumerate(cmp.labels):
        rows.append(
            [label, cmp.hypotheses[i]]
            + [_n(getattr(cmp.sizes[s][i], field)) for s in cmp.strategies]
        )
    rows.append(SEPARATING_LINE)
    rows.append(["total", ""] + [_n(getattr(cmp.total(s), field)) for s in cmp.strategies])
    if cmp.labels:
        rows.append(
            ["last", cmp.hypotheses[-1]] + [_n(getattr(cmp.last(s), field)) for s in cmp.strategies]
        )
    return rows


def _pair_table(cmp: Comparison) -> str:
    b, c = cmp.strategies
    rows: list = []

    def row(label: str, hyp: str, x: Any, y: Any) -> list:
        return [label, hyp, _n(x.chars), _n(y.chars), _p(_pct(x.chars, y.chars)),
                _n(x.tokens), _n(y.tokens), _p(_pct(x.tokens, y.tokens))]  # fmt: skip

    for i, label in enumerate(cmp.labels):
        rows.append(row(label, cmp.hypotheses[i], cmp.sizes[b][i], cmp.sizes[c][i]))
    rows.append(SEPARATING_LINE)
    rows.append(row("total", "", cmp.total(b), cmp.total(c)))
    if cmp.labels:
        rows.append(row("last", cmp.hypotheses[-1], cmp.last(b), cmp.last(c)))
    headers = [
        "context",
        "hyp",
        f"{b} chars",
        f"{c} chars",
        "change",
        f"{b} tokens",
        f"{c} tokens",
        "change",
    ]
    return _table(headers, rows, left=2)


def _cache_table(cmp: Comparison) -> str:
    headers = ["context", "hyp"] + [f"{s} {k}" for s in cmp.strategies for k in ("cached", "new")]
    rows: list = []
    for i, label in enumerate(cmp.labels):
        cells = [
            x
            for s in cmp.strategies
            for x in (_n(cmp.sizes[s][i].cached), _n(cmp.sizes[s][i].uncached))
        ]
        rows.append([label, cmp.hypotheses[i]] + cells)
    rows.append(SEPARATING_LINE)
    rows.append(
        ["total", ""]
        + [_n(x) for s in cmp.strategies for x in (cmp.total(s).cached, cmp.total(s).uncached)]
    )
    if cmp.labels:
        last = [_n(x) for s in cmp.strategies for x in (cmp.last(s).cached, cmp.last(s).uncached)]
        rows.append(["last", cmp.hypotheses[-1]] + last)
    return _table(headers, rows, left=2)


def _overview(cmp: Comparison) -> str:
    base = cmp.strategies[0]
    tb = cmp.total(base)
    lb = cmp.last(base) if cmp.labels else None
    rows = []
    for s in cmp.strategies:
        t = cmp.total(s)

        def change(base_value: float, value: float, s: str = s) -> str:
            # The base is what the changes are relative to: its change cells stay empty.
            return "" if s == base else _p(_pct(base_value, value))

        hit = f"{100.0 * t.cached / t.tokens:.1f}%" if t.tokens else "n/a"
        last = [_n(cmp.last(s).tokens), change(lb.tokens, cmp.last(s).tokens)] if lb else ["", ""]
        rows.append([s, _n(t.chars), change(tb.chars, t.chars), _n(t.tokens), change(tb.tokens, t.tokens),
                     _n(t.cached), _n(t.uncached), hit, _n(round(t.cost, 1)), change(tb.cost, t.cost)] + last)  # fmt: skip
    headers = ["strategy", "chars", "change", "tokens", "change", "cached", "new", "cached share",
               "effective cost", "change", "last tokens", "change"]  # fmt: skip
    return _table(headers, rows)


def _sections_table(cmp: Comparison, index: int | None) -> str:
    per = {s: cmp.sections(s, index) for s in cmp.strategies}
    seen = {c for d in per.values() for c in d}
    order = [c for c in SECTION_ORDER if c in seen] + sorted(
        seen - set(SECTION_ORDER) - {UNASSIGNED}
    )
    order += [UNASSIGNED] if UNASSIGNED in seen else []
    rows = []
    for category in order:
        cells = []
        for s in cmp.strategies:
            chars, whole = per[s].get(category), sum(per[s].values())
            cells.append("" if chars is None else f"{chars:,} ({100.0 * chars / whole:.0f}%)")
        rows.append([category] + cells)
    return _table(["section"] + list(cmp.strategies), rows)


def _wrap(caption: str) -> str:
    """A caption in lines of at most `WIDTH` characters."""
    import textwrap

    return textwrap.fill(caption, WIDTH, break_long_words=False, break_on_hyphens=False)


def to_text(
    cmp: Comparison,
    *,
    sections: bool = False,
    recall: bool = True,
    availability: bool = False,
    summary: bool = False,
) -> str:
    """Render the comparison as the tables `workingset compare` prints (`summary`: totals only)."""
    base = cmp.strategies[0]
    n = len(cmp.labels)
    head = (f"{n} contexts; tokens: {cmp.encoding}; recall selections "
            f"{'kept' if recall else 'removed (--no-recall)'}; changes relative to {base}")  # fmt: skip
    parts = [_wrap(head), ""]
    if summary:
        pass  # no per-context tables
    elif len(cmp.strategies) == 2:
        parts += ["Size per context", _pair_table(cmp), ""]
    else:
        for title, field in (("Characters per context", "chars"), ("Tokens per context", "tokens")):
            rows = _summary_rows(cmp, field)
            parts += [title, _table(["context", "hyp"] + list(cmp.strategies), rows, left=2), ""]
    cache_title = "Prompt cache per context (cached: leading tokens shared with the previous context; new: the rest)"
    if summary:
        pass
    elif len(cmp.strategies) == 2:
        parts += [cache_title, _cache_table(cmp), ""]
    else:
        rows = _summary_rows(cmp, "uncached")
        parts += ["New tokens per context (not served by a prefix cache)",
                  _table(["context", "hyp"] + list(cmp.strategies), rows, left=2), ""]  # fmt: skip
    parts += [
        f"Totals (effective cost in full-price tokens, cached tokens at {cmp.cached_price:g}x the price)",
        _overview(cmp),
    ]  # fmt: skip
    for model in cmp.caches:
        parts += ["", _wrap(_cache_caption(cmp, model)), _cache_model_table(cmp, model)]
    if availability and cmp.availability:
        parts += ["", _wrap(AVAILABILITY_CAPTION), _availability_table(cmp)]
    if sections and n:
        parts += ["", "Characters per section, whole run", _sections_table(cmp, None)]
        parts += ["", "Characters per section, last context", _sections_table(cmp, n - 1)]
    return "\n".join(parts) + "\n"


AVAILABILITY_CAPTION = (
    "Availability (identifiers harvested from earlier evidence, summed over the contexts: visible in full, "
    "addressable by recall from an index row, or gone; lowest reachable share at any context)"
)


def _avail(a: Availability) -> dict[str, Any]:
    return {"visible": a.visible, "addressable": a.addressable, "gone": a.gone}


def availability_data(cmp: Comparison, strategy: str) -> dict[str, Any]:
    """One strategy's availability: per context, the total, and the lowest reachable share of any context."""
    per = cmp.availability[strategy]
    shares = [share for a in per if (share := a.share("reachable")) is not None]  # None: no total
    return {"contexts": [_avail(a) for a in per], "total": _avail(cmp.availability_total(strategy)),
            "min_reachable_share": min(shares) if shares else None}  # fmt: skip


def share_text(value: float | None) -> str:
    """A share (0..1) as a percentage with one decimal, or n/a."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def ratio_text(value: float | None) -> str:
    """A ratio to the base as `0.709x`, or n/a."""
    return "n/a" if value is None else f"{value:.3f}x"


def _availability_table(cmp: Comparison) -> str:
    rows = []
    for s in cmp.strategies:
        if s not in cmp.availability:
            continue
        total, data = cmp.availability_total(s), availability_data(cmp, s)
        rows.append([s, _n(total.visible), _n(total.addressable), _n(total.gone), share_text(total.share("visible")),
                     share_text(total.share("addressable")), share_text(total.share("gone")), share_text(data["min_reachable_share"])])  # fmt: skip
    headers = [
        "strategy",
        "visible",
        "addressable",
        "gone",
        "visible %",
        "addressable %",
        "gone %",
        "lowest reachable %",
    ]
    table = _table(headers, rows, left=1)
    if all(cmp.availability_total(s).total == 0 for s in cmp.availability):
        table += "\n" + _wrap(EMPTY_AVAILABILITY)
    return table


# Why the availability measure can be empty, said under its table instead of a row of n/a.
EMPTY_AVAILABILITY = (
    "n/a: no identifier was harvested from this run's earlier evidence (the harvest takes paths, hashes, "
    "error names and numbers with units; rows and prose without them give none, and a first context has no "
    "earlier evidence), so there is nothing to keep in view and no share to report."
)


def run_data(
    directory: str,
    run: list,
    cmp: Comparison,
    *,
    recall: bool,
    sections: bool = False,
    availability: bool = False,
) -> dict[str, Any]:
    """Return `compare --json`'s object for a run read by `runs.read_run` and its comparison."""
    data = {
        "run": directory,
        "recall": recall,
        **to_data(cmp, sections=sections, availability=availability),
    }
    for (path, _), entry in zip(run, data["contexts"]):
        entry["file"] = path.name
    return data


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    """`--summary --json`: a run's object without anything per context (its sizes, billings and availability)."""
    data.pop("contexts", None)
    for per in (*data.get("cache", {}).values(), *data.get("availability", {}).values()):
        if isinstance(per, dict):
            per.pop("contexts", None)
    return data
