"""Published numbers cannot go stale: RESULTS.md and the README reproduce from their commands.

Each RESULTS.md section says whether it is deterministic or timed. A deterministic
section's command is rerun with `--check`, which fails unless it writes the section again
exactly; a timed one must name the commit it was measured at, and the sizes it reports
beside its timings (characters, bytes) are recomputed. In the README, every
measured number (percentages, thousands, "about N") must belong to a claim this module
recomputes from `workingset compare`, or to a short list of numbers that are not ours.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import msgspec
import pytest

from tests.helpers.common import BUG17, LONG_RUN, ROOT, SECTION_TEST, invoke
from tests.helpers.readme_cache import cache_claims
from tests.helpers.real_corpus import CORPUS
from workingset.compare.baselines import BASELINES
from workingset.compare.engine import DEFAULT_LABEL
from workingset.encoders import ENCODERS, get_encoder
from workingset.encoders.journal import v11
from workingset.encoders.journal.base import MAX_BUDGET
from workingset.encoders.journal.walk15 import _HELD
from workingset.errors import WorkingsetError
from workingset.io import caches
from workingset.io.limits import Limits, read_bounded
from workingset.runs.layout import load_context_file

sys.path.insert(0, str(ROOT / "benchmarks"))
import _results  # noqa: E402

# Published numbers: the tests rerun the benchmarks' commands (in other processes) on bug17, the
# kept runs and the corpus, and recompute the README's and the docs' numbers from them.
pytestmark = pytest.mark.slow

# Sections that read data kept outside the repository; skipped where it is absent.
# What each section reads beside the repository: where any of it is absent, its check skips. WITH_LONG: the
# corpus's five runs and the 167-step run of ../shared/corpus/all.
WITH_LONG = (CORPUS, LONG_RUN)
EXTERNAL = {
    "trajectories": (CORPUS,),
    "cache": WITH_LONG,
    "run_files": WITH_LONG,
    "v11_cost": WITH_LONG,
    "v13_budget": WITH_LONG,
    "calibrate": WITH_LONG,
    "v14_bound": WITH_LONG,
    "v15_bound": WITH_LONG,
    "v14_targets": WITH_LONG,
    "use": (CORPUS,),
    # The 67 corpus runs of benchmarks/corpus.json, shared beside the repository (issue 31).
    "use_all": (ROOT.parent / "shared" / "corpus" / "all",),
    # v15's keep share at a third, a half and two thirds, over the same 67 runs and over the runs outside the corpus.
    "v15_keep": (ROOT.parent / "shared" / "corpus" / "all",),
    "v15_keep_unseen": (ROOT.parent / "shared" / "corpus" / "unseen",),
    # Runs outside the corpus, chosen by rule and measured once (benchmarks/unseen.json), beside the repository.
    "use_unseen": (ROOT.parent / "shared" / "corpus" / "unseen",),
    # What each part of v15's format costs with no bound, over the same runs outside the corpus and the 67 corpus runs.
    "v15_parts_unseen": (ROOT.parent / "shared" / "corpus" / "unseen",),
    "v15_parts_all": (ROOT.parent / "shared" / "corpus" / "all",),
    # v15 with leaner entries, at each keep share and page, over the same two sets of runs.
    "v15_lean_unseen": (ROOT.parent / "shared" / "corpus" / "unseen",),
    "v15_lean_all": (ROOT.parent / "shared" / "corpus" / "all",),
    # Issue 22's measurement of the 67 corpus runs, once staged beside the repository, now in ../shared/corpus/all.
    "v14_targets_staged": (ROOT.parent / "shared" / "corpus" / "all",),
}


def _absent(name: str) -> list[Path]:
    """What section `name` reads beside the repository and is not here."""
    return [path for path in EXTERNAL.get(name, ()) if not path.is_dir()]


SECTIONS = _results.sections()
DETERMINISTIC = [name for name, text in SECTIONS.items() if _results.CHECK_DETERMINISTIC in text]


def test_results_header_and_every_section_declares_its_check():
    assert _results.RESULTS.read_text(encoding="utf-8").startswith(_results.HEADER)
    for name, text in SECTIONS.items():
        checks = [line for line in text.splitlines() if line.startswith("Check: ")]
        assert checks in ([_results.CHECK_DETERMINISTIC], [_results.CHECK_TIMED]), (
            f"section {name}: {checks}"
        )
        assert re.search(r"^Command: `\.venv/bin/python benchmarks/\S+\.py[^`]*`$", text, re.M), (
            name
        )


@pytest.mark.parametrize("name", [n for n in SECTIONS if n not in DETERMINISTIC])
def test_timed_section_names_a_clean_commit(name: str):
    machine = re.search(r"^Machine: .*$", SECTIONS[name], re.M).group(0)
    assert re.search(r"; commit [0-9a-f]{7,40};", machine), (
        f"section {name} does not say which commit it measured"
    )


# Sections whose check takes ten minutes or more (67 runs): run with -m soak (`v15_keep` reads the same 67 runs in
# about a minute, beside the section checks the suite already runs on its second core). `v15_bound` takes about a
# minute of renders; its bound is asserted every run by tests/encoders/test_v15.py (bug17, the 167-step
# run, the 868,167-character output, generated states) and by `render` itself, which never returns more.
SOAK = {
    "v14_targets_staged",
    "use_all",
    "use_unseen",
    "v15_bound",
    "v15_keep",
    "v15_keep_unseen",
    "v15_parts_all",
    "v15_parts_unseen",
    "v15_lean_all",
    "v15_lean_unseen",
}


_CHECKS = pytest.StashKey[dict[str, Future[subprocess.CompletedProcess[str]]]]()


def _check_section(name: str, cache_dir: str) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(re.search(r"^Command: `([^`]+)`$", SECTIONS[name], re.M).group(1))
    env = {**os.environ, "WORKINGSET_CORPUS": str(CORPUS), "WORKINGSET_CACHE_DIR": cache_dir}
    return subprocess.run([sys.executable, *argv[1:], _results.CHECK_FLAG], cwd=ROOT, env=env,
                          capture_output=True, text=True)  # fmt: skip


def start_section_checks(session: pytest.Session) -> None:
    """Start every selected section's check in the background, once collection is done (tests/conftest.py).

    Each check is a benchmark script in its own process. The rest of the suite runs in one
    process and leaves the second core of a small machine idle, so the checks run one at a time
    beside it, and the section tests (which conftest puts last) only collect their results. When
    the checks are all that was selected, two run at a time. They keep their on-disk caches in a
    directory of their own, removed at the end of the session.
    """
    names = sorted(
        {item.callspec.params["name"] for item in session.items if item.originalname == SECTION_TEST},
        key=lambda n: DETERMINISTIC.index(n),
    )  # fmt: skip
    present = [n for n in names if not _absent(n)]
    if not present:
        return
    alone = all(getattr(item, "originalname", "") == SECTION_TEST for item in session.items)
    pool = ThreadPoolExecutor(max_workers=2 if alone else 1)
    cache_dir = tempfile.mkdtemp(prefix="workingset-sections-")

    def stop() -> None:
        pool.shutdown(cancel_futures=True)
        shutil.rmtree(cache_dir, ignore_errors=True)

    session.config.add_cleanup(stop)
    session.config.stash[_CHECKS] = {
        name: pool.submit(_check_section, name, cache_dir) for name in present
    }


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.soak) if n in SOAK else n for n in DETERMINISTIC]
)
def test_deterministic_section_reproduces_exactly(name: str, request):
    if _absent(name):
        pytest.skip(f"section {name} reads {', '.join(map(str, _absent(name)))}, which is not here")
    result = request.config.stash[_CHECKS][name].result()
    assert result.returncode == 0, result.stdout + result.stderr


# -- what timed sections hold besides timings ----------------------------------------------


def _github_table(section: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the Markdown table whose header starts with `first_header`, as header -> cell."""
    lines = section.splitlines()
    at = next(
        i
        for i, line in enumerate(lines)
        if re.match(rf"^\|\s*{re.escape(first_header)}\s*\|", line)
    )
    cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]  # noqa: E731
    headers, rows = cells(lines[at]), []
    for line in lines[at + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(headers, cells(line))))
    return rows


