"""docs/architecture.md is the newcomer's map: every room and module it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import workingset

ROOT = Path(workingset.__file__).parent
DOC = ROOT.parent / "docs" / "architecture.md"


def rooms() -> list[tuple[str, str]]:
    """The room table's rows: (room, what it holds)."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([^`]+)` \| (.*) \|$", line)
        if match:
            rows.append((match.group(1), match.group(2)))
    return rows


def test_the_room_table_lists_every_top_level_entry():
    listed = {room.rstrip("/").removesuffix(".py") for room, _ in rooms()}
    present = {p.name.removesuffix(".py") for p in ROOT.iterdir()} - {"py.typed", "__pycache__"}
    assert listed == present


def test_every_module_a_room_names_exists():
    missing = []
    for room, holds in rooms():
        if not room.endswith("/"):
            continue
        for name in re.findall(r"`([a-z_][a-z0-9_]*/?)`", holds):
            base = ROOT / room / name.rstrip("/")
            if not (base.with_suffix(".py").exists() or base.is_dir()):
                missing.append(f"{room}{name}")
    assert not missing


def test_every_path_the_page_names_exists():
    text = DOC.read_text(encoding="utf-8")
    paths = set(
        re.findall(r"`((?:[a-z_0-9]+/)+[a-z_0-9]+\.(?:py|md))", text)
    )  # not `encoders/vNN.py`
    assert len(paths) >= 5  # the flow of one turn and the places to add name modules by path
    missing = []
    for path in sorted(paths):
        if not any((base / path).exists() for base in (ROOT, ROOT.parent)):
            missing.append(path)
    assert not missing
