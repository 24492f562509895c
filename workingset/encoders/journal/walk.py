"""The journal of v11 and later: every evidence item, note and decision of a state in the order it happened.

An entry is written once and never changes, so the journal of one turn is a prefix of the
journal of the next and a provider's prompt cache serves it. Mutable facts (budget
statuses, note statuses, confidences, roles) stay out of it: v11 states them in its tail.

The journal is bounded. `plan` walks the entries in order, adding each one's size; when the
journal would pass its limit it is compacted once — the oldest evidence items become rows
of the `evidence_index` until the journal is at most a fraction of the limit (`Format.compact_to`:
a half in v11, a third in v12 and v13), the newest always kept in full — and appending resumes. The walk starts from the first entry at every render, so
which items are archived is a pure function of the state: the same state always gives the
same journal, and two states of one run agree on every compaction both have passed.

How entries and index rows are written is a version's `Format`. Entry texts are cached per
process (`_TEXTS`), keyed by the format and everything they are made of, so a turn renders
only what is new.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import astuple, replace

from ...io.caches import register
from ...model.harvest import harvest
from ...model.state import Evidence, HistoryEntry, Note, RowsPayload, State, TextPayload
from .._render import (
    CAPTURE_COLUMNS,
    UNKNOWN_PAYLOAD,
    compact,
    empty_rows_remark,
    fence,
    rows_caption,
    table,
)

INDEX_COLUMNS = (
    "id", "collector", "scope", "iteration", "captured_at", *CAPTURE_COLUMNS,
    "action", "cost", "payload", "identifiers",
)  # fmt: skip
# Order of entries within one iteration: a decision's history rows, then its notes, then the
# evidence it produced (a query's result carries the iteration of the query).
_RANK = {"history": 0, "note": 1, "evidence": 2}
# An entry's order is one integer, (iteration, rank, position) read as the digits of a number
# in this base: it sorts like that tuple, with no tuple to allocate for each entry.
_POSITIONS = (
    2**48
)  # > any position: a history row's is its hypothesis's index * 1,000,000 + its own

_TEXTS: dict[tuple, str] = {}
_TEXT_CHARS = 0
_TEXT_CHARS_KEPT = 256_000_000  # a long-lived process must not grow without bound


@dataclass
class Entries:
    """Journal entries in order, as columns: entry i is `kinds[i]`, `items[i]`, `hypotheses[i]`.

    Columns, not an object per entry: entries live through the whole walk, and the objects
    that live through a walk of 25,000 entries make the garbage collector scan the whole
    state again and again.
    """

    kinds: list[str] = field(default_factory=list)  # "history", "note" or "evidence"
    items: list[Any] = field(default_factory=list)  # a history row, a note or an evidence item
    hypotheses: list[str | None] = field(default_factory=list)  # a history row's hypothesis
    orders: list[int] = field(default_factory=list)  # where each entry goes (`_order`)

    def extend(
        self,
        kind: str,
        source: list[Any],
        skip: int,
        hypothesis: str | None = None,
        offset: int = 0,
    ) -> None:
        """Add the items of one source but its first `skip`; `offset` + an item's position in the source orders it."""
        items = source[skip:]
        self.kinds += [kind] * len(items)
        self.items += items
        self.hypotheses += [hypothesis] * len(items)
        rank = _RANK[kind]
        self.orders += [
            (item.iteration * len(_RANK) + rank) * _POSITIONS + pos
            for pos, item in enumerate(items, offset + skip)
        ]

    def sorted(self) -> Entries:
        """The entries by order (each source is added in its own order; a sort merges them)."""
        ranked = sorted(range(len(self.orders)), key=self.orders.__getitem__)
        return Entries(
            list(map(self.kinds.__getitem__, ranked)),
            list(map(self.items.__getitem__, ranked)),
            list(map(self.hypotheses.__getitem__, ranked)),
            list(map(self.orders.__getitem__, ranked)),
        )


