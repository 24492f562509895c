"""Compatibility path: v13 is `encoders.journal.v13`; v14 and tests import it from here until they move."""

from .journal.v13 import (
    EXCERPT,
    PROTOCOL,
    V13,
    V13_FORMAT,
    WHOLE,
    V13Format,
    index_pair,
    index_query,
    schema_outline,
)

__all__ = [
    "EXCERPT", "PROTOCOL", "V13", "V13_FORMAT", "WHOLE", "V13Format",
    "index_pair", "index_query", "schema_outline",
]  # fmt: skip
