"""The command line: a thin typer layer over the library, with one error boundary (`boundary`).

`commands` holds the app and lists every command; each lives in the module of what it does
(`contexts`, `costs`, `trajectories`, `sessions`). `run` is the `workingset` console script
(`workingset.cli:run` in pyproject.toml).
"""

from .commands import run

__all__ = ["run"]
