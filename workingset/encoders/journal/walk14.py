"""The journal of v14: every entry appended once, paged when long, archived (any kind) past the limit.

v14 keeps v13's entries and index rows (`V13Format`) and changes the walk in three ways, so
that the journal has a hard size bound on any state:

- an entry (evidence, note or decision) longer than a page is written as its first page,
  its length and its page count: a single output can never pass the journal's room;
- a compaction archives the oldest entries of every kind, notes and decisions too, not
  only evidence (v11–v13 kept every note and decision, which alone could pass the budget);
- index rows are themselves compacted: when the rows pass their share of the limit, the
  oldest ones become ranges of IDs (`E000001..E004000`), which still name every archived
  ID in a few characters.

Every entry has a reference: an evidence or note ID, `H<n>/<k>` for the k-th decision row
of hypothesis H<n>, and `case` for the case. What is archived or paged is reachable by that
reference (a v14 recall, which can also name a page). The walk is a pure function of the
state and the limit; entries are appended between compactions, so the journal of one turn
is a prefix of the next one's until a compaction rewrites it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import accumulate, count
from operator import attrgetter
from typing import Any

from ...model.state import Evidence, State
from .pages import PAGED, page, page_bounds, paged_text
from .walk import Journal, _cached, entries

__all__ = [
    "PAGED",
    "page",
    "page_bounds",
    "paged_text",
]  # where v14 and its tests find them (`pages`)


def decision_refs(state: State) -> dict[int, str]:
    """`H<n>/<k>` of every decision row, keyed by the row object's id (a row has no ID of its own)."""
    return {id(row): f"{h.id}/{k}" for h in state.hypotheses for k, row in enumerate(h.history, 1)}


def add_targets(evidence: list[Evidence], first: dict[str, Evidence], out: dict[str, str]) -> None:
    """Extend `out` with each item whose payload equals an item before it in journal order (`first`: the first of each hash).

    Journal order is by iteration, then by position (a stable sort), so a `same_as` always
    names an entry written above it, even where the state lists its items out of order.
    """
    for ev in sorted(evidence, key=attrgetter("iteration")):
        if ev.content_hash is None:
            continue
        seen = first.get(ev.content_hash)
        if seen is None:
            first[ev.content_hash] = ev
        elif seen.payload == ev.payload:
            out[ev.id] = seen.id


def same_as_targets(state: State) -> dict[str, str]:
    """Each evidence item whose payload equals an earlier item's: that earlier item's ID.

    Unlike v11–v13, the target is the first equal payload whether it is still shown or not
    (an archived one is recalled by its ID), so an entry never changes once written.
    """
    out: dict[str, str] = {}
    add_targets(state.evidence, {}, out)
    return out


@dataclass
class Plan14:
    """What the journal shows and what it archived, by reference."""

    index_text: str = ""
    body: str = ""
    blocks: list[str] = field(
        default_factory=list
    )  # the body one iteration's entries a block: joined by blank lines, the body
    shown: list[Evidence] = field(
        default_factory=list
    )  # evidence in the journal (whole or its first page)
    archived: list[Evidence] = field(default_factory=list)  # evidence archived, journal order
    shown_refs: frozenset[str] = frozenset()  # every reference whose entry is in the journal
    whole_refs: frozenset[str] = frozenset()  # those shown whole (not paged)
    archived_refs: AbstractSet[str] = frozenset()  # the walk's own set: read it, never change it
    pages: dict[str, int] = field(
        default_factory=dict
    )  # page count of every paged entry, shown or archived
    same_as: dict[str, str] = field(default_factory=dict)  # `same_as_targets` of the state
    positions: dict[str, int] = field(
        default_factory=dict
    )  # each evidence ID's position in the state's evidence
    compactions: int = 0


