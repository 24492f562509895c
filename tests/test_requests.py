"""`workingset requests`: the bodies a provider receives, billed here from the docs' rules alone.

The billing below is written from the providers' documentation (quoted in README "Cache-true
costs"), with tiktoken and the JSON of `requests` only — no `workingset.compare.billing`, no
`workingset.compare.wire` — and has to give `compare`'s figures within 2% for every strategy. The
journal test proves that v11–v13's requests are ones a cache can hit: every turn's previous
journal end is a block boundary of the next request within 20 blocks of its last breakpoint.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import anthropic
import httpx2
import openai
from anthropic.types import message_create_params
from openai.types.chat import completion_create_params
import pytest

from typer.testing import CliRunner

from workingset.cli.commands import app
from workingset.encoders import get_encoder
from workingset.session.replies import Request
from workingset.runs.layout import read_run
from workingset.tokens.count import get_encoding
from workingset.compare.wire import body_prompt

from conftest import BUG17

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from _data import long_runs  # noqa: E402

ENC = get_encoding()  # tiktoken cl100k_base, bundled for offline use
STRATEGIES = [f"v{n}" for n in range(1, 14)] + ["full-transcript", "masking-10", "last-5"]


def requests_of(run: Path, *args: str) -> list[dict]:
    out = CliRunner().invoke(app, ["requests", str(run), *args])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


# -- an independent billing, from the docs -----------------------------------------------------


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def blocks(body: dict, provider: str) -> list[tuple[list[int], bool, str]]:
    """(tokens, breakpoint at its end, role) per content block, in the provider's prompt order."""
    out = []
    for tool in body.get("tools", []):
        out.append((ENC.encode_ordinary(_canonical({k: v for k, v in tool.items() if k != "cache_control"})), "cache_control" in tool, ""))
    if provider == "openai" and "response_format" in body:
        out.append((ENC.encode_ordinary(_canonical(body["response_format"])), False, ""))
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for part in parts:
            text = part["text"] if part.get("type") == "text" else _canonical({k: v for k, v in part.items() if k != "cache_control"})
            marked = "cache_control" in part or "prompt_cache_breakpoint" in part
            out.append((ENC.encode_ordinary(text), marked, message["role"]))
    return out


def independent_bill(lines: list[dict], provider: str, family: str) -> float:
    """The effective cost of a run's requests: reads 0.1x, writes 1.25x, nothing under 1,024 tokens.

    anthropic: entries at cache_control blocks, 5 min from the last write or read; a hit only at
    a block boundary at most 19 blocks before a breakpoint's block; writes up to the last
    breakpoint. openai-5.6: entries at the (up to 4) written breakpoints, the implicit one at the
    end of the latest user message unless the body sets mode explicit; the longest entry that is
    exactly a prefix is read; writes up to the furthest written breakpoint; 30 min.
    """
    entries: dict[tuple, float] = {}
    total, now = 0.0, float("-inf")
    for line in lines:
        now = max(now, datetime.fromisoformat(line["sent_at"].replace("Z", "+00:00")).timestamp())
        body, cut = line["body"], blocks(line["body"], provider)
        tokens, ends, marks, roles = [], [], [], []
        for toks, marked, role in cut:
            tokens += toks
            ends.append(len(tokens))
            marks.append(marked)
            roles.append(role)
        entries = {k: t for k, t in entries.items() if t >= now}
        if family == "anthropic":
            points = [i for i, m in enumerate(marks) if m]
            window = {ends[j] for i in points for j in range(max(0, i - 19), i + 1)}
            written_at = [ends[i] for i in points]
            ttl = 300
        else:
            explicit = [ends[i] for i, m in enumerate(marks) if m]
            implicit = (body.get("prompt_cache_options") or {}).get("mode") != "explicit"
            users = [ends[i] for i, r in enumerate(roles) if r in ("user", "tool")]
            written_at = sorted(set(explicit[-3:] + users[-1:]) if implicit else set(explicit[-4:]))
            window = set(range(len(tokens) + 1))
            ttl = 1800
        hits = [n for (n, prefix) in entries if n in window and n >= 1024 and tuple(tokens[:n]) == prefix]
        read = max(hits, default=0)
        if read:
            entries[(read, tuple(tokens[:read]))] = now + ttl
        last = max([n for n in written_at if n >= 1024], default=0)
        written = max(0, last - read)
        for n in written_at:
            if n >= 1024:
                entries[(n, tuple(tokens[:n]))] = now + ttl
        total += (len(tokens) - read - written) + 1.25 * written + 0.1 * read
    return total


