"""v13: v12, with index rows of a bounded size, a smaller preamble and tail, and a budget of its own.

The layout, the sections, the cache breakpoints, the budget (characters, `:budget=N`), the
journal entries, the compaction walk (to a third) and recall are v12's. What changes is
what `benchmarks/v11_cost.py` showed v12 still paying for beyond a transcript:

- An `evidence_index` row is written like an evidence entry's head line (`E000007 H1 #3 log
  2026-06-10T15:38:40Z origin=loki:prod-eu action=B000007 cost=0.5 payload=archived
  ids=[…]`) instead of a jsonl row with every null spelled out, and its query follows on one
  line: raw when it is one plain line, else a JSON string. A text field longer than 200
  characters (the query, a predicate, a cursor…) is cut to its first 160, its length beside
  its name: `query~1372: "…"`, `predicate~231="…"`. Agents whose actions carry whole files
  (an editor call with the new text) made v12's index rows as long as the entries they
  stand for: on the 167-step OpenHands run the index alone outgrew the budget. The row still
  names the item, how and when it was captured and the identifiers of its payload; recall
  shows the whole item, every field in full.
- The preamble is shorter: the protocol is reworded and says how to read an index row, and
  the output schema is written as an outline generated from the JSON Schema (`schema_outline`:
  every key, type, pattern, enum, range and count of it, in half the tokens); the JSON Schema
  itself (`decision_schema`) is what a provider request carries as its tool or response
  format.
- "This turn" leaves out what it can say by convention (the preamble states each one): a
  line with nothing to list, the cost when nothing was spent and there is no limit, a
  hypothesis's recalled IDs when there are none, the result to assess among the budget
  statuses; the selected hypothesis is marked with `*` on its own line.
- The default budget is 100,000 characters (v11 and v12: 120,000), see `default_budget`.
"""

from __future__ import annotations

from typing import Any

from ...model.harvest import harvest
from ...model.state import Evidence, Hypothesis
from .._render import compact, heading, rows_caption
from .base import JournalView, notes_by_status, status_exceptions
from .v12 import V12, V12Format, _value, descriptor, head_line

# An index row writes a text field whole up to WHOLE characters, else its first EXCERPT.
WHOLE, EXCERPT = 200, 160

PROTOCOL = """\
You investigate a production problem by testing hypotheses with queries. Answer for the selected hypothesis with one JSON object matching the output schema, nothing else.

Journal, oldest first:
- Evidence: `ID collector #iteration scope captured_at`, then key=value for each set field of capture, action, cost, language or rows (count), same_as (earlier item, same payload); unset: null, cost 0; quoted values are JSON. Then `query:` (inline or fenced) and the payload: text fenced, rows as jsonl, column names first. payload=unknown: not retained, not an empty result.
- Note or question: `ID hypothesis #iteration kind`, text fenced.
- Decision: `hypothesis #iteration kind`, evidence IDs, verdict=, confidence=, text fenced.
Past the budget, the oldest evidence becomes evidence_index rows: the head with payload=archived or unknown and ids= (from the payload), then `query:` on one line, raw if plain and not starting with `"`, else JSON. A text over 200 characters shows its first 160: `query~N:`, `key~N=` (N: its length). A row proves nothing: recall up to 4 IDs to see them in full next turn.

"This turn": iteration/limit, cost used/limit (no /limit: no cost limit; no cost: nothing spent, no limit); per hypothesis (* selected): ID, confidence, disposition, iterations used/limit, previous result (- none), recalled if any; plan, next checks; budget statuses other than settled (action set), none (no action) or unsettled for the result to assess; note statuses; this turn's archived items (previous, unsettled, recalled) in full; the result to assess. Lines with nothing to list are left out.

Rules: "assessment" exactly when "assess:" names a result, for it; its confidence becomes the hypothesis's. Cite only evidence shown in full. A decision breaking a rule is rejected and changes nothing: answer again."""


def _outlined_pattern(pattern: str) -> bool:
    """A pattern an outline can hold: anchored (`^…$`, `$` last only), with no space or comma to end it early."""
    return (
        pattern.startswith("^")
        and pattern.endswith("$")
        and "$" not in pattern[:-1]
        and not {" ", ","} & set(pattern)
    )


def schema_outline(schema: dict[str, Any]) -> str:
    """A decision schema as a one-line outline: `{"key": type, "optional"?: …}`, `a|b` for an enum, `X | Y` for
    oneOf, `[item] 1 to 4, distinct` for an array, a string's pattern and a number's range after its type.

    Every object must forbid other keys (the outline's caption says so). A keyword the outline
    cannot write, or one that does not belong to the node's type, raises ValueError, so nothing
    of a schema is dropped (tests/encoders/test_v13.py reads the outline back to the schema).
    """
    node = {
        k: v for k, v in schema.items() if k not in ("$schema", "title")
    }  # metadata, not constraints
    kind = node.get("type")
    if "oneOf" in node:
        used, text = {"oneOf"}, " | ".join(schema_outline(part) for part in node["oneOf"])
    elif "const" in node:
        used, text = {"const"}, compact(node["const"])
    elif "enum" in node and len(node["enum"]) >= 2:  # one value would read as a const
        used, text = {"enum"}, "|".join(compact(value) for value in node["enum"])
    elif (
        kind == "object"
        and node.get("additionalProperties") is False
        and set(node.get("required", ())) <= set(node["properties"])
    ):
        required = set(node.get("required", ()))
        keys = (
            f"{compact(k)}{'' if k in required else '?'}: {schema_outline(v)}"
            for k, v in node["properties"].items()
        )
        used, text = (
            {"type", "additionalProperties", "required", "properties"},
            "{" + ", ".join(keys) + "}",
        )
    elif kind == "array":
        low, high = node.get("minItems"), node.get("maxItems")
        count = (f"{low} to {high}" if low is not None and high is not None else
                 f"at least {low}" if low is not None else f"at most {high}" if high is not None else "")  # fmt: skip
        if node.get("uniqueItems") is True:
            count = f"{count}, distinct" if count else "distinct"
        used = {"type", "items", "minItems", "maxItems", "uniqueItems"}
        text = f"[{schema_outline(node['items'])}]" + (f" {count}" if count else "")
    elif kind == "string" and ("pattern" not in node or _outlined_pattern(node["pattern"])):
        used, text = (
            {"type", "pattern"},
            "string" + (f" {node['pattern']}" if "pattern" in node else ""),
        )
    elif kind == "number" and ("minimum" in node) == ("maximum" in node):
        used = {"type", "minimum", "maximum"}
        text = "number" + (
            f" {compact(node['minimum'])}..{compact(node['maximum'])}" if "minimum" in node else ""
        )
    else:
        raise ValueError(f"no outline for the schema {compact(schema)[:120]}")
    if set(node) - used:
        raise ValueError(f"no outline for the schema keywords {sorted(set(node) - used)}")
    return text


