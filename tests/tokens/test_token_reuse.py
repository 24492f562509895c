"""A text tokenized after another reuses the blocks of their common prefix, and gets exactly its own tokens."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workingset.model.hashing import hash_text
from workingset.tokens import count as tokens

# Pieces that make and break block boundaries (blank lines before printable ASCII or not) and multi-byte text.
PIECES = st.sampled_from([
    "\n", "\n\n", "\n\n\n", " ", "  ", "\t", "\r\n", "}", "```", "#", "-", "'s", "word", "Word", "12345",
    "é", "中文", "🙂", "\u00a0", "\u3000", ".", "{\"k\": 1}", "\n\nE000001 x", "\n\n ",
])  # fmt: skip
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def encode_after(before: str, text: str) -> list[int]:
    tokens._encode(before, "cl100k_base", hash_text(before))
    return list(tokens._encode(text, "cl100k_base", hash_text(text), (before, hash_text(before))))


@settings(max_examples=1000, deadline=None)
@given(TEXTS, TEXTS, TEXTS)
def test_a_text_after_another_tokenizes_as_itself(prefix, first, second):
    """Any two texts sharing any prefix: the second, read after the first, has exactly its own tokens."""
    tokens._arrays.clear()
    before, text = prefix + first, prefix + second
    assert encode_after(before, text) == tokens.get_encoding().encode_ordinary(text)


def test_the_blocks_before_the_common_prefix_ends_are_copied_not_looked_up(monkeypatch):
    before = "".join(f"E{n:06d} item {n}\n\n" for n in range(50))
    text = before[:-2] + " changed\n\nE000050 new\n"
    tokens._arrays.clear()
    tokens._encode(before, "cl100k_base", hash_text(before))
    looked_up = []
    real = tokens._block_tokens
    monkeypatch.setattr(
        tokens, "_block_tokens", lambda block, enc: looked_up.append(block) or real(block, enc)
    )
    got = tokens._encode(text, "cl100k_base", hash_text(text), (before, hash_text(before)))
    assert list(got) == tokens.get_encoding().encode_ordinary(text)
    # Only the block the texts differ in (the last of `before`, changed) and what follows it are read.
    assert looked_up == ["E000049 item 49 changed\n\n", "E000050 new\n"]
