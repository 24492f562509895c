"""Compatibility path: v12 is `encoders.journal.v12`; v14 imports it from here until it moves there."""

from .journal.v12 import PROTOCOL, V12, V12_FORMAT, V12Format, _value, descriptor, head_line

__all__ = ["PROTOCOL", "V12", "V12_FORMAT", "V12Format", "_value", "descriptor", "head_line"]
