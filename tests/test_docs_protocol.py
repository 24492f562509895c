"""docs/protocol.md stays true: it names every error code the code base raises, and every exception."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import workingset
from workingset.errors import WorkingsetError

ROOT = Path(__file__).parent.parent
DOC = (ROOT / "docs" / "protocol.md").read_text()
# A code is given as `code="…"`, as a class attribute `code = "…"`, as the first argument of
# `_reject(…)`, as the value of an errno → code table (`errno.ENOENT: "…"`, `…CODES.get(x, "…")`),
# or written straight into an `error: <code>:` line.
CODE_RE = re.compile(
    r'(?:\bcode\s*=\s*|\b_reject\(\s*|\berrno\.E[A-Z0-9]+:\s*|CODES\.get\([^()]*,\s*)"([a-z][a-z0-9_]*)"'
    r'|"error: ([a-z][a-z0-9_]*):'
)


def source_codes() -> set[str]:
    codes: set[str] = set()
    for path in (ROOT / "workingset").rglob("*.py"):
        codes.update(a or b for a, b in CODE_RE.findall(path.read_text()))
    codes.discard("error")  # the base class's placeholder; every raised error has its own code
    return codes


def table(heading: str) -> str:
    return DOC.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def documented_codes() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", table("Errors"), re.M))


def test_the_scan_finds_codes_in_each_form_it_knows():
    sample = (
        'raise X("m", code="a_code")\nclass Y:\n    code = "b_code"\n_reject(\n    "c_code", "m")\n'
        '_MAP = {errno.ENOENT: "d_code"}\nOS_CODES.get(n, "e_code")\nwrite("error: f_code: m")\n'
    )
    assert {a or b for a, b in CODE_RE.findall(sample)} == {"a_code", "b_code", "c_code", "d_code", "e_code", "f_code"}


def test_every_code_the_code_base_raises_is_documented_and_no_other():
    found = source_codes()
    assert {"malformed_json", "store_busy", "replay_diverged", "span_mismatch"} <= found  # the scan works
    missing = sorted(found - documented_codes())
    assert not missing, f"docs/protocol.md, section Errors, lacks a row for: {', '.join(missing)}"
    stale = sorted(documented_codes() - found)
    assert not stale, f"docs/protocol.md documents codes nothing raises: {', '.join(stale)}"


def test_every_exception_class_is_documented():
    for info in pkgutil.walk_packages(workingset.__path__, "workingset."):
        importlib.import_module(info.name)
    classes, todo = set(), [WorkingsetError]
    while todo:
        cls = todo.pop()
        classes.add(cls)
        todo.extend(cls.__subclasses__())
    section = table("Python exceptions")
    missing = sorted(c.__name__ for c in classes if f"`{c.__name__}`" not in section and f".{c.__name__}`" not in section)
    assert not missing, f"docs/protocol.md, section Python exceptions, lacks: {', '.join(missing)}"


def test_the_readme_points_at_the_protocol_reference():
    readme = (ROOT / "README.md").read_text()
    assert "docs/protocol.md" in readme and "SPEC.md" not in readme


def test_the_controller_in_the_protocol_reference_runs_and_restarts(tmp_path):
    import json

    from session_helpers import conclude, decision, query, state_bytes
    from test_provider_sdks import chat_reply

    code = DOC.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "docs/protocol.md", "exec"), scope)
    seen: list[int] = []

    def send(body):
        # A scripted model: prose around a fenced query (rejected, retried), then the query, then a conclusion.
        seen.append(len(body["messages"]))
        fenced = "```json\n" + json.dumps(decision(query("select count(*) from retries", source="pg:prod"))) + "\n```"
        if len(seen) == 1:
            return chat_reply("Here is my decision:\n" + fenced)
        if len(seen) == 2:
            return chat_reply(fenced)  # one fenced block that is the whole answer is accepted
        return chat_reply(json.dumps(decision(conclude("supported", "E000007"))))

    ran: list[tuple[str, str]] = []

    def run_query(source, q):
        ran.append((source, q))
        if len(ran) == 1:
            raise ConnectionError("the query runner died")  # the controller crashes between decision and result
        return {"kind": "rows", "columns": ["n"], "rows": [[9000]]}

    store = str(tmp_path / "s.sqlite3")
    with pytest.raises(ConnectionError):
        scope["drive"](store, state_bytes(), send, run_query)
    status = scope["drive"](store, state_bytes(), send, run_query)  # the restart: the same call again
    assert status == ("completed", "root_cause_found") and seen == [1, 3, 1]
    assert ran == [("pg:prod", "select count(*) from retries")] * 2