def test_speed_section_sizes_are_current():
    """The speed section's context and its chars column are what the encoders give now."""
    section = SECTIONS["speed"]
    path = BUG17 / "bug17-r0018.json"
    ctx = load_context_file(path)
    assert (f"Context: `fixtures/bug17/{path.name}` ({path.stat().st_size:,} bytes, {len(ctx.state.evidence)} "
            f"evidence items, hypothesis {ctx.hypothesis})") in section  # fmt: skip
    published = {row["version"]: row["chars"] for row in _github_table(section, "version")}
    # A version added since the last timing run has no row yet; every row shown must be current.
    now = {
        v: f"{ENCODERS[int(v[1:])].render(ctx.state, ctx.hypothesis).chars:,}" for v in published
    }
    assert published == now, "rerun benchmarks/speed.py: its render table is stale"


def test_scale_section_sizes_are_current():
    """The scale section's state sizes and rendered characters are what the generator and encoders give now."""
    from synthetic import make_state

    rows = _github_table(SECTIONS["scale"], "evidence items")
    for row in rows:
        state = make_state(int(row["evidence items"].replace(",", "")))
        assert row["state JSON bytes"] == f"{len(msgspec.json.encode(state)):,}"
        for v in (8, 10):
            assert row[f"v{v} chars"] == f"{ENCODERS[v].render(state, 'H1').chars:,}", (
                f"v{v} at {row['evidence items']}"
            )