class Spans:
    """Archived references as runs of consecutive IDs (`A..B`, or `A` alone), per kind and group.

    Consecutive means next in the state's own sorted order of that kind's IDs (decision rows:
    the next row of the same hypothesis), so a run names every ID between its ends. Each group
    (evidence, notes, each hypothesis's decisions) extends its own last run.
    """

    def __init__(self, state: State):
        self.state = state
        # group -> its IDs in order (`_group_ids`), made at the group's first range and again
        # when a reference is newer than them (a kept walk's state grows)
        self.ids: dict[Any, list[str]] = {}
        self.runs: dict[
            Any, list[list[Any]]
        ] = {}  # group -> runs [first, last, last rank], groups in order of first use
        self.size = 0

    @staticmethod
    def _run_text(run: list[Any]) -> str:
        return run[0] if run[0] == run[1] else f"{run[0]}..{run[1]}"

    def add(self, ref: str) -> None:
        self.extend([ref])

    def extend(self, refs: list[str]) -> None:
        """Add each of `refs`, in order, to its group's runs (a compaction moves many rows at once).

        Most references are the next ID after their group's last run: that costs one look at
        the group's IDs; any other is ranked by `rank`.
        """
        all_ids, all_runs, size = self.ids, self.runs, self.size
        for ref in refs:
            group = ref.partition("/")[0] if ref[0] == "H" else ref[0]
            runs = all_runs.get(group)
            if runs is None:
                runs = all_runs[group] = []
                size += 24  # the line's label (`archived decisions of H2: `) and its line break
                last, rank = None, self.rank(group, ref)
            else:
                last = runs[-1]
                rank = last[2] + 1
                ids = all_ids[group]
                if rank >= len(ids) or ids[rank] != ref:
                    rank = self.rank(group, ref)
            if last is not None and last[2] == rank - 1:
                # `A` becomes `A..ref`, `A..B` becomes `A..ref`: the run's text grows by the difference.
                size += 2 + len(ref) if last[0] == last[1] else len(ref) - len(last[1])
                last[1], last[2] = ref, rank
            else:
                runs.append([ref, ref, rank])
                size += len(ref) + 1
        self.size = size

    def rank(self, group: Any, ref: str) -> int:
        """Where `ref` is in its group's IDs, made from the state at the group's first range and whenever `ref` is not among them."""
        at = _position(self.ids.get(group, []), group, ref)
        # None: the group's first range, or IDs appended since (they sort after the others).
        if at is None:
            ids = self.ids[group] = _group_ids(self.state, group)
            at = _position(ids, group, ref)
        if at is None:
            raise KeyError(ref)
        return at

    def lines(self) -> list[str]:
        names = {"E": "archived evidence", "N": "archived notes"}
        return [f"{names.get(group, 'archived decisions of ' + str(group))}: " + " ".join(map(self._run_text, runs))
                for group, runs in self.runs.items()]  # fmt: skip


def _position(ids: list[str], group: Any, ref: str) -> int | None:
    at = int(ref.partition("/")[2]) - 1 if group[0] == "H" else bisect_left(ids, ref)
    return at if at < len(ids) and ids[at] == ref else None


def _group_ids(state: State, group: Any) -> list[str]:
    """A group's IDs in order: evidence and note IDs sorted, a hypothesis's decision rows by number."""
    if group == "E":
        return sorted([ev.id for ev in state.evidence])
    if group == "N":
        return sorted([n.id for n in state.notes])
    rows = next(h.history for h in state.hypotheses if h.id == group)
    return [f"{group}/{k}" for k in range(1, len(rows) + 1)]


