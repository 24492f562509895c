"""The run file (`workingset/run@1`): a whole run in one JSON file, every record stored once.

A run of stored contexts repeats itself: context k holds the whole state after turn k, so
each payload, note and history row is written again in every later context and a run's
size grows with the square of its length. The run file stores each of these records once,
content-addressed, and each context refers to them:

    {"format": "workingset/run@1",
     "objects": {"xxh3-128:…": <record>, …},
     "contexts": [{"request_id", "encoder", "hypothesis", "rendered", "state": <skeleton>}, …]}

`objects` maps the content hash of a record (xxh3-128 over its canonical JSON, the hash
evidence payloads already carry) to the record: the case, every evidence item (its
`payload` replaced by the payload's hash, itself an object), every note and every history
row. A skeleton is the stored context's state with `case` replaced by its hash and each of
the lists `evidence`, `notes` and each hypothesis's `history` replaced by
`{"keep": n, "add": [hash, …]}`: the first n entries of the same list in the previous
context (for `history`, the same hypothesis's), then the entries listed. A run that only
appends costs each turn what it adds. Reading rebuilds every stored context and validates
it exactly as a `stored-context@1` file is validated: the run file's own limits (nesting,
keys given twice) are checked once over the whole file (a record nests at most two levels
deeper in its context than in the file), and each rebuilt context is held to the file size
limit and decoded strictly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec.structs import replace

from ..errors import InvalidFile
from ..io.limits import Limits, check_json, too_large
from ..model.hashing import canonical_json, hash_bytes
from ..model.state import Evidence, StoredContext, load_stored_context
from .fixed_prompt import FixedPrompt, convert

RUN_FORMAT = "workingset/run@1"
RUN_FILE = "run.json"  # the name of a run file inside a run directory


class _Delta(msgspec.Struct, forbid_unknown_fields=True):
    keep: int
    add: list[str]


class _RunFile(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    objects: dict[str, Any]
    contexts: list[dict[str, Any]]
    fixed_prompt: dict[str, Any] | None = (
        None  # the source agent's (`fixed_prompt.py`); absent in older files
    )


def _fail(source: str, path: str, message: str) -> InvalidFile:
    return InvalidFile(f"{source}: {message} (at {path})", details={"file": source, "path": path})


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading items two lists share (equal item by item), compared at C speed.

    List comparison checks identity before equality, so two lists of the same objects
    compare without calling `__eq__`; a mismatch is found by halving the slice compared
    (equal prefixes nest), a few dozen C-speed comparisons instead of a Python loop.
    """
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the common case, an append-only list
        return n
    if (
        n > 1 and a[: n - 1] == b[: n - 1]
    ):  # the next: only the last item changed (an import's settled result)
        return n - 1
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _delta(refs: list[str], before: list[str]) -> dict[str, Any]:
    keep = common_prefix(refs, before)
    return {"keep": keep, "add": refs[keep:]}


def pack(contexts: list[StoredContext], fixed_prompt: FixedPrompt | None = None) -> bytes:
    """Encode stored contexts as one run file (their order is the run's order), with the agent's fixed prompt if given.

    Consecutive contexts of a run share most of their records as the same objects (an
    importer's state k+1 holds state k's evidence, notes and history rows), so each record
    object is converted and hashed once, remembered by identity: the contexts keep every
    one of them alive while packing, so no identity is reused. Without this, packing a run
    converted and hashed every record of every context again, quadratic in the run's length.
    Each list's leading records equal to the previous context's list keep their keys without
    being looked up again (equal records have equal keys), so a context costs what it adds.
    """
    objects: dict[str, Any] = {}
    keys: dict[int, str] = {}  # id(record object) -> the key of its record

    def put(record: Any) -> str:
        key = hash_bytes(canonical_json(record))
        objects.setdefault(key, record)
        return key

    def evidence(ev: Evidence) -> str:
        item = msgspec.to_builtins(ev)
        if ev.payload is not None:
            item["payload"] = ref(ev.payload)
        return put(item)

    def ref(obj: Any, record: Callable[[Any], str] | None = None) -> str:
        key = keys.get(id(obj))
        if key is None:
            key = keys[id(obj)] = (
                record(obj) if record is not None else put(msgspec.to_builtins(obj))
            )
        return key

    # The previous context's lists: (records, their keys) by list name.
    before: dict[Any, tuple[list[Any], list[str]]] = {}
    lists: dict[Any, tuple[list[Any], list[str]]] = {}

    def keyed(
        name: Any, records: list[Any], record: Callable[[Any], str] | None = None
    ) -> dict[str, Any]:
        old, old_keys = before.get(name, ([], []))
        keep = common_prefix(records, old)
        keys = old_keys[:keep] + [ref(r, record) for r in records[keep:]]
        lists[name] = (records, keys)
        return _delta(keys, old_keys)

    out = []
    for ctx in contexts:
        st = ctx.state
        # The context without its long lists; each list becomes a delta of record keys below.
        shell = replace(
            st, evidence=[], notes=[], hypotheses=[replace(h, history=[]) for h in st.hypotheses]
        )
        data = msgspec.to_builtins(replace(ctx, state=shell))
        state = data["state"]
        state["case"] = ref(st.case)
        # Payloads first: `objects` keeps the order records were first met in (those of the
        # shared leading items were met with them, in an earlier context).
        for ev in st.evidence[common_prefix(st.evidence, before.get("evidence", ([], []))[0]) :]:
            if ev.payload is not None:
                ref(ev.payload)
        lists = {}
        state["evidence"] = keyed("evidence", st.evidence, evidence)
        state["notes"] = keyed("notes", st.notes)
        for hyp, h in zip(state["hypotheses"], st.hypotheses):
            hyp["history"] = keyed(("history", h.id), h.history)
        before = lists
        out.append(data)
    body: dict[str, Any] = {"format": RUN_FORMAT, "objects": objects, "contexts": out}
    if fixed_prompt is not None:
        body["fixed_prompt"] = msgspec.to_builtins(fixed_prompt)
    return msgspec.json.encode(body) + b"\n"