def test_report_section_sizes_are_current(monkeypatch):
    """The report section's bug17 row (page and data bytes) is what `workingset report` writes now."""
    from workingset.report import report_data
    from workingset.report.page import plotly_js, render_page

    section = SECTIONS["report"]
    row = next(r for r in _github_table(section, "run") if r["run"].startswith("bug17"))
    monkeypatch.chdir(BUG17.parent)  # the benchmark names the run `bug17`
    data = report_data(BUG17.name)
    assert row["page bytes"] == f"{len(render_page(data).encode()):,}", "rerun benchmarks/report.py"
    assert row["viewer texts (JSON bytes)"] == f"{len(msgspec.json.encode(data['viewer'])):,}"
    assert row["compare data (JSON bytes)"] == f"{len(msgspec.json.encode(data['compare'])):,}"
    assert f"plotly.js ({len(plotly_js().encode()):,} bytes)" in section


def test_check_fails_on_a_changed_number_and_ignores_the_machine_line():
    block = "<!-- BEGIN t -->\n## T\n\nMachine: today\n\n| v7 | 1,234 |\n<!-- END t -->\n"
    _results._check("t", block, "head\n\n" + block.replace("today", "yesterday"))
    with pytest.raises(SystemExit, match="stale"):
        _results._check("t", block, block.replace("1,234", "1,235"))
    with pytest.raises(SystemExit, match="no section"):
        _results._check("t", block, "head\n")


# -- the README -----------------------------------------------------------------------

# Numbers in the README that no command of ours produces: providers' documented cache
# minimums. Anything else that looks measured must be a claim below.
NOT_OURS = (
    "1,024-token minimum", "minimum (about 1,024 tokens)",
    # The providers' documented minimums and lookback, quoted in "Cache-true costs".
    "`claude-opus-4-6`: 4,096", "without `--model`, 1,024", "up to about 20 blocks before it",
    # What the README said before issue 21's block-true models, quoted as the claims that changed.
    "costs 0.76–1.10× the transcript", "matches `compare` within 2% on bug17",
    # Issue 32's targets for v15, quoted as targets (docs/encoders.md), not measured.
    "reaches 97% on the 45 main runs", "than the 3% aimed at",
)  # fmt: skip
MEASURED = re.compile(
    r"\d+(?:\.\d+)?%|\babout \d{1,3}(?:,\d{3})*(?:\.\d+)?k?\b|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+\.\d+k\b"
)


def _signed(value: float) -> str:
    return f"{value:+.1f}%".replace("-", "−")


def _break_even(data: dict, cheap: str, dear: str) -> float:
    """The cached price at which `cheap` (more cached tokens) and `dear` cost the same."""
    a, b = data["total"][cheap], data["total"][dear]
    return (b["uncached_tokens"] - a["uncached_tokens"]) / (a["cached_tokens"] - b["cached_tokens"])


def readme_claims() -> list[str]:
    """The README's bug17 statements, written from what `compare fixtures/bug17 --all` prints now."""
    data = json.loads(invoke("compare", str(BUG17), "--all", "--json").stdout)
    bare = json.loads(invoke("compare", str(BUG17), "--all", "--no-recall", "--json").stdout)
    total = data["total"]
    share = {s: 100 * t["cached_tokens"] / t["tokens"] for s, t in total.items()}
    claims = [f"totals over the {len(data['contexts'])} contexts, R = {data['cached_price']:g}"]
    # The README's first command, `compare fixtures/bug17` with the default pair, ends with this line.
    first = invoke("compare", str(BUG17)).stdout.splitlines()
    claims.append(f"`{next(line for line in first if line.startswith('verdict'))}`")
    for s in ("v7", "v8", "v9", "v10"):
        t, change = total[s], total[s].get("change_percent", {})  # the base (v7) has none
        cells = [
            s, f"{t['tokens']:,}" + ("" if s == "v7" else f" ({_signed(change['tokens'])})"),
            f"{t['cached_tokens']:,} ({share[s]:.1f}%)", f"{t['uncached_tokens']:,}", f"{t['effective_cost']:,.1f}",
            "" if s == "v7" else _signed(change["effective_cost"]),
        ]  # fmt: skip
        claims.append(("| " + " | ".join(cells) + " |").replace("|  |", "| |"))
    fewer = {round(-total[s]["change_percent"]["tokens"]) for s in ("v8", "v9")}
    assert len(fewer) == 1, "v8 and v9 no longer save about the same share of tokens"
    cheaper = [-total[s]["change_percent"]["effective_cost"] for s in ("v8", "v9")]
    claims.append(f"v8 and v9 send about {fewer.pop()}% fewer tokens than v7 but cost only "
                  f"{math.floor(min(cheaper))}–{math.ceil(max(cheaper))}% less")  # fmt: skip
    claims.append(f"a cache could serve {share['v7']:.0f}% of it")
    # From which context on v8 shares only the header and case: the same count every turn.
    cached = [c["sizes"]["v8"]["cached_tokens"] for c in data["contexts"]]
    first = next(i for i in range(len(cached)) if len(set(cached[i:])) == 1)
    label = data["contexts"][first]["request_id"].rsplit("-", 1)[1]
    claims.append(
        f"from {label} on only the header and case (about {cached[-1] / 1000:.1f}k tokens) are shared"
    )
    claims.append(
        f"With cache reads priced under about {_break_even(data, 'v7', 'v8'):.2f} of the full price, v7 costs less than v8"
    )
    assert min(("v7", "v8", "v9", "v10"), key=lambda s: total[s]["effective_cost"]) == "v10"
    claims.append("it is the cheapest of the four here")
    claims.append(
        f"v8 undercuts it only when a cached token costs more than about {_break_even(data, 'v10', 'v8'):.2f} of the full price"
    )
    four = ("v7", "v8", "v9", "v10")  # the versions the README's bug17 paragraph speaks of
    assert {s: bare["total"][s] for s in four} == {s: total[s] for s in four}, (
        "--no-recall no longer gives the same numbers on bug17"
    )
    claims.append("`--no-recall` gives the same numbers")
    claims.append(
        f"On bug17 its cached share is {share['v10']:.1f}%, above v7's {share['v7']:.1f}%."
    )
    # v11's constants, as the README states them.
    claims.append(f"`v11:budget=60000` (characters; the plain name is {v11.DEFAULT_BUDGET:,})")
    claims.append(f"an eighth of the budget (at least {v11.TAIL_RESERVE_MIN:,} characters)")
    claims.append(f"**Its default budget is {ENCODERS[13].default_budget:,} characters** (v11 and v12 keep "
                  f"{v11.DEFAULT_BUDGET:,})")  # fmt: skip
    # v14's page: a part of an output larger than `budget // 25` characters (docs/encoders.md).
    claims.append(f"`budget // 25` characters, {ENCODERS[14].page_size:,} at the default budget")
    # The error a decision over the default size limit gets, as the README quotes it.
    with pytest.raises(WorkingsetError) as err:
        read_bounded(
            io.BytesIO(b" " * (Limits().max_decision_bytes + 1)), "decision", "<stdin>", Limits()
        )
    claims.append(f"`error: {err.value.code}: {err.value.message}`")
    return claims


