"""`python -m workingset.cli`: the console script, for a child process that has no `workingset` on PATH."""

from .commands import run

run()