def is_run_file(data: bytes) -> bool:
    """Whether `data` looks like a run file (its `format` says so), without validating it."""
    head = data[:200]
    return b'"format"' in head and RUN_FORMAT.encode() in head


def _decode(data: bytes, source: str, limits: Limits) -> _RunFile:
    check_json(data, "file", source, limits)
    try:
        run = msgspec.json.decode(data, type=_RunFile)
    except msgspec.ValidationError as exc:
        raise _fail(source, "$", f"not a run file ({exc})") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _fail(source, "$", f"not valid JSON ({exc})") from None
    if run.format != RUN_FORMAT:
        raise _fail(source, "$.format", f"expected {RUN_FORMAT!r}, got {run.format!r}")
    return run


def unpack_fixed_prompt(data: bytes, source: str) -> FixedPrompt | None:
    """The source agent's fixed prompt a run file keeps, or None (a run that records none)."""
    run = _decode(data, source, Limits.current())
    return None if run.fixed_prompt is None else convert(run.fixed_prompt, source, "$.fixed_prompt")


def unpack(data: bytes, source: str) -> list[StoredContext]:
    """Rebuild and validate every stored context of a run file."""
    limits = Limits.current()
    run = _decode(data, source, limits)
    if run.fixed_prompt is not None:
        convert(
            run.fixed_prompt, source, "$.fixed_prompt"
        )  # a damaged one fails the read, not a later compare
    objects = run.objects

    def get(ref: Any, path: str) -> Any:
        if not isinstance(ref, str) or ref not in objects:
            raise _fail(source, path, f"no object {ref!r} in the run's objects")
        return objects[ref]

    def expand(delta: Any, before: list[str], path: str) -> list[str]:
        try:
            d = msgspec.convert(delta, _Delta)
        except msgspec.ValidationError as exc:
            raise _fail(source, path, f"expected {{keep, add}} ({exc})") from None
        if not 0 <= d.keep <= len(before):
            raise _fail(
                source,
                f"{path}.keep",
                f"keeps {d.keep} entries; the previous context has {len(before)}",
            )
        return before[: d.keep] + d.add

    before: dict[Any, list[str]] = {}
    contexts = []
    for i, data_ in enumerate(run.contexts):
        at = f"$.contexts[{i}]"
        state = data_.get("state")
        if not isinstance(state, dict) or not isinstance(state.get("hypotheses"), list):
            raise _fail(source, f"{at}.state", "expected a state skeleton with hypotheses")
        lists: dict[Any, list[str]] = {}
        state = dict(state, case=get(state.get("case"), f"{at}.state.case"))
        lists["evidence"] = expand(
            state.get("evidence"), before.get("evidence", []), f"{at}.state.evidence"
        )
        lists["notes"] = expand(state.get("notes"), before.get("notes", []), f"{at}.state.notes")
        evidence = []
        for k, ref in enumerate(lists["evidence"]):
            item = get(ref, f"{at}.state.evidence[{k}]")
            if isinstance(item, dict) and isinstance(item.get("payload"), str):
                item = dict(item, payload=get(item["payload"], f"{at}.state.evidence[{k}].payload"))
            evidence.append(item)
        state["evidence"] = evidence
        state["notes"] = [
            get(ref, f"{at}.state.notes[{k}]") for k, ref in enumerate(lists["notes"])
        ]
        hypotheses = []
        for j, hyp in enumerate(state["hypotheses"]):
            if not isinstance(hyp, dict):
                raise _fail(source, f"{at}.state.hypotheses[{j}]", "expected an object")
            key = ("history", hyp.get("id"))
            lists[key] = expand(
                hyp.get("history"), before.get(key, []), f"{at}.state.hypotheses[{j}].history"
            )
            rows = [
                get(ref, f"{at}.state.hypotheses[{j}].history[{k}]")
                for k, ref in enumerate(lists[key])
            ]
            hypotheses.append(dict(hyp, history=rows))
        state["hypotheses"] = hypotheses
        before = lists
        encoded = msgspec.json.encode(dict(data_, state=state))
        where = f"{source} (context {i + 1}, {at})"
        if len(encoded) > limits.max_bytes(
            "file"
        ):  # built from checked records: only its size is new
            raise too_large("file", where, len(encoded), limits)
        contexts.append(load_stored_context(encoded, where, limits, checked=True))
    return contexts