class Walk14:
    """One walk of a journal (`walk`), kept between the renders of a growing state to resume where it stopped.

    Entries are appended in order. When the journal passes its threshold, the oldest entries
    (any kind; never the newest) are archived until it is at most a third of the limit; the
    next threshold is the larger of the limit and the size left plus half the limit (v12's
    rule). Index rows share the index's room: once they pass a quarter of the limit, the
    oldest rows become ID ranges until the rows left are at most an eighth of it.
    """

    OVERHEAD = 120  # the index caption and its line breaks, more than they ever take

    def __init__(self, limit: int, page_size: int, fmt: Any):
        self.limit, self.page_size, self.fmt = limit, page_size, fmt
        self.kinds: list[str] = []
        self.items: list[Any] = []
        self.refs: list[str] = []
        self.texts: list[str] = []  # each entry as the journal writes it ("" once archived)
        self.pages: dict[str, int] = {}
        # Each entry's index row (an archived entry's is shown), and where each ends: rows[:i]
        # take row_ends[i] characters, line breaks included.
        self.rows: list[str] = []
        self.row_ends: list[int] = [0]
        self.spans: Spans | None = None
        self.span_cursor = 0  # rows before this position are written as ranges
        self.rows_size = self.size = 0
        self.cursor = 0  # entries before this position are archived
        self.threshold, self.compactions = limit, 0
        self.archived_ev: list[Evidence] = []
        self.first: dict[
            str, Evidence
        ] = {}  # the first item of each content hash, in journal order
        self.same_as: dict[str, str] = {}
        self.positions: dict[str, int] = {}  # each evidence ID's position in the state's evidence
        self.archived_set: set[str] = (
            set()
        )  # refs[:cursor], kept so that a turn does not rebuild it

    def targets(self, evidence: list[Evidence]) -> None:
        """Extend the `same_as` targets (`same_as_targets`) with items appended to the state's evidence."""
        self.positions.update(zip([ev.id for ev in evidence], count(len(self.positions))))
        add_targets(evidence, self.first, self.same_as)

    def entry(
        self, kind: str, item: Any, hypothesis: str | None, ref: str, same_as: str | None
    ) -> str:
        """The entry as the journal writes it (paged past a page); its index row, shown once it is archived, joins `rows`.

        One call writes both, so a walk reads each item once; the texts are cached per process
        (an evidence item's two under one key).
        """
        if kind == "evidence":
            text, row = self.fmt.evidence_texts(item, same_as)
        else:
            text = self.fmt.entry_text(kind, item, hypothesis)
            if kind == "note":
                who = "null" if item.hypothesis is None else item.hypothesis
                row = f"{ref} {who} #{item.iteration} {item.kind} archived"
            else:
                row = f"{ref} #{item.iteration} {item.kind} archived"
        if len(text) > self.page_size:
            paged: tuple[str, int] = _cached(
                ("v14-paged", ref, self.page_size, text), paged_text, ref, text, self.page_size
            )  # type: ignore[assignment]
            text, self.pages[ref] = paged
            if kind == "evidence":  # the page count ends the row's head line
                head, newline, query = row.partition("\n")
                row = f"{head} pages={paged[1]}{newline}{query}"
        self.rows.append(row)
        return text

    def feed(self, state: State, ents: Any, decision: dict[int, str]) -> None:
        """Walk `ents`, entries of `state` after those already walked; `decision` gives each new decision row's reference.

        The entries' texts and index rows are written first, a column each (`entry`).
        The journal only grows between two compactions, so each compaction is found by bisecting
        the running sizes; it archives a run of the oldest entries, and the rows that become
        ranges are found the same way. The walk's counters live in locals for the loop (a walk
        can take 250,000 entries) and are written back at the end.
        """
        if self.spans is None:
            self.spans = Spans(state)
        spans = self.spans
        spans.state = state
        limit, overhead = self.limit, self.OVERHEAD
        row_room, rows_kept, low = limit // 4, limit // 8, limit // 3
        refs, texts, rows, row_ends = self.refs, self.texts, self.rows, self.row_ends
        size, rows_size, cursor, span_cursor = (
            self.size,
            self.rows_size,
            self.cursor,
            self.span_cursor,
        )
        threshold, compactions = self.threshold, self.compactions
        spans_size = spans.size  # it changes only when rows become ranges
        index = (overhead + spans_size + rows_size) if cursor else 0  # changes only at a compaction
        first = len(refs)
        self.kinds += ents.kinds
        self.items += ents.items
        refs += [item.id if kind != "history" else decision[id(item)]
                 for kind, item in zip(ents.kinds, ents.items)]  # fmt: skip
        new_refs = refs[first:]
        # `same_as` holds evidence IDs only: a note's or a decision's reference finds None in it.
        targets = map(self.same_as.get, new_refs)
        new = list(map(self.entry, ents.kinds, ents.items, ents.hypotheses, new_refs, targets))
        texts += new
        base = row_ends[-1]
        row_ends += [base + size for size in accumulate(len(row) + 1 for row in rows[first:])]
        # The journal's size after each new entry, were nothing archived since the feed began.
        running = list(accumulate((len(text) + 2 for text in new), initial=size))
        dropped = 0  # the size of what this feed archived
        end = 0
        while (end := bisect_right(running, threshold - index + dropped, end + 1)) < len(running):
            # New entry `end - 1` passes the threshold: compact.
            last, size = first + end - 1, running[end] - dropped
            compactions += 1
            start = cursor
            while cursor < last and size + overhead + spans_size + rows_size > low:
                # Archive the oldest entry shown: its text leaves the journal, its row joins the index.
                size -= len(texts[cursor]) + 2
                rows_size += len(rows[cursor]) + 1
                cursor += 1
                if rows_size > row_room:
                    # The rows alone pass their room: the oldest become ranges, until the rows
                    # left take at most `rows_kept` (the newest row stays a row).
                    spanned = span_cursor
                    kept_from = bisect_left(row_ends, row_ends[cursor] - rows_kept)
                    span_cursor = max(span_cursor, min(kept_from, cursor - 1))
                    rows_size = row_ends[cursor] - row_ends[span_cursor]
                    spans.extend(refs[spanned:span_cursor])
                    spans_size = spans.size
            self.file(start, cursor)
            dropped = running[end] - size
            index = (overhead + spans_size + rows_size) if cursor else 0
            threshold = max(limit, size + overhead + spans_size + rows_size + limit // 2)
        size = running[-1] - dropped
        self.size, self.rows_size, self.cursor, self.span_cursor = (
            size,
            rows_size,
            cursor,
            span_cursor,
        )
        self.threshold, self.compactions = threshold, compactions

    def file(self, start: int, end: int) -> None:
        """File the entries from `start` to `end` (excluded), just archived; their texts go (a kept walk need not hold payloads)."""
        self.texts[start:end] = [""] * (end - start)
        self.archived_set.update(self.refs[start:end])
        kinds, items = self.kinds, self.items
        self.archived_ev += [items[i] for i in range(start, end) if kinds[i] == "evidence"]

    def result(self) -> Plan14:
        kept = range(self.cursor, len(self.refs))
        refs, kinds, items = self.refs, self.kinds, self.items
        # One block per iteration's entries, as v11-v13 send them: a turn appends whole
        # iterations, so last turn's journal ends at a block boundary of this turn's request.
        groups: list[list[str]] = []
        last = None
        for i in kept:
            if not groups or items[i].iteration != last:
                groups.append([])
                last = items[i].iteration
            groups[-1].append(self.texts[i])
        blocks = ["\n\n".join(group) for group in groups]
        body = "\n\n".join(blocks)
        index_text = ""
        if self.cursor:
            n = self.cursor
            lines = [f"evidence_index (archived entries): {n} {'entry' if n == 1 else 'entries'}"]
            lines += (self.spans.lines() if self.spans else []) + self.rows[self.span_cursor : n]
            index_text = "\n".join(lines)
        shown_refs = frozenset(refs[self.cursor :])
        return Plan14(
            index_text=index_text, body=body, blocks=blocks,
            shown=[items[i] for i in kept if kinds[i] == "evidence"], archived=list(self.archived_ev),
            shown_refs=shown_refs, whole_refs=frozenset(r for r in shown_refs if r not in self.pages),
            archived_refs=self.archived_set, pages=dict(self.pages), same_as=self.same_as,
            positions=self.positions, compactions=self.compactions,
        )  # fmt: skip


def walk(state: State, limit: int, page_size: int, fmt: Any) -> Plan14:
    """The journal of `state` within `limit` characters (index included), pages of `page_size` (`Walk14`), from the first entry."""
    w = Walk14(limit, page_size, fmt)
    w.targets(state.evidence)
    w.feed(state, entries(state), decision_refs(state))
    return w.result()


class Journal14(Journal):
    """A v14 walk kept between the renders of one analysis, so a turn costs what is new.

    As v11's `Journal`, it resumes only when the state appended to every list the last walk
    saw (the same objects or equal ones), the new entries come after the last one walked, and every new
    evidence and note ID sorts after the old ones (ranges count IDs in sorted order); anything
    else walks from the first entry. Either way the result is the fresh walk's (a test checks it).

    One change besides appending resumes too: an evidence item replaced by a copy that
    differs only in its budget status (an import's states each hold the previous result
    unsettled, then settled, as two objects; a session changes the status in place), or a
    note by a copy that differs only in its status (open, then answered). No entry or index
    row writes a status (the tail does), so the walk holds the copy in the old item's place
    and goes on.
    """

    w: Any  # the walk: made by each plan that walks from the first entry (the first plan does)

    def __init__(self, limit: int, page_size: int, fmt: Any):
        super().__init__(limit, fmt)
        self.page_size = page_size
        self.top = ("", "")  # the largest evidence and note IDs walked

    def new_walk(self) -> Any:
        """A walk from the first entry (a later version's journal makes its own walk)."""
        return Walk14(self.limit, self.page_size, self.fmt)

    def restart(self, limit: int, page_size: int, fmt: Any) -> None:  # type: ignore[override]
        """Walk `limit` characters in pages of `page_size` with `fmt` from now on: the next plan starts over."""
        self.page_size = page_size
        super().restart(limit, fmt)  # no plan kept: the next plan makes a new walk
        self.top = ("", "")

    def _hold(self, copies: list[Any]) -> None:
        """Put each copy in the place of the walked item of its ID, in the entries and, if archived, the archived items.

        Each search runs from the newest end: the item a turn settles is its previous result."""
        w = self.w
        for ev in copies:
            w.items[_last_index(w.refs, ev.id)] = ev
            if isinstance(ev, Evidence) and ev.id in w.archived_set:
                archived = w.archived_ev
                archived[
                    next(i for i in range(len(archived) - 1, -1, -1) if archived[i].id == ev.id)
                ] = ev

    def plan(self, state: State) -> Plan14:  # type: ignore[override]
        new = self._new_entries(state)
        old = self.sources
        if new is not None:
            ev_ids = [ev.id for ev in state.evidence[len(old[0]) :]]
            note_ids = [n.id for n in state.notes[len(old[1]) :]]
            if (ev_ids and min(ev_ids) <= self.top[0]) or (
                note_ids and min(note_ids) <= self.top[1]
            ):
                new = None
        if new is None:
            self.w = self.new_walk()
            old = tuple([] for _ in self._sources(state))
            new = entries(state)
        w = self.w
        w.targets(state.evidence[len(old[0]) :])
        decision = {id(row): f"{h.id}/{k}" for h, then in zip(state.hypotheses, old[2:] or [[]] * len(state.hypotheses))
                    for k, row in enumerate(h.history[len(then) :], len(then) + 1)}  # fmt: skip
        w.feed(state, new, decision)
        self.top = (max([self.top[0], *(ev.id for ev in state.evidence[len(old[0]) :])]),
                    max([self.top[1], *(n.id for n in state.notes[len(old[1]) :])]))  # fmt: skip
        self.sources = tuple(list(source) for source in self._sources(state))
        if new.orders:
            self.last = new.orders[-1]
        plan = w.result()
        self.plan_ = plan
        return plan


def _last_index(refs: list[str], ref: str) -> int:
    """The index of the last `ref` in `refs` (it is there: the walk holds every item it saw)."""
    for i in range(len(refs) - 1, -1, -1):
        if refs[i] == ref:
            return i
    raise ValueError(ref)
