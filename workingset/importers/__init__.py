"""Import public agent trajectories as runs of stored contexts (one per agent step).

`FORMATS` is the one registry: format name -> parser of a source path into a
`Trajectory`. `import_trajectory` parses and builds the states; `write_import` renders
them with encoder v7 and writes the run. The mapping is documented in the README
("Importing agent trajectories") and in each parser's docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import UsageError
from ..files import check_new_run_dir
from ..model import ANALYSIS_ID_CHARS, ANALYSIS_ID_PATTERN, State
from ..runs import make_stored_context, write_run
from . import mini_swe_agent, openhands, swe_agent
from ._build import HYPOTHESIS, build_states
from ._trajectory import Trajectory, analysis_id, fail

FORMATS: dict[str, Callable[[Path], Trajectory]] = {
    "swe-agent": swe_agent.parse,
    "mini-swe-agent": mini_swe_agent.parse,
    "openhands": openhands.parse,
}
ENCODER = "investigation_project_v7"
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
        raise UsageError(f"no trajectory format {fmt!r}; available: {', '.join(FORMATS)}", details={"valid": list(FORMATS)})
    if analysis is not None and not _ANALYSIS.match(analysis):
        raise UsageError(f"analysis ID {analysis!r} does not match {ANALYSIS_ID_CHARS}")
    path = Path(source)
    if not path.exists():
        raise fail(path, "$", "no such file or directory")
    traj = parser(path)
    if traj.actions == 0:
        raise fail(path, "$", "the trajectory holds no agent actions (commands or tool calls)")
    name = analysis or analysis_id(traj.name)
    return Imported(trajectory=traj, analysis=name, states=build_states(traj, name))


def write_import(imported: Imported, out: str | Path) -> list[Path]:
    """Render each state with v7 for H1 and write the run; `out` must hold no stored contexts yet."""
    root = check_new_run_dir(out)  # before rendering anything
    contexts = [
        make_stored_context(imported.request_id(k), ENCODER, HYPOTHESIS, state)
        for k, state in enumerate(imported.states, start=1)
    ]
    return write_run(root, contexts)


__all__ = ["ENCODER", "FORMATS", "Imported", "Trajectory", "import_trajectory", "write_import"]