# The README and the docs pages its manual moved to: every measured number in them is a claim.
DOC_PAGES = ("README.md", *(f"docs/{name}.md" for name in (
    "encoders", "compare", "report", "import", "sessions", "operations", "providers", "design")))  # fmt: skip


def _prose(text: str) -> str:
    """A page without its code blocks, every run of whitespace one space."""
    return " ".join(re.sub(r"^```.*?^```", "", text, flags=re.S | re.M).split())


def docs_prose() -> str:
    """The prose of every page in DOC_PAGES, one page after another."""
    return " \n ".join(_prose((ROOT / page).read_text(encoding="utf-8")) for page in DOC_PAGES)


def _stratum(section: str, pattern: str) -> tuple[str, str]:
    """The heading (`### pattern (N runs)`) of a table in a RESULTS.md section, and its number of runs."""
    found = re.search(rf"^### ({pattern} \((\d+) runs?\))$", section, re.M)
    assert found, pattern
    return found.group(1), found.group(2)


def _use_row(section: str, heading: str, strategy: str) -> list[str]:
    """A strategy's cells in the table under `### heading` of a RESULTS.md section of benchmarks/use.py."""
    table = section.split(f"### {heading}\n", 1)[1].strip().split("\n\n", 1)[0]
    row = next(line for line in table.splitlines() if line.split("|")[1].strip() == strategy)
    return [cell.strip() for cell in row.split("|")[2:-1]]


def _why_over(section: str) -> str:
    """docs/encoders.md's reading of the sentence that ends "v15's targets" (`benchmarks/use.py`'s `why_over`)."""
    said = re.search(r"^Why, under anthropic: of the (\d+) runs of 20\+ contexts on which v15 costs more than the "
                     r"transcript, (\d+) cost more with no bound too .*? On (\d+) of the (\d+) runs of 20\+ contexts",
                     section, re.M)  # fmt: skip
    assert said, "the sentence after v15's targets"
    over, format_over, worse, runs = said.groups()
    assert over == format_over, "docs/encoders.md says the format alone puts every such run over"
    return (f"of the {over} runs of 20+ contexts on which v15 costs more than the transcript, {format_over} cost more "
            f"with no bound too, so the format is what puts them over, and on {worse} of the {runs} runs of 20+ "
            "contexts the bound costs more than it saves")  # fmt: skip


def _recall_steps(section: str, heading: str) -> str:
    """v15's recall steps (the count) in the table under `### heading`."""
    return _use_row(section, heading, "v15")[1].split(" ", 1)[0]


