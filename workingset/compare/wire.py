"""A provider request body as its prompt cache sees it: the content blocks, in prompt order.

Providers bill what they receive, so every cost model bills a request from its body (the
JSON the API is sent), never from our own idea of it. `body_blocks` walks a body the way
the provider lays out its prompt — Anthropic: tools, then system, then messages; OpenAI:
tools, then messages — and yields one `Block` per tool definition, system block and message
content block, marking the blocks that carry a cache breakpoint (Anthropic's
`cache_control`, OpenAI's `prompt_cache_breakpoint`). `to_prompt` tokenizes each block on
its own and returns the `cache.Prompt` the cache models bill, with every block's end and
every breakpoint as exact token offsets.

OpenAI's structured-output schema (`response_format`) is a prefix of the prompt after the
tools ("the structured output schema serves as a prefix to the system message"), so it is
a block there. `body_prompt` also places the implicit breakpoints: Anthropic's automatic
caching (a top-level `cache_control`) marks the last block; GPT-5.6's implicit breakpoint
sits at the end of the latest user or tool message unless `prompt_cache_options.mode` is
`explicit`.

A tool definition, a tool call and any non-text block count as the canonical JSON of their
content (sorted keys, no spaces): the provider's own rendering of them is not published, so
this is an estimate of their size, and the same estimate for every strategy.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import UsageError
from ..tokens.count import DEFAULT_ENCODING, encode_at
from .billing import Prompt

PARTS = ("tools", "system", "messages")


@dataclass(frozen=True)
class Block:
    """One content block of a request: its text as billed, where it sits, and its cache mark."""

    text: str
    part: str = "messages"  # tools | system | messages
    message: int = -1  # the index of its message within `messages`; -1 for tools and system
    role: str = ""  # the message's role; "" for tools and system
    cache: bool = False  # a cache breakpoint at this block's end


def _json(value: Any) -> str:
    return msgspec.json.encode(value, order="sorted").decode()


def _marked(block: Mapping[str, Any]) -> bool:
    return bool(block.get("cache_control")) or bool(block.get("prompt_cache_breakpoint"))


def _content_text(block: Mapping[str, Any]) -> str:
    """The billed text of one content block: its text, a tool result's content, else the canonical JSON of the rest.

    A tool result carries text for the model to read, so its content counts as that text
    (each nested block's), not as an escaped JSON string of it.
    """
    if block.get("type") in ("text", "input_text", "output_text") and isinstance(
        block.get("text"), str
    ):
        return block["text"]
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, (str, list)):
        if isinstance(content, str):
            return content
        return "".join(_content_text(part) for part in content if isinstance(part, Mapping))
    rest = {k: v for k, v in block.items() if k not in ("cache_control", "prompt_cache_breakpoint")}
    return _json(rest)


def _message_blocks(index: int, message: Mapping[str, Any]) -> Iterator[Block]:
    role = str(message.get("role", ""))
    content = message.get("content")
    if isinstance(content, str):
        yield Block(content, "messages", index, role, _marked(message))
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                raise UsageError(f"messages[{index}]: a content block must be an object")
            yield Block(_content_text(part), "messages", index, role, _marked(part))
    elif content is not None:
        raise UsageError(f"messages[{index}]: content must be a string or a list of blocks")
    for call in (
        message.get("tool_calls") or ()
    ):  # OpenAI Chat Completions: calls beside the content
        yield Block(_json(call), "messages", index, role, False)


def body_blocks(body: Mapping[str, Any], provider: str) -> list[Block]:
    """The content blocks of a request body, in the order the provider builds its prompt."""
    if provider not in ("anthropic", "openai"):
        raise UsageError(
            f"no provider {provider!r}; available: anthropic, openai",
            details={"valid": ["anthropic", "openai"]},
        )
    out: list[Block] = []
    for tool in body.get("tools") or ():
        out.append(
            Block(
                _json({k: v for k, v in tool.items() if k != "cache_control"}),
                "tools",
                cache=_marked(tool),
            )
        )
    schema = body.get("response_format")
    if provider == "openai" and isinstance(schema, Mapping) and schema.get("type") == "json_schema":
        out.append(Block(_json(schema), "system"))
    system = body.get("system")
    if isinstance(system, str):
        out.append(Block(system, "system"))
    elif isinstance(system, list):
        out.extend(Block(_content_text(b), "system", cache=_marked(b)) for b in system)
    key = "messages" if "messages" in body or provider == "anthropic" else "input"
    for index, message in enumerate(body.get(key) or ()):
        out.extend(_message_blocks(index, message))
    return out


def to_prompt(
    blocks: list[Block],
    time: float | None = None,
    encoding: str = DEFAULT_ENCODING,
    implicit: int | None = None,
) -> Prompt:
    """Tokenize each block on its own; block ends and breakpoints become exact token offsets.

    `implicit` is the index of the block the provider's implicit breakpoint ends (None: none).
    """
    text = "".join(b.text for b in blocks)
    cuts, at = [], 0
    for block in blocks:
        at += len(block.text)
        cuts.append(at)
    tokens, ends = encode_at(text, cuts, encoding) if blocks else (array("I"), ())
    points = sorted({end for end, block in zip(ends, blocks) if block.cache and end > 0})
    at_implicit = ends[implicit] if implicit is not None and ends[implicit] > 0 else None
    return Prompt(tokens=tokens, breakpoints=tuple(points), time=time, blocks=tuple(sorted(set(e for e in ends if e > 0))),
                  implicit=at_implicit)  # fmt: skip


def billed_blocks(body: Mapping[str, Any], provider: str) -> tuple[list[Block], int | None]:
    """`body_blocks` with the provider's implicit breakpoints placed: the blocks, and the index of the block
    GPT-5.6's implicit breakpoint ends (None: none), as `to_prompt` takes them."""
    blocks = body_blocks(body, provider)
    implicit = None
    if provider == "anthropic" and body.get("cache_control") and blocks:
        # Automatic caching: "the system automatically applies the cache breakpoint to the last cacheable block".
        blocks[-1] = dataclasses.replace(blocks[-1], cache=True)
    options = body.get("prompt_cache_options")
    if provider == "openai" and not (
        isinstance(options, Mapping) and options.get("mode") == "explicit"
    ):
        latest = [
            i for i, b in enumerate(blocks) if b.part == "messages" and b.role in ("user", "tool")
        ]
        implicit = latest[-1] if latest else None
    return blocks, implicit


def body_prompt(
    body: Mapping[str, Any],
    provider: str,
    time: float | None = None,
    encoding: str = DEFAULT_ENCODING,
) -> Prompt:
    """A request body as its cache bills it: `billed_blocks` (`body_blocks`, the implicit breakpoints placed),
    `to_prompt`."""
    blocks, implicit = billed_blocks(body, provider)
    return to_prompt(blocks, time, encoding, implicit)