def entries(state: State, skip: list[int] | None = None) -> Entries:
    """The state's entries in the order they happened (iteration, then decision, notes, evidence).

    `skip` gives, per source (evidence, notes, each hypothesis's history), how many leading
    items to leave out: the entries a resumed walk has already seen.
    """
    ev_skip, note_skip, *history_skip = skip or [0] * (2 + len(state.hypotheses))
    out = Entries()
    for h_pos, h in enumerate(state.hypotheses):
        out.extend("history", h.history, history_skip[h_pos], h.id, offset=h_pos * 1_000_000)
    out.extend("note", state.notes, note_skip)
    out.extend("evidence", state.evidence, ev_skip)
    return out.sorted()


def _without_nulls(record: dict[str, Any]) -> dict[str, Any]:
    """Leave out what the reader is told to read as absent: null, an empty list, a zero cost."""
    return {
        k: v
        for k, v in record.items()
        if v is not None and v != [] and not (k == "cost" and v == 0)
    }


def history_text(row: HistoryEntry, hypothesis: str) -> str:
    return compact(_without_nulls({
        "entry": row.kind, "hypothesis": hypothesis, "iteration": row.iteration,
        "evidence_refs": row.evidence_refs, "verdict": row.verdict, "confidence": row.confidence, "text": row.text,
    }))  # fmt: skip


def note_text(note: Note) -> str:
    """A note's record line, then its text verbatim in a code block (JSON escapes cost tokens)."""
    record = compact(
        _without_nulls(
            {
                "entry": note.kind,
                "id": note.id,
                "hypothesis": note.hypothesis,
                "iteration": note.iteration,
            }
        )
    )
    return record + "\n" + fence(note.text)


def _payload_state(ev: Evidence) -> str:
    if ev.payload is None:
        return "unknown"
    return "rows" if isinstance(ev.payload, RowsPayload) else "text"


def _evidence_text(ev: Evidence, same_as: str | None) -> str:
    record: dict[str, Any] = {
        "entry": "evidence", "id": ev.id, "collector": ev.collector, "scope": ev.scope,
        "iteration": ev.iteration, "captured_at": ev.captured_at,
    }  # fmt: skip
    record.update(zip(CAPTURE_COLUMNS, astuple(ev.capture)))
    record.update(action=ev.budget.action, cost=ev.budget.cost, payload=_payload_state(ev))
    payload = ev.payload
    if isinstance(payload, TextPayload):
        record["language"] = payload.language
    elif isinstance(payload, RowsPayload):
        record["rows"] = len(payload.rows)
    record["same_as"] = same_as
    return "\n".join([compact(_without_nulls(record)), *payload_lines(ev, same_as)])


def payload_lines(ev: Evidence, same_as: str | None) -> list[str]:
    """What follows an evidence entry's head: its payload in full, or what stands for it."""
    payload = ev.payload
    if payload is None:
        return [UNKNOWN_PAYLOAD]
    if same_as is not None:  # the payload is shown at its reference; an empty one keeps its remark
        return (
            [empty_rows_remark(ev)] if isinstance(payload, RowsPayload) and not payload.rows else []
        )
    if isinstance(payload, TextPayload):
        return [fence(payload.text, payload.language)]
    if payload.rows:
        return [table(payload.columns, payload.rows)]
    return [compact(payload.columns) + "\n" + empty_rows_remark(ev)]


def _evidence_key(ev: Evidence) -> tuple:
    return (ev.id, ev.collector, ev.scope, ev.iteration, ev.captured_at, astuple(ev.capture),
            ev.budget.action, ev.budget.cost, ev.content_hash)  # fmt: skip


def _cached(key: tuple, make: Any, *args: Any) -> str:
    """The text under `key`, made by `make(*args)` the first time."""
    global _TEXT_CHARS
    text = _TEXTS.get(key)
    if text is None:
        if _TEXT_CHARS > _TEXT_CHARS_KEPT:
            _TEXTS.clear()
            _TEXT_CHARS = 0
        text = _TEXTS[key] = make(*args)
        _TEXT_CHARS += len(text)
    return text