def corpus_use_claims() -> list[str]:
    """The README's statements on the 67 corpus runs, read from RESULTS.md's `use_all` section.

    That section is what `benchmarks/use.py --root ../shared/corpus/all` prints (a soak test
    reruns it with `--check`). Its columns: in view, recall steps, gone steps, then under
    anthropic and openai-5.6 the bill as recorded, with recalls, with recalls without the
    fixed prompt, each a ratio to the transcript's.
    """
    section = SECTIONS["use_all"]
    corpus = "The corpus (67 runs)"
    default, mask = (
        _use_row(section, corpus, DEFAULT_LABEL),
        _use_row(section, corpus, "masking-10"),
    )
    # "No baseline is both cheaper and more in view over the corpus" (of the default): check it, do not quote it.
    for s in BASELINES:
        other = _use_row(section, corpus, s)
        assert not (
            float(other[4]) < float(default[4]) and float(other[0][:-1]) > float(default[0][:-1])
        ), s
    v15 = _use_row(section, corpus, "v15")
    steps15, share15 = v15[1].split(" ", 1)
    targets = section.split("### v15's targets\n", 1)[1]
    held = _target(targets, TWENTY, whole=True).split(" ")  # "45 of 57 runs"
    holdout15 = _use_row(section, "split holdout (22 runs)", "v15")
    # v15 with no bound (its format alone) beside v15: docs/encoders.md's split of v15's bill.
    UNBOUNDED = f"v15:budget={MAX_BUDGET}"  # as benchmarks/use.py names it
    free = _use_row(section, corpus, UNBOUNDED)
    view_lost = float(free[0][:-1]) - float(v15[0][:-1])
    twenties = "contexts 20–39 (8 runs)"
    return [
        f"Over the 67 corpus runs it costs {free[4]}× the transcript, so the whole of v15's saving is its bound's "
        f"({free[4]}× to {v15[4]}×, for {view_lost:.1f} points of view)",
        f"By agent the format alone costs {_use_row(section, 'agent OpenHands (36 runs)', UNBOUNDED)[4]}× on OpenHands "
        f"runs and {_use_row(section, 'agent mini-swe-agent (25 runs)', UNBOUNDED)[4]}× on mini-swe-agent runs",
        f"({_use_row(section, twenties, UNBOUNDED)[4]}× with no bound, {_use_row(section, twenties, 'v15')[4]}× with it)",
        _why_over(section),
        f"{_recall_steps(section, 'contexts ≥150 (9 runs)')} of the {steps15} are on the 9 runs of 150 or more contexts "
        f"({_use_row(section, 'contexts ≥150 (9 runs)', 'v15')[1].split(' ', 1)[1][1:-1]} of their steps)",
        f"over the 67 corpus runs {v15[0]} of the identifiers the next step used were in its view and {steps15} steps "
        f"{share15} need a recall, at {v15[4]}× the transcript with every recall billed ({v15[7]}× as GPT-5.6 bills it)",
        f"on the 22 holdout runs, which played no part in choosing it, {holdout15[0]}",
        f"{int(held[2]) - int(held[0])} of the {held[2]} runs of 20 or more contexts cost more than the transcript",
        f"show more, {mask[0]} for masking-10, at {mask[4]}× the transcript",
        f"on the one GPT-4o run it costs {_use_row(section, 'model gpt-4o (1 runs)', DEFAULT_LABEL)[4]}×",
    ]


def unseen_use_claims() -> list[str]:
    """The README's and encoders.md's statements on the runs outside the corpus, read from RESULTS.md's `use_unseen`
    section (`benchmarks/use.py --manifest benchmarks/unseen.json`; a soak test reruns it with `--check`)."""
    section = SECTIONS["use_unseen"]

    corpus, runs = _stratum(section, "The corpus")
    v14, v15 = _use_row(section, corpus, "v14"), _use_row(section, corpus, "v15")
    claims = [f"On {runs} runs outside the corpus",
              f"v14 costs {v14[4]}× the transcript and v15 {v15[4]}×, with {v14[0]} and {v15[0]} in view"]  # fmt: skip
    mini, n = _stratum(section, "agent mini-swe-agent")
    m14, m15 = _use_row(section, mini, "v14"), _use_row(section, mini, "v15")
    # v15 with no bound, as benchmarks/use.py names it; docs/encoders.md says its format alone costs more than
    # the transcript on the mini-swe-agent runs and the bound adds to that: check it, do not quote it.
    free = _use_row(section, mini, f"v15:budget={MAX_BUDGET}")
    assert 1 < float(free[4]) < float(m15[4]), (free[4], m15[4])
    claims += [f"On the {n} mini-swe-agent runs alone, v14 costs {m14[4]}× and v15 {m15[4]}×",
               f"There v15 with no bound costs {free[4]}× the transcript"]  # fmt: skip
    for agent in ("OpenHands", "SWE-agent"):
        label, k = _stratum(section, f"agent {agent}")
        claims.append(f"on the {k} {agent} runs v14 costs {_use_row(section, label, 'v14')[4]}× and v15 "
                      f"{_use_row(section, label, 'v15')[4]}×")  # fmt: skip
    return claims


TWENTY = "anthropic: ≤ 1.0x the transcript on every run of 20+"  # a row of the "targets" tables


def _target(table: str, label: str, whole: bool = False) -> str:
    """The figure of the target row starting with `label` in a "targets" table: a run count ("24 of 49 runs": 24),
    else the ratio ("0.702x": 0.702×); `whole`: the cell as written."""
    row = next(line for line in table.splitlines() if line.startswith(f"| {label}"))
    figure = row.split("|")[2].strip()
    if whole:
        return figure
    return figure.split(" ")[0] if " of " in figure else f"{figure}×"


