"""The session commands (docs/protocol.md#the-turn): init, next, submit, record, show, pause, resume, cancel, budget, export.

Each opens the analysis's store (`--store`), makes one call of `Investigation`, and prints
what it returned.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import msgspec
import typer

from ..encoders import DEFAULT_ENCODER
from ..errors import UsageError
from .boundary import emit_json
from .options import (
    AnalysisOpt,
    JsonFlag,
    MessagesOpt,
    StoreOpt,
    StrictOpt,
    TtlOpt,
    provider_options,
)


def _store(store: str | None) -> str:
    from ..session.investigation import default_store_path

    return store if store is not None else default_store_path()  # an empty --store is refused


def _input(arg: str, kind: str) -> tuple[bytes, str]:
    """`-` is stdin; an argument starting with `{` is inline JSON; anything else is a file path.

    Every way in reads at most the limit of its `kind` (file, result, decision) + 1 bytes.
    """
    from ..io.limits import Limits, read_path, too_large

    limits = Limits.current()
    if arg == "-":
        from ..io.process import stdin_bytes

        return stdin_bytes(kind, limits), "<stdin>"
    if arg.lstrip().startswith("{"):
        data = _inline_bytes(arg)
        if len(data) > limits.max_bytes(kind):
            raise too_large(kind, "<argument>", len(data), limits)
        return data, "<argument>"
    return read_path(arg, kind, limits), arg


def _inline_bytes(arg: str) -> bytes:
    try:  # an argument's bytes that are not UTF-8, as given: the decoder refuses them as malformed
        return arg.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte gave (inline JSON from Python)
        return arg.encode("utf-8", "surrogatepass")


def _decision_input(arg: str) -> tuple[bytes, int | None]:
    """An answer as `_input` reads it, but one over the limit is not refused here: the API refuses and keeps it.

    Returns the bytes and None, or, for a file or stdin over the limit, the first `limit` bytes
    and the whole size (`limits.read_counted`): what `submit` keeps of a too large answer it is
    given whole. Inline JSON is given whole.
    """
    from ..io.limits import read_path_counted
    from ..io.process import stdin_counted

    if arg == "-":
        return stdin_counted("decision")
    if arg.lstrip().startswith("{"):
        return _inline_bytes(arg), None
    return read_path_counted(arg, "decision")


def _session(store: str | None, analysis: str, read_only: bool = False) -> Any:
    from ..session.investigation import Investigation

    return Investigation.open(_store(store), analysis, read_only=read_only)


def init(
    state: Annotated[
        str, typer.Option("--state", help="A state file or a stored context; - for stdin.")
    ],
    encoder: Annotated[
        str, typer.Option(help="Encoder version for the analysis's new requests.")
    ] = DEFAULT_ENCODER,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an analysis from a state file (a bare state, or a stored context whose state is taken)."""
    from ..model.state import load_start
    from ..session.investigation import Investigation

    data, source = _input(state, "file")
    start, before = load_start(data, source)
    with Investigation.create(_store(store), start, encoder=encoder, requests_before=before) as inv:
        out = inv.show()
    if as_json:
        emit_json({"analysis_id": inv.analysis_id, "encoder": out.encoder, "status": out.status,
                   "termination_reason": out.termination_reason})  # fmt: skip
    else:
        reason = f" ({out.termination_reason})" if out.termination_reason else ""
        sys.stdout.write(
            f"created analysis {inv.analysis_id}: {out.status}{reason}, encoder {out.encoder}\n"
        )