def _clear_texts() -> None:
    global _TEXT_CHARS
    _TEXTS.clear()
    _TEXT_CHARS = 0


register("journal texts", holds="v11+ journal entry and index row texts, by format and content",
         limit=_TEXT_CHARS_KEPT, unit="characters", size=lambda: _TEXT_CHARS, clear=_clear_texts)  # fmt: skip


def index_row(ev: Evidence) -> list[Any]:
    """An archived item's `evidence_index` row: everything but the payload, plus its identifiers."""
    return [ev.id, ev.collector, ev.scope, ev.iteration, ev.captured_at, *astuple(ev.capture),
            ev.budget.action, ev.budget.cost, "unknown" if ev.payload is None else "archived", harvest(ev.payload)]  # fmt: skip


def index_block(count: int, rows: str) -> str:
    """The `evidence_index` the journal starts with: a caption, then the rows as a jsonl table."""
    return (rows_caption(count, "evidence_index (archived evidence)") + "\n"
            + fence(compact(list(INDEX_COLUMNS)) + "\n" + rows, "jsonl"))  # fmt: skip


class Format:
    """How a journal writes its entries and its index: v11's. A later version subclasses it.

    The methods without `_text` make a text; those with it return the text cached per
    process, keyed by the format and everything the text is made of.
    """

    key = "v11"
    compact_to = 2  # a compaction archives the oldest evidence until the journal is at most limit // compact_to

    def evidence(self, ev: Evidence, same_as: str | None) -> str:
        """An evidence entry: its record line (capture inline), then its payload in full."""
        return _evidence_text(ev, same_as)

    def note(self, note: Note) -> str:
        return note_text(note)

    def history(self, row: HistoryEntry, hypothesis: str) -> str:
        return history_text(row, hypothesis)

    def index_row(self, ev: Evidence) -> str:
        return compact(index_row(ev))

    def index_block(self, count: int, rows: str) -> str:
        return index_block(count, rows)

    def evidence_text(self, ev: Evidence, same_as: str | None = None) -> str:
        return _cached(
            (self.key, "evidence", _evidence_key(ev), same_as), self.evidence, ev, same_as
        )

    def index_row_text(self, ev: Evidence) -> str:
        return _cached((self.key, "index", _evidence_key(ev)), self.index_row, ev)

    def evidence_texts(self, ev: Evidence, same_as: str | None = None) -> tuple[str, str]:
        """The evidence entry's text and its index row under one key: a walk that may archive the item needs both."""
        key = (self.key, "evidence and index", _evidence_key(ev), same_as)
        texts: tuple[str, str] = _cached(key, self._evidence_texts, ev, same_as)  # type: ignore[assignment]
        return texts

    def _evidence_texts(self, ev: Evidence, same_as: str | None) -> tuple[str, str]:
        return self.evidence_text(ev, same_as), self.index_row_text(ev)

    def entry_text(
        self, kind: str, item: Any, hypothesis: str | None, same_as: str | None = None
    ) -> str:
        """An entry's text, rendered once per process for each distinct content."""
        if kind == "evidence":
            return self.evidence_text(item, same_as)
        if kind == "note":
            key: tuple[Any, ...] = (
                self.key,
                "note",
                item.id,
                item.hypothesis,
                item.kind,
                item.iteration,
                item.text,
            )
            return _cached(key, self.note, item)
        key = (self.key, "history", hypothesis, item.iteration, item.kind, tuple(item.evidence_refs),
               item.verdict, item.confidence, item.text)  # fmt: skip
        return _cached(key, self.history, item, hypothesis or "")


V11_FORMAT = Format()