def v16_claims() -> list[str]:
    """docs/encoders.md's and the README's statements on v16 beside v14, read from RESULTS.md's `use_all` and
    `use_unseen` sections (`benchmarks/use.py`; soak tests rerun both with `--check`)."""
    corpus = SECTIONS["use_all"]
    unseen = SECTIONS["use_unseen"]
    whole = "The corpus (67 runs)"
    v16, v14 = _use_row(corpus, whole, "v16"), _use_row(corpus, whole, "v14")
    steps, share = v16[1].split(" ", 1)
    h16, h14 = (_use_row(corpus, "split holdout (22 runs)", s) for s in ("v16", "v14"))
    label, n = _stratum(unseen, "The corpus")
    u16, u14 = _use_row(unseen, label, "v16"), _use_row(unseen, label, "v14")
    mini, k = _stratum(unseen, "agent mini-swe-agent")
    b16, b14 = _use_row(corpus, "bug17", "v16"), _use_row(corpus, "bug17", "v14")
    # "shows at least as much as v14 for no more" over the corpus, its holdout and the runs outside it, under both
    # models (columns 4 and 7: with recalls); on bug17 as much for more: check it, do not quote it.
    for a, b in ((v16, v14), (h16, h14), (u16, u14)):
        assert (
            float(a[0][:-1]) >= float(b[0][:-1])
            and float(a[4]) <= float(b[4])
            and float(a[7]) <= float(b[7])
        )
    assert b16[0] == b14[0] and float(b16[4]) > float(b14[4])
    targets = corpus.split("### v16's targets\n", 1)[1]
    held = _target(targets, TWENTY, whole=True).split(" ")  # "53 of 57 runs"
    # "more than v15's": check it, do not quote it
    assert int(held[0]) > int(_target(corpus.split("### v15's targets\n", 1)[1], TWENTY))
    outside = _target(unseen.split("### v16's targets\n", 1)[1], TWENTY, whole=True).split(
        " "
    )  # "8 of 22 runs"
    return [
        f"over the 67 corpus runs {v16[0]} of the identifiers the next step used were in its view and {steps} steps "
        f"{share} need a recall, at {v16[4]}× the transcript with every recall billed ({v16[7]}× as GPT-5.6 bills it), "
        f"against v14's {v14[0]} at {v14[4]}× ({v14[7]}×)",
        f"on the 22 holdout runs {h16[0]} at {h16[4]}×, against {h14[0]} at {h14[4]}×",
        f"on the {n} runs outside the corpus {u16[0]} at {u16[4]}×, against {u14[0]} at {u14[4]}×",
        f"On bug17 it shows the same {b16[0]} as v14 for {b16[4]}×, against {b14[4]}×",
        f"{held[0]} of the {held[2]} runs of 20 or more contexts cost at most the transcript",
        f"outside the corpus, {outside[0]} of the {outside[2]} runs of 20 or more contexts do",
        f"In view at least masking-10's on {_target(targets, 'in view ≥ masking-10')} of the 49 runs of 40 or more contexts",
        f"On the frontier on {_target(targets, 'anthropic: on the frontier')} of the 49 runs of 40 or more contexts, and "
        f"cheaper than every baseline on {_target(targets, 'anthropic: cheaper than every baseline')}",
        f"It costs {_target(targets, 'anthropic: ≤ 0.6x')} the transcript over the corpus, against the 0.6× aimed at",
        f"on the {k} mini-swe-agent runs outside the corpus it costs {_use_row(unseen, mini, 'v16')[4]}× (v14: "
        f"{_use_row(unseen, mini, 'v14')[4]}×)",
    ]


def keep_claims() -> list[str]:
    """docs/encoders.md's statements on v15's keep share, read from RESULTS.md's `v15_keep` section
    (`benchmarks/v15_keep.py --root ../shared/corpus/all`; a soak test reruns it with `--check`)."""
    section = SECTIONS["v15_keep"]
    # The choice the section makes from the main split is the share v15 was released with: check it, do not quote it.
    assert "is 2/3: the share v15 was released with." in section
    # "Each larger share shows more and costs more, on the main and the holdout runs alike."
    alike = "each larger share shows more and costs more under anthropic and openai-5.6"
    assert f"on the main runs {alike}; on the holdout runs {alike}." in section
    rows = {
        share: _use_row(section, "all (67 runs)", f"v15, keep {share}") for share in ("1/3", "1/2")
    }
    main = {
        share: _use_row(section, "main (45 runs)", f"v15, keep {share}")[0]
        for share in ("1/3", "1/2")
    }
    unseen = SECTIONS["v15_keep_unseen"]
    outside = {
        share: _use_row(unseen, "all (23 runs)", f"v15, keep {share}") for share in ("1/3", "2/3")
    }
    # "There a third would have met the view and recall targets for less than the transcript": check it.
    third = outside["1/3"]
    assert (
        float(third[0][:-1]) >= 97
        and float(third[1].split("(")[1][:-2]) <= 3
        and float(third[2]) < 1
    ), third
    return [f"on the 23 runs outside the corpus a third shows {outside['1/3'][0]} at {outside['1/3'][2]}× the "
            f"transcript and {outside['1/3'][1].split(' ', 1)[1][1:-1]} of the steps need a recall; two thirds "
            f"{outside['2/3'][0]} at {outside['2/3'][2]}×",
            f"on the 45 main runs a third keeps {main['1/3']} in view and a half {main['1/2']}",
            f"over the 67 runs a third costs {rows['1/3'][2]}× the transcript with every recall billed and shows "
            f"{rows['1/3'][0]}, a half {rows['1/2'][2]}× and {rows['1/2'][0]}"]  # fmt: skip