def _cut(name: str, value: str, sep: str) -> str:
    """`name~N<sep>` and the JSON string of the value's first EXCERPT characters (N: its length)."""
    return f"{name}~{len(value)}{sep}{compact(value[:EXCERPT])}"


def index_query(query: str) -> str:
    """An index row's query line: raw when one plain line, else a JSON string; cut past WHOLE characters."""
    if len(query) > WHOLE:
        return _cut("query", query, ": ")
    if (
        query
        and "\n" not in query
        and "\r" not in query
        and query == query.strip()
        and not query.startswith('"')
    ):
        return f"query: {query}"
    return f"query: {compact(query)}"


def index_pair(key: str, value: Any) -> str:
    """An index row's `key=value`, as in a head line; a string past WHOLE characters cut (`key~N="…"`)."""
    if isinstance(value, str) and len(value) > WHOLE:
        return _cut(key, value, "=")
    return f"{key}={_value(value)}"


class V13Format(V12Format):
    """v13's journal: v12's entries; index rows as head lines with a bounded query."""

    key = "v13"

    def index_row(self, ev: Evidence) -> str:
        fields = descriptor(ev)
        query = fields.pop("query")
        fields["payload"] = "unknown" if ev.payload is None else "archived"
        fields["ids"] = harvest(ev.payload) or None  # left out when the payload has none
        head = head_line(ev, fields, index_pair)
        return head if query is None else head + "\n" + index_query(query)

    def index_block(self, count: int, rows: str) -> str:
        return rows_caption(count, "evidence_index (archived evidence)") + "\n" + rows


V13_FORMAT = V13Format()


class V13(V12):
    """v13: v12 with bounded head-line index rows, a shorter preamble and a tail without empty lines."""

    version = 13
    journal_format = V13_FORMAT
    protocol = PROTOCOL
    # Rows of a bounded size make a compaction cheap to write, so a smaller journal pays: the
    # default is the largest budget measured at which v13 stayed within 1.1 times the
    # transcript's cost on every run (benchmarks/v13_budget.py; README, "v13").
    default_budget = 100_000

    def schema_section(self) -> str:
        """The output schema as an outline of the JSON Schema (a provider request carries the schema itself)."""
        return (
            heading(2, "Output schema")
            + "\n`?`: optional key; no other keys.\n"
            + schema_outline(self.decision_schema)
        )

    # -- the tail: what it can say by convention is left out ------------------------------

    def budget_lines(self, view: JournalView) -> list[str]:
        budget = view.state.budget
        return [
            f"iteration {view.state.iteration}/{budget.max_iterations}" + self.cost_part(budget)
        ]

    @staticmethod
    def cost_part(budget: Any) -> str:
        """` · cost used/limit`, ` · cost used` without a limit, nothing when nothing was spent and there is no limit."""
        if budget.max_cost is not None:
            return f" · cost {compact(budget.cost_used)}/{compact(budget.max_cost)}"
        return f" · cost {compact(budget.cost_used)}" if budget.cost_used else ""

    def hypothesis_mark(self, x: Hypothesis, view: JournalView) -> str:
        return "*" if x.id == view.selected.id else ""

    @classmethod
    def hypothesis_line(cls, x: Any, recalled: list[str] | None) -> str:
        """v12's line, its last field (the recalled IDs) left out when nothing is recalled."""
        return (
            f"{cls.hypothesis_head(x)} {','.join(recalled)}" if recalled else cls.hypothesis_head(x)
        )

    def selected_lines(self, view: JournalView) -> list[str]:
        control = view.selected.control
        lines = []
        if control.plan is not None:
            lines.append(f"plan: {compact(control.plan)}")
        if control.next_checks:
            lines.append(f"next checks: {compact(control.next_checks)}")
        return lines

    def status_lines(self, view: JournalView) -> list[str]:
        state = view.state
        pending = state.pending_result(view.selected.id)
        lines = []
        # The result to assess is unsettled by definition: the task line names it, this one does not.
        if exceptions := [e for e in status_exceptions(state) if e != f"{pending} unsettled"]:
            lines.append("budget status: " + ", ".join(exceptions))
        if notes_by_status(state):
            lines.append(self.note_status_line(state))
        return lines

    def task_lines(self, view: JournalView) -> list[str]:
        return [f"assess: {view.state.pending_result(view.selected.id) or 'none'}"]
