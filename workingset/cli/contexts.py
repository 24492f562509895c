"""The commands over stored contexts: render one, verify a run, convert its layout, print a schema, replay an export."""

from __future__ import annotations

import sys
from typing import Annotated

import msgspec
import typer

from .boundary import emit_json
from .options import JsonFlag, MessagesOpt, StrictOpt, TtlOpt, provider_options


def render(
    file: Annotated[
        str,
        typer.Argument(help="A stored-context file, or a run (file or directory) with --request."),
    ],
    encoder: Annotated[
        str | None, typer.Option(help="Encoder version (default: the file's own).")
    ] = None,
    request: Annotated[
        str | None,
        typer.Option("--request", help="The request ID of the context to render from a run."),
    ] = None,
    messages: MessagesOpt = None,
    ttl: TtlOpt = None,
    strict: StrictOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Re-render one stored context (with its own encoder unless --encoder says otherwise)."""
    from ..encoders import get_encoder
    from ..runs.layout import pick_context
    from ..session.replies import Request

    provider_options(messages, ttl, strict)
    ctx = pick_context(file, request)
    out = get_encoder(encoder or ctx.encoder).render(ctx.state, ctx.hypothesis)
    if messages is not None:  # checked: provider JSON is asked for
        emit_json(
            Request.of(out, ctx.request_id, ctx.state).messages(messages, ttl=ttl, strict=strict)
        )
    elif as_json:
        doc = {
            "encoder": out.encoder, "hypothesis": out.hypothesis, "text": out.text,
            "shown": list(out.shown), "indexed": list(out.indexed), "chars": out.chars, "hash": out.hash,
        }  # fmt: skip
        budget = getattr(get_encoder(out.encoder), "budget", None)
        if (
            budget is not None
        ):  # v11 and later: the context budget `chars` is held to (v14: at most it)
            doc["budget"] = budget
        emit_json(doc)
    else:
        sys.stdout.write(out.text)


def verify(
    directory: Annotated[
        str, typer.Argument(help="A run: a directory of stored-context files, or a run file.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Re-render every stored context with its frozen encoder and check its recorded hash."""
    from ..errors import HashMismatch
    from ..io.progress import progress
    from ..runs.layout import read_run, verify_context

    run = read_run(directory)
    verdicts = []
    with progress("verifying", len(run)) as step:
        for path, ctx in run:
            verdicts.append(verify_context(str(path), ctx))
            step(1)
    failed = [v for v in verdicts if v.status in ("mismatch", "error")]
    contexts = [dict(v.__dict__, diff=list(v.diff)) for v in verdicts]
    if as_json and not failed:
        emit_json({"ok": True, "contexts": contexts})
    elif not as_json:
        for v in verdicts:
            sys.stdout.write(
                f"{v.status:<10} {v.file}  {v.encoder}  {v.chars if v.chars is not None else '-'} chars\n"
            )
            for line in v.diff:
                sys.stdout.write(f"    {line}\n")
        ok = sum(v.status == "ok" for v in verdicts)
        unrecorded = len(verdicts) - ok - len(failed)
        tail = f" ({unrecorded} with no recorded hash)" if unrecorded else ""
        noun = "stored context" if len(verdicts) == 1 else "stored contexts"
        sys.stdout.write(f"{ok} of {len(verdicts)} {noun} verified{tail}\n")
    if failed:
        names = ", ".join(v.request_id for v in failed)
        # With --json the error object carries every verdict, so the per-file diffs are not lost.
        err = HashMismatch(f"{len(failed)} of {len(verdicts)} stored contexts do not reproduce their hash: {names}",
                           details={"failed": [v.file for v in failed], "contexts": contexts})  # fmt: skip
        raise err


def convert(
    source: Annotated[
        str,
        typer.Argument(
            help="A run: a directory of stored-context files, or a run file (or its directory)."
        ),
    ],
    out: Annotated[str, typer.Option("--out", help="The directory to write (new or empty).")],
    layout: Annotated[
        str | None,
        typer.Option(help="run or contexts (default: the other layout than the source's)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Rewrite a run in the other layout: stored-context files to one run file, or back."""
    from ..runs.layout import convert_run

    written, paths = convert_run(source, out, layout)
    if as_json:
        emit_json(
            {"source": source, "out": out, "layout": written, "files": [p.name for p in paths]}
        )
    else:
        sys.stdout.write(
            f"wrote {source} as layout {written} into {out} ({len(paths)} file{'s' if len(paths) != 1 else ''})\n"
        )


def schema(
    kind: Annotated[
        str, typer.Argument(metavar="KIND", help="state, context, result or decision.")
    ],
    encoder: Annotated[
        str | None, typer.Option(help="The version whose decisions to describe (default v14).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the JSON Schema of a state, stored context, result or decision, from the types that validate them."""
    from ..session.schemas import json_schema

    out = json_schema(kind, encoder)
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(out), indent=2).decode("utf-8") + "\n")


def replay(
    directory: Annotated[
        str, typer.Argument(help="An export: stored contexts, journal.jsonl and answers.jsonl.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Rebuild an exported analysis in a fresh store from its recorded inputs and compare every step."""
    from ..errors import ReplayDiverged
    from ..session.frozen_replay import replay_export

    report = replay_export(directory)
    div = report.divergence
    if div is not None:
        if not as_json:
            sys.stdout.write("\n".join(div.lines()) + "\n")
        # With --json the error object (the one contract for every error) carries the whole divergence.
        raise ReplayDiverged(f"{div.step}: {div.path} differs from the export",
                             details={"analysis_id": report.analysis_id, **div.__dict__})  # fmt: skip
    if as_json:
        emit_json({
            "ok": report.ok, "analysis_id": report.analysis_id, "events": report.events, "requests": report.requests,
            "answers": report.answers, "rejected": report.rejected, "results": report.results,
            "state_hash": report.state_hash, "divergence": None,
        })  # fmt: skip
    else:
        sys.stdout.write(
            f"replayed {report.analysis_id}: {report.events} events, {report.requests} requests, {report.answers} answers "
            f"({report.rejected} rejected), {report.results} results; every step matches the export\n"
            f"final state {report.state_hash}\n"
        )
