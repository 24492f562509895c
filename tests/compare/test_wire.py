"""A request body as billed: its blocks in the provider's order, each tokenized on its own."""

import pytest

from workingset.compare.wire import body_blocks, to_prompt
from workingset.errors import UsageError
from workingset.tokens.count import text_tokens

MARK = {"type": "ephemeral"}
BODY = {
    "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": MARK}],
    "system": [{"type": "text", "text": "You are a debugger."}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": " second", "cache_control": MARK},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "x", "name": "t", "input": {"a": 1}}],
        },
        {"role": "user", "content": "plain"},
    ],
}


def test_blocks_follow_tools_system_messages_with_their_marks():
    blocks = body_blocks(BODY, "anthropic")
    assert [(b.part, b.message, b.cache) for b in blocks] == [
        ("tools", -1, True), ("system", -1, False), ("messages", 0, False), ("messages", 0, True),
        ("messages", 1, False), ("messages", 2, False),
    ]  # fmt: skip
    assert (
        blocks[0].text == '{"input_schema":{"type":"object"},"name":"t"}'
    )  # canonical JSON, mark left out


def test_prompt_has_every_block_end_and_breakpoints_at_marked_ends():
    blocks = body_blocks(BODY, "anthropic")
    prompt = to_prompt(blocks)
    lengths = [len(text_tokens(b.text)) for b in blocks]
    ends = [sum(lengths[: i + 1]) for i in range(len(lengths))]
    assert prompt.blocks == tuple(ends)
    assert prompt.breakpoints == (ends[0], ends[3])
    assert len(prompt.tokens) == ends[-1]


def test_openai_tool_calls_count_and_unknown_provider_is_refused():
    body = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}
        ]
    }
    assert [b.text for b in body_blocks(body, "openai")] == ['{"id":"c","type":"function"}']
    with pytest.raises(UsageError, match="available: anthropic, openai"):
        body_blocks(body, "gemini")


def test_a_tool_result_counts_as_its_text_not_as_escaped_json():
    nested = {
        "type": "tool_result",
        "tool_use_id": "x",
        "content": [{"type": "text", "text": 'say "hi"\n'}, {"type": "text", "text": "2"}],
    }
    plain = {"type": "tool_result", "tool_use_id": "x", "content": "done"}
    body = {"messages": [{"role": "user", "content": [nested, plain]}]}
    assert [b.text for b in body_blocks(body, "anthropic")] == ['say "hi"\n2', "done"]