def next_(
    analysis: AnalysisOpt,
    hypothesis: Annotated[
        str | None, typer.Option(help="The hypothesis to serve (default: the scheduler's pick).")
    ] = None,
    messages: MessagesOpt = None,
    ttl: TtlOpt = None,
    strict: StrictOpt = None,
    retry: Annotated[
        str | None,
        typer.Option(
            help='With --messages: earlier rejected tries of the open request, a JSON array of {"answer", "error"} (file or -).'
        ),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Render and persist the next request (or return the open one); the text goes to stdout."""
    from ..providers import load_retry

    as_messages = provider_options(messages, ttl, strict)
    if retry is not None and not as_messages:
        raise UsageError("--retry goes with --messages PROVIDER")
    tries = load_retry(*_input(retry, "file")) if retry is not None else []
    with _session(store, analysis) as inv:
        if retry is not None and inv.show().open_request is None:
            # The tries answered a request that is no longer open: never pin them on a new one.
            raise UsageError(
                "--retry needs an open request: the tries answer it again, and none is open"
            )
        req = inv.next_request(hypothesis)
    if as_messages:
        emit_json(req.messages(messages, ttl=ttl, strict=strict, retry=tries))
    elif as_json:
        emit_json(req.spec())
    else:
        sys.stderr.write(
            f"request {req.request_id} for {req.hypothesis} ({req.encoder}, {req.chars} chars)\n"
        )
        sys.stdout.write(req.text)


def submit(
    decision: Annotated[
        str, typer.Argument(help="The decision: a JSON file, inline JSON, or - for stdin.")
    ],
    analysis: AnalysisOpt,
    request: Annotated[str, typer.Option("--request", help="The request the decision answers.")],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Validate a decision (docs/protocol.md#decisions) and apply it; a rejected decision changes nothing."""
    data, size = _decision_input(decision)
    with _session(store, analysis) as inv:
        out = inv.submit(request, data, size=size)
    if as_json:
        emit_json(out.spec())
    else:
        todo = f"; record its result against {out.action}" if out.action else ""
        sys.stdout.write(
            f"applied {out.applied} for {out.request_id} at iteration {out.iteration}{todo}; status {out.status}\n"
        )


def record(
    capture: Annotated[
        str,
        typer.Argument(
            help='The result {"scope","capture","payload","cost"?}: a file, inline JSON, or -.'
        ),
    ],
    analysis: AnalysisOpt,
    action: Annotated[
        str, typer.Option("--action", help="The pending budget action (from submit).")
    ],
    captured_at: Annotated[
        str | None, typer.Option(help="Capture time, RFC 3339 with offset (default: now).")
    ] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Record the result of a pending query as new, unsettled evidence."""
    data, source = _input(capture, "result")
    with _session(store, analysis) as inv:
        out = inv.record(action, data, captured_at=captured_at, source=source)
    if as_json:
        emit_json(out)
    else:
        sys.stdout.write(
            f"recorded {out.evidence} for {out.action} ({out.hypothesis}); status {out.status}\n"
        )


def show(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Status, iteration, budget, hypotheses, open request, pending actions and recall selections."""
    from ..session.replies import describe

    with _session(store, analysis, read_only=True) as inv:
        out, usage = inv.show(), inv.usage()
    if as_json:
        # The protocol names the pending actions; their queries are in `state` and the API's show().
        emit_json(dict(msgspec.to_builtins(out), pending_actions=[p.action for p in out.pending_actions],
                       usage=msgspec.to_builtins(usage)))  # fmt: skip
    else:
        sys.stdout.write(describe(out, usage))


def _lifecycle(verb: str, store: str | None, analysis: str, as_json: bool) -> None:
    with _session(store, analysis) as inv:
        out = getattr(inv, verb)()
    if as_json:
        emit_json(out)
    else:
        reason = f" ({out.termination_reason})" if out.termination_reason else ""
        sys.stdout.write(f"analysis {out.analysis_id}: {out.status}{reason}\n")


def pause(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Pause an active analysis (resume restores its exact prior status)."""
    _lifecycle("pause", store, analysis, as_json)


def resume(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Resume a paused analysis."""
    _lifecycle("resume", store, analysis, as_json)


def cancel(analysis: AnalysisOpt, store: StoreOpt = None, as_json: JsonFlag = False) -> None:
    """Cancel an analysis (terminal, reason cancelled)."""
    _lifecycle("cancel", store, analysis, as_json)


def budget(
    analysis: AnalysisOpt,
    characters: Annotated[
        str,
        typer.Argument(help="The new context budget in characters: more than the analysis's own."),
    ],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Render the analysis's next requests with a larger budget of its encoder version (a recorded `budget` event)."""
    from ..io.numbers import ascii_int

    value = ascii_int(characters)
    if value is None:
        raise UsageError(
            f"the budget is a number of characters in ASCII digits, not {characters[:40]!r}"
        )
    with _session(store, analysis) as inv:
        out = inv.raise_budget(value)
    if as_json:
        emit_json(out)
    else:
        sys.stdout.write(f"analysis {out.analysis_id}: budget {out.prior_budget} -> {out.budget} characters, "
                         f"encoder {out.encoder}\n")  # fmt: skip


def export(
    analysis: AnalysisOpt,
    out: Annotated[
        str, typer.Option("--out", help="The directory to write the stored contexts to.")
    ],
    as_stored: Annotated[
        bool,
        typer.Option(
            "--as-stored",
            help=(
                "Write only journal.jsonl and answers.jsonl, the events as stored, unchecked: for an analysis the store "
                "can no longer render."
            ),
        ),
    ] = False,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write every request as a stored-context file (a run verify and compare accept), with journal.jsonl and answers.jsonl."""
    from ..io.files import check_new_run_dir

    check_new_run_dir(out)  # before opening the store
    with _session(store, analysis, read_only=True) as inv:
        paths = inv.export(out, as_stored=as_stored)
    if as_json:
        emit_json(
            {"analysis_id": analysis, "files": [str(p) for p in paths], "as_stored": as_stored}
        )
    elif as_stored:
        sys.stdout.write(
            f"wrote journal.jsonl and answers.jsonl to {out}: the events as stored, unchecked\n"
        )
    else:
        noun = "stored context" if len(paths) == 1 else "stored contexts"
        sys.stdout.write(f"wrote {len(paths)} {noun}, journal.jsonl and answers.jsonl to {out}\n")
