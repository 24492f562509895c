"""The cache-true statements of the docs, recomputed: bug17 from the command, the corpus from RESULTS.md.

`tests/docs/test_results.py` requires every measured number of the README and the docs pages it
moved to (`DOC_PAGES`) to belong to a claim; these are the claims of docs/compare.md's
"Cache-true costs" section and of docs/encoders.md's v13. bug17's come from
`compare fixtures/bug17 --all --baselines --cache ideal,anthropic,openai-auto,openai-5.6 --json`; the
corpus ranges from the `cache` section of benchmarks/RESULTS.md, which its own check
reproduces from benchmarks/cache.py; the worked examples from `workingset.compare.billing.bill`.
"""

from __future__ import annotations

import json
import re
import sys

from tests.helpers.common import BUG17, ROOT, invoke
from workingset.compare.billing import CacheOptions, Prompt, bill, state_time
from workingset.runs.layout import read_run

sys.path.insert(0, str(ROOT / "benchmarks"))
import _results  # noqa: E402 (RESULTS.md's sections, read as the benchmarks write them)

VERSIONS = [f"v{n}" for n in range(1, 11)]  # the versions the README's losses paragraph speaks of
LONG_RUN = (
    "openhands-v1-sonnet4-pylint-167"  # of ../shared/corpus/all; the README speaks of it on its own
)


def _cache_section() -> str:
    return _results.sections()["cache"]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


def target_rows(version: str) -> dict[str, dict[str, str]]:
    """Per run: column -> cell of the cache section's table of `version` against issue 9's targets."""
    body = re.search(rf"^#### {version} against issue 9's targets.*?\n\n.*?\n\n(.*?)(?=\n\n|\Z)", _cache_section(),
                     re.S | re.M).group(1)  # fmt: skip
    lines = [line for line in body.splitlines() if line.startswith("|")]
    headers = _cells(lines[0])
    return {row[0]: dict(zip(headers, row)) for row in map(_cells, lines[2:])}


def _span(values: list[float], digits: int = 1) -> str:
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}"


def corpus_tables() -> dict[str, dict[str, dict[str, str]]]:
    """Per corpus run (not bug17, not the 167-step run): strategy -> column -> cell, from RESULTS.md's cache section."""
    runs = {}
    for name, body in re.findall(
        r"^### `([^`]+)`\n(.*?)(?=^### |\Z)", _cache_section(), re.S | re.M
    ):
        lines = [line for line in body.splitlines() if line.startswith("|")]
        headers = _cells(lines[0])
        runs[name] = {row[0]: dict(zip(headers, row)) for row in map(_cells, lines[2:])}
    runs.pop("fixtures/bug17")
    runs.pop(LONG_RUN)
    return runs


def _ratio(row: dict[str, str], model: str) -> float:
    return float(row[f"{model} vs transcript"].rstrip("x"))


def _split(row: dict[str, str], model: str) -> list[int]:
    return [int(x.replace(",", "")) for x in row[f"{model} uncached / written / read"].split(" / ")]


def _examples() -> list[str]:
    a = list(range(1300))
    run = [
        Prompt(a, time=0),
        Prompt(a[:1200] + [2**32 - 1] * 100, time=10),
        Prompt(a[:1000] + [5] * 500, time=20),
    ]
    first, second, third = bill("openai-auto", run)
    assert third.read == 0
    return [
        f"else {CacheOptions().cache_min:,})",
        f"a {first.tokens:,}-token prompt writes {first.written:,} ({first.written // 128} blocks), "
        f"{first.uncached} uncached, cost {first.cost:,.0f}",
        f"shares its first 1,200 tokens reads {second.read:,} ({second.read // 128} blocks), writes {second.written}, "
        f"leaves {second.uncached} uncached: cost {second.uncached} + {second.written} + 0.1 × {second.read:,} = {second.cost:.1f}",
        f"A prompt sharing 1,000 tokens reads nothing ({1000 // 128 * 128} is under {CacheOptions().cache_min:,})",
    ]


def budget_claims() -> list[str]:
    """What the README says of v13's default budget, from RESULTS.md's `v13_budget` section."""
    section = _results.sections()["v13_budget"]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    headers = [
        h for h in _cells(lines[0])[1:] if h[0].isdigit()
    ]  # the budgets; masking-10's column after them
    budgets = [int(h.split()[0].replace(",", "")) for h in headers]
    over = dict(
        zip(
            budgets,
            map(int, next(_cells(line) for line in lines if line.startswith("| runs over"))[1:]),
        )
    )
    default = next(b for b, h in zip(budgets, headers) if "default" in h)
    within = [b for b in budgets if over[b] == 0]
    others = [b for b in budgets if over[b]]
    head = (f"at {_and([f'{b:,}' for b in within])} characters every run stays within 1.1 times the transcript's cost, "
            if within else "at no budget measured does every run stay within 1.1 times the transcript's cost: ")  # fmt: skip
    claims = [
        head
        + f"at {_and([f'{b:,}' for b in others])} {_and([str(over[b]) for b in others])} runs do not"
    ]
    claims.append(f"the default, {default:,}, was the largest budget at which every run stayed within 1.1 times under "
                  f"the earlier cache model; billed as the provider bills it, {over[default]} "
                  f"{'run does' if over[default] == 1 else 'runs do'} not stay within it at {default:,}")  # fmt: skip
    return claims


