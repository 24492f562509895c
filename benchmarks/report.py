"""The HTML report's size and load time on real runs, against a page holding plotly.js alone.

Run: `.venv/bin/python benchmarks/report.py [--openhands DIR ...]` (writes the `report`
section of RESULTS.md). It reports on bug17, the corpus's longest OpenHands run
(`../shared/corpus/raw`, or `$WORKINGSET_CORPUS`), the 167-step OpenHands run of
`../shared/corpus/all/`, plus each OpenHands V1 conversation directory named with `--openhands`
(each imported into a temporary directory first).

Load time is measured in headless Chromium (tests/helpers/browser.py): from navigation start to
the moment the page's charts have all drawn and its viewer shows the last turn (`wsReadyMs`,
set by the page). The baseline is a page holding the same inlined plotly.js drawing one
empty chart, loaded the same way in the same browser, alternately with the report.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from _data import long_runs  # noqa: E402
from _results import ROOT, median, write_section  # noqa: E402
from browser import chromium, missing  # noqa: E402

from workingset.importers import import_trajectory, write_import  # noqa: E402
from workingset.report import DEFAULT_STRATEGIES, report_data, write_report  # noqa: E402
from workingset.report.page import plotly_js  # noqa: E402

LOADS = 5
CORPUS = Path(os.environ.get("WORKINGSET_CORPUS") or ROOT.parent / "shared" / "corpus" / "raw")
CORPUS_RUN = "openhands-v1-sonnet4-astropy-14309"


def baseline_page(path: Path) -> None:
    """Plotly.js alone, inlined as the report inlines it, drawing one empty chart."""
    path.write_text("<!doctype html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
                    f"<script>{plotly_js()}</script></head><body><div id='c'></div><script>"
                    "Plotly.newPlot('c', [], {}).then(() => { window.wsReadyMs = performance.now(); });"
                    "</script></body></html>", encoding="utf-8")  # fmt: skip


def load_ms(driver, path: Path) -> float:
    driver.get(path.as_uri())
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready = driver.execute_script("return window.wsReadyMs || null")
        if ready is not None:
            return float(ready)
        time.sleep(0.02)
    raise SystemExit(f"{path} did not finish drawing within 120 s")


def switch_ms(driver, strategies: list[str]) -> float:
    """The slowest viewer switch to the last turn of each strategy (decode, shading, diff), in ms."""
    return max(driver.execute_script("""
        const t0 = performance.now(), s = document.getElementById('strategy');
        s.value = arguments[0]; s.dispatchEvent(new Event('change'));
        return performance.now() - t0;""", s) for s in strategies)  # fmt: skip


def runs(tmp: Path) -> list[tuple[str, Path]]:
    out = [("bug17 (fixtures/bug17)", ROOT / "fixtures" / "bug17")]
    sources = [CORPUS / CORPUS_RUN] if (CORPUS / CORPUS_RUN).is_dir() else []
    sources += long_runs()
    args = sys.argv[1:]
    sources += [Path(args[i + 1]) for i, a in enumerate(args) if a == "--openhands"]
    for source in sources:
        imported = import_trajectory("openhands", str(source), None)
        write_import(imported, tmp / imported.analysis)
        out.append((f"{imported.analysis} (OpenHands, {source.name})", tmp / imported.analysis))
    return out


def main() -> None:
    why = missing()
    if why:
        raise SystemExit(why)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name, chromium() as driver:
        tmp = Path(tmp_name)
        base = tmp / "plotly-only.html"
        baseline_page(base)
        for label, run in runs(tmp):
            # The run is named by its directory's name alone, so that its size does not depend on where it lies.
            os.chdir(run.parent)
            start = time.perf_counter()
            data = report_data(run.name)
            os.chdir(ROOT)
            page = tmp / "report.html"
            size = write_report(str(page), data)
            build = time.perf_counter() - start
            parts = {
                k: len(msgspec.json.encode(v))
                for k, v in (("compare", data["compare"]), ("viewer", data["viewer"]))
            }
            report_t, base_t = [], []
            for _ in range(LOADS):
                report_t.append(load_ms(driver, page))
                base_t.append(load_ms(driver, base))
            load_ms(driver, page)
            switch = switch_ms(driver, data["compare"]["strategies"])
            n = len(data["compare"]["contexts"])
            rows.append([label, str(n), f"{size:,}", f"{parts['viewer']:,}", f"{parts['compare']:,}", f"{build:.1f}",
                         f"{median(report_t):.0f}", f"{median(base_t):.0f}", f"{median(report_t) / median(base_t):.2f}x",
                         f"{switch:.0f}"])  # fmt: skip
    headers = ["run", "contexts", "page bytes", "viewer texts (JSON bytes)", "compare data (JSON bytes)", "build s",
               "load ms", "plotly-only load ms", "ratio", "slowest viewer switch ms"]  # fmt: skip
    body = [
        f"The report's defaults: strategies {', '.join(DEFAULT_STRATEGIES)}; cache models anthropic, "
        f"openai, ideal; availability. Page bytes include "
        f"plotly.js ({len(plotly_js().encode()):,} bytes). Load: median of {LOADS} loads in headless Chromium, "
        "navigation start to every chart drawn, alternating with the plotly-only page.\n",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
    write_section("report", "The HTML report: size and load time", "\n".join(body), timed=True)


if __name__ == "__main__":
    main()
