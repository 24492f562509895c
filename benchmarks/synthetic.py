"""Synthetic investigation states of any size, deterministic for a given seed.

Payload sizes follow what a debugging agent collects: SQL results of 3-40 rows of 4-8
columns, log excerpts of 10-60 lines of ~140 characters, code reads of 20-90 lines, small
metric series and short feedback remarks (about 2.5 kB per item on average, bug17's
order of magnitude). A fifth of the items are archived without payload (`payload: null`),
one result per hypothesis is unsettled, and each hypothesis carries a history row per item
it collected. Nothing here steers toward a diagnosis: the text is generic filler.
"""

from __future__ import annotations

import random

from workingset.model.hashing import content_hash
from workingset.model.state import (
    Budget,
    Capture,
    Case,
    Control,
    Entity,
    Evidence,
    EvidenceBudget,
    HistoryEntry,
    Hypothesis,
    Note,
    RecallSelection,
    RowsPayload,
    State,
    TextPayload,
)  # fmt: skip

WORDS = ("request timeout retry worker queue shard lease token cache miss commit offset "
         "replica latency p99 upstream session pool checkout handler span batch flush").split()  # fmt: skip
SCOPES = ("query_result", "log", "code", "metric", "feedback", "query_result", "log")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _payload(rng: random.Random, scope: str):
    if scope in ("query_result", "metric"):
        width = rng.randint(4, 8) if scope == "query_result" else 3
        columns = [f"col_{i}" for i in range(width)]
        rows = [
            [rng.choice([rng.randint(0, 10**6), round(rng.random() * 1000, 3), _sentence(rng, 3), None, True])
             for _ in columns]
            for _ in range(rng.randint(3, 40))
        ]  # fmt: skip
        return RowsPayload(columns=columns, rows=rows)
    if scope == "log":
        lines = [
            f"2026-06-10T20:{i % 60:02d}:00Z level=warn {_sentence(rng, 16)}"
            for i in range(rng.randint(10, 60))
        ]
        return TextPayload(language="log", text="\n".join(lines))
    if scope == "code":
        lines = [
            f"    {_sentence(rng, 6).replace(' ', '_')}()  # {_sentence(rng, 4)}"
            for _ in range(rng.randint(20, 90))
        ]
        return TextPayload(language="python", text="\n".join(lines))
    return TextPayload(language=None, text=_sentence(rng, rng.randint(10, 60)))


def _evidence(rng: random.Random, i: int, collector: str, unsettled: bool) -> Evidence:
    scope = SCOPES[i % len(SCOPES)]
    payload = None if i % 5 == 4 else _payload(rng, scope)
    query = (
        None
        if scope == "feedback"
        else f"select * from events where {_sentence(rng, 4).replace(' ', '_')} = {i}"
    )
    return Evidence(
        id=f"E{i:06d}", collector=collector, scope=scope,
        capture=Capture(query=query, origin="loki:prod-eu" if scope == "log" else "pg:replica",
                        snapshot=f"snap-{i}", coverage="2026-06-10T19:00Z/20:00Z", truncated=False,
                        page=1, next_cursor=None, eof=True, item_count=rng.randint(0, 500)),
        payload=payload, content_hash=None if payload is None else content_hash(payload),
        budget=EvidenceBudget(action=f"B{i:06d}", status="unsettled" if unsettled else "settled", cost=0.01),
        iteration=i, captured_at="2026-06-10T20:15:00Z",
    )  # fmt: skip


def make_state(n_evidence: int, n_hypotheses: int = 5, seed: int = 17) -> State:
    """Return a valid state with `n_evidence` items spread round-robin over the hypotheses."""
    rng = random.Random(seed)
    hids = [f"H{k + 1}" for k in range(n_hypotheses)]
    last_of = {h: None for h in hids}
    for i in range(1, n_evidence + 1):
        last_of[hids[i % n_hypotheses]] = i
    unsettled = {i for i in last_of.values() if i is not None}
    evidence = [
        _evidence(rng, i, hids[i % n_hypotheses], i in unsettled) for i in range(1, n_evidence + 1)
    ]
    hypotheses = []
    for _k, h in enumerate(hids):
        own = [e for e in evidence if e.collector == h]
        hypotheses.append(Hypothesis(
            id=h, title=f"hypothesis {h}: {_sentence(rng, 5)}", mechanism=_sentence(rng, 25),
            confidence=0.5, disposition="open",
            control=Control(iterations_used=len(own), iteration_limit=len(own) + 10,
                            previous_result=own[-1].id if own else None, plan=_sentence(rng, 12),
                            next_checks=[_sentence(rng, 8) for _ in range(2)]),
            history=[HistoryEntry(iteration=e.iteration, kind="query", evidence_refs=[e.id],
                                  verdict="neutral", confidence=0.5, text=_sentence(rng, 12)) for e in own],
        ))  # fmt: skip
    notes = [
        Note(id=f"N{j:06d}", hypothesis=None if j % 4 == 0 else hids[j % n_hypotheses],
             kind="question" if j % 3 == 0 else "note", text=_sentence(rng, 20),
             status="open" if j % 3 == 0 else None, iteration=j * 2)
        for j in range(1, n_evidence // 2 + 1)
    ]  # fmt: skip
    recall = {}
    if n_evidence >= 8:
        recall["H1"] = RecallSelection(
            evidence_refs=[evidence[0].id, evidence[2].id], iteration=n_evidence
        )
    return State(
        analysis_id="synthetic", iteration=n_evidence,
        budget=Budget(max_iterations=max(n_evidence * 2, 1), max_cost=None, cost_used=0.01 * n_evidence),
        case=Case(title="Checkout latency regression", statement=_sentence(rng, 60),
                  opened_at="2026-06-10T19:00:00Z",
                  entities=[Entity(id=f"svc-{k}", kind="service", name=f"service {k}", source=None) for k in range(4)]),
        hypotheses=hypotheses, evidence=evidence, notes=notes, recall=recall,
    )  # fmt: skip