def _short(name: str) -> str:
    """A corpus run as the README names it: `pylint-6386.traj.json`, `astropy-14309`, `pydicom-1458.traj`."""
    return name.split("-", 3 if name.count("-") >= 4 else 2)[-1]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def cache_claims() -> list[str]:
    """Every measured statement of the README's "Cache-true costs" section, as it must read."""
    args = (
        "compare",
        str(BUG17),
        "--all",
        "--baselines",
        "--cache",
        "ideal,anthropic,openai-auto,openai-5.6",
        "--json",
    )
    data = json.loads(invoke(*args).stdout)
    cache, n = data["cache"], len(data["contexts"])
    total = {m: cache[m]["total"] for m in cache}
    claims = _examples()
    claims.append(f"(bug17 `full-transcript`: {total['ideal']['full-transcript']['tokens']:,} against "
                  f"{data['total']['full-transcript']['tokens']:,} over the run)")  # fmt: skip
    # The gap past the TTL: when each context is sent, and the one after the long gap.
    times = [state_time(ctx.state) for _, ctx in read_run(BUG17)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    at = max(range(len(gaps)), key=gaps.__getitem__) + 1
    assert gaps[at - 1] > 300 and sorted(gaps)[-2] <= 300, (
        "bug17 no longer has exactly one gap past 5 minutes"
    )
    label = lambda i: data["contexts"][i]["request_id"].rsplit("-", 1)[1]  # noqa: E731
    minutes, seconds = divmod(int(gaps[at - 1]), 60)
    claims.append(f"(bug17 has one: {minutes} min {seconds} s before {label(at)})")
    claims.append(
        f"totals over the {n} contexts; R = {cache['anthropic']['cached_price']:g}, 5-minute TTL"
    )

    def split(t: dict) -> str:
        return f"{t['uncached_tokens']:,} / {t['written_tokens']:,} / {t['read_tokens']:,}"

    for s in (
        "v7",
        "v8",
        "v9",
        "v10",
        "v11",
        "v12",
        "v13",
        "full-transcript",
        "masking-10",
        "last-5",
    ):
        cells = [s, f"{total['ideal'][s]['effective_cost']:,.1f}", f"{total['anthropic'][s]['effective_cost']:,.1f}",
                 split(total["anthropic"][s]), f"{total['openai-auto'][s]['effective_cost']:,.1f}",
                 f"{total['openai-5.6'][s]['effective_cost']:,.1f}", split(total["openai-5.6"][s])]  # fmt: skip
        claims.append("| " + " | ".join(cells) + " |")
    runs = corpus_tables()

    def cost(m, s):
        return total[m][s]["effective_cost"] / total[m]["full-transcript"]["effective_cost"]  # noqa: E731

    span = lambda m, v, d=2: _span([cost(m, v)] + [_ratio(rows[v], m) for rows in runs.values()], d)  # noqa: E731
    cheapest = {
        m: [cost(m, min(VERSIONS, key=lambda s: total[m][s]["effective_cost"]))] for m in total
    }
    for rows in runs.values():
        for m in cheapest:
            cheapest[m].append(min(_ratio(rows[s], m) for s in VERSIONS))
    claims.append(f"the cheapest of them costs {_span(cheapest['anthropic'])}× the transcript under `anthropic`, "
                  f"{_span(cheapest['openai-auto'])}× under `openai-auto`, {_span(cheapest['openai-5.6'])}× under "
                  f"`openai-5.6` and {_span(cheapest['ideal'])}× under `ideal`")  # fmt: skip
    reads = [c["v7"]["read_tokens"] for c in cache["anthropic"]["contexts"]]
    blind = sum(1 for rows in runs.values() if _split(rows["v7"], "anthropic")[2] == 0)
    claims.append(f"covers about {reads[-1] / 1000:.1f}k tokens on bug17 ({sum(reads):,} tokens read over {n} "
                  f"contexts) and nothing on {blind} of the {len(runs)} corpus runs")  # fmt: skip
    claims.append(f"whose header and case are under {CacheOptions().cache_min:,} tokens")
    full = [_ratio(rows[s], "anthropic") for rows in runs.values() for s in ("v7", "v10")]
    claims.append(f"v7 and v10 cost {_span([cost('anthropic', s) for s in ('v7', 'v10')])}× the transcript on bug17 "
                  f"and {_span(full)}× on the corpus")  # fmt: skip
    t = total["anthropic"]["full-transcript"]
    claims.append(f"it reads {t['read_tokens']:,} of its {t['tokens']:,} tokens")
    cheaper = [_short(name) for name, rows in runs.items() if _ratio(rows["v11"], "anthropic") < 1]
    claims.append(f"v11 costs {span('anthropic', 'v11')}× the transcript under `anthropic` and "
                  f"{span('ideal', 'v11')}× under `ideal`; it is cheaper "
                  f"{'only on ' + _and(cheaper) if cheaper else 'than the transcript on none of the runs'}. "
                  f"On bug17 ({cost('anthropic', 'v11'):.2f}× under `anthropic`)")  # fmt: skip
    ctx = cache["anthropic"]["contexts"]
    assert ctx[at + 1]["v11"]["tokens"] < ctx[at]["v11"]["tokens"], (
        "v11 no longer compacts right after the gap"
    )
    claims.append(f"the {minutes} min {seconds} s gap before {label(at)} makes both rewrite their whole prefix "
                  f"({ctx[at]['v11']['written_tokens']:,} tokens for v11, {ctx[at]['full-transcript']['written_tokens']:,} "
                  f"for the transcript); v11's compaction at {label(at + 1)} rewrites {ctx[at + 1]['v11']['written_tokens']:,} more")  # fmt: skip
    uncached = total["anthropic"]["v11"]["uncached_tokens"]
    claims.append(
        f"the tail, about {round(uncached / n, -1):.0f} tokens a turn, is never cached ({uncached:,} over the run)"
    )
    below = [_short(name) for name, rows in runs.items() if _ratio(rows["v12"], "anthropic") < 1]
    claims.append(f"v12 costs {span('anthropic', 'v12')}× the transcript under `anthropic` and "
                  f"{span('ideal', 'v12')}× under `ideal`, less than the transcript on {_and(below)}; on bug17 "
                  f"{cost('anthropic', 'v12'):.2f}×")  # fmt: skip
    targets = target_rows("v13")  # three decimals, so that the 1.1 target is judged exactly
    exact = {name: float(targets[name]["v13 / transcript (≤ 1.10x)"].rstrip("x")) for name in runs}
    missed = [_short(name) for name in runs if exact[name] > 1.1]
    assert cost("anthropic", "v13") <= 1.1, "v13 no longer meets the 1.1x target on bug17"
    ratios = [cost("anthropic", "v13"), *exact.values()]
    words = {4: "four", 5: "five", 6: "six", 3: "three", 2: "two", 1: "one"}
    claims.append(f"v13 costs {span('anthropic', 'v13')}× the transcript under `anthropic` and {span('ideal', 'v13')}× "
                  f"under `ideal`; it meets the 1.1× target on bug17 ({cost('anthropic', 'v13'):.2f}×) and every corpus "
                  f"run but {_and(missed)} ({_and([f'{exact[r]:.3f}×' for r in runs if exact[r] > 1.1])}); it costs "
                  f"less than the transcript on {words[sum(r < 1 for r in ratios)]} of the {words[len(ratios)]} runs")  # fmt: skip
    long = {v: target_rows(v)[LONG_RUN] for v in ("v12", "v13")}
    ratio = {v: long[v][f"{v} / transcript (≤ 1.10x)"] for v in long}
    largest = {v: long[v][f"{v} largest chars"] for v in long}
    budget = {
        v: next(h for h in long[v] if h.startswith("≤ budget ")).removeprefix("≤ budget ")
        for v in long
    }
    claims.append(f"v13 costs {ratio['v13'].rstrip('x')}× the transcript under `anthropic` where v12 costs "
                  f"{ratio['v12'].rstrip('x')}×, and its largest context is {largest['v13']} characters where v12's is "
                  f"{largest['v12']} (their budgets: {budget['v13']} and {budget['v12']})")  # fmt: skip
    claims.append(f"from 118,909.0 to the {total['anthropic']['v13']['effective_cost']:,.1f} above, "
                  f"the transcript from 125,735.3 to {total['anthropic']['full-transcript']['effective_cost']:,.1f}")  # fmt: skip
    claims.extend(budget_claims())
    auto = {v: span("openai-auto", v) for v in ("v11", "v12", "v13")}
    gpt = {v: span("openai-5.6", v) for v in ("v11", "v12", "v13")}
    claims.append(f"v11, v12 and v13 cost {auto['v11']}×, {auto['v12']}× and {auto['v13']}× the transcript under "
                  f"`openai-auto` and {gpt['v11']}×, {gpt['v12']}× and {gpt['v13']}× under `openai-5.6`")  # fmt: skip
    masking = [cost("anthropic", s) for s in ("masking-10", "last-5")]
    masking += [
        _ratio(rows[s], "anthropic") for rows in runs.values() for s in ("masking-10", "last-5")
    ]
    claims.append(f"they cost {_span(masking)}× the full transcript")
    return claims