def cost_parts_claims() -> list[str]:
    """docs/encoders.md's reading of v14's and v15's parts in RESULTS.md's `v11_cost` section
    (`benchmarks/v11_cost.py`, deterministic and rerun with `--check`): checked, not quoted."""
    section = SECTIONS["v11_cost"]
    parts: dict[str, dict[str, list[float]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[1] in ("v14", "v15"):
            ratio = float(cells[4].rstrip("x"))
            compaction, records = (float(c.rstrip("%")) for c in cells[7:9])
            parts.setdefault(cells[0], {})[cells[1]] = [ratio, compaction, records]
    assert len(parts) >= 7 and all(len(v) == 2 for v in parts.values()), parts
    imported = [run for run in parts if run != "fixtures/bug17"]
    # "v15's records cost less than v14's on every imported run (on bug17, a session of its own, slightly more)"
    assert all(parts[run]["v15"][2] < parts[run]["v14"][2] for run in imported), parts
    assert 0 < parts["fixtures/bug17"]["v15"][2] - parts["fixtures/bug17"]["v14"][2] < 1, parts
    # "its bound saves less than v14's on every run"
    assert all(p["v15"][1] > p["v14"][1] for p in parts.values()), parts
    # "on bug17 and two of the raw runs it costs more than it saves, and those runs cost more than the
    # transcript with v15 and less with v14"
    over = [run for run, p in parts.items() if p["v15"][1] > 0]
    assert "fixtures/bug17" in over and len(over) == 3, over
    assert all(parts[run]["v15"][0] > 1 > parts[run]["v14"][0] for run in over), parts
    return []


def format_parts_claims() -> list[str]:
    """docs/encoders.md's statements on what each part of v15's format costs with no bound, read from RESULTS.md's
    `v15_parts_unseen` and `v15_parts_all` sections (`benchmarks/v15_parts.py`; a soak test reruns each with
    `--check`)."""
    read = {}
    for name in ("v15_parts_unseen", "v15_parts_all"):
        found = re.search(
            r"^On the (\d+) runs of 20\+ contexts .* largest first: (.*?)\. With the heads and rows out .*?, "
            r"(\d+) of the \d+ cost more than the transcript \((\d\.\d+)x over them\).*?"
            r"On (\d+) of the \d+ no context passes v15's budget.*? on (\d+)\.$",
            SECTIONS[name], re.M,
        )  # fmt: skip
        assert found, name
        read[name] = found.groups()
    runs, ranked, over, floor, under, under_over = read["v15_parts_unseen"]
    # "at most the transcript there takes a smaller protocol than v15's": the floor is over on every one of them
    assert under == under_over, (under, under_over)
    parts = dict(item.split(" ") for item in ranked.split(", "))
    assert list(parts)[0] == "heads", ranked  # "the entries' heads cost the most"
    claims = [
        f"On the {runs} runs of 20+ contexts outside the corpus the entries' heads cost the most, {parts['heads']} of",
        f"then the preamble ({parts['preamble']}), the decision schema ({parts['schema']}), the decision rows "
        f"without text ({parts['rows']}) and the turn's tail ({parts['tail']})",
        f"still leaves {over} of the {runs} above the transcript ({floor}× over them)",
        f"the {under} whose contexts never pass the budget",
    ]
    runs_all, _, over_all, floor_all, _, _ = read["v15_parts_all"]
    claims.append(
        f"the same floor is {floor_all}×, with {over_all} of the {runs_all} runs of 20+ contexts above"
    )
    return claims


def lean_claims() -> list[str]:
    """docs/encoders.md's statements on v15 with leaner entries, read from RESULTS.md's `v15_lean_all` and
    `v15_lean_unseen` sections (`benchmarks/v15_lean.py`; a soak test reruns each with `--check`)."""
    compact, lean = "v15 compact, keep 1/3, v14's page", "v15 lean, keep 1/3, v14's page"
    corpus, unseen = SECTIONS["v15_lean_all"], SECTIONS["v15_lean_unseen"]
    # "show at least as much as v14 for no more" on both sets of runs, and not on bug17
    for section in (corpus, unseen):
        against = re.search(
            r"^Against v14: on the \d+ runs, (.*?) shows? at least as much", section, re.M
        )
        assert against and compact in against.group(1).split("; "), section[-600:]
        assert "on bug17, no variant shows as much as v14" in section

    def cells(section: str, group: str, strategy: str) -> tuple[str, list[str]]:
        """The group's number of runs, and the strategy's cells under its heading."""
        heading, runs = _stratum(section, group)
        return runs, _use_row(section, heading, strategy)

    n, ours = cells(corpus, "all", compact)
    v14 = cells(corpus, "all", "v14")[1]
    claims = [f"over the {n} corpus runs {ours[0]} in view at {ours[2]}× the transcript with every recall billed, "
              f"against v14's {v14[0]} at {v14[2]}×"]  # fmt: skip
    n, ours = cells(corpus, "holdout", compact)
    v14 = cells(corpus, "holdout", "v14")[1]
    claims.append(f"on the {n} holdout runs {ours[0]} at {ours[2]}×, against {v14[0]} at {v14[2]}×")
    n, ours = cells(unseen, "all", compact)
    v14 = cells(unseen, "all", "v14")[1]
    claims.append(
        f"on the {n} runs outside the corpus {ours[0]} at {ours[2]}×, against {v14[0]} at {v14[2]}×"
    )
    ours, v14 = cells(corpus, "bug17", compact)[1], cells(corpus, "bug17", "v14")[1]
    assert ours[0] == v14[0], (ours, v14)  # "the same"
    claims.append(f"On bug17 they show the same {ours[0]} for {ours[2]}×, against {v14[2]}×")
    further = cells(corpus, "all", lean)[1]
    assert float(further[2]) < float(cells(corpus, "all", compact)[1][2])  # "go further"
    claims.append(f"Lean entries go further (over the corpus {further[0]} at {further[2]}×)")
    two, v15 = cells(corpus, "all", "v15 compact, keep 2/3")[1], cells(corpus, "all", "v15")[1]
    claims.append(f"compact entries at v15's own two thirds show {two[0]} of the corpus at {two[2]}× "
                  f"(v15: {v15[0]} at {v15[2]}×)")  # fmt: skip
    # "the keep share moves the corpus's bill most, and with it what the model sees; on bug17 the page does"
    for group, most in (("all", "share"), ("bug17", "page")):
        bill = {s: float(cells(corpus, group, s)[1][2])
                for s in ("v15", "v15 lean, keep 2/3", "v15 lean, keep 1/3", lean)}  # fmt: skip
        moves = {"entries": bill["v15"] - bill["v15 lean, keep 2/3"],
                 "share": bill["v15 lean, keep 2/3"] - bill["v15 lean, keep 1/3"],
                 "page": bill["v15 lean, keep 1/3"] - bill[lean]}  # fmt: skip
        assert max(moves, key=moves.__getitem__) == most, (group, moves)
    shown = lambda s: float(cells(corpus, "all", s)[1][0].rstrip("%"))  # noqa: E731
    assert shown("v15 lean, keep 2/3") > shown("v15 lean, keep 1/3"), "a larger share shows more"
    return claims


def test_readme_numbers_reproduce_from_the_command():
    prose = docs_prose()
    claims = (
        readme_claims()
        + cache_claims()
        + corpus_use_claims()
        + unseen_use_claims()
        + keep_claims()
        + cost_parts_claims()
        + format_parts_claims()
        + lean_claims()
        + v16_claims()
    )
    missing = [claim for claim in claims if claim not in prose]
    assert not missing, (
        f"{', '.join(DOC_PAGES)} no longer say what the command gives:\n" + "\n".join(missing)
    )
    rest = prose
    # The per-process caches' bounds are constants of the code, checked against the registry
    # by tests/io/test_caches.py.
    bounds = [f"{c.limit:,} {c.unit}" for c in caches.caches() if c.limit is not None]
    # `v15 held names`' second bound, a constant of the code.
    bounds.append(f"{_HELD.TEXTS:,} texts")
    # v14's page at its default budget, a rule of the budget (encodings/v14.md), not a measurement.
    bounds.append(f"{get_encoder('v14').page_size:,} at the default budget")
    # v15's page at its default budget, a tenth of it (encodings/v15.md): a rule, not a measurement.
    bounds.append(f"{get_encoder('v15').page_size:,} characters at the default budget")
    for claim in [*claims, *NOT_OURS, *bounds]:
        rest = rest.replace(claim, "")
    unchecked = [m.group(0) for m in MEASURED.finditer(rest)]
    assert not unchecked, (
        f"numbers no test reproduces in {', '.join(DOC_PAGES)}: {unchecked}; add each claim to readme_claims() "
        "in tests/docs/test_results.py (or, if no command of ours produces it, to NOT_OURS)"
    )


def test_the_readme_comparison_is_the_first_command_output():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```sh\n", 1)[1].splitlines()[0]
    assert first.endswith("workingset compare fixtures/bug17")
    shown = readme.split("## One comparison", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    output = invoke("compare", str(BUG17)).stdout
    assert output.endswith(shown), (
        "the README's comparison is not how `workingset compare fixtures/bug17` ends"
    )