@dataclass
class Plan:
    """What the journal shows: the archived items, the evidence shown, their references, and the entries' text."""

    archived: list[Evidence] = field(default_factory=list)
    shown: list[Evidence] = field(default_factory=list)
    same_as: dict[str, str] = field(default_factory=dict)
    compactions: int = 0
    body: str = ""  # the kept entries' texts, each separated by a blank line
    # Where each iteration's run of kept entries starts in `body` (the first at 0): the journal's
    # append-only blocks. A turn appends a new iteration, so last turn's journal ends at a cut.
    cuts: list[int] = field(default_factory=list)
    last_iteration: int | None = None  # the iteration of the body's last entry
    index_text: str = (
        ""  # the captioned index block the journal starts with ("" while nothing is archived)
    )
    archived_ids: frozenset[str] = frozenset()


class _Walk:
    """The running journal of one walk: sizes, reference targets and the archive.

    Items are archived oldest first, so a cursor moves forward over the entries and every
    step is amortized O(1).
    """

    # Characters of the index section around its rows (caption and fence).
    INDEX_OVERHEAD = 280

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self.kinds: list[str] = []  # the entries walked (see `Entries`)
        self.items: list[Any] = []
        self.texts: list[
            str
        ] = []  # each entry's text as it stands (an evidence item's changes with its reference)
        self.sizes: list[int] = []
        self.same_as: list[str | None] = []
        self.archived: list[Evidence] = []
        self.index_rows: list[str] = []  # the archived items' index rows, in order
        self.cursor = 0  # the evidence before this position is archived, the rest is shown
        self.size = 0
        self.index_size = 0
        # The shown items of each content hash, in order: the position of the first, and a queue
        # of the others where there are any (most payloads are unique: no queue each).
        self.first: dict[str, int] = {}
        self.later: dict[str, deque[int]] = {}

    def target(self, pos: int) -> str | None:
        ev = self.items[pos]
        first = self.first.get(ev.content_hash)
        if first is not None and first != pos:
            shown = self.items[first]
            if shown.payload == ev.payload:
                return shown.id
        return None

    def add(self, kind: str, item: Any, hypothesis: str | None) -> None:
        pos = len(self.items)
        self.kinds.append(kind)
        self.items.append(item)
        same_as = None
        if kind == "evidence" and item.content_hash is not None:
            content = item.content_hash
            if content in self.first:
                self.later.setdefault(content, deque()).append(pos)
                same_as = self.target(pos)
            else:
                self.first[content] = pos
        text = self.fmt.entry_text(kind, item, hypothesis, same_as)
        size = len(text) + 2
        self.texts.append(text)
        self.sizes.append(size)
        self.same_as.append(same_as)
        self.size += size

    def archive_oldest(self) -> bool:
        """Archive the oldest evidence item still shown (never the newest entry); False if none."""
        last = len(self.items) - 1
        while self.cursor < last and self.kinds[self.cursor] != "evidence":
            self.cursor += 1
        if self.cursor >= last:
            return False
        pos, ev = self.cursor, self.items[self.cursor]
        self.cursor += 1
        self.size -= self.sizes[pos]
        self.texts[pos] = ""  # never shown again: a kept walk need not hold the payload's text
        content = ev.content_hash
        if content is not None:  # the oldest item shown is the first of its content hash
            later = self.later.get(content)
            if later:  # the next equal payload is shown in full (the rest point at it: same length)
                heir = self.first[content] = later.popleft()
                if not later:
                    del self.later[content]
                self.refer(heir, None)
            else:
                del self.first[content]
        if not self.archived:
            self.index_size = self.INDEX_OVERHEAD
        row = self.fmt.index_row_text(ev)
        self.archived.append(ev)
        self.index_rows.append(row)
        self.index_size += len(row) + 1
        return True

    def refer(self, pos: int, same_as: str | None) -> None:
        """Point the evidence entry at `pos` at another equal payload (None: show it in full)."""
        text = self.fmt.evidence_text(self.items[pos], same_as)
        new = len(text) + 2
        self.size += new - self.sizes[pos]
        self.texts[pos], self.sizes[pos], self.same_as[pos] = text, new, same_as


