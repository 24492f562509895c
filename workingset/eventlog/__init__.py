"""The event log of an analysis: its events (`log`), the replayed state (`view`), snapshots with their codec (`trusted`), and the export."""
