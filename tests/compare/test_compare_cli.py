"""`workingset compare` through typer's CliRunner, with a fixed terminal width."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.common import BUG17, invoke
from workingset.compare.engine import DEFAULT_LABEL
from workingset.encoders import ENCODERS
from workingset.model.hashing import content_hash
from workingset.model.state import (
    Budget,
    Capture,
    Case,
    Control,
    Evidence,
    EvidenceBudget,
    Hypothesis,
    RecallSelection,
    State,
    TextPayload,
)  # fmt: skip
from workingset.runs.layout import make_stored_context, write_run


def _state(n: int) -> State:
    payloads = [
        TextPayload(language="log", text=f"line {i}: worker {i} lease lost\n" * 30)
        for i in range(n)
    ]
    evidence = [
        Evidence(id=f"E{i:06d}", collector="H1" if i % 2 else "H2", scope="log",
                 capture=Capture(query=f"{{app=\"w\"}} |= \"{i}\"", origin="loki:prod-eu"),
                 payload=p, content_hash=content_hash(p),
                 budget=EvidenceBudget(action=f"B{i:06d}", status="settled", cost=0.0),
                 iteration=i, captured_at="2026-06-10T20:15:00Z")
        for i, p in enumerate(payloads)
    ]  # fmt: skip
    hyps = [
        Hypothesis(id=h, title=f"{h} title", mechanism="a mechanism", confidence=0.5, disposition="open",
                   control=Control(iterations_used=1, iteration_limit=10))
        for h in ("H1", "H2")
    ]  # fmt: skip
    return State(
        analysis_id="tiny", iteration=n, budget=Budget(max_iterations=50),
        case=Case(title="Tiny case", statement="Workers lose leases.", opened_at="2026-06-10T20:00:00Z"),
        hypotheses=hyps, evidence=evidence,
        recall={"H1": RecallSelection(evidence_refs=["E000000"], iteration=n)} if n else {},
    )  # fmt: skip


PAIR = (
    "--base",
    "v10",
)  # the tests of the pair of v10 and the default encoder (the default base is the transcript's baseline)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    contexts = [
        make_stored_context(f"tiny-r{i:04d}", "v7", "H1" if i % 2 else "H2", _state(i + 1))
        for i in range(4)
    ]
    write_run(tmp_path / "run", contexts)
    return tmp_path / "run"


def test_default_is_the_default_encoder_against_the_transcript_and_every_baseline_billed(
    run_dir: Path,
):
    """`compare RUN` alone (issue 33, item 3): the transcript the base, the default encoder, every baseline, billed."""
    from workingset.compare.baselines import BASELINES
    from workingset.compare.engine import DEFAULT_LABEL

    result = invoke("compare", str(run_dir))
    assert result.exit_code == 0, result.output
    assert "comparing" not in result.stdout  # no progress bar off a terminal
    data = json.loads(invoke("compare", str(run_dir), "--json").stdout)
    assert data["base"] == "full-transcript" and data["strategies"][:2] == [
        "full-transcript",
        DEFAULT_LABEL,
    ]
    assert set(data["strategies"]) == {DEFAULT_LABEL, *BASELINES} and list(data["cache"]) == [
        "anthropic"
    ]
    same = json.loads(invoke("compare", str(run_dir), "--base", "full-transcript", "--candidate", DEFAULT_LABEL,
                             "--baselines", "--cache", "anthropic", "--use", "--json").stdout)  # fmt: skip
    assert (
        same == data and "use" in data and "with_recalls" in data
    )  # what each step used, and its bill
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict"))
    assert verdict.startswith("verdict (with recalls): ")
    assert "billed under the anthropic cache model, recall and re-run turns" in verdict


def test_the_verdict_names_the_cache_model_and_a_base_that_is_cheapest(run_dir: Path):
    args = ("--cache", "anthropic,ideal", "--cache-min", "10")
    data = json.loads(invoke("compare", str(run_dir), *PAIR, *args, "--json").stdout)
    line = invoke("compare", str(run_dir), *PAIR, *args).stdout.splitlines()[-1]
    bills = {
        s: data["cache"]["anthropic"]["total"][s]["effective_cost"] for s in ("v10", DEFAULT_LABEL)
    }
    assert line.startswith("verdict: ") and line.endswith(
        "full-price tokens, billed under the anthropic cache model)"
    )
    assert f"{min(bills.values()):,.1f} against {max(bills.values()):,.1f}" in line
    swapped = invoke(
        "compare", str(run_dir), "--base", DEFAULT_LABEL, "--candidate", "v10"
    ).stdout.splitlines()[-1]
    assert (
        swapped.startswith(f"verdict: {DEFAULT_LABEL} is cheapest: v10, the next, costs ")
        and "% more (" in swapped
    )


def test_json_has_the_table_numbers(run_dir: Path):
    data = json.loads(invoke("compare", str(run_dir), *PAIR, "--json").stdout)
    assert data["strategies"] == ["v10", DEFAULT_LABEL] and data["base"] == "v10"
    assert [c["file"] for c in data["contexts"]] == [f"tiny-r{i:04d}.json" for i in range(4)]
    for s in data["strategies"]:
        total = data["total"][s]
        assert total["chars"] == sum(c["sizes"][s]["chars"] for c in data["contexts"])
        assert total["tokens"] == sum(c["sizes"][s]["tokens"] for c in data["contexts"])
        assert total["tokens"] == total["cached_tokens"] + total["uncached_tokens"]
        last = dict(data["last"][s])
        last.pop("change_percent", None)
        assert last == data["contexts"][-1]["sizes"][s]
    assert data["contexts"][0]["sizes"]["v10"]["cached_tokens"] == 0
    text = invoke("compare", str(run_dir), *PAIR).stdout
    assert f"{data['total'][DEFAULT_LABEL]['chars']:,}" in text
    assert f"{data['total'][DEFAULT_LABEL]['change_percent']['chars']:+.1f}%" in text


def test_all_base_and_candidate(run_dir: Path):
    data = json.loads(invoke("compare", str(run_dir), "--all", "--base", "v10", "--json").stdout)
    assert data["strategies"][0] == "v10" and len(data["strategies"]) == len(ENCODERS)
    pair = json.loads(
        invoke("compare", str(run_dir), "--base", "v9", "--candidate", "v10", "--json").stdout
    )
    assert pair["strategies"] == ["v9", "v10"]
    assert pair["total"]["v10"] == {
        **data["total"]["v10"],
        "change_percent": pair["total"]["v10"]["change_percent"],
    }
    text = invoke("compare", str(run_dir), "--all").stdout
    assert "Tokens per context" in text and "New tokens per context" in text


def test_no_recall_shrinks_v8_only(run_dir: Path):
    pair = ("--base", "v7", "--candidate", "v8")
    kept = json.loads(invoke("compare", str(run_dir), *pair, "--json").stdout)
    dropped = json.loads(invoke("compare", str(run_dir), *pair, "--no-recall", "--json").stdout)
    assert dropped["recall"] is False
    assert dropped["total"]["v7"]["chars"] == kept["total"]["v7"]["chars"]
    assert dropped["total"]["v8"]["chars"] < kept["total"]["v8"]["chars"]


def test_sections_add_up(run_dir: Path):
    data = json.loads(invoke("compare", str(run_dir), *PAIR, "--sections", "--json").stdout)
    for s in data["strategies"]:
        assert sum(data["sections"]["total"][s].values()) == data["total"][s]["chars"]
        assert (
            sum(data["contexts"][0]["sizes"][s]["sections"].values())
            == data["contexts"][0]["sizes"][s]["chars"]
        )
    text = invoke("compare", str(run_dir), *PAIR, "--sections").stdout
    assert "Characters per section, whole run" in text and "output_schema" in text


def test_cached_price_changes_only_the_cost(run_dir: Path):
    full = json.loads(
        invoke("compare", str(run_dir), *PAIR, "--cached-price", "1", "--json").stdout
    )
    assert full["total"]["v10"]["effective_cost"] == full["total"]["v10"]["tokens"]
    free = json.loads(
        invoke("compare", str(run_dir), *PAIR, "--cached-price", "0", "--json").stdout
    )
    assert free["total"]["v10"]["effective_cost"] == free["total"]["v10"]["uncached_tokens"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--encoding", "o200k_base"], "tokenizer_unavailable"),
        (["--base", "v99"], "unknown_encoder"),
        (["--base", DEFAULT_LABEL], "usage_error"),  # the base is the candidate
        (["--cache", "ideal,gemini"], "usage_error"),
        (["--cache", "anthropic", "--ttl", "10m"], "usage_error"),
    ],
)
def test_errors_are_one_line_and_exit_2(run_dir: Path, args: list[str], code: str):
    result = invoke("compare", str(run_dir), *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {code}: ") and result.stderr.count("\n") == 1
    as_json = invoke("compare", str(run_dir), *args, "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == code


def test_empty_or_missing_directory_is_invalid_file(tmp_path: Path):
    result = invoke("compare", str(tmp_path))
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid_file: ")


def test_cache_models_in_json_add_up_and_match_the_plain_numbers(run_dir: Path):
    plain = json.loads(invoke("compare", str(run_dir), *PAIR, "--json").stdout)
    assert "cache" not in plain  # plain compare is unchanged
    data = json.loads(
        invoke("compare", str(run_dir), *PAIR, "--cache", "openai,ideal,anthropic", "--json").stdout
    )
    assert list(data["cache"]) == [
        "openai-auto",
        "ideal",
        "anthropic",
    ]  # `openai` is openai-auto's alias
    for block in data["cache"].values():
        for s in data["strategies"]:
            per = [c[s] for c in block["contexts"]]
            assert all(
                b["uncached_tokens"] + b["written_tokens"] + b["read_tokens"] == b["tokens"]
                for b in per
            )
            for key in ("tokens", "uncached_tokens", "written_tokens", "read_tokens"):
                assert block["total"][s][key] == sum(b[key] for b in per)
            assert block["last"][s] == per[-1]
            # What is billed is the request body: the text's tokens and more (the tool, the schema).
            assert all(b["tokens"] > c["sizes"][s]["tokens"] for b, c in zip(per, data["contexts"]))
    from workingset.compare.wire import body_prompt

    lines = [
        json.loads(line)
        for line in invoke("requests", str(run_dir), "--strategy", "v10").stdout.splitlines()
    ]
    for model, provider in (("anthropic", "anthropic"), ("openai-auto", "openai")):
        bodies = (
            lines
            if provider == "anthropic"
            else [
                json.loads(line)
                for line in invoke(
                    "requests", str(run_dir), "--strategy", "v10", "--provider", "openai"
                ).stdout.splitlines()
            ]
        )
        assert [c["v10"]["tokens"] for c in data["cache"][model]["contexts"]] == [
            len(body_prompt(line["body"], provider).tokens) for line in bodies
        ]  # the bodies `requests` prints
    assert (
        data["cache"]["anthropic"]["write_price"] == 1.25
        and data["cache"]["openai-auto"]["write_price"] == 1.0
    )
    assert (
        data["cache"]["anthropic"]["timed"] is False
    )  # every capture of the tiny run is at one moment


def test_cache_options_change_the_billing(run_dir: Path):
    def cost(*args: str) -> float:
        data = json.loads(
            invoke(
                "compare",
                str(run_dir),
                *PAIR,
                "--cache",
                "anthropic",
                "--cache-min",
                "10",
                *args,
                "--json",
            ).stdout
        )
        return data["cache"]["anthropic"]["total"]["v10"]["effective_cost"]

    assert cost("--ttl", "1h") > cost() and cost("--write-price", "1.0") < cost()
    none = json.loads(
        invoke("compare", str(run_dir), *PAIR, "--cache", "anthropic", "--json").stdout
    )  # under 1,024 tokens
    total = none["cache"]["anthropic"]["total"]["v10"]
    assert (
        total["uncached_tokens"] == total["tokens"] and total["effective_cost"] == total["tokens"]
    )


def test_baselines_flag(run_dir: Path):
    result = invoke("compare", str(run_dir), "--all", "--baselines", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["strategies"]) > 10


# -- bug17: the tables as readable snapshots ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--all"],
        ["--base", "v10", "--no-recall"],
        ["--base", "v10", "--sections"],
        ["--base", "v8", "--candidate", "v10", "--cached-price", "0.5"],
        ["--all", "--baselines", "--cache", "ideal,anthropic", "--cache", "openai"],
    ],
    ids=["default", "all", "no-recall", "sections", "v8-v10-half-price", "cache-models"],
)
def test_bug17_tables(snapshot_txt, args: list[str]):
    result = invoke("compare", str(BUG17), *args)
    assert result.exit_code == 0, result.output
    assert result.stdout.encode("utf-8") == snapshot_txt


def test_bug17_json_matches_the_table():
    data = json.loads(invoke("compare", str(BUG17), "--all", "--json").stdout)
    text = invoke("compare", str(BUG17), "--all").stdout
    assert len(data["contexts"]) == 18
    for s in data["strategies"]:
        total = data["total"][s]
        row = next(line for line in text.splitlines() if line.startswith(f"{s} "))
        assert (
            f"{total['chars']:,}" in row
            and f"{total['tokens']:,}" in row
            and f"{total['effective_cost']:,.1f}" in row
        )
