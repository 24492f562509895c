"""The command line: a thin typer layer over the library, with one error boundary (`commands`).

`run` is the `workingset` console script (`workingset.cli:run` in pyproject.toml).
"""

from .commands import run

__all__ = ["run"]
