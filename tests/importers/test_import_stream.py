"""The import's streamed `rendered` hashes: byte for byte those of the full render, for every state.

`importers._stream.StreamingRender` hashes each state's v7 text by continuing from the
previous state's shared prefix; these tests hold it to `encoder.render` on every state of
every stored run and import we have (excerpts, the 167-step run, the corpus, bug17) and on
generated runs, and check that it does render each block once, not once per state.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from tests.helpers import strategies as props
from tests.helpers.common import BUG17, long_run_path
from tests.helpers.factory import evidence, sample_state
from tests.helpers.real_corpus import CORPUS, CORPUS_SOURCES, needs_corpus
from workingset import importers
from workingset.encoders import get_encoder
from workingset.importers import import_trajectory, write_import
from workingset.importers._stream import StreamingRender
from workingset.model.hashing import content_hash
from workingset.model.state import Case, EvidenceBudget, HistoryEntry, Note, State, validate_state
from workingset.runs.layout import read_run
from workingset.runs.runfile import common_prefix

DATA = Path(__file__).resolve().parents[1] / "data"
EXCERPTS = {
    "swe-agent-0.x-pydicom-1458.excerpt.traj": "swe-agent",
    "swe-agent-function_calling_simple.excerpt.traj": "swe-agent",
    "mini-swe-agent-1.15-pylint-6386.excerpt.traj.json": "mini-swe-agent",
    "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json": "mini-swe-agent",
    "mini-swe-agent-2.3-astropy-12907.excerpt.traj.json": "mini-swe-agent",
    "openhands-v1-astropy-14309.excerpt": "openhands",
}


def assert_streams_like_render(states: list[tuple[State, str]], encoder: str = "v7") -> None:
    """Every state's streamed (chars, hash) equals its full render's, in the order given."""
    stream, enc = StreamingRender(encoder), get_encoder(encoder)
    for i, (state, hypothesis) in enumerate(states):
        out = enc.render(state, hypothesis)
        got = stream(state, hypothesis)
        assert (got.chars, got.hash) == (out.chars, out.hash), (
            f"state {i + 1} of {len(states)}, {hypothesis}"
        )


# v7 streams its hashes; a journal encoder resumes its walk from state to state (v14 at its
# default budget, and at a small one, where compactions archive and range the index).
STREAMED = ["v7", "v14", "v14:budget=20000"]


@pytest.mark.parametrize("encoder", STREAMED)
@pytest.mark.parametrize("name", list(EXCERPTS))
def test_every_state_of_each_excerpt(name: str, encoder: str):
    im = import_trajectory(EXCERPTS[name], DATA / name)
    assert_streams_like_render([(s, "H1") for s in im.states], encoder)


@pytest.mark.parametrize("encoder", STREAMED)
def test_every_state_of_the_167_step_run(encoder: str):
    im = import_trajectory("openhands", long_run_path())
    assert len(im.states) > 150
    assert_streams_like_render([(s, "H1") for s in im.states], encoder)


@needs_corpus
@pytest.mark.parametrize("encoder", STREAMED)
@pytest.mark.parametrize("name", list(CORPUS_SOURCES))
def test_every_state_of_each_corpus_run(name: str, encoder: str):
    im = import_trajectory(CORPUS_SOURCES[name][0], CORPUS / name)
    assert_streams_like_render([(s, "H1") for s in im.states], encoder)


@pytest.mark.parametrize("encoder", ["v14", "v14:budget=20000"])
def test_v14_resumes_one_walk_across_every_step_of_an_import(tmp_path: Path, encoder: str):
    # Each step settles the result before it (a copy differing in budget status only): the
    # walk holds the copy and goes on, so an import costs each step's new entries, not a walk.
    im = import_trajectory("swe-agent", _swe_agent_run(tmp_path, 300))
    stream, enc = StreamingRender(encoder), get_encoder(encoder)
    walks = set()
    for state in im.states:
        got, out = stream(state, "H1"), enc.render(state, "H1")
        assert (got.chars, got.hash) == (out.chars, out.hash)
        walks.add(id(stream._kept[enc.name].w))
    assert len(walks) == 1, "every step resumed the first walk"
    if encoder.endswith("20000"):  # the small budget archived settled items
        assert stream._kept[enc.name].w.archived_ev


@pytest.mark.parametrize("encoder", ["v7", "v6", "v8"])
def test_every_context_of_bug17_each_for_its_hypothesis(encoder: str):
    # A session's run: three hypotheses taking turns, budgets settling, items shown and hidden.
    contexts = [ctx for _, ctx in read_run(BUG17)]
    assert len({ctx.hypothesis for ctx in contexts}) > 1
    assert_streams_like_render([(ctx.state, ctx.hypothesis) for ctx in contexts], encoder)


def _swe_agent_run(tmp_path: Path, steps: int) -> Path:
    """A SWE-agent 0.x trajectory of `steps` steps, some outputs repeated (v5 references)."""
    task = "We're currently solving the following issue within our repository.\nISSUE:\nit fails\n\nINSTRUCTIONS:\nfix it"
    raw = {
        "environment": "swe_main",
        "history": [{"role": "system", "content": "You are an autonomous programmer."}, {"role": "user", "content": task}],
        "info": {},
        "trajectory": [{"thought": f"step {k}", "action": f"cat f{k % 4}.py\n", "observation": f"def f():\n    return {k % 3} ü\n",
                        "response": "", "state": "{}"} for k in range(steps)],
    }  # fmt: skip
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def test_write_import_renders_each_block_once_not_once_per_state(monkeypatch, tmp_path: Path):
    im = import_trajectory("swe-agent", _swe_agent_run(tmp_path, 30))
    assert_streams_like_render([(s, "H1") for s in im.states])
    enc, calls = get_encoder("v7"), []
    block = enc.cached_block
    monkeypatch.setattr(
        enc, "cached_block", lambda ev, view: calls.append(ev.id) or block(ev, view)
    )
    write_import(im, tmp_path / "run")
    items = len(im.states[-1].evidence)
    # Each item once, and the one whose budget settles at the next step once more.
    assert len(calls) <= items + len(im.states)
    assert sum(len(s.evidence) for s in im.states) > items + len(
        im.states
    )  # a full render per state would exceed it


def test_write_import_pauses_the_collector_and_restores_it(monkeypatch, tmp_path: Path):
    im = import_trajectory("swe-agent", _swe_agent_run(tmp_path, 30))
    seen = []  # whether the collector ran, at each context made and at the write

    def watch(fn):
        return lambda *args, **kwargs: seen.append(gc.isenabled()) or fn(*args, **kwargs)

    monkeypatch.setattr(importers, "make_stored_context", watch(importers.make_stored_context))
    monkeypatch.setattr(importers, "write_layout", watch(importers.write_layout))
    write_import(im, tmp_path / "on")
    assert len(seen) == len(im.states) + 1 and not any(seen) and gc.isenabled()
    gc.disable()
    try:
        write_import(im, tmp_path / "off")
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


# --- generated runs ------------------------------------------------------------------------------


@st.composite
def runs(draw) -> list[tuple[State, str]]:
    """A run of states: items added (IDs in any order, payloads repeated), changed, settled, removed; the case edited; notes and history added."""
    base = sample_state()
    items = {ev.id: ev for ev in base.evidence}
    fixed = set(items)  # the sample's own items: its hypotheses and recall cite them
    case, out = base.case, []
    notes, history = list(base.notes), list(base.hypotheses[0].history)
    for step in range(draw(st.integers(1, 6))):
        for _ in range(draw(st.integers(0, 3))):
            n = draw(st.integers(10, 59).filter(lambda k: f"E{k:06d}" not in items))
            old = draw(st.sampled_from(sorted(items.values(), key=lambda e: e.id)))
            payload = (
                old.payload if draw(st.booleans()) else draw(props.payloads())
            )  # a repeat makes a v5 reference
            items[f"E{n:06d}"] = evidence(
                n, draw(st.sampled_from(["H1", "H2", "H3"])), payload, query=draw(props.texts)
            )
        change = draw(
            st.sampled_from(
                [
                    "none",
                    "settle",
                    "status",
                    "payload",
                    "capture",
                    "remove",
                    "case",
                    "note",
                    "history",
                ]
            )
        )
        eid = draw(st.sampled_from(sorted(items)))
        ev = items[eid]
        if change == "settle":
            items[eid] = replace(
                ev, budget=EvidenceBudget(action=ev.budget.action, status="settled", cost=1.5)
            )
        elif change == "status":  # what an import's next step does to the result before it
            status = "unsettled" if ev.budget.status == "settled" else "settled"
            items[eid] = replace(ev, budget=replace(ev.budget, status=status))
        elif change == "payload":
            payload = draw(props.payloads())
            items[eid] = replace(
                ev, payload=payload, content_hash=None if payload is None else content_hash(payload)
            )
        elif change == "capture":
            items[eid] = replace(ev, capture=replace(ev.capture, query=draw(props.texts)))
        elif change == "remove" and eid not in fixed:
            del items[eid]
        elif change == "case":
            case = Case(
                title=draw(props.texts) or "t",
                statement=case.statement,
                opened_at=case.opened_at,
                entities=case.entities,
            )
        elif change == "note":
            notes.append(
                Note(
                    id=f"N{len(notes) + 1:06d}",
                    hypothesis="H2",
                    kind="note",
                    text=draw(props.texts),
                    iteration=9,
                )
            )
        elif change == "history":
            history.append(
                HistoryEntry(
                    iteration=9,
                    kind="assessment",
                    evidence_refs=["E000007"],
                    verdict="neutral",
                    text=draw(props.texts),
                )
            )
        hypotheses = [replace(base.hypotheses[0], history=list(history)), *base.hypotheses[1:]]
        state = replace(base, iteration=base.iteration + step, case=case, evidence=list(items.values()), notes=list(notes),
                        hypotheses=hypotheses)  # fmt: skip
        validate_state(state)
        out.append((state, draw(st.sampled_from(["H1", "H2", "H3"]))))
    return out


@pytest.mark.parametrize("encoder", ["v7", "v14"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs())
def test_generated_runs_stream_like_render(run, encoder):
    assert_streams_like_render(run, encoder)


@given(a=st.lists(st.integers(0, 3), max_size=12), b=st.lists(st.integers(0, 3), max_size=12))
def test_common_prefix_is_the_leading_run_of_equal_items(a, b):
    expected = 0
    while expected < min(len(a), len(b)) and a[expected] == b[expected]:
        expected += 1
    assert common_prefix(a, b) == expected
