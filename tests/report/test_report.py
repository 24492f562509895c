"""`workingset report`: the page's numbers are compare's, its texts the rendered ones, bad input changes nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.common import BUG17, invoke
from tests.helpers.real_corpus import CORPUS, needs_corpus
from tests.helpers.report_page import embedded, texts
from workingset.compare.baselines import BASELINES
from workingset.compare.engine import DEFAULT_LABEL
from workingset.encoders import render
from workingset.report import DEFAULT_STRATEGIES, default_strategies, report_data
from workingset.report.page import _json, render_page
from workingset.report.texts import LineTable, decode, edits, expand_ids, id_ranges
from workingset.runs.layout import read_run
from workingset.session.investigation import Investigation


@pytest.fixture(scope="module")
def bug17_report():
    """The default report of bug17, as data and as the page."""
    data = report_data(str(BUG17))
    return data, render_page(data)


CACHE = [
    "--cache",
    "anthropic,openai,ideal",
    "--availability",
]  # the report's default models; it always charts availability


@pytest.mark.parametrize("report_args, compare_args", [
    (["--strategies", "v7,v8"], ["--base", "v7", "--candidate", "v8", *CACHE]),
    (["--strategies", ",".join(["v7"] + [f"v{n}" for n in (1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16)] + list(BASELINES))],
     ["--all", "--baselines", *CACHE]),
    (["--strategies", "v10", "--strategies", "v11,", "--no-recall", "--cached-price", "0.25", "--cache", "openai",
      "--cache", "anthropic", "--ttl", "1h", "--cache-min", "2048", "--write-price", "1.5"],
     ["--base", "v10", "--candidate", "v11", "--no-recall", "--cached-price", "0.25", "--cache", "openai,anthropic",
      "--ttl", "1h", "--cache-min", "2048", "--write-price", "1.5", "--availability"]),
], ids=["default-pair", "all-baselines", "options"])  # fmt: skip
def test_page_holds_compares_json(tmp_path, report_args, compare_args):
    out = tmp_path / "r.html"
    made = invoke("report", str(BUG17), "--out", str(out), *report_args, "--json")
    assert made.exit_code == 0, made.output
    compared = invoke("compare", str(BUG17), *compare_args, "--json")
    assert compared.exit_code == 0, compared.output
    page = out.read_text("utf-8")
    got = embedded(page, "ws-compare")
    assert got == json.loads(compared.stdout)
    # The charts' series are compare's numbers per context, under each cache model.
    series = embedded(page, "ws-report")["series"]
    assert list(series) == list(got["cache"])
    for model, per in series.items():
        for s in got["strategies"]:
            bills = [c[s] for c in got["cache"][model]["contexts"]]
            assert per[s]["read"] == [b["read_tokens"] for b in bills]
            assert per[s]["written"] == [b["written_tokens"] for b in bills]
            assert per[s]["uncached"] == [b["uncached_tokens"] for b in bills]
            assert per[s]["cost"] == [b["effective_cost"] for b in bills]
            assert sum(per[s]["read"]) == got["cache"][model]["total"][s]["read_tokens"]
    assert json.loads(made.stdout) == {"run": str(BUG17), "out": str(out), "path": str(out.resolve()),
                                       "bytes": len(page.encode()), "contexts": 18,
                                       "strategies": got["strategies"], "cache": list(got["cache"])}  # fmt: skip


def test_viewer_texts_are_the_rendered_texts(bug17_report):
    data, _ = bug17_report
    contexts = [ctx for _, ctx in read_run(BUG17)]
    assert list(data["viewer"]["turns"]) == ["v7", *DEFAULT_STRATEGIES]  # bug17's own encoder first
    for strategy in data["viewer"]["turns"]:
        decoded = texts(data, strategy)
        for ctx, text, entry in zip(contexts, decoded, data["viewer"]["turns"][strategy]):
            if strategy in BASELINES:
                assert text == BASELINES[strategy](ctx.state, ctx.hypothesis)
                assert entry["breakpoints"] == [len(text) - 1] and "shown" not in entry
                assert entry["names"] == [[0, "message"]]
            else:
                rendered = render(ctx.state, ctx.hypothesis, strategy)
                assert text == rendered.text
                assert entry["breakpoints"] == list(rendered.stable_ends())
                assert (expand_ids(entry["shown"]), expand_ids(entry["indexed"])) == (
                    list(rendered.shown),
                    list(rendered.indexed),
                )
                names = [name for k, name in entry["names"]]
                assert (
                    names
                    == [
                        c
                        for k, (c, _) in enumerate(rendered.chunks)
                        if not k or rendered.chunks[k - 1][0] != c
                    ][: len(names)]
                )
            ends = entry["sections"]
            assert ends == sorted(ends) and ends[-1] == len(text)
            assert entry["length"] == len(text)


def test_served_part_is_shared_with_the_previous_turn(bug17_report):
    # Under the ideal model the cache serves the common token prefix: its characters start
    # the previous turn's text too, and stop within a few characters of where they differ.
    data, _ = bug17_report
    for strategy in data["viewer"]["turns"]:
        decoded = texts(data, strategy)
        for i, entry in enumerate(data["viewer"]["turns"][strategy]):
            read, written = entry["served"]["ideal"]
            assert written == read
            # Anthropic writes from the end of its read up to the last breakpoint, never beyond.
            a_read, a_written = entry["served"]["anthropic"]
            assert a_read <= a_written <= max(entry["breakpoints"])
            if i == 0:
                assert read == 0
                continue
            prev, text = decoded[i - 1], decoded[i]
            assert prev.startswith(text[:read])
            common = next(
                (k for k, (a, b) in enumerate(zip(prev, text)) if a != b), min(len(prev), len(text))
            )
            assert common - read < 64, (strategy, i, common, read)


def test_page_is_self_contained_and_deterministic(bug17_report):
    data, page = bug17_report
    assert render_page(data) == page
    lowered = page.lower()
    for tag in ("<script src", '<link rel="stylesheet"', "<img", "<iframe", "@import"):
        assert tag not in lowered
    assert page.count("<script") == 4  # plotly.js, two data elements, the page's own script


def test_evidence_cannot_end_a_script_element():
    text = json.loads(_json({"t": "</script><script>alert(1)</script><!--"}))
    assert text == {"t": "</script><script>alert(1)</script><!--"}
    assert "<" not in _json({"t": "</script><!--"})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["", "a", "b", "c", "```", "x y", "\u00e9", "\U0001f600"]), max_size=30),
                min_size=1, max_size=6))  # fmt: skip
def test_line_edits_decode_exactly(runs):
    table, prev_ids, prev_lines = LineTable(), [], []
    for lines in runs:
        text = "\n".join(lines)
        ids = table.ids(text)
        ops = edits(prev_ids, ids)
        out = decode(table.lines, prev_lines, ops)
        assert "\n".join(out) == text
        prev_ids, prev_lines = ids, out


@pytest.mark.parametrize("args, code", [
    (["--strategies", "v7,bogus"], "unknown_strategy"),
    (["--strategies", "v7,v7"], "usage_error"),
    (["--strategies", "v11:budget=12"], "unknown_encoder"),
    (["--cache", "nope"], "usage_error"),
    (["--ttl", "2h"], "usage_error"),
    (["--cached-price", "nan"], "usage_error"),
    (["--write-price", "-1"], "usage_error"),
    (["--encoding", "gpt2-online"], "tokenizer_unavailable"),
])  # fmt: skip
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, args, code):
    out = tmp_path / "r.html"
    result = invoke("report", str(BUG17), "--out", str(out), *args, "--json")
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["code"] == code
    assert not out.exists()


def test_unwritable_output_and_missing_run(tmp_path):
    (tmp_path / "file").write_text("x")
    for out, code in ((tmp_path / "no" / "r.html", "not_found"), (tmp_path, "is_a_directory"),
                      (tmp_path / "file" / "r.html", "not_a_directory")):  # fmt: skip
        result = invoke("report", str(BUG17), "--out", str(out))
        assert result.exit_code == 2 and result.stderr.startswith(
            f"error: {code}: cannot write {out}"
        ), result.stderr
    result = invoke("report", str(tmp_path / "none"), "--out", str(tmp_path / "r.html"))
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid_file: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    import workingset.report as report

    def fail(src, dst):
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(report.os, "replace", fail)
    result = invoke(
        "report", str(BUG17), "--out", str(tmp_path / "r.html"), "--strategies", "v7", "--json"
    )
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "io_error"
    assert list(tmp_path.iterdir()) == []


@needs_corpus
def test_report_of_an_imported_trajectory(tmp_path):
    run, out = tmp_path / "run", tmp_path / "r.html"
    assert (
        invoke(
            "import",
            "swe-agent",
            str(CORPUS / "sweagent-gpt4-pydicom-1458.traj"),
            "--out",
            str(run),
        ).exit_code
        == 0
    )
    assert invoke("report", str(run), "--out", str(out)).exit_code == 0
    page = out.read_text("utf-8")
    report = embedded(page, "ws-report")
    contexts = [ctx for _, ctx in read_run(run)]
    assert embedded(page, "ws-compare")["strategies"] == list(
        DEFAULT_STRATEGIES
    )  # imported with the default
    assert texts(report, "full-transcript") == [
        BASELINES["full-transcript"](c.state, c.hypothesis) for c in contexts
    ]
    assert texts(report, DEFAULT_LABEL) == [
        render(c.state, c.hypothesis, DEFAULT_LABEL).text for c in contexts
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 30).map(lambda n: f"E{n:06d}"), st.integers(0, 5).map(lambda n: f"N{n:03d}"),
                          st.sampled_from(["X", "E1", "E01", "7"])), max_size=40))  # fmt: skip
def test_id_ranges_expand_back(ids):
    assert expand_ids(id_ranges(ids)) == ids


def test_id_ranges_join_only_consecutive_ids():
    assert id_ranges(["E000001", "E000002", "E000003", "E000007", "N001", "E000008"]) == [
        "E000001\u2013E000003",
        "E000007",
        "N001",
        "E000008",
    ]


def test_prefix_chars_counts_whole_characters():
    from workingset.tokens.count import get_encoding, prefix_chars

    text = "h\u00e9llo \U0001f600 w\u00f6rld \u4e2d\u6587"
    tokens = get_encoding().encode_ordinary(text)
    counts = list(range(len(tokens) + 1))
    got = prefix_chars(tokens, counts[::-1])[::-1]  # any order, each token decoded once
    for n, chars in zip(counts, got):
        whole = get_encoding().decode_bytes(tokens[:n]).decode("utf-8", "ignore")
        assert chars == len(whole) and text.startswith(whole)
    assert got[-1] == len(text)


def test_the_first_screen_has_the_verdict_and_the_viewer_opens_on_the_runs_own_encoder(
    bug17_report,
):
    data, page = bug17_report
    assert data["own"] == "v7"  # bug17 was rendered by v7 (every context's `encoder`)
    totals = {
        s: data["compare"]["cache"]["anthropic"]["total"][s]["effective_cost"]
        for s in data["compare"]["strategies"]
    }
    best = min(totals, key=totals.get)
    share = (totals["v7"] - totals[best]) / totals["v7"] * 100
    recorded = (f"{best} is cheapest: {share:.1f}% less than v7 ({totals[best]:,.1f} "
                f"against {totals['v7']:,.1f} full-price tokens, billed under the anthropic cache model)")  # fmt: skip
    # The verdict is the bill with recalls (compare --use), the recorded one beside it.
    bills = {s: data["use"]["with_recalls"]["anthropic"][s]["effective_cost"] for s in totals}
    first = min(bills, key=bills.get)
    assert data["verdicts"]["anthropic"].startswith(f"{first} is cheapest: ")
    assert (
        "with recalls: billed under the anthropic cache model, recall and re-run turns and output"
        in data["verdicts"]["anthropic"]
    )
    assert data["verdicts"]["anthropic"].endswith("; as recorded: " + recorded)
    assert list(data["verdicts"]) == list(data["compare"]["cache"])
    assert '<p id="verdict-line"' in page.split("<main>", 1)[0]  # in the header, above every chart


def test_default_strategies_are_the_runs_own_encoder_the_default_and_every_baseline(tmp_path):
    """Issue 33, item 1: a run of the default's report shows it (once) and every baseline; an older run's own encoder
    first."""
    from workingset.compare.engine import DEFAULT_LABEL
    from workingset.runs.layout import make_stored_context, write_run

    assert DEFAULT_STRATEGIES == (DEFAULT_LABEL, *BASELINES)
    assert default_strategies(read_run(BUG17)) == ["v7", DEFAULT_LABEL, *BASELINES]
    ctx = read_run(BUG17)[0][1]
    write_run(
        tmp_path / "own",
        [make_stored_context("own-r0001", DEFAULT_LABEL, ctx.hypothesis, ctx.state)],
    )
    data = report_data(str(tmp_path / "own"), cache=["ideal"])
    assert (
        data["compare"]["strategies"] == [DEFAULT_LABEL, *BASELINES]
        and data["own"] == DEFAULT_LABEL
    )


def test_the_page_plots_each_strategys_bill_with_recalls_against_its_share_in_view(bug17_report):
    data, page = bug17_report
    for model, figure in data["tradeoff"].items():
        line, scatter = figure["data"]
        assert scatter["text"] == [s for s in data["compare"]["strategies"]
                                   if data["use"]["use"][s]["used"]]  # fmt: skip
        for s, x, y in zip(scatter["text"], scatter["x"], scatter["y"]):
            use = data["use"]["use"][s]
            assert x == data["use"]["with_recalls"][model][s]["effective_cost"]
            assert y == pytest.approx(100 * use["in_view"] / use["used"])
        # The frontier: no plotted strategy is both cheaper (or as cheap) and more in view (or as much).
        front = list(zip(line["x"], line["y"]))
        for cx, cy in front:
            assert not any(
                x <= cx and y >= cy and (x, y) != (cx, cy)
                for x, y in zip(scatter["x"], scatter["y"])
            )
        assert front == sorted(front)
    assert 'id="chart-tradeoff"' in page


def test_a_run_of_an_encoder_the_page_does_not_show_opens_on_the_second_strategy():
    data = report_data(str(BUG17), ["v10", "v13"], cache=["ideal"])
    assert data["own"] is None and list(data["verdicts"]) == ["ideal"]


# -- an exported run: each turn's decision, rejections and outcome (issue 23.15) ----------------------------


def test_an_exported_run_shows_each_turns_decision_rejections_and_outcome(tmp_path):
    from tests.helpers.report_page import exported_run

    run, action, eid = exported_run(tmp_path)
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    refused = [
        {"code": a["code"], "message": a["message"]} for a in answers if a["outcome"] == "rejected"
    ]
    assert [r["code"] for r in refused] == ["malformed_json", "unknown_evidence"]
    data = report_data(str(run), ["v10", "v13"], cache=["ideal"])
    assert data["record"] == {"outcome": "completed (root_cause_found)", "turns": [
        {"decision": "query pg:orders: select 1 (purpose: check)", "rejections": refused[:1],
         "outcome": f"{action} ran: its result is {eid} (1 item); the analysis stays active"},
        {"decision": f"assessed {eid} as supports (confidence 0.7); conclude supported: because (citing {eid})",
         "rejections": refused[1:], "outcome": "the analysis is completed (root_cause_found)"},
    ], "lifecycle": ("stage completed · stopped: Hypothesis H1 was concluded supported: the root cause was found. · partial outcome, "
                    "limitations: E000004 (not_retained)")}  # fmt: skip
    page = render_page(data)
    assert embedded(page, "ws-report")["record"] == data["record"]
    assert (
        '<p id="outcome-line">' in page.split("<main>", 1)[0] and '<div id="turn-record">' in page
    )


def test_a_plain_run_has_no_record(bug17_report):
    data, page = bug17_report
    assert (
        data["record"] is None and embedded(page, "ws-report")["record"] is None
    )  # the page says "not recorded"


def test_a_request_left_open_or_closed_by_a_cancel(tmp_path):
    from tests.helpers.session_helpers import decision, query, state_bytes
    from workingset.report.record import turn_records

    with Investigation.create(str(tmp_path / "s.sqlite3"), state_bytes(), encoder="v10") as inv:
        first = inv.next_request("H1")
        action = inv.submit(first.request_id, decision(query("select 1"))).action
        second = inv.next_request("H2")
        inv.export(tmp_path / "open")
        inv.cancel()
        inv.export(tmp_path / "cancelled")
    ids = [first.request_id, second.request_id]
    open_, cancelled = (turn_records(str(tmp_path / d), ids) for d in ("open", "cancelled"))
    assert (open_["outcome"], cancelled["outcome"]) == ("active", "cancelled (cancelled)")
    assert (
        open_["turns"][0]["outcome"]
        == f"{action} decided: no result recorded; the analysis stays active"
    )
    assert [r["turns"][1] for r in (open_, cancelled)] == [
        {
            "decision": None,
            "rejections": [],
            "outcome": "no decision accepted: the request was still open",
        },
        {
            "decision": None,
            "rejections": [],
            "outcome": "no decision accepted: the analysis was cancelled",
        },
    ]


def test_a_damaged_journal_is_invalid_file_and_writes_no_report(tmp_path):
    from tests.helpers.report_page import exported_run

    run, _, _ = exported_run(tmp_path)
    (run / "journal.jsonl").write_text("{not json\n")
    out = tmp_path / "report.html"
    res = invoke(
        "report", str(run), "--strategies", "v10", "--cache", "ideal", "--out", str(out), "--json"
    )
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "invalid_file"
    assert not out.exists()


def test_the_tradeoff_frontier_of_a_many_run_aggregate():
    from workingset.report.tradeoff import frontier, tradeoff_figure, tradeoff_points

    shares = {"a": 1.0, "b": 0.9, "c": 0.95, "d": 0.9, "e": None}
    totals = {"a": 100.0, "b": 50.0, "c": 120.0, "d": 50.0, "e": 10.0}
    agg = {"rows": [], "options": {"strategies": list(shares)},
           "use": {s: {"share_in_view": v} for s, v in shares.items()},
           "with_recalls": {"anthropic": {s: {"total": t} for s, t in totals.items()}}}  # fmt: skip
    points = tradeoff_points(agg, "anthropic")
    assert [p.strategy for p in points] == [
        "a",
        "b",
        "c",
        "d",
    ]  # e used nothing: no share, no point
    # c is dominated by a (cheaper, more in view); b and d tie, neither dominates the other.
    assert [p.strategy for p in frontier(points)] == ["b", "d", "a"]
    assert tradeoff_figure(agg, "anthropic")["frontier"] == ["b", "d", "a"]
