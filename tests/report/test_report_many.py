"""`report RUN…` of several runs (issue 33, item 12): the aggregate, each run's row, where the default loses, each run's section."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.common import BUG17, ROOT, invoke
from workingset.compare.baselines import BASELINES
from workingset.compare.engine import DEFAULT_LABEL
from workingset.importers import import_trajectory, write_import
from workingset.report.aggregate import AGGREGATE_PICTURE_HOOK


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(BUG17, root / "bug17", ignore=shutil.ignore_patterns("*.py", "*.md"))
    source = ROOT / "tests" / "data" / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"
    write_import(import_trajectory("mini-swe-agent", str(source)), root / "mini")
    return root


def test_a_folder_gives_the_aggregate_each_row_and_each_runs_section(folder: Path, tmp_path: Path):
    out = tmp_path / "many.html"
    made = invoke("report", str(folder), "--out", str(out), "--json")
    assert made.exit_code == 0, made.output
    said = json.loads(made.stdout)
    assert said["path"] == str(out.resolve()) and said["runs"] == 2 and out.is_file()
    assert said["strategies"] == [
        "full-transcript",
        DEFAULT_LABEL,
        *(b for b in BASELINES if b != "full-transcript"),
    ]
    page = out.read_text("utf-8")
    many = json.loads(page.split('id="ws-compare-many">', 1)[1].split("</script>", 1)[0])
    expected = json.loads(invoke("compare", str(folder), "--base", "full-transcript", "--baselines", "--cache",
                                 "anthropic,openai-auto,ideal", "--use", "--summary", "--json").stdout)  # fmt: skip
    assert many == expected  # the page's numbers are compare's
    # The aggregate's bill with recalls against its share in view: a point and a label per strategy
    picture = page.split(f'<div id="{AGGREGATE_PICTURE_HOOK}">', 1)[1].split("</div>", 1)[0]
    labels = re.findall(r">([^<>]+)</text>", picture)
    drawn = [name for label in labels for name in label.split(", ") if name in said["strategies"]]
    assert sorted(drawn) == sorted(said["strategies"])  # every strategy labelled once
    assert picture.count("<circle ") == len(
        {tuple(m) for m in re.findall(r'<circle cx="([^"]+)" cy="([^"]+)"', picture)}
    )
    for i, run in enumerate(sorted(str(p) for p in folder.iterdir()), start=1):
        assert (
            f'<a href="#run-{i}">{run}</a>' in page
            and f'<section id="run-{i}"><h3>{run}</h3>' in page
        )
    rows = many["aggregate"]["rows"]
    losing = [
        r
        for r in rows
        if r["cost"]["anthropic"][DEFAULT_LABEL] > min(r["cost"]["anthropic"].values())
    ]
    assert page.count('<tr class="loses">') == len(losing)
    for r in losing:
        row = page.split(f">{r['run']}</a>", 1)[1].split("</tr>", 1)[0]
        assert re.search(r"<td>to [^<]+ \(\d+\.\d{3}x of its cost\)</td>", row)
    assert page.split('<p id="verdict-line">', 1)[1].startswith(
        "verdict over 2 runs (with recalls): "
    )
    # each run's section gives its verdict on the same bill
    assert page.count('<p class="verdict">verdict (with recalls): ') == len(rows)


def test_the_text_output_says_where_it_wrote(tmp_path: Path):
    out = tmp_path / "one.html"
    made = invoke(
        "report", str(BUG17), "--out", str(out), "--strategies", "v10", "--cache", "ideal"
    )
    assert made.exit_code == 0, made.output
    assert made.stdout.startswith(f"wrote {out.resolve()} (")
