"""`workingset requests`: the bodies a provider receives, through the official SDKs unchanged.

Their independent billing, from the providers' documented rules against `compare` on every
run, strategy and model, is `tests/compare/test_billing_every_run.py`. The journal test here proves
that v11–v13's requests are ones a cache can hit: every turn's previous journal end is a
block boundary of the next request within 20 blocks of its last breakpoint.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from tests.helpers.common import BUG17, long_run_path
from tests.helpers.sdks import request_validators, require
from workingset.cli.commands import app
from workingset.compare.wire import body_prompt
from workingset.encoders import get_encoder
from workingset.runs.layout import read_run
from workingset.session.replies import Request

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

if TYPE_CHECKING:  # annotations only; the tests import it where they use it
    import httpx2


def requests_of(run: Path, *args: str) -> list[dict]:
    out = CliRunner().invoke(app, ["requests", str(run), *args])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_requests_prints_one_object_a_turn_and_refuses_bad_options():
    lines = requests_of(BUG17, "--strategy", "v13")
    assert [line["request_id"] for line in lines] == [ctx.request_id for _, ctx in read_run(BUG17)]
    assert all(set(line) == {"request_id", "sent_at", "body"} for line in lines)
    assert (
        lines[0]["body"]["tools"][0]["name"] == "submit_decision"
    )  # the output schema's tool is sent and billed
    legacy = requests_of(BUG17, "--strategy", "v13", "--provider", "openai", "--model", "gpt-5.5")
    assert (
        "prompt_cache_breakpoint" not in json.dumps(legacy[0])
        and legacy[0]["body"]["model"] == "gpt-5.5"
    )
    for args, code in (
        (["--provider", "gemini"], "unknown_provider"),
        (["--strategy", "v99"], "unknown_encoder"),
    ):
        out = CliRunner().invoke(app, ["requests", str(BUG17), *args])
        assert out.exit_code == 2 and code in out.output and "Traceback" not in out.output


# -- the bodies are what the official SDKs send ---------------------------------------------------


class Echo:
    """A mock endpoint that keeps the JSON body the SDK sent and answers with `reply`."""

    def __init__(self, reply: dict) -> None:
        self.bodies: list[dict] = []
        self.reply = reply

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        httpx2 = require("httpx2")
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=self.reply)


@pytest.mark.parametrize("strategy", ["v13", "full-transcript"])
def test_bodies_go_through_the_sdks_unchanged(strategy):
    anthropic = require("anthropic")
    httpx2 = require("httpx2")
    openai = require("openai")
    anthropic_request, openai_request = request_validators()

    line = requests_of(BUG17, "--strategy", strategy)[-1]
    anthropic_request.validate_python({"model": "m", "max_tokens": 1, **line["body"]})
    echo = Echo({"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": "end_turn",
                 "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})  # fmt: skip
    client = anthropic.Anthropic(
        api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(echo)), max_retries=0
    )
    client.messages.create(model="m", max_tokens=1, **line["body"])
    assert {k: v for k, v in echo.bodies[0].items() if k not in ("model", "max_tokens")} == line[
        "body"
    ]

    body = requests_of(BUG17, "--strategy", strategy, "--provider", "openai", "--model", "gpt-5.6")[
        -1
    ]["body"]
    openai_request.validate_python(body)
    echo = Echo(
        {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-5.6", "choices": []}
    )
    client = openai.OpenAI(
        api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(echo)), max_retries=0
    )
    client.chat.completions.create(**body)
    assert echo.bodies[0] == body
    assert "prompt_cache_breakpoint" in json.dumps(body)


# -- v11–v13: requests a cache can hit ---------------------------------------------------------


def check_journal_boundaries(contexts, name: str) -> int:
    """Every turn's previous journal end is a block boundary of this request, within its lookback; the number of turns read there."""
    encoder = get_encoder(name)
    previous, read_at = None, 0
    for ctx in contexts:
        out = encoder.render(ctx.state, ctx.hypothesis)
        sent = body_prompt(
            Request.of(out, ctx.request_id, ctx.state).messages("anthropic"), "anthropic"
        )
        compactions = encoder.select(
            ctx.state, ctx.state.hypothesis(ctx.hypothesis)
        ).journal.compactions
        if previous is not None and previous[1] == compactions:
            end = previous[0].breakpoints[-1]  # the end of last turn's journal
            assert sent.tokens[:end] == previous[0].tokens[:end]
            assert end in sent.blocks, f"{ctx.request_id}: last turn's journal ends inside a block"
            behind = sent.blocks.index(sent.breakpoints[-1]) - sent.blocks.index(end)
            assert 0 <= behind < 20, (
                f"{ctx.request_id}: last turn's journal end is {behind} blocks behind"
            )
            read_at += 1
        previous = (sent, compactions)
    return read_at


@pytest.mark.parametrize("name", ["v11", "v12", "v13"])
def test_every_bug17_turn_can_read_last_turns_journal(name):
    contexts = [ctx for _, ctx in read_run(BUG17)]
    assert (
        check_journal_boundaries(contexts, name) >= len(contexts) - 3
    )  # all but the first and the compactions


def test_every_turn_of_the_long_run_can_read_last_turns_journal(tmp_path):
    from trajectories import detect

    from workingset.importers import import_trajectory, write_import

    path = long_run_path()
    write_import(import_trajectory(detect(path), path), tmp_path / "run")
    contexts = [ctx for _, ctx in read_run(tmp_path / "run")]
    assert check_journal_boundaries(contexts, "v13") >= len(contexts) - 10
