"""Runs: a directory of stored-context files or one run file (`layout`), the run file format (`runfile`), the agent's fixed prompt."""
