"""Every (path, value) inside a JSON document: where the fuzz tests damage one."""

from __future__ import annotations


def paths(node, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, (*prefix, i))
