"""The on-disk token cache: round trips, off switch, damaged entries and files, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from workingset.io import caches
from workingset.tokens.disk_cache import FILE, TokenCache, cache_dir


def test_entries_survive_across_instances(tmp_path: Path):
    cache = TokenCache(tmp_path / FILE)
    cache.put_count("cl100k_base", "xxh3-128:a", 12)
    cache.put_prefix("cl100k_base", "xxh3-128:a", "xxh3-128:b", 7)
    assert cache.count("cl100k_base", "xxh3-128:a") is None  # written at flush
    cache.close()
    again = TokenCache(tmp_path / FILE)
    assert (
        again.count("cl100k_base", "xxh3-128:a") == 12
        and again.count("o200k_base", "xxh3-128:a") is None
    )
    assert again.prefix("cl100k_base", "xxh3-128:a", "xxh3-128:b", limit=12) == 7


def test_location_and_off_switch(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("WORKINGSET_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "workingset"
    monkeypatch.setenv("WORKINGSET_CACHE_DIR", str(tmp_path / "mine"))
    assert TokenCache.default().path == tmp_path / "mine" / FILE
    monkeypatch.setenv("WORKINGSET_CACHE", "off")
    monkeypatch.setenv("WORKINGSET_CACHE_DIR", str(tmp_path / "other"))
    off = TokenCache.default()
    assert not off.active and off.path is None and not (tmp_path / "other").exists()
    off.put_count("cl100k_base", "h", 1)
    off.flush()
    assert off.count("cl100k_base", "h") is None
    monkeypatch.delenv("WORKINGSET_CACHE")
    assert not TokenCache.default(use=False).active


def test_damaged_entries_are_ignored(tmp_path: Path):
    TokenCache(tmp_path / FILE).close()
    db = sqlite3.connect(tmp_path / FILE)
    db.executemany(
        "INSERT INTO counts VALUES (?, ?, ?)",
        [("e", "neg", -3), ("e", "text", "twelve"), ("e", "real", 1.5)],
    )
    db.execute("INSERT INTO prefixes VALUES ('e', 'a', 'b', 99)")
    db.commit()
    db.close()
    cache = TokenCache(tmp_path / FILE)
    assert [cache.count("e", h) for h in ("neg", "text", "real")] == [None, None, None]
    assert cache.prefix("e", "a", "b", limit=10) is None  # longer than the text: damaged


def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path: Path):
    (tmp_path / FILE).write_bytes(b"this is not sqlite" * 100)
    cache = TokenCache(tmp_path / FILE)
    assert cache.active
    cache.put_count("e", "h", 5)
    cache.close()
    assert TokenCache(tmp_path / FILE).count("e", "h") == 5
    assert (tmp_path / (FILE + ".damaged")).read_bytes().startswith(b"this is not sqlite")


def test_an_unwritable_place_turns_the_cache_off(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    cache = TokenCache(tmp_path / "file" / FILE)  # a path under a file
    assert not cache.active and cache.count("e", "h") is None


def _writer(path: str, worker: int) -> None:
    cache = TokenCache(Path(path))
    for i in range(200):
        cache.put_count("e", f"h{i}", i)  # every worker computes the same values
        cache.put_count("e", f"w{worker}-{i}", worker)
    cache.close()


@pytest.mark.slow  # cross-process
def test_concurrent_processes_lose_nothing(tmp_path: Path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / FILE), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    cache = TokenCache(tmp_path / FILE)
    assert all(cache.count("e", f"h{i}") == i for i in range(200))
    assert all(cache.count("e", f"w{w}-{i}") == w for w in range(4) for i in range(0, 200, 37))


@pytest.fixture(autouse=True)
def _no_user_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_CACHE_DIR", str(tmp_path / "cache"))


def test_the_parsed_vocabulary_is_kept_and_a_damaged_one_rebuilt(tmp_path: Path):
    from workingset.tokens.disk_cache import vocabulary

    calls = []

    def build():
        calls.append(1)
        return {
            "name": "toy",
            "pat_str": r"\w+",
            "special_tokens": {"<|end|>": 3},
            "mergeable_ranks": {b"a": 0, b"b": 1, b"ab": 2},
        }

    first = vocabulary("toy-1", build)
    assert (
        vocabulary("toy-1", build) == first == build() and len(calls) == 2
    )  # the second call read the file
    (tmp_path / "cache" / "vocabulary-toy-1.msgpack").write_bytes(b"\x00garbage")
    assert vocabulary("toy-1", build) == first and len(calls) == 3  # rebuilt
    assert vocabulary("toy-1", build) == first and len(calls) == 3  # and kept again
    assert vocabulary("toy-1", build, use=False) == first and len(calls) == 4


def test_the_real_encoding_counts_the_same_through_the_kept_vocabulary():
    import workingset.tokens.count as tokens

    text = "def f(x):\n    return x  # <|endoftext|> counted as text\n"
    expected = tokens.get_encoding("cl100k_base").encode_ordinary(text)
    tokens._encodings.clear()
    assert (
        tokens.get_encoding("cl100k_base").encode_ordinary(text) == expected
    )  # built, kept on disk
    tokens._encodings.clear()
    assert tokens.get_encoding("cl100k_base").encode_ordinary(text) == expected  # read back


def test_compare_gives_the_same_numbers_from_the_disk_cache(tmp_path: Path):
    import json

    import workingset.tokens.count as tokens
    from tests.helpers.common import BUG17, invoke

    def compare(*extra: str) -> dict:
        # One process: the counting this test watches happens here, not in workers.
        result = invoke(
            "compare", str(BUG17), "--all", "--baselines", "--json", "--jobs", "1", *extra
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    cold = compare()
    db = tmp_path / "cache" / FILE
    assert db.is_file()
    stored = sqlite3.connect(db).execute("SELECT count(*) FROM counts").fetchone()[0]
    assert stored > 0
    caches.clear()  # every per-process cache: only the disk is left
    calls = []
    real = tokens._encode
    tokens._encode = lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs)
    try:
        warm = compare()
    finally:
        tokens._encode = real
    assert warm == cold and calls == []  # every count and shared prefix came from the disk
    off = compare("--no-token-cache")
    assert off == cold
