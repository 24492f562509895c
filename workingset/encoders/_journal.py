"""Compatibility path: the journal walk is `encoders.journal.walk`; v14 imports it from here until it moves there."""

from .journal.walk import V11_FORMAT, Format, Journal, Plan, _cached, entries, payload_lines, plan

__all__ = ["V11_FORMAT", "Format", "Journal", "Plan", "_cached", "entries", "payload_lines", "plan"]