class Journal:
    """The journal of one analysis under one limit, kept between renders so a turn costs what is new.

    `plan` first checks that the state still holds every evidence item, note and history row
    the last walk saw, the same objects or equal ones (a session's kept state only appends to
    those lists and never changes what an entry shows; a stored run's contexts are equal
    copies), and that the new entries all come after the last one walked; then it resumes the
    walk. Anything else walks from the first entry
    again. Either way the result is what a fresh walk gives (a test checks it): the kept
    state only saves time. `plan(state, limit)` is the pure, stateless form.
    """

    walk: _Walk  # made by each plan that walks from the first entry (the first plan does)

    def __init__(self, limit: int, fmt: Format = V11_FORMAT):
        self.limit, self.fmt = limit, fmt
        self._start()

    def _start(self) -> None:
        """Forget every walk: the next plan walks from the first entry, with a walk of its own."""
        self.threshold, self.compactions = self.limit, 0
        self.sources: tuple[list, ...] = ()
        self.last: int | None = None
        self.plan_: Plan | None = None
        self.held = False

    @staticmethod
    def _sources(state: State) -> tuple[list, ...]:
        return (state.evidence, state.notes, *(h.history for h in state.hypotheses))

    def _new_entries(self, state: State) -> Entries | None:
        """The entries the last walk has not seen, if the state only appended to it; else None."""
        sources = self._sources(state)
        if self.plan_ is None or len(sources) != len(self.sources):
            return None
        if not all(self._kept(now, then) for now, then in zip(sources, self.sources)):
            return None
        new = entries(state, skip=[len(then) for then in self.sources])
        if new.orders and self.last is not None and new.orders[0] <= self.last:
            return None
        return new

    def restart(self, limit: int, fmt: Format) -> None:
        """Walk `limit` characters with `fmt` from now on (the state's case changed the room): the next plan starts over."""
        self.limit, self.fmt = limit, fmt
        self._start()

    def _kept(self, now: list[Any], then: list[Any]) -> bool:
        """Whether the list `now` starts with the list `then` the last walk saw, as far as the journal writes it.

        The same objects or equal ones: a session's kept state holds the same objects (compared
        by identity first, so it costs nothing); the stored contexts of a run are loaded apart,
        so theirs are equal copies, and a render is a pure function of the values. An evidence
        item or note replaced by a copy that differs only in its status (an import's states
        each hold the previous result unsettled, then settled, as two objects) is held in the
        old one's place: no entry or index row writes a status (the tail does)."""
        if len(now) < len(then):
            return False
        if now[: len(then)] == then:
            return True
        if not then or not isinstance(then[0], (Evidence, Note)):
            return False
        changed = [(old, new) for old, new in zip(then, now) if old is not new and old != new]
        if not all(status_only(old, new) for old, new in changed):
            return False
        self._hold([new for _, new in changed])
        return True

    def _hold(self, copies: list[Any]) -> None:
        """Put each copy in the place of the walked item of its ID (and of its archived item), newest first."""
        walk = self.walk
        for item in copies:
            for pos in range(len(walk.items) - 1, -1, -1):
                if walk.kinds[pos] != "history" and walk.items[pos].id == item.id:
                    walk.items[pos] = item
                    break
            if isinstance(item, Evidence):
                walk.archived = [item if ev.id == item.id else ev for ev in walk.archived]
        self.held = True  # the last plan lists the old objects: the next is rebuilt from the walk

    def plan(self, state: State) -> Plan:
        new = self._new_entries(state)
        if new is None:
            self._start()
            self.walk = _Walk(self.fmt)
            new = entries(state)
        before = self.compactions
        walk, limit = self.walk, self.limit
        for kind, item, hypothesis in zip(new.kinds, new.items, new.hypotheses):
            walk.add(kind, item, hypothesis)
            if walk.size + walk.index_size > self.threshold:
                self.compactions += 1
                while (
                    walk.size + walk.index_size > limit // self.fmt.compact_to
                    and walk.archive_oldest()
                ):
                    pass
                # Notes and decisions are never archived: where they alone pass half the
                # limit, the next compaction waits until half a limit more has been
                # appended, so the journal is not rewritten every turn.
                self.threshold = max(limit, walk.size + walk.index_size + limit // 2)
        self.sources = tuple(list(source) for source in self._sources(state))
        if new.orders:
            self.last = new.orders[-1]
        rebuild = self.plan_ is None or self.compactions != before or self.held
        self.held = False
        self.plan_ = self._result(new, rebuild=rebuild)
        return self.plan_

    def _result(self, new: Entries, rebuild: bool) -> Plan:
        walk = self.walk
        if rebuild:
            texts: list[str] = []
            shown: list[Evidence] = []
            same_as: dict[str, str] = {}
            cuts: list[int] = []
            at, last = 0, None
            for pos, (kind, item) in enumerate(zip(walk.kinds, walk.items)):
                if kind == "evidence":
                    if pos < walk.cursor:  # archived
                        continue
                    # After a compaction, references point at the new first equal payload (an
                    # ID of the same length: the sizes the walk counted still hold).
                    ref = walk.target(pos)
                    if ref != walk.same_as[pos]:
                        walk.refer(pos, ref)
                    if ref:
                        same_as[item.id] = ref
                    shown.append(item)
                if item.iteration != last or not cuts:
                    cuts.append(at)
                    last = item.iteration
                texts.append(walk.texts[pos])
                at += len(walk.texts[pos]) + 2
            body = "\n\n".join(texts)
        else:
            previous = self.plan_
            assert previous is not None
            first = len(walk.items) - len(new.items)
            added = walk.texts[first:]
            body = "\n\n".join([previous.body, *added]) if previous.body else "\n\n".join(added)
            cuts, last = list(previous.cuts), previous.last_iteration
            at = len(previous.body) + 2 if previous.body else 0
            for item, text in zip(walk.items[first:], added):
                if item.iteration != last or not cuts:
                    cuts.append(at)
                    last = item.iteration
                at += len(text) + 2
            shown = previous.shown + [
                item for kind, item in zip(new.kinds, new.items) if kind == "evidence"
            ]
            same_as = dict(previous.same_as)
            same_as.update({walk.items[pos].id: walk.same_as[pos] for pos in range(first, len(walk.items))
                            if walk.same_as[pos]})  # fmt: skip
        previous = self.plan_
        if previous is not None and not rebuild:  # the archive changes only at a compaction
            index_text, archived_ids = previous.index_text, previous.archived_ids
        else:
            rows = "\n".join(walk.index_rows)
            index_text = self.fmt.index_block(len(walk.archived), rows) if walk.archived else ""
            archived_ids = frozenset(ev.id for ev in walk.archived)
        return Plan(archived=list(walk.archived), shown=shown, same_as=same_as, compactions=self.compactions,
                    body=body, index_text=index_text, archived_ids=archived_ids, cuts=cuts,
                    last_iteration=last)  # fmt: skip


def status_only(old: Evidence | Note, new: Evidence | Note) -> bool:
    """Whether `new` is `old` with another status (an evidence item's budget status, a note's), every other field equal."""
    if isinstance(old, Note):
        return isinstance(new, Note) and replace(new, status=old.status) == old
    if not isinstance(new, Evidence):
        return False
    budget = replace(new.budget, status=old.budget.status)
    return budget == old.budget and replace(new, budget=old.budget) == old


def plan(state: State, limit: int, fmt: Format = V11_FORMAT) -> Plan:
    """Walk the entries in order; past `limit` characters, compact it (to half, in v11's format)."""
    return Journal(limit, fmt).plan(state)
