"""Generate the frozen corpus once: a few hundred states that reach every branch of every encoder.

Run once: .venv/bin/python tests/frozen/generate.py [--corpus DIR]

The states come from a fixed seed (`SEED`) and fixed pools of awkward values, plus the
states of imported agent runs (one run per import format, from the trajectory corpus
beside the repository). The output, `tests/frozen/states.jsonl.gz`, is committed and
never regenerated: the frozen-corpus test pins every encoder's output on exactly those
states, so rewriting them would unpin the versions. The script refuses to overwrite it.
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from pathlib import Path

import msgspec

from workingset.model.hashing import content_hash
from workingset.importers import import_trajectory
from workingset.model.state import (
    Budget, Capture, Case, Control, Entity, Evidence, EvidenceBudget, HistoryEntry, Hypothesis,
    Note, RecallSelection, RowsPayload, State, TextPayload, validate_state,
)  # fmt: skip

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "states.jsonl.gz"
SEED = 15  # the issue that asked for this corpus
GENERATED = 300
# Imported runs: (format, corpus entry, the steps whose states are kept). A middle step has
# settled and unsettled results side by side; the last step holds every output.
IMPORTS = (
    ("swe-agent", "sweagent-gpt4-pydicom-1458.traj", (1, 6, 12)),
    ("mini-swe-agent", "mini-v1-gemini3pro-pylint-6386.traj.json", (3, 20)),
    ("mini-swe-agent", "mini-v2-deepseek-sqlfluff-1625.traj.json", (2, 17)),
    ("openhands", "openhands-v1-sonnet4-matplotlib-24570", (5, 22)),
)

# -- pools of awkward values ------------------------------------------------------------

TEXTS = (
    "", " ", "plain words", "ends with newline\n", "\n", "\n\nleading blank lines", "trailing blanks\n\n\n",
    "one `tick`", "two ``ticks``", "a ``` run inside", "````four\n```three\n`````five", "```",
    "```python\nprint('fence in text')\n```", "~~~tilde fence~~~", "# looks like a heading\n## another",
    "crlf\r\nline\r\n", "tab\tand\vvertical", "ünïcödé · ümlauts — dashes", "emoji 🦀 and ZWJ 👩‍💻",
    "line\u2028separator\u2029paragraph", "nul\u0000byte", "quote \" backslash \\ slash /",
    "<|endoftext|> special token text", "    indented code\n    block", "- list\n- items\n\n> quote",
    "| a | b |\n|---|---|\n| 1 | 2 |", "{\"json\": [1, 2]}", "x" * 300, "word " * 120 + "\n",
)  # fmt: skip
LANGUAGES = (
    None, None, "python", "log", "sh", "json", "jsonl", "", "c++", "C#", ".env", "x", "with space",
    "back`tick", "a" * 38, "a" * 39, "b" * 40, "c" * 41, "d" * 42, "py-3.11_x+y#z", "ünïcode", "tab\tlang",
)  # fmt: skip
TIMESTAMPS = (
    "2026-06-10T20:00:00Z", "2026-06-10T20:00:00.123456Z", "2026-06-10t20:00:00z", "2026-06-10T22:00:00+02:00",
    "2026-06-10T14:30:00-05:30", "2016-12-31T23:59:60Z", "1970-01-01T00:00:00Z", "2026-06-10T20:00:00.5+00:00",
)  # fmt: skip
SCALARS = (
    None, True, False, 0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, 0.0, -0.0, 0.1, 1e-7, 1e300, -2.5, 1834.5,
    "", "ok", "502", "null", "a,b", "new\nline", "``` fence", "ünï", "\u2028",
)  # fmt: skip
SCOPES = ("query_result", "log", "code", "metric", "document", "feedback")
DISPOSITIONS = ("open", "supported", "refuted", "inconclusive", "parked")
VERDICTS = (None, "supports", "refutes", "neutral", "inconclusive", "odd verdict")
HISTORY_KINDS = ("query", "recall", "assessment", "conclude")
BOOLS = (None, True, False)


class Generator:
    """One random source and the pools; each method returns one part of a state."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.payloads: list = []  # every payload made so far, for repeats across items

    def pick(self, pool):
        return self.rng.choice(pool)

    def maybe(self, value, p: float = 0.5):
        return value if self.rng.random() < p else None

    def text(self) -> str:
        return self.pick(TEXTS)

    def rows_payload(self) -> RowsPayload:
        width = self.rng.randint(0, 5)
        columns = [self.pick(("id", "ts", "status", "count", "p99 ms", "ünï", "", "a\nb", "```")) for _ in range(width)]
        count = self.pick((0, 0, 1, 2, 3, 6))
        rows = [[self.pick(SCALARS) for _ in range(width)] for _ in range(count)]
        return RowsPayload(columns=columns, rows=rows)

    def text_payload(self) -> TextPayload:
        return TextPayload(language=self.pick(LANGUAGES), text=self.text())

    def payload(self):
        roll = self.rng.random()
        if roll < 0.15:
            return None
        if roll < 0.35 and self.payloads:
            return self.pick(self.payloads)  # an equal payload: v5 references it
        made = self.rows_payload() if self.rng.random() < 0.45 else self.text_payload()
        self.payloads.append(made)
        return made

    def capture(self) -> Capture:
        paged = self.rng.random() < 0.3
        return Capture(
            query=self.maybe(self.pick(("select 1", 'rate(x[5m])', "git show a:b.py", "grep -n '```' x", "q\nline 2")), 0.8),
            predicate=self.maybe(self.pick(("status >= 500", "", "pod=~\"api.*\"")), 0.3),
            origin=self.pick(("postgres:orders", "loki:prod-eu", "github:acme/x", "prometheus:prod", "review:lead", "")),
            snapshot=self.maybe("replica@2026-06-10T20:05Z", 0.2),
            coverage=self.maybe(self.pick(("20:00-20:05", "exit_code=0", "exit_code=1 timeout")), 0.3),
            truncated=self.pick(BOOLS),
            page=self.rng.randint(0, 5) if paged else None,
            next_cursor=self.maybe("cursor-2", 0.5) if paged else None,
            eof=self.pick(BOOLS) if paged else None,
            item_count=self.pick((None, None, 0, 1, 3, 1000, -1)),
        )  # fmt: skip

    def hypothesis(self, hid: str) -> Hypothesis:
        return Hypothesis(
            id=hid, title=self.text(), mechanism=self.text(), confidence=self.pick((0.0, 0.1, 0.5, 0.55, 1.0)),
            disposition=self.pick(DISPOSITIONS),
            control=Control(
                iterations_used=self.rng.randint(0, 12), iteration_limit=self.rng.randint(0, 12),
                plan=self.maybe(self.text(), 0.4), next_checks=[self.text() for _ in range(self.rng.randint(0, 3))],
            ),
        )  # fmt: skip

    def history(self, eids: list[str]) -> list[HistoryEntry]:
        out = []
        for _ in range(self.rng.randint(0, 4)):
            refs = self.rng.sample(eids, self.rng.randint(0, min(3, len(eids))))
            out.append(HistoryEntry(
                iteration=self.rng.randint(0, 20), kind=self.pick(HISTORY_KINDS), evidence_refs=refs,
                verdict=self.pick(VERDICTS), confidence=self.maybe(self.pick((0.0, 0.3, 1.0))),
                text=self.maybe(self.text()),
            ))  # fmt: skip
        return out

    def evidence(self, eid: str, hids: list[str]) -> Evidence:
        payload = self.payload()
        return Evidence(
            id=eid, collector=self.pick(hids), scope=self.pick(SCOPES), capture=self.capture(), payload=payload,
            content_hash=None if payload is None else content_hash(payload),
            budget=EvidenceBudget(
                action=self.maybe(f"B{self.rng.randint(1, 999999):06d}", 0.85),
                status=self.pick(("none", "unsettled", "settled", "settled")), cost=self.pick((0.0, 0.25, 1e-9, 3.5)),
            ),
            iteration=self.rng.randint(0, 20), captured_at=self.pick(TIMESTAMPS),
        )  # fmt: skip

    def note(self, nid: str, hids: list[str], iteration: int) -> Note:
        kind = self.pick(("note", "question"))
        return Note(
            id=nid, hypothesis=self.pick([None, *hids]), kind=kind, text=self.text(),
            status=self.pick((None, "open", "answered")),
            # Around v9's horizon (iteration − 3), where a note turns from shown to indexed.
            iteration=max(0, iteration - self.rng.randint(0, 6)),
        )  # fmt: skip

    def state(self, n: int) -> tuple[State, str, bool]:
        """State number `n`, the hypothesis it is rendered for, and whether its hashes are forged."""
        rng = self.rng
        iteration = rng.randint(0, 20)
        hids = sorted({f"H{rng.choice((1, 2, 3, 4, 7, 10, 1234))}" for _ in range(rng.randint(1, 4))})
        numbers = sorted(rng.sample(range(1, 40), rng.randint(0, 12)))
        eids = [f"E{k:06d}" for k in numbers]
        evidence = [self.evidence(eid, hids) for eid in eids]
        if rng.random() < 0.3:
            rng.shuffle(evidence)  # the state's order is not the ID order (v7+ sort by ID)
        forged = False
        with_payload = [i for i, ev in enumerate(evidence) if ev.payload is not None]
        if len(with_payload) >= 2 and rng.random() < 0.15:
            # Two different payloads under one content hash: v5 must not reference one by the other.
            a, b = rng.sample(with_payload, 2)
            if evidence[a].payload != evidence[b].payload:
                evidence[b] = msgspec.structs.replace(evidence[b], content_hash=evidence[a].content_hash)
                forged = True
        hypotheses = []
        for hid in hids:
            h = self.hypothesis(hid)
            prev = self.maybe(rng.choice(eids), 0.7) if eids else None
            h = msgspec.structs.replace(h, history=self.history(eids),
                                        control=msgspec.structs.replace(h.control, previous_result=prev))  # fmt: skip
            hypotheses.append(h)
        notes = [self.note(f"N{k:06d}", hids, iteration) for k in range(1, rng.randint(0, 8) + 1)]
        recall = {}
        for hid in hids:
            if eids and rng.random() < 0.35:
                recall[hid] = RecallSelection(evidence_refs=rng.sample(eids, rng.randint(1, min(4, len(eids)))),
                                              iteration=rng.randint(0, iteration))  # fmt: skip
        state = State(
            analysis_id=rng.choice(("gen", "a", "case-17.x_y", "z" * 64)), iteration=iteration,
            budget=Budget(max_iterations=rng.randint(1, 60), max_cost=self.pick((None, 0.0, 12.5, 1e6)),
                          cost_used=self.pick((0.0, 2.25, 0.1 + 0.2))),
            case=Case(title=self.text(), statement=self.text(), opened_at=self.pick(TIMESTAMPS),
                      entities=[Entity(id=f"ent-{k}", kind=self.pick(("service", "host", "")), name=self.text(),
                                       source=self.maybe("k8s:prod-eu")) for k in range(rng.randint(0, 3))]),
            hypotheses=hypotheses, evidence=evidence, notes=notes, recall=recall,
        )  # fmt: skip
        if not forged:
            validate_state(state, f"generated state {n}")
        return state, rng.choice(hids), forged