@pytest.fixture(scope="module")
def bug17_costs() -> dict:
    out = CliRunner().invoke(app, ["compare", str(BUG17), "--all", "--baselines", "--cache", "anthropic,openai-5.6",
                                   "--json", "--summary", "--no-token-cache"])  # fmt: skip
    assert out.exit_code == 0, out.output
    cache = json.loads(out.stdout)["cache"]
    return {m: {s: cache[m]["total"][s]["effective_cost"] for s in STRATEGIES} for m in cache}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_independent_anthropic_billing_of_requests_equals_compare(strategy, bug17_costs):
    mine = independent_bill(requests_of(BUG17, "--strategy", strategy), "anthropic", "anthropic")
    assert mine == pytest.approx(bug17_costs["anthropic"][strategy], rel=0.02)


@pytest.mark.parametrize("strategy", ["v7", "v11", "v13", "full-transcript", "last-5"])
def test_an_independent_gpt_56_billing_of_requests_equals_compare(strategy, bug17_costs):
    lines = requests_of(BUG17, "--strategy", strategy, "--provider", "openai", "--model", "gpt-5.6")
    assert independent_bill(lines, "openai", "openai-5.6") == pytest.approx(bug17_costs["openai-5.6"][strategy], rel=0.02)


def test_requests_prints_one_object_a_turn_and_refuses_bad_options():
    lines = requests_of(BUG17, "--strategy", "v13")
    assert [line["request_id"] for line in lines] == [ctx.request_id for _, ctx in read_run(BUG17)]
    assert all(set(line) == {"request_id", "sent_at", "body"} for line in lines)
    assert lines[0]["body"]["tools"][0]["name"] == "submit_decision"  # the output schema's tool is sent and billed
    legacy = requests_of(BUG17, "--strategy", "v13", "--provider", "openai", "--model", "gpt-5.5")
    assert "prompt_cache_breakpoint" not in json.dumps(legacy[0]) and legacy[0]["body"]["model"] == "gpt-5.5"
    for args, code in ((["--provider", "gemini"], "unknown_provider"), (["--strategy", "v99"], "unknown_encoder")):
        out = CliRunner().invoke(app, ["requests", str(BUG17), *args])
        assert out.exit_code == 2 and code in out.output and "Traceback" not in out.output


# -- the bodies are what the official SDKs send ---------------------------------------------------


class Echo:
    """A mock endpoint that keeps the JSON body the SDK sent and answers with `reply`."""

    def __init__(self, reply: dict) -> None:
        self.bodies: list[dict] = []
        self.reply = reply

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=self.reply)


@pytest.mark.parametrize("strategy", ["v13", "full-transcript"])
def test_bodies_go_through_the_sdks_unchanged(strategy):
    from pydantic import TypeAdapter

    line = requests_of(BUG17, "--strategy", strategy)[-1]
    TypeAdapter(message_create_params.MessageCreateParamsNonStreaming).validate_python({"model": "m", "max_tokens": 1, **line["body"]})
    echo = Echo({"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": "end_turn",
                 "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})  # fmt: skip
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(echo)), max_retries=0)
    client.messages.create(model="m", max_tokens=1, **line["body"])
    assert {k: v for k, v in echo.bodies[0].items() if k not in ("model", "max_tokens")} == line["body"]

    body = requests_of(BUG17, "--strategy", strategy, "--provider", "openai", "--model", "gpt-5.6")[-1]["body"]
    TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming).validate_python(body)
    echo = Echo({"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-5.6", "choices": []})
    client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(echo)), max_retries=0)
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
        sent = body_prompt(Request.of(out, ctx.request_id, ctx.state).messages("anthropic"), "anthropic")
        compactions = encoder.select(ctx.state, ctx.state.hypothesis(ctx.hypothesis)).journal.compactions
        if previous is not None and previous[1] == compactions:
            end = previous[0].breakpoints[-1]  # the end of last turn's journal
            assert sent.tokens[:end] == previous[0].tokens[:end]
            assert end in sent.blocks, f"{ctx.request_id}: last turn's journal ends inside a block"
            behind = sent.blocks.index(sent.breakpoints[-1]) - sent.blocks.index(end)
            assert 0 <= behind < 20, f"{ctx.request_id}: last turn's journal end is {behind} blocks behind"
            read_at += 1
        previous = (sent, compactions)
    return read_at


@pytest.mark.parametrize("name", ["v11", "v12", "v13"])
def test_every_bug17_turn_can_read_last_turns_journal(name):
    contexts = [ctx for _, ctx in read_run(BUG17)]
    assert check_journal_boundaries(contexts, name) >= len(contexts) - 3  # all but the first and the compactions


def test_every_turn_of_the_long_run_can_read_last_turns_journal(tmp_path):
    from trajectories import detect

    from workingset.importers import import_trajectory, write_import

    (path,) = long_runs(tmp_path)
    write_import(import_trajectory(detect(path), path), tmp_path / "run")
    contexts = [ctx for _, ctx in read_run(tmp_path / "run")]
    assert check_journal_boundaries(contexts, "v13") >= len(contexts) - 10
