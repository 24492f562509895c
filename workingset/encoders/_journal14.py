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

import functools
from dataclasses import dataclass, field
from typing import Any

from ..model import Evidence, State
from ._journal import _cached, entries
from ._render import fence

# `ref paged: N chars, K pages; page 1:` heads a paged entry (see `paged_text`).
PAGED = "{ref} paged: {chars} chars, {pages} pages; page 1:"


@functools.lru_cache(maxsize=256)  # a recall of page k needs the bounds of every page before it
def page_bounds(text: str, size: int) -> tuple[int, ...]:
    """Where each page of `text` ends: the longest slices whose fenced block is at most `size` characters.

    A page is fenced on its own (`fence`), so a run of backticks inside it lengthens its fence;
    the slice shrinks until the fenced page fits. A page holds at least one character
    (a fenced character is 9 characters; `size` is always far more).
    """
    bounds: list[int] = []
    start, n = 0, len(text)
    while start < n:
        length = min(n - start, size - 8)  # 8: two fences of 3 and their line breaks
        while True:
            fenced = len(fence(text[start : start + length]))
            if fenced <= size:
                break
            length = max(1, min(length - (fenced - size), length * size // fenced))
        start += length
        bounds.append(start)
    return tuple(bounds)


def page(text: str, size: int, number: int) -> str | None:
    """Page `number` (1-based) of `text`, un-fenced; None when there is no such page."""
    bounds = page_bounds(text, size)
    if not 1 <= number <= len(bounds):
        return None
    return text[(bounds[number - 2] if number > 1 else 0) : bounds[number - 1]]


def paged_text(ref: str, text: str, size: int) -> tuple[str, int]:
    """The entry as the journal writes it when longer than a page: its head line, then page 1 fenced; and the page count."""
    bounds = page_bounds(text, size)
    return PAGED.format(ref=ref, chars=len(text), pages=len(bounds)) + "\n" + fence(text[: bounds[0]]), len(bounds)


def decision_refs(state: State) -> dict[int, str]:
    """`H<n>/<k>` of every decision row, keyed by the row object's id (a row has no ID of its own)."""
    return {id(row): f"{h.id}/{k}" for h in state.hypotheses for k, row in enumerate(h.history, 1)}


def same_as_targets(state: State) -> dict[str, str]:
    """Each evidence item whose payload equals an earlier item's: that earlier item's ID.

    Unlike v11–v13, the target is the first equal payload whether it is still shown or not
    (an archived one is recalled by its ID), so an entry never changes once written.
    """
    first: dict[str, Evidence] = {}
    out: dict[str, str] = {}
    for ev in state.evidence:
        if ev.content_hash is None:
            continue
        seen = first.get(ev.content_hash)
        if seen is None:
            first[ev.content_hash] = ev
        elif seen.payload == ev.payload:
            out[ev.id] = seen.id
    return out


@dataclass
class Plan14:
    """What the journal shows and what it archived, by reference."""

    index_text: str = ""
    body: str = ""
    shown: list[Evidence] = field(default_factory=list)  # evidence in the journal (whole or its first page)
    archived: list[Evidence] = field(default_factory=list)  # evidence archived, journal order
    shown_refs: frozenset[str] = frozenset()  # every reference whose entry is in the journal
    whole_refs: frozenset[str] = frozenset()  # those shown whole (not paged)
    archived_refs: frozenset[str] = frozenset()
    pages: dict[str, int] = field(default_factory=dict)  # page count of every paged entry, shown or archived
    same_as: dict[str, str] = field(default_factory=dict)  # `same_as_targets` of the state
    compactions: int = 0


class Spans:
    """Archived references as runs of consecutive IDs (`A..B`, or `A` alone), per kind and group.

    Consecutive means next in the state's own sorted order of that kind's IDs (decision rows:
    the next row of the same hypothesis), so a run names every ID between its ends. Each group
    (evidence, notes, each hypothesis's decisions) extends its own last run.
    """

    def __init__(self, state: State):
        self.state = state
        self.ranks: dict[str, tuple[Any, int]] = {}  # ref -> (group, rank within the group), made at the first range
        self.runs: dict[Any, list[list[Any]]] = {}  # group -> runs [first, last, last rank], groups in order of first use
        self.size = 0

    @staticmethod
    def _run_text(run: list[Any]) -> str:
        return run[0] if run[0] == run[1] else f"{run[0]}..{run[1]}"

    def add(self, ref: str) -> None:
        if not self.ranks:
            self.ranks = _ranks(self.state)
        group, rank = self.ranks[ref]
        runs = self.runs.setdefault(group, [])
        last = runs[-1] if runs else None
        if last is not None and last[2] == rank - 1:
            self.size -= len(self._run_text(last))
            last[1], last[2] = ref, rank
            self.size += len(self._run_text(last))
        else:
            runs.append([ref, ref, rank])
            self.size += len(ref) + 1
        if len(runs) == 1 and last is None:
            self.size += 24  # the line's label (`archived decisions: `) and its line break

    def lines(self) -> list[str]:
        names = {"E": "archived evidence", "N": "archived notes"}
        return [f"{names.get(group, 'archived decisions of ' + str(group))}: " + " ".join(map(self._run_text, runs))
                for group, runs in self.runs.items()]  # fmt: skip


def _ranks(state: State) -> dict[str, tuple[Any, int]]:
    ranks: dict[str, tuple[Any, int]] = {}
    for k, eid in enumerate(sorted(ev.id for ev in state.evidence)):
        ranks[eid] = ("E", k)
    for k, nid in enumerate(sorted(n.id for n in state.notes)):
        ranks[nid] = ("N", k)
    for h in state.hypotheses:
        for k in range(1, len(h.history) + 1):
            ranks[f"{h.id}/{k}"] = (h.id, k)
    return ranks


def walk(state: State, limit: int, page_size: int, fmt: Any) -> Plan14:
    """The journal of `state` within `limit` characters (index included), pages of `page_size`.

    Entries are appended in order. When the journal passes its threshold, the oldest entries
    (any kind; never the newest) are archived until it is at most a third of the limit; the
    next threshold is the larger of the limit and the size left plus half the limit (v12's
    rule). Index rows share the index's room: once they pass a quarter of the limit, the
    oldest rows become ID ranges until the rows left are at most an eighth of it.
    """
    ents = entries(state)
    decision = decision_refs(state)
    same_as = same_as_targets(state)
    refs: list[str] = []
    texts: list[str] = []  # each entry as the journal writes it
    pages: dict[str, int] = {}
    rows: list[str] = []  # the index row of each archived entry, in archive order
    row_refs: list[str] = []
    spans = Spans(state)
    span_cursor = 0  # rows before this position are written as ranges
    rows_size = 0
    size = 0
    cursor = 0  # entries before this position are archived
    threshold, compactions = limit, 0
    row_room, rows_kept = limit // 4, limit // 8
    overhead = 120  # the index caption and its line breaks, more than they ever take
    archived_ev: list[Evidence] = []
    for kind, item, hypothesis in zip(ents.kinds, ents.items, ents.hypotheses):
        ref = item.id if kind != "history" else decision[id(item)]
        full = fmt.entry_text(kind, item, hypothesis, same_as.get(ref) if kind == "evidence" else None)
        if len(full) > page_size:  # cached per process, as the entries' texts are
            text, count = _cached(("v14-paged", ref, page_size, full), paged_text, ref, full, page_size)
            pages[ref] = count
        else:
            text = full
        refs.append(ref)
        texts.append(text)
        size += len(text) + 2
        index = (overhead + spans.size + rows_size) if rows else 0
        if size + index <= threshold:
            continue
        compactions += 1
        last = len(refs) - 1
        while cursor < last and size + (overhead + spans.size + rows_size) > limit // 3:
            old_ref, old_kind, old_item = refs[cursor], ents.kinds[cursor], ents.items[cursor]
            size -= len(texts[cursor]) + 2
            texts[cursor] = ""
            if old_kind == "evidence":
                row = fmt.index_row_text(old_item)
                archived_ev.append(old_item)
                if old_ref in pages:  # at the end of the head line, before the query line
                    head, newline, query = row.partition("\n")
                    row = f"{head} pages={pages[old_ref]}{newline}{query}"
            elif old_kind == "note":
                row = f"{old_ref} {'null' if old_item.hypothesis is None else old_item.hypothesis} #{old_item.iteration} {old_item.kind} archived"
            else:
                row = f"{old_ref} #{old_item.iteration} {old_item.kind} archived"
            rows.append(row)
            row_refs.append(old_ref)
            rows_size += len(row) + 1
            cursor += 1
            if rows_size > row_room:  # the rows alone pass their room: the oldest become ranges
                while rows_size > rows_kept and span_cursor < len(rows) - 1:
                    rows_size -= len(rows[span_cursor]) + 1
                    spans.add(row_refs[span_cursor])
                    span_cursor += 1
        threshold = max(limit, size + overhead + spans.size + rows_size + limit // 2)
    kept = range(cursor, len(refs))
    body = "\n\n".join(texts[i] for i in kept)
    index_text = ""
    if rows:
        lines = [f"evidence_index (archived entries): {len(rows)} {'entry' if len(rows) == 1 else 'entries'}"]
        lines += spans.lines() + rows[span_cursor:]
        index_text = "\n".join(lines)
    shown_refs = frozenset(refs[i] for i in kept)
    return Plan14(
        index_text=index_text, body=body,
        shown=[ents.items[i] for i in kept if ents.kinds[i] == "evidence"], archived=archived_ev,
        shown_refs=shown_refs, whole_refs=frozenset(r for r in shown_refs if r not in pages),
        archived_refs=frozenset(refs[:cursor]), pages=pages, same_as=same_as, compactions=compactions,
    )  # fmt: skip
