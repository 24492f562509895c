"""The report in a real browser: headless Chromium opens it offline, a turn and a strategy are picked, the viewer and charts show."""

from __future__ import annotations

import os

import pytest

from tests.helpers.browser import chromium, missing
from tests.helpers.common import BUG17, invoke
from tests.helpers.report_page import embedded, exported_run
from workingset.compare.engine import DEFAULT_LABEL
from workingset.encoders import render
from workingset.runs.layout import read_run

pytestmark = pytest.mark.slow  # browser: headless Chromium

# In CI the browser is installed by .ci/run: a missing one is a failure there, not a skip.
if missing() and os.environ.get("CI") != "true":
    pytest.skip(f"the browser test needs headless Chromium: {missing()}", allow_module_level=True)


def test_report_in_headless_chromium(tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select, WebDriverWait

    out = tmp_path / "report.html"
    assert invoke("report", str(BUG17), "--out", str(out)).exit_code == 0
    contexts = [ctx for _, ctx in read_run(BUG17)]
    turn, strategy = 6, DEFAULT_LABEL  # the default encoder, shown by default
    with chromium() as driver:
        driver.get(out.as_uri())
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script("return document.body.dataset.ready") == "true"
        )
        viewer = driver.find_element("id", "viewer")
        assert (
            viewer.get_attribute("data-strategy") == "v7"
        )  # the run's own encoder, not the second strategy
        verdicts = embedded(out.read_text("utf-8"), "ws-report")["verdicts"]
        assert (
            driver.find_element("id", "verdict-line").text == f"Verdict: {verdicts['anthropic']}."
        )
        # A plain run records no decisions: the page says so rather than showing nothing.
        assert driver.find_element("id", "outcome-line").text.startswith(
            "Outcome: not recorded (a plain run;"
        )
        assert driver.find_element("id", "turn-record").text.startswith(
            "Decision, rejections and outcome: not recorded"
        )
        Select(driver.find_element("id", "turn")).select_by_index(turn)
        Select(driver.find_element("id", "strategy")).select_by_value(strategy)
        viewer = driver.find_element("id", "viewer")
        assert (viewer.get_attribute("data-turn"), viewer.get_attribute("data-strategy")) == (
            contexts[turn].request_id,
            strategy,
        )
        shown = driver.execute_script("return document.getElementById('context').textContent")
        rendered = render(contexts[turn].state, contexts[turn].hypothesis, strategy)
        assert shown == rendered.text  # markers are drawn by CSS, never added to the text
        marks = driver.execute_script("""return {
            read: document.querySelectorAll('#context .read').length,
            breakpoints: document.querySelectorAll('#context .bp').length,
            sections: [...document.querySelectorAll('#context .sec')].map(e => e.dataset.label),
            diff: document.querySelectorAll('#diff .add').length}""")
        assert marks["read"] > 0 and marks["diff"] > 0
        assert marks["breakpoints"] == len(rendered.stable_ends())
        assert marks["sections"][:3] == ["preamble", "case", "journal"]
        bars = driver.execute_script("""return Object.fromEntries(['chart-tokens', 'chart-cost', 'chart-largest', 'chart-availability'].map(
            id => [id, document.querySelectorAll('#' + id + ' .main-svg .point, #' + id + ' .main-svg .js-line').length]))""")
        assert all(n > 0 for n in bars.values()), bars
        driver.find_element("id", "prev").click()
        assert viewer.get_attribute("data-turn") == contexts[turn - 1].request_id
        # A click on a bar of the token chart opens that turn under that bar's strategy: the
        # first subplot's (v7) bars of the tallest turn.
        bar = driver.execute_script("""const bars = [...document.querySelectorAll('#chart-tokens .trace.bars')][2]
            .querySelectorAll('.point'); return bars[bars.length - 1];""")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", bar)
        ActionChains(driver).move_to_element(bar).click().perform()
        WebDriverWait(driver, 10).until(
            lambda d: viewer.get_attribute("data-turn") == contexts[-1].request_id
        )
        assert viewer.get_attribute("data-strategy") == "v7"
        driver.save_screenshot(str(tmp_path / "report.png"))
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert errors == []


