"""Import public agent trajectories as runs of stored contexts (one per agent step).

`FORMATS` is the one registry: format name -> parser of a source path into a
`Trajectory`. `import_trajectory` parses and builds the states; `write_import` renders
them with the default encoder (v14) unless told, each step continuing from the one before
(`_stream`), and writes the run (a run file by default, see `runs/`). The mapping is
documented in docs/import.md and in each parser's docstring.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..encoders import DEFAULT_ENCODER
from ..errors import UsageError
from ..io.files import check_new_run_dir
from ..model.state import ANALYSIS_ID_CHARS, ANALYSIS_ID_PATTERN, State
from ..runs.layout import make_stored_context, write_layout
from . import mini_swe_agent, openhands, swe_agent
from ._build import HYPOTHESIS, build_states
from ._sniff import WHAT, identify
from ._stream import StreamingRender
from ._trajectory import Trajectory, analysis_id, fail

FORMATS: dict[str, Callable[[Path], Trajectory]] = {
    "swe-agent": swe_agent.parse,
    "mini-swe-agent": mini_swe_agent.parse,
    "openhands": openhands.parse,
}
# What an import records unless told: the default encoder, v14, as for a new analysis. Its walk
# resumes from step to step (`_stream.StreamingRender`), as a session's does from turn to turn.
ENCODER = DEFAULT_ENCODER
_ANALYSIS = re.compile(ANALYSIS_ID_PATTERN)


@dataclass(frozen=True)
class Imported:
    """An imported trajectory: its parse, the analysis ID and state 1 … state N."""

    trajectory: Trajectory
    analysis: str
    states: list[State]

    def request_id(self, k: int) -> str:
        """The request ID of the k-th stored context (1-based)."""
        return f"{self.analysis}-r{k:04d}"


def import_trajectory(fmt: str, source: str | Path, analysis: str | None = None) -> Imported:
    """Parse `source` in format `fmt` and build one state per agent step."""
    parser = FORMATS.get(fmt)
    if parser is None:
        raise UsageError(
            f"no trajectory format {fmt!r}; available: {', '.join(FORMATS)}",
            details={"valid": list(FORMATS)},
        )
    if analysis is not None and not _ANALYSIS.match(analysis):
        raise UsageError(f"analysis ID {analysis!r} does not match {ANALYSIS_ID_CHARS}")
    path = Path(source)
    if not path.exists():
        raise fail(path, "$", "no such file or directory")
    found = identify(path)
    if found is not None and found != fmt:
        use = f", not the format {fmt}; use the format {found}" if found in FORMATS else ""
        raise fail(path, "$", f"this is {WHAT[found]}{use}")
    traj = parser(path)
    if traj.actions == 0:
        raise fail(path, "$", "the trajectory holds no agent actions (commands or tool calls)")
    name = analysis or analysis_id(traj.name)
    return Imported(trajectory=traj, analysis=name, states=build_states(traj, name))


def write_import(imported: Imported, out: str | Path, layout: str = "run", step: Callable[[int], None] | None = None,
                 encoder: str = ENCODER) -> list[Path]:  # fmt: skip
    """Render each state with `encoder` (v14 unless told) for H1 and write the run in `layout` into a new or empty `out`.

    `run` (the default) writes one run file, `out/run.json`, in which every payload is stored
    once; `contexts` writes one stored-context file per step. The agent's fixed prompt, where
    the source records one, is kept with the run (`runs.read_fixed_prompt`). `step(1)` is called after each
    context is rendered (a progress bar's advance).
    """
    root = check_new_run_dir(out)  # before rendering anything
    contexts = []
    rendered = StreamingRender(
        encoder
    )  # each state's hash continues from the one before (`_stream`)
    with _collection_paused():
        for k, state in enumerate(imported.states, start=1):
            contexts.append(
                make_stored_context(
                    imported.request_id(k), encoder, HYPOTHESIS, state, rendered(state, HYPOTHESIS)
                )
            )
            if step is not None:
                step(1)
        return write_layout(root, contexts, layout, imported.trajectory.fixed_prompt)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, then restore it as it was.

    The states of a long import are a few hundred thousand objects holding millions of
    references, alive until the run is written, and each state's render makes thousands of
    short-lived rows: enough survivors to start a full collection every few states, each one
    walking every state and finding nothing (states hold no cycles). At 2,400 steps these
    collections took more CPU time than rendering. Plain reference counting still frees
    everything the loop drops.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["ENCODER", "FORMATS", "Imported", "Trajectory", "import_trajectory", "write_import"]
