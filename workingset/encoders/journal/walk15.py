"""The journal of v15: a working set. What the analysis used stays in view; the rest is archived by last use.

v14 archives by age: a compaction keeps the newest third of the journal's room. v15 keeps
what was *used* (Denning's working set): every entry has a last use, derived from the state
by one rule (`Walk15.use`), and a compaction keeps the entries used last, newest first, until
the journal is at most a third of its room; it never archives an entry of the newest
iteration. An entry is used at iteration i when

- a decision row of iteration i cites it (an assessment, a recall, a conclusion, a query's
  own result), or
- a query, note or decision text of iteration i names an identifier (`model.used.harvest_used`:
  paths, dotted, underscored and camel-case names, `line N`, hashes) that the case does not
  state and the entry's text holds (the newest entry in view that holds it).

An evidence item a recall names (a `recall` row) and the journal does not show is written again
at the end of the journal (`copy`), whole or as its first page, and from then on is used like any other entry: a
recalled item joins the working set and stays while it is used.

Pages: an entry longer than a page (`V15.page_size`, a rule of the budget) is written as its
first page; every shorter entry is written whole. Between two compactions the journal only
grows, so a cache's prefix of the last turn stays a prefix; a compaction rewrites it (as
v14's do) and is the only place where the choice by use costs anything.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import count
from typing import Any

from ...io.caches import register, register_lru
from ...model.harvest import payload_text
from ...model.state import Evidence, State
from ...model.used import harvest_used
from .pages import paged_text
from .walk import _cached, entries
from .walk14 import Journal14, Plan14, Spans, add_targets, decision_refs

OVERHEAD = 120  # the index caption and its line breaks, more than they ever take
# What a compaction keeps, as a share of the room: the smallest of a third, a half and two thirds whose share of
# used identifiers in view reaches 97% on the corpus's main split (encodings/v15.md, "Name and budget").
KEEP = (2, 3)


@dataclass
class Plan15(Plan14):
    """v14's plan, with each shown entry's last use (for tests and benchmarks)."""

    last_use: dict[str, int] = field(default_factory=dict)


class Walk15:
    """One walk of a v15 journal, kept between renders of a growing state to resume where it stopped."""

    # The share of the room a compaction keeps (None: the module's `KEEP`; v16: a third).
    keep: tuple[int, int] | None = None

    def __init__(self, limit: int, page_size: int, fmt: Any, case_text: str):
        self.limit, self.page_size, self.fmt, self.case = limit, page_size, fmt, case_text
        self.kinds: list[
            str
        ] = []  # "evidence", "note", "history" or "copy" (a recalled item written again)
        self.items: list[Any] = []
        self.refs: list[str] = []
        self.texts: list[str] = []  # each entry as the journal writes it ("" when not written)
        self.rows: list[
            str
        ] = []  # each entry's index row ("" for a copy or an entry never written)
        self.bodies: list[
            str
        ] = []  # what a name is looked up in: a payload's text, a note's or decision's text
        self.held: list[
            dict[str, bool]
        ] = []  # per entry, whether its body holds each name looked up (`_HELD`)
        self.iterations: list[int] = []
        self.last: list[int] = []  # each entry's last use (an iteration)
        self.shown: list[int] = []  # the entries in the journal, in order
        self.archived: list[int] = []  # the entries archived, in the order they were
        self.archived_set: set[str] = set()
        self.archived_ev: list[Evidence] = []
        self.pages: dict[str, int] = {}
        self.spans: Spans | None = None
        self.span_count = 0  # archived[:span_count] are written as ranges
        self.size = 0  # the shown entries' characters, separators included
        self.rows_size = 0  # the index rows not in ranges, line breaks included
        self.threshold, self.compactions = limit, 0
        self.first: dict[str, Evidence] = {}
        self.same_as: dict[str, str] = {}
        self.positions: dict[str, int] = {}
        self.where: dict[
            str, int
        ] = {}  # reference -> the entry of it in the journal now (a copy's, once recalled)
        self.top = 0  # the newest iteration walked

    # -- texts ---------------------------------------------------------------------------

    def targets(self, evidence: list[Evidence]) -> None:
        self.positions.update(zip([ev.id for ev in evidence], count(len(self.positions))))
        add_targets(evidence, self.first, self.same_as)

    def written(self, ref: str, text: str) -> str:
        """`text` as the journal writes it: whole up to a page, else its first page (its page count kept)."""
        if len(text) <= self.page_size:
            return text
        paged: tuple[str, int] = _cached(("v15-paged", ref, self.page_size, text), paged_text, ref, text, self.page_size)  # type: ignore[assignment]  # fmt: skip
        self.pages[ref] = paged[1]
        return paged[0]

    def entry(self, kind: str, item: Any, hypothesis: str | None, ref: str) -> tuple[str, str]:
        """The entry's journal text ("" when the format writes none) and its index row."""
        fmt = self.fmt
        if kind == "evidence":
            text, row = fmt.evidence_texts(item, self.same_as.get(ref))
            written = self.written(ref, text)
            if ref in self.pages:  # the page count ends the row's head line
                head, newline, query = row.partition("\n")
                row = f"{head} pages={self.pages[ref]}{newline}{query}"
            return written, row
        if kind == "note":
            who = "null" if item.hypothesis is None else item.hypothesis
            row = f"{ref} {who} #{item.iteration} {item.kind} archived"
            return self.written(ref, fmt.entry_text(kind, item, hypothesis)), row
        if not fmt.writes_row(item):
            return "", ""
        row = f"{ref} #{item.iteration} {item.kind} archived"
        return self.written(ref, fmt.entry_text(kind, item, hypothesis)), row

    # -- use -----------------------------------------------------------------------------

    def use(self, kind: str, item: Any, at: int) -> None:
        """Mark what the entry (of iteration `at`) uses: the evidence it cites, the entries holding the names it writes."""
        refs: list[str] = []
        texts: list[str] = []
        if kind == "history":
            refs = list(item.evidence_refs)
            if item.text is not None:
                texts.append(item.text)
        elif kind == "note":
            texts.append(item.text)
        elif kind == "evidence" and item.capture.query:
            texts.append(item.capture.query)
        for ref in refs:
            i = self.where.get(ref)
            if i is not None:
                self.last[i] = at
        if not texts:
            return
        shown, bodies, held, case = self.shown, self.bodies, self.held, self.case
        in_case, holds = _HELD.of(case), _HELD.holds
        for value in _names("\n".join(texts)):
            if holds(in_case, case, value):
                continue
            for i in reversed(shown):
                # `holds` asks `held[i]` first too; the lookup is made here, inline, because this loop runs for
                # every shown entry and name, and a method call on each answer kept costs about 15% of a fresh walk.
                answer = held[i].get(value)
                if answer is None:
                    answer = holds(held[i], bodies[i], value)
                if answer:
                    self.last[i] = at
                    break

    # -- the walk --------------------------------------------------------------------------

    def append(self, kind: str, item: Any, hypothesis: str | None, ref: str) -> None:
        text, row = self.entry(kind, item, hypothesis, ref)
        self.add(kind, item, ref, text, row)

    def add(self, kind: str, item: Any, ref: str, text: str, row: str) -> None:
        i = len(self.refs)
        self.kinds.append(kind)
        self.items.append(item)
        self.refs.append(ref)
        self.texts.append(text)
        self.rows.append(row)
        body = _body(kind, item)
        self.bodies.append(body)
        self.held.append(_HELD.of(body))
        self.iterations.append(item.iteration)
        self.last.append(item.iteration)
        self.top = max(self.top, item.iteration)
        if text:
            self.shown.append(i)
            self.where[ref] = i
            self.size += len(text) + 2

    def copy(self, ref: str, at: int) -> None:
        """Write the recalled evidence item `ref` again at the journal's end, unless the journal shows it (whole or page 1).

        A recall of a page after the first is shown in the tail (v14's way); the entry is used either way.
        """
        i = self.where.get(ref)
        if i is not None and self.texts[i]:
            self.last[i] = at
            return
        j = next((k for k in range(len(self.refs) - 1, -1, -1) if self.refs[k] == ref and self.kinds[k] == "evidence"), None)  # fmt: skip
        if j is None:
            return
        ev = self.items[j]
        text, _ = self.fmt.evidence_texts(ev, self.same_as.get(ref))
        written = self.written(ref, text)
        self.kinds.append("copy")
        self.items.append(ev)
        self.refs.append(ref)
        self.texts.append(written)
        self.rows.append("")
        body = _body("evidence", ev)
        self.bodies.append(body)
        self.held.append(_HELD.of(body))
        self.iterations.append(at)
        self.last.append(at)
        k = len(self.refs) - 1
        self.shown.append(k)
        self.where[ref] = k
        self.size += len(written) + 2

    def index_size(self) -> int:
        if not self.archived:
            return 0
        return OVERHEAD + (self.spans.size if self.spans else 0) + self.rows_size

    def feed(self, state: State, ents: Any, decision: dict[int, str]) -> None:
        """Walk `ents`, the entries of `state` after those already walked, compacting past the threshold."""
        if self.spans is None:
            self.spans = Spans(state)
        self.spans.state = state
        for kind, item, hypothesis in zip(ents.kinds, ents.items, ents.hypotheses):
            ref = item.id if kind != "history" else decision[id(item)]
            at = item.iteration
            self.use(kind, item, at)
            self.append(kind, item, hypothesis, ref)
            if kind == "history" and item.kind == "recall":
                for eid in item.evidence_refs:
                    self.copy(eid, at)
            if self.size + self.index_size() > self.threshold:
                self.compact()

    def compact(self) -> None:
        """Keep the entries used last (newest first) within `KEEP` of the room, and every entry of the newest iteration."""
        self.compactions += 1
        # v15's share is the module's, read here (benchmarks/v15_keep.py sets it).
        share = self.keep or KEEP
        limit, low = self.limit, self.limit * share[0] // share[1]
        last, iterations, texts, top = self.last, self.iterations, self.texts, self.top
        order = sorted(self.shown, key=lambda i: (last[i], i), reverse=True)
        newest = max(self.shown)
        index = self.index_size()
        keep, size = self.choose(order, lambda i: iterations[i] == top or i == newest, low - index)
        # Past the room (a newest iteration larger than the room), only the newest entry is exempt.
        rows = sum(len(self.rows[i]) + 1 for i in self.shown if i not in keep)
        if size + index + rows > limit:
            keep, size = self.choose(order, lambda i: i == newest, low - index)
        gone = [i for i in self.shown if i not in keep]
        self.shown = [i for i in self.shown if i in keep]
        self.size = size
        for i in gone:
            ref = self.refs[i]
            if self.where.get(ref) == i:
                del self.where[ref]
            texts[i] = ""
            if self.kinds[i] == "copy" or ref in self.archived_set:
                continue  # its row is in the index already
            self.archived.append(i)
            self.archived_set.add(ref)
            self.rows_size += len(self.rows[i]) + 1
            if self.kinds[i] == "evidence":
                self.archived_ev.append(self.items[i])
        self.ranges()
        self.threshold = max(limit, self.size + self.index_size() + limit // 2)

    def choose(self, order: list[int], exempt: Any, room: int) -> tuple[set[int], int]:
        """The entries kept: in `order` (last used first) while they fit `room`, and every `exempt` one."""
        keep: set[int] = set()
        size = 0
        for i in order:
            cost = len(self.texts[i]) + 2
            if exempt(i) or size + cost <= room:
                keep.add(i)
                size += cost
        return keep, size

    def ranges(self) -> None:
        """When the index rows pass a quarter of the room, the oldest archived become ranges until the rows take an eighth."""
        assert self.spans is not None
        if self.rows_size <= self.limit // 4:
            return
        start = self.span_count
        while self.rows_size > self.limit // 8 and self.span_count < len(self.archived) - 1:
            self.rows_size -= len(self.rows[self.archived[self.span_count]]) + 1
            self.span_count += 1
        self.spans.extend([self.refs[i] for i in self.archived[start : self.span_count]])

    def result(self) -> Plan15:
        refs, kinds, items, texts = self.refs, self.kinds, self.items, self.texts
        groups: list[list[str]] = []
        last = None
        for i in self.shown:
            if not groups or self.iterations[i] != last:
                groups.append([])
                last = self.iterations[i]
            groups[-1].append(texts[i])
        blocks = ["\n\n".join(group) for group in groups]
        index_text = ""
        if self.archived:
            n = len(self.archived)
            lines = [f"evidence_index (archived entries): {n} {'entry' if n == 1 else 'entries'}"]
            lines += (self.spans.lines() if self.spans else []) + [
                self.rows[i] for i in self.archived[self.span_count :]
            ]
            index_text = "\n".join(lines)
        shown_refs = frozenset(refs[i] for i in self.shown)
        seen: set[str] = set()
        shown_ev = []
        for i in self.shown:
            if kinds[i] in ("evidence", "copy") and refs[i] not in seen:
                seen.add(refs[i])
                shown_ev.append(items[i])
        # Archived evidence that a copy shows again counts as shown, not indexed.
        archived = [ev for ev in self.archived_ev if ev.id not in seen]
        archived_refs: AbstractSet[str] = (
            self.archived_set - seen if seen & self.archived_set else self.archived_set
        )
        return Plan15(
            index_text=index_text, body="\n\n".join(blocks), blocks=blocks, shown=shown_ev, archived=archived,
            shown_refs=shown_refs, whole_refs=frozenset(r for r in shown_refs if r not in self.pages),
            archived_refs=archived_refs, pages=dict(self.pages), same_as=self.same_as,
            positions=self.positions, compactions=self.compactions,
            last_use={refs[i]: self.last[i] for i in self.shown},
        )  # fmt: skip


@lru_cache(
    maxsize=65_536
)  # a text is harvested once per process: every render of a run walks its entries again
def _names(text: str) -> tuple[str, ...]:
    return tuple(harvest_used(text))


register_lru(
    "v15 names",
    _names,
    holds="the identifiers of each query, note and decision text v15's walk read",
)


class _Held:
    """Per text a name was looked up in, whether it holds each name (`value in text`), kept for the process.

    A walk looks a name up in every entry it shows, newest first, until one holds it, and the
    next render of the run (a fresh walk) asks the same again. Bounded by answers and by texts:
    past `LIMIT` answers or `TEXTS` texts, all are dropped at once (a walk under way keeps the ones
    it holds until it ends).
    """

    LIMIT = 1_000_000
    TEXTS = 65_536

    def __init__(self) -> None:
        self.texts: dict[str, dict[str, bool]] = {}
        self.answers = 0
        register("v15 held names", holds="per text v15's walk looked a name up in (payload, note, decision, case), "
                 "whether it holds each name", limit=self.LIMIT, size=lambda: self.answers, clear=self.clear)  # fmt: skip

    def clear(self) -> None:
        self.texts = {}
        self.answers = 0

    def of(self, text: str) -> dict[str, bool]:
        held = self.texts.get(text)
        if held is None:
            if len(self.texts) >= self.TEXTS:
                self.clear()
            held = self.texts[text] = {}
        return held

    def holds(self, held: dict[str, bool], text: str, value: str) -> bool:
        answer = held.get(value)
        if answer is None:
            if self.answers >= self.LIMIT:
                self.clear()
            answer = held[value] = value in text
            self.answers += 1
        return answer


_HELD = _Held()


def _body(kind: str, item: Any) -> str:
    """The text an entry holds names in: an evidence payload's (not its query), a note's, a decision's."""
    if kind in ("evidence", "copy"):
        return "" if item.payload is None else payload_text(item.payload)
    return item.text or ""


def walk15(
    state: State, limit: int, page_size: int, fmt: Any, case_text: str, kind: type[Walk15] = Walk15
) -> Plan15:
    """The v15 journal of `state` within `limit` characters (index included), from the first entry (`kind`: the
    walk's class, v16's `Walk16`)."""
    w = kind(limit, page_size, fmt, case_text)
    w.targets(state.evidence)
    w.feed(state, entries(state), decision_refs(state))
    return w.result()


class Journal15(Journal14):
    """A v15 walk kept between renders of one analysis (the same bytes as a fresh walk; a test checks it).

    It resumes as v14's `Journal14` does: when the state only appended entries after the last
    one walked, or replaced an evidence item by a copy differing only in its budget status.
    """

    def __init__(self, limit: int, page_size: int, fmt: Any, case_text: str):
        self.case = case_text
        super().__init__(limit, page_size, fmt)

    walk_class: type[Walk15] = Walk15  # the class of its walks (v16's journal: `Walk16`)

    def new_walk(self) -> Walk15:
        return self.walk_class(self.limit, self.page_size, self.fmt, self.case)

    def restart(self, limit: int, page_size: int, fmt: Any, case_text: str) -> None:  # type: ignore[override]
        """Walk with these parameters from now on (the case's evidence defaults appeared): the next plan starts over."""
        self.case = case_text
        super().restart(limit, page_size, fmt)

    def _hold(self, copies: list[Any]) -> None:
        """Put each copy in the place of every walked item of its ID (the entry and any recalled copy of it)."""
        w = self.w
        for item in copies:
            for k in range(len(w.refs) - 1, -1, -1):
                if w.refs[k] == item.id and w.kinds[k] != "history":
                    w.items[k] = item
            if isinstance(item, Evidence):
                w.archived_ev = [item if old.id == item.id else old for old in w.archived_ev]

    def plan(self, state: State) -> Plan15:  # type: ignore[override]
        plan = super().plan(state)
        assert isinstance(plan, Plan15)
        return plan
