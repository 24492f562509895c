"""Bills kept in the on-disk cache (`compare.billed`): the same numbers, keyed by all they depend on, damage ignored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from tests.helpers.common import BUG17
from workingset.compare import billed, engine
from workingset.compare.billing import Billing, CacheOptions
from workingset.runs.layout import read_run
from workingset.tokens.count import counted_on_disk
from workingset.tokens.disk_cache import FILE

MODELS = ("anthropic", "openai-5.6")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WORKINGSET_CACHE_DIR", str(tmp_path / "cache"))


def _contexts():
    return [ctx for _, ctx in read_run(str(BUG17))]


def _compare(contexts, renderers, disk: bool = True, **options):
    with counted_on_disk(disk):
        return engine.compare_contexts(contexts, renderers, cache=MODELS, **options)


def _renderers():
    return engine.strategies("full-transcript", "v14", False, True)


def _rows(tmp_path: Path) -> dict[str, bytes]:
    with sqlite3.connect(tmp_path / "cache" / FILE) as db:
        return dict(db.execute("SELECT key, value FROM billings").fetchall())


def _no_billing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a request body was built: the bills were not read from the cache")

    monkeypatch.setattr(engine, "sent_prompts", refuse)


def test_a_second_compare_reads_the_bills_and_gives_the_same_numbers(tmp_path, monkeypatch):
    contexts, renderers = _contexts(), _renderers()
    alone = _compare(contexts, renderers, disk=False)
    first = _compare(contexts, renderers)
    assert first == alone
    rows = _rows(tmp_path)
    assert len(rows) == len(MODELS) * len(renderers)  # one per strategy and model
    _no_billing(monkeypatch)
    assert _compare(contexts, renderers) == alone


def test_a_damaged_entry_is_ignored_and_written_over(tmp_path, monkeypatch):
    contexts, renderers = _contexts(), _renderers()
    alone = _compare(contexts, renderers, disk=False)
    _compare(contexts, renderers)
    rows = _rows(tmp_path)
    keys = sorted(rows)
    one = billed.unpack(keys[0], rows[keys[0]], len(contexts))
    assert one is not None
    wrong = Billing(tokens=one[0].tokens, uncached=one[0].uncached + 1, written=one[0].written,
                    read=one[0].read, cost=one[0].cost)  # fmt: skip
    damage = [
        b"",  # empty
        b"\x00garbage",  # shorter than its digest
        rows[keys[2]][:-3],  # cut short: fails the digest
        rows[keys[3]][:16] + b"\x93\x01\x02\x03",  # the digest kept, other bills behind it
        rows[keys[5]],  # another entry's value: its digest names another key
        billed.pack(keys[5], one[:-1]),  # one bill short
        billed.pack(keys[6], (wrong, *one[1:])),  # parts that do not add up to the tokens
        bytes(b ^ 0xFF for b in rows[keys[7]]),  # every bit flipped
    ]
    with sqlite3.connect(tmp_path / "cache" / FILE) as db:
        for k, value in zip(keys, damage):
            db.execute("UPDATE billings SET value = ? WHERE key = ?", (value, k))
        db.execute("UPDATE billings SET value = 'text, not bytes' WHERE key = ?", (keys[8],))
    assert _compare(contexts, renderers) == alone  # recomputed, never a wrong number
    assert _rows(tmp_path) == rows  # and written over
    _no_billing(monkeypatch)
    assert _compare(contexts, renderers) == alone


def test_the_key_holds_everything_the_bills_depend_on(monkeypatch):
    contexts = _contexts()
    v14 = engine.strategies("full-transcript", "v14", False, False)["v14"]
    run = billed.run_digest(contexts, None)
    base = billed.bill_key(v14, "anthropic", CacheOptions(), "cl100k_base", True, run)
    assert base is not None
    changed = [
        billed.bill_key(v14, "openai-5.6", CacheOptions(), "cl100k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(ttl="1h"), "cl100k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(cached_price=0.2), "cl100k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(model="claude-opus-4-6"), "cl100k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(write_price=1.5), "cl100k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(), "o200k_base", True, run),
        billed.bill_key(v14, "anthropic", CacheOptions(), "cl100k_base", False, run),
    ]  # fmt: skip
    v13 = engine.strategies("full-transcript", "v13", False, False)["v13"]
    changed.append(billed.bill_key(v13, "anthropic", CacheOptions(), "cl100k_base", True, run))
    # the run: one context's state edited, one context dropped, a retry turn added
    edited = msgspec.structs.replace(contexts[-1], hypothesis=contexts[-1].hypothesis + " ")
    for other in (
        billed.run_digest([*contexts[:-1], edited], None),
        billed.run_digest(contexts[:-1], None),
        billed.run_digest(contexts, {contexts[0].request_id: [(b"{}", None)]}),
    ):
        changed.append(
            billed.bill_key(v14, "anthropic", CacheOptions(), "cl100k_base", True, other)
        )
    assert None not in changed and len({base, *changed}) == len(changed) + 1
    # a baseline's key names the fixed prompt it sends
    from workingset.runs.fixed_prompt import FixedPrompt

    plain = engine.baseline_renderers(None)["full-transcript"]
    sent = engine.baseline_renderers(FixedPrompt(agent="swe-agent", system="You fix bugs."))
    keys = {billed.bill_key(r, "anthropic", CacheOptions(), "cl100k_base", True, run)
            for r in (plain, sent["full-transcript"])}  # fmt: skip
    assert len(keys) == 2
    # the code: any source edit is another key
    monkeypatch.setattr(billed, "code_version", lambda: "another build")
    assert billed.bill_key(v14, "anthropic", CacheOptions(), "cl100k_base", True, run) != base


def test_a_renderer_that_names_nothing_is_never_cached(tmp_path):
    contexts = _contexts()
    v14 = engine.strategies("full-transcript", "v14", False, False)["v14"]

    def mine(state, hypothesis):  # the caller's own renderer: what it sends is unknown
        return v14(state, hypothesis)

    assert billed.bill_key(mine, "anthropic", CacheOptions(), "cl100k_base", True, "run") is None
    assert _compare(contexts, {"mine": mine}) == _compare(contexts, {"mine": mine}, disk=False)
    assert _rows(tmp_path) == {}


def test_the_code_version_is_the_package_source():
    version = billed.code_version()
    assert len(version) == 32 and billed.code_version() == version


def test_an_unreadable_source_means_nothing_is_cached(monkeypatch):
    v14 = engine.strategies("full-transcript", "v14", False, False)["v14"]
    monkeypatch.setattr(billed, "code_version", lambda: "")
    assert billed.bill_key(v14, "anthropic", CacheOptions(), "cl100k_base", True, "run") is None