def test_the_plots_share_one_scale_in_tokens_and_no_labels_overlap(tmp_path):
    """Issue 33, item 13: every strategy panel on one scale, the largest context in tokens, no label over another."""
    from selenium.webdriver.support.ui import WebDriverWait

    out = tmp_path / "report.html"
    assert invoke("report", str(BUG17), "--out", str(out)).exit_code == 0
    with chromium(window=(1400, 2400)) as driver:
        driver.get(out.as_uri())
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script("return document.body.dataset.ready") == "true"
        )
        got = driver.execute_script("""const t = document.getElementById('chart-tokens').layout;
            const l = document.getElementById('chart-largest');
            const boxes = (id) => [...document.querySelectorAll(['.annotation-text', '.legendtext', '.modebar', '.xtick text']
                .map((c) => '#' + id + ' ' + c).join(', '))]
                .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent || e.className.baseVal || e.className, r.width * r.height,
                    e.matches('.xtick text')]; })
                .filter((b) => b[5] > 0);
            return {ranges: Object.keys(t).filter((k) => k.startsWith('yaxis')).map((k) => t[k].range),
                    largest: l.layout.yaxis.title.text, bars: l.data[0].y,
                    boxes: ['chart-tokens', 'chart-largest', 'chart-cost', 'chart-availability'].map(boxes)}""")
        driver.save_screenshot(str(tmp_path / "plots.png"))
    data = embedded(out.read_text("utf-8"), "ws-compare")
    assert len(got["ranges"]) == len(data["strategies"]) and all(
        r == got["ranges"][0] for r in got["ranges"]
    )
    assert got["largest"] == "tokens"
    assert got["bars"] == [
        max(c["sizes"][s]["tokens"] for c in data["contexts"]) for s in data["strategies"]
    ]
    for boxes in got["boxes"]:
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                if a[6] and b[6]:
                    continue  # rotated tick labels: their upright boxes overlap, their text does not
                apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
                assert apart, f"{a[4]!r} overlaps {b[4]!r}"


def test_an_exported_run_in_headless_chromium(tmp_path):
    """Each turn's decision, rejected answers and outcome, and the run's outcome, as the export recorded them."""
    from selenium.webdriver.support.ui import Select, WebDriverWait

    run, action, eid = exported_run(tmp_path)
    out = tmp_path / "report.html"
    assert invoke("report", str(run), "--strategies", "v10,v13", "--out", str(out)).exit_code == 0
    record = embedded(out.read_text("utf-8"), "ws-report")["record"]
    with chromium() as driver:
        driver.get(out.as_uri())
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script("return document.body.dataset.ready") == "true"
        )
        assert (
            driver.find_element("id", "viewer").get_attribute("data-strategy") == "v10"
        )  # the run's own encoder
        # The outcome, its stage, the stop rule's sentence and the partial outcome's limitations (issue 34).
        assert driver.find_element("id", "outcome-line").text == (
            "Outcome: completed (root_cause_found) · stage completed · stopped: Hypothesis H1 was "
            "concluded supported: the root cause was found. · partial outcome, limitations: "
            "E000004 (not_retained)"
        )
        box = driver.find_element("id", "turn-record")
        seen = []
        for turn, _rec in enumerate(record["turns"]):
            Select(driver.find_element("id", "turn")).select_by_index(turn)
            seen.append(box.text.splitlines())
            assert box.get_attribute("data-rejections") == "1"
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert seen[0] == ["Decision: query pg:orders: select 1 (purpose: check)",
                       f"Rejected answers: malformed_json: {record['turns'][0]['rejections'][0]['message']}",
                       f"Outcome: {action} ran: its result is {eid} (1 item); the analysis stays active"]  # fmt: skip
    assert (
        seen[1][1] == "Rejected answers: unknown_evidence: not evidence of analysis demo: E999999"
    )
    assert seen[1][2] == "Outcome: the analysis is completed (root_cause_found)"
    assert errors == []
