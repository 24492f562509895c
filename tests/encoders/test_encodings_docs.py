"""The frozen format documents in encodings/ agree with what the encoders render.

Each document must name its encoder, hold the decision schema exactly as the encoder
renders it under "## Output schema", and quote only excerpts the encoder really renders
from encodings/example-state.json (hypothesis H1 selected).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from workingset.encoders import ENCODERS, get_encoder, render
from workingset.encoders._render import compact
from workingset.encoders.journal.v13 import schema_outline
from workingset.model.state import load_state

ENCODINGS = Path(__file__).resolve().parents[2] / "encodings"
VERSIONS = sorted(ENCODERS)
_OPEN = re.compile(r"^(`{3,})([^`]*)$")


def blocks(text: str) -> list[tuple[str | None, str, str]]:
    """Every fenced block as (the `## ` heading it sits under, info string, body)."""
    lines = text.split("\n")
    out, section, i = [], None, 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m:
            ticks, j = m.group(1), i + 1
            while lines[j] != ticks:  # an unclosed fence is an IndexError: the test fails
                j += 1
            out.append((section, m.group(2), "\n".join(lines[i + 1 : j])))
            i = j + 1
            continue
        if lines[i].startswith("## "):
            section = lines[i][3:]
        i += 1
    return out


def doc(version: int) -> str:
    path = ENCODINGS / f"v{version:02d}.md"
    assert path.is_file(), f"missing {path.name}"
    return path.read_text(encoding="utf-8")


@cache
def rendered(version: int) -> str:
    state = load_state((ENCODINGS / "example-state.json").read_bytes())
    return render(state, "H1", f"v{version}").text


def rendered_schema(version: int) -> str:
    """The body of the encoder's own "## Output schema" block."""
    found = [
        body for section, info, body in blocks(rendered(version)) if section == "Output schema"
    ]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def test_document_names_its_encoder(version):
    text = doc(version)
    name = f"investigation_project_v{version}"
    assert text.startswith(f"# {name}\n")
    assert get_encoder(name).name == name


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def test_document_holds_the_rendered_schema(version):
    schemas = [body for section, info, body in blocks(doc(version))
               if section == "Decision JSON Schema" and info == "json"]  # fmt: skip
    assert len(schemas) == 1, "exactly one json block under '## Decision JSON Schema'"
    encoder = get_encoder(f"v{version}")
    assert json.loads(schemas[0]) == encoder.decision_schema
    if (
        version >= 15
    ):  # no outline in the text: the request carries the schema, the document gives it compact
        assert schemas[0] == compact(encoder.decision_schema)
        assert "## Output schema" not in encoder.preamble
    elif (
        version >= 13
    ):  # the text holds an outline of the schema; the document gives the schema compact, and the outline
        assert schemas[0] == compact(encoder.decision_schema)
        outline = encoder.preamble.rsplit("\n", 1)[1]
        assert outline == schema_outline(encoder.decision_schema) and f"\n{outline}\n" in doc(
            version
        )
    else:
        assert schemas[0] == rendered_schema(version)  # byte for byte, indented (v1) or compact


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{n}" for n in VERSIONS])
def test_document_excerpts_are_real_output(version):
    excerpts = [
        body for section, info, body in blocks(doc(version)) if section == "Example (excerpt)"
    ]
    assert excerpts, "an example excerpt"
    for body in excerpts:
        assert body in rendered(version)


def test_readme_lists_every_version():
    text = (ENCODINGS / "README.md").read_text(encoding="utf-8")
    for version in VERSIONS:
        assert f"(v{version:02d}.md) | `investigation_project_v{version}` |" in text


def test_encodings_is_data_not_a_package():
    # `encodings` is also the stdlib codec package: a package here would shadow it.
    assert not (ENCODINGS / "__init__.py").exists()
    assert not list(ENCODINGS.rglob("*.py"))
