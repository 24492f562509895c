"""Hand-made states for the encoder and model tests (small, but with every texture)."""

from __future__ import annotations

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
    validate_state,
)  # fmt: skip

ROWS = RowsPayload(
    columns=["ts", "status", "count", "p99_ms", "note"],
    rows=[["2026-06-10T20:00:00Z", 502, 17, 1834.5, None], ["2026-06-10T20:01:00Z", 200, 9001, 1e-7, "ok"],
          ["2026-06-10T20:02:00Z", 504, -3, 0.1, True]],
)  # fmt: skip
EMPTY = RowsPayload(columns=["order_id", "state"], rows=[])
CODE = TextPayload(
    language="python", text='def f():\n    """Run:\n    ```sh\n    make\n    ````\n    """\n'
)
LOG = TextPayload(
    language="log", text="20:00:01 WARN pool exhausted (32/32)\n20:00:02 ERROR upstream 502\n"
)
TEXT_NO_LANG = TextPayload(language=None, text="ends without newline · ünïcode \u2028 tab\t`x`")


def evidence(n: int, collector: str, payload, *, status: str = "settled", scope: str = "query_result",
             query: str | None = "select 1", **capture) -> Evidence:  # fmt: skip
    """One evidence item numbered `n`, its content hash computed."""
    return Evidence(
        id=f"E{n:06d}", collector=collector, scope=scope,
        capture=Capture(query=query, origin=capture.pop("origin", "postgres:orders"), **capture),
        payload=payload, content_hash=None if payload is None else content_hash(payload),
        budget=EvidenceBudget(action=f"B{n:06d}", status=status, cost=0.25),
        iteration=n, captured_at=f"2026-06-10T20:{n:02d}:00Z",
    )  # fmt: skip


def sample_state() -> State:
    """Two hypotheses, every payload kind, a repeat, an unknown, unsettled results of both, recall."""
    state = State(
        analysis_id="sample", iteration=9,
        budget=Budget(max_iterations=40, max_cost=12.5, cost_used=2.25),
        case=Case(title="Checkout 502s", statement="Intermittent 502s on /checkout since 20:00.",
                  opened_at="2026-06-10T20:15:00+02:00",
                  entities=[Entity(id="svc-checkout", kind="service", name="checkout", source="k8s:prod-eu")]),
        hypotheses=[
            Hypothesis(id="H1", title="Pool exhaustion", mechanism="DB pool saturates under retries",
                       confidence=0.55, disposition="open",
                       control=Control(iterations_used=4, iteration_limit=10, previous_result="E000007",
                                       plan="check pool metrics", next_checks=["pool wait time", "retry counts"]),
                       history=[HistoryEntry(iteration=1, kind="query", evidence_refs=["E000001"]),
                                HistoryEntry(iteration=2, kind="assessment", evidence_refs=["E000001"],
                                             verdict="supports", confidence=0.55, text="pool at 32/32")]),
            Hypothesis(id="H2", title="Retry storm", mechanism="client retries amplify load",
                       confidence=0.3, disposition="open",
                       control=Control(iterations_used=3, iteration_limit=10, previous_result="E000008")),
            Hypothesis(id="H3", title="Bad config", mechanism="timeouts lowered", confidence=0.1,
                       disposition="parked", control=Control(iterations_used=1, iteration_limit=4)),
        ],
        evidence=[
            evidence(1, "H1", ROWS, truncated=True, page=1, next_cursor="c2", eof=False, item_count=3,
                     predicate="status >= 500", snapshot="replica@2026-06-10T20:05Z", coverage="20:00-20:05"),
            evidence(2, "H2", LOG, scope="log", query='{app="checkout"} |= "502"', origin="loki:prod-eu"),
            evidence(3, "H1", CODE, scope="code", query="git show abc123:pool.py", origin="github:acme/checkout"),
            evidence(4, "H2", EMPTY, item_count=0),
            evidence(5, "H1", None, scope="metric", query="rate(x[5m])", origin="prometheus:prod-eu"),
            evidence(6, "H3", TEXT_NO_LANG, scope="feedback", query=None, origin="review:oncall-lead"),
            evidence(7, "H1", ROWS, status="unsettled", item_count=3),  # repeats E000001's payload
            evidence(8, "H2", LOG, status="unsettled", scope="log", origin="loki:prod-eu"),  # repeats E000002
            evidence(9, "H3", CODE, status="unsettled", scope="code"),  # repeats E000003
        ],
        notes=[
            Note(id="N000001", hypothesis=None, kind="question", text="Did traffic change at 20:00?", status="open", iteration=1),
            Note(id="N000002", hypothesis="H1", kind="note", text="pool size is 32", iteration=2),
            Note(id="N000003", hypothesis="H1", kind="question", text="Who changed the pool?", status="answered", iteration=3),
            Note(id="N000004", hypothesis="H2", kind="note", text="retries x3 on 502", iteration=8),
            Note(id="N000005", hypothesis="H1", kind="note", text="recent note", iteration=8),
            Note(id="N000006", hypothesis=None, kind="note", text="old case note", iteration=1),
        ],
        recall={"H1": RecallSelection(evidence_refs=["E000004", "E000002"], iteration=8)},
    )  # fmt: skip
    validate_state(state)
    return state


# The size of the one `git diff --cached` output of issue 22 that put a v13 context at 931,174 characters.
HUGE = 868_167


def huge_state(chars: int = HUGE) -> State:
    """The sample state and one output of `chars` characters (a diff, backtick runs and all), then a small one."""
    state = sample_state()
    line = "+    assert pool.wait_ms < 450  # ```fence``` and ````more```` `x`\n"
    text = (line * (chars // len(line) + 1))[:chars]
    n = len(state.evidence)
    state.evidence.append(
        evidence(n + 1, "H2", TextPayload(language="diff", text=text), query="git diff --cached")
    )
    state.evidence.append(
        evidence(n + 2, "H1", TextPayload(language="log", text="after the diff\n"))
    )
    validate_state(state)
    return state


def with_output(text: str) -> State:
    """The sample state with one text output `text` (E000010, H1's) as the result to assess."""
    state = sample_state()
    state.evidence.append(
        evidence(10, "H1", TextPayload(language=None, text=text), query="cat out")
    )
    state.hypotheses[0].control.previous_result = "E000010"
    state.evidence[-1].budget.status = "unsettled"
    validate_state(state)
    return state