def directed() -> list[tuple[str, State, str, bool]]:
    """States for the cases a random draw could miss: every empty-rows capture, the empty state."""
    out = []
    base = State(
        analysis_id="directed", iteration=5, budget=Budget(max_iterations=10),
        case=Case(title="Directed", statement="Edge cases.", opened_at=TIMESTAMPS[0]),
        hypotheses=[Hypothesis(id="H1", title="t", mechanism="m", confidence=0.5, disposition="open",
                               control=Control(iterations_used=0, iteration_limit=3))],
    )  # fmt: skip
    out.append(("empty", base, "H1", False))
    empty = RowsPayload(columns=["id"], rows=[])
    for i, (count, truncated) in enumerate((c, t) for c in (None, 0, 2) for t in BOOLS):
        items = []
        for k, status in ((1, "settled"), (2, "unsettled")):  # the second repeats the first's payload
            items.append(Evidence(
                id=f"E{k:06d}", collector="H1", scope="query_result",
                capture=Capture(origin="swe-agent:bash", item_count=count, truncated=truncated),
                payload=empty, content_hash=content_hash(empty),
                budget=EvidenceBudget(action=f"B{k:06d}", status=status), iteration=k, captured_at=TIMESTAMPS[0],
            ))  # fmt: skip
        state = msgspec.structs.replace(base, evidence=items)
        validate_state(state)
        out.append((f"empty-rows-{i}", state, "H1", False))
    return out


def imported(corpus: Path) -> list[tuple[str, State, str, bool]]:
    """Chosen states of one imported run per format (rendered for H1, as the importer does)."""
    out = []
    for fmt, entry, steps in IMPORTS:
        run = import_trajectory(fmt, corpus / entry)
        for step in steps:
            out.append((f"{run.analysis}-r{step:04d}", run.states[step - 1], "H1", False))
    return out


def main() -> None:
    """Write states.jsonl.gz, unless it exists (the corpus is generated once)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "raw")
    corpus = parser.parse_args().corpus
    if OUT.exists():
        sys.exit(f"{OUT} exists: the frozen corpus is generated once and never rewritten")
    gen = Generator(SEED)
    cases = directed() + imported(corpus)
    cases += [(f"g{n:04d}", *gen.state(n)) for n in range(1, GENERATED + 1)]
    lines = [
        msgspec.json.encode({"name": name, "hypothesis": hyp, "forged_hashes": forged, "state": state})
        for name, state, hyp, forged in cases
    ]
    # mtime=0: the same states give the same bytes.
    OUT.write_bytes(gzip.compress(b"\n".join(lines) + b"\n", mtime=0))
    print(f"wrote {len(lines)} states to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
