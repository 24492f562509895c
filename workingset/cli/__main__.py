"""`python -m workingset.cli`: the console script, for a child process that has no `workingset` on PATH."""

from .commands import run

if __name__ == "__main__":  # not when a walk over the package imports every module
    run()
