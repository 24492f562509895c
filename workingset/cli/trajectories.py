"""The `import` command: an agent trajectory, or a folder of them, as runs of stored contexts."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..encoders import DEFAULT_ENCODER
from ..errors import UsageError, WorkingsetError
from .boundary import emit_json, report_error
from .options import JsonFlag


def import_(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT",
            help="swe-agent, mini-swe-agent, openhands or auto (told by its shape); or, alone, a folder of trajectories.",
        ),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            help="The run directory to write (new or empty); for a folder, the directory of its runs.",
        ),
    ],
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="SOURCE",
            help="A .traj/.traj.json file, or an OpenHands conversation directory.",
        ),
    ] = None,
    analysis: Annotated[
        str | None, typer.Option(help="Analysis ID (default: from the instance ID or file name).")
    ] = None,
    layout: Annotated[
        str,
        typer.Option(
            help="run: one run file, each payload stored once; contexts: one stored-context file per step."
        ),
    ] = "run",
    encoder: Annotated[
        str,
        typer.Option(
            help="The encoder each stored context records and is hashed with (v14 unless told; e.g. v7)."
        ),
    ] = DEFAULT_ENCODER,
    as_json: JsonFlag = False,
) -> None:
    """Import an agent trajectory (or a folder of them) as runs of stored contexts, one per agent step."""
    from pathlib import Path

    from ..encoders import get_encoder
    from ..importers import import_trajectory, write_import
    from ..io.files import check_new_run_dir
    from ..io.progress import progress

    name = get_encoder(encoder).name  # unknown_encoder before anything is read
    if source is None:
        return _import_folder(fmt, out, analysis, layout, name, as_json)
    check_new_run_dir(out)  # before reading the source
    if fmt == "auto":
        fmt = _detect(Path(source))
    imported = import_trajectory(fmt, source, analysis)
    with progress("importing", len(imported.states)) as step:
        paths = write_import(imported, out, layout, step=step, encoder=name)
    remarks = list(imported.trajectory.remarks)
    steps = len(imported.states)
    if as_json:
        emit_json({
            "format": fmt, "source": source, "out": out, "analysis": imported.analysis, "encoder": name,
            "steps": steps, "layout": layout, "files": [p.name for p in paths], "remarks": remarks,
        })  # fmt: skip
        return
    sys.stdout.write(
        f"imported {steps} steps of {source} as analysis {imported.analysis} into {out} ({name}, layout {layout})\n"
    )
    for remark in remarks:
        sys.stderr.write(f"note: {remark}\n")


def _detect(source: Any) -> str:
    """FORMAT auto: the format of one trajectory, told by its shape (`importers.folder.detect`)."""
    from ..importers import FORMATS
    from ..importers._sniff import identify
    from ..importers.folder import detect

    if not source.exists():
        return next(iter(FORMATS))  # the import says that the source does not exist
    if source.is_dir() and identify(source) is None:
        raise UsageError(f"{source}: not an OpenHands conversation (no events/ in it); to import a folder of "
                         f"trajectories, give it alone: workingset import {source} --out DIR", details={"path": str(source)})  # fmt: skip
    return detect(source)


def _import_folder(
    folder: str, out: str, analysis: str | None, layout: str, encoder: str, as_json: bool
) -> None:
    """`import DIR --out OUT`: every trajectory under DIR into OUT/NAME; exit 2 when any failed."""
    import os

    from ..importers import FORMATS
    from ..importers.folder import find_sources, import_folder
    from ..io.progress import progress
    from ..runs.layout import check_layout

    if (folder in FORMATS or folder == "auto") and not os.path.exists(folder):
        raise UsageError(
            f"import {folder} needs a SOURCE: workingset import {folder} SOURCE --out DIR"
        )
    if analysis is not None:
        raise UsageError("--analysis names one run; a folder's runs are named after their files")
    check_layout(layout)
    sources = find_sources(folder, out)
    with progress("importing", len(sources)) as step:
        result = import_folder(folder, out, layout, encoder, step=step, sources=sources)
    if as_json:
        emit_json(result.to_dict())
    else:
        for done in result.imported:
            sys.stdout.write(
                f"imported {done['steps']} steps of {done['source']} into {done['out']} ({done['format']})\n"
            )
        for done in result.skipped:
            sys.stdout.write(f"skipped  {done['source']}: {done['out']} holds its run already\n")
        sys.stdout.write(f"{len(result.imported)} imported, {len(result.skipped)} skipped, {len(result.failed)} failed "
                         f"of {len(sources)} trajectories in {folder}\n")  # fmt: skip
    for bad in result.failed:
        report_error(WorkingsetError(bad["message"], code=bad["code"]), False)
    if result.failed:
        raise typer.Exit(2)
