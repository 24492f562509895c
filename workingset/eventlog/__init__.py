"""The event log of an analysis: its events (`log`), the replayed state (`view`), snapshots, export and frozen replay of an export."""
