"""docs/protocol.md stays true: it names every error code the code base raises, and every exception.

Every code is defined once, in `workingset.errors.Code`; the table lists exactly its members."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import workingset
from workingset.errors import Code, WorkingsetError

ROOT = Path(__file__).parents[2]
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
    assert {a or b for a, b in CODE_RE.findall(sample)} == {
        "a_code",
        "b_code",
        "c_code",
        "d_code",
        "e_code",
        "f_code",
    }


def test_every_code_the_code_base_raises_is_documented_and_no_other():
    found = source_codes()
    assert {
        "malformed_json",
        "store_busy",
        "replay_diverged",
        "span_mismatch",
    } <= found  # the scan works
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
    missing = sorted(
        c.__name__
        for c in classes
        if f"`{c.__name__}`" not in section and f".{c.__name__}`" not in section
    )
    assert not missing, f"docs/protocol.md, section Python exceptions, lacks: {', '.join(missing)}"


def _strings(node: ast.AST | None) -> list[str]:
    """The string constants a code expression can take: a literal, or either arm of `a if c else b`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def ast_codes(tree: ast.AST) -> set[str]:
    """Every code string a module's syntax gives: `code="…"` arguments, `code = "…"` assignments and
    defaults, the first argument of `_reject(…)`, and the values of `errno.E…: "…"` tables and
    `…CODES.get(x, "…")` fallbacks."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [s for k in node.keywords if k.arg == "code" for s in _strings(k.value)]
            func = node.func
            if isinstance(func, ast.Name) and func.id == "_reject" and node.args:
                found += _strings(node.args[0])
            if (isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name)
                    and func.value.id.endswith("CODES") and len(node.args) == 2):  # fmt: skip
                found += _strings(node.args[1])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "code" for t in targets):
                found += _strings(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [s for a, d in pairs if a.arg == "code" for s in _strings(d)]
        elif isinstance(node, ast.Dict):
            found += [s for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id == "errno"
                      for s in _strings(v)]  # fmt: skip
    return set(found) - {
        "error"
    }  # the base class's placeholder; every raised error has its own code


def package_ast_codes() -> set[str]:
    return set().union(
        *(ast_codes(ast.parse(p.read_text(), str(p))) for p in (ROOT / "workingset").rglob("*.py"))
    )


def test_the_ast_scan_finds_codes_in_each_form_it_knows():
    sample = (
        'raise X("m", code="a_code")\nclass Y:\n    code = "b_code"\n_reject(\n    "c_code", "m")\n'
        '_MAP = {errno.ENOENT: "d_code"}\nOS_CODES.get(n, "e_code")\n'
        'def f(*, code: str = "f_code"): ...\ncode = "g_code" if x else "h_code"\nraise X("m", code=Code.I)\n'
    )
    assert ast_codes(ast.parse(sample)) == {f"{c}_code" for c in "abcdefgh"}


def test_every_code_the_package_uses_is_a_member_of_code():
    used = package_ast_codes()
    assert {
        "malformed_json",
        "store_busy",
        "replay_diverged",
        "span_mismatch",
        "io_error",
    } <= used  # the scan works
    strays = sorted((used | source_codes()) - set(Code))
    assert not strays, (
        f"codes used in workingset/ but not members of workingset.errors.Code: {', '.join(strays)}"
    )


def test_the_error_table_lists_exactly_the_members_of_code():
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", table("Errors"), re.M)
    assert len(listed) == len(set(listed)), "docs/protocol.md's error table lists a code twice"
    assert listed == [c.value for c in Code], (
        "docs/protocol.md's error table and Code differ (members, or their order)"
    )


SPEC_RE = re.compile(
    r"\bS[P]EC(?:\.md|\s*§)"
)  # the old contract outside the repository, by name or section


def test_no_file_of_the_repository_points_at_the_old_contract():
    # Every text file of the repository: docs, code, tests, fixtures, benchmarks, CI (the
    # virtual environment and other hidden folders are not the repository's).
    paths = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".toml", ".txt", ".cfg")
             and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)] + [ROOT / ".ci" / "run"]  # fmt: skip
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in paths
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if SPEC_RE.search(line)]  # fmt: skip
    assert not hits, (
        f"references to a document not in the repository (use docs/protocol.md anchors): {hits}"
    )


def test_the_readme_points_at_the_protocol_reference():
    assert "docs/protocol.md" in (ROOT / "README.md").read_text()


def test_the_controller_in_the_protocol_reference_runs_and_restarts(tmp_path):
    import json

    from tests.helpers.provider_replies import chat_reply
    from tests.helpers.session_helpers import conclude, decision, query, state_bytes

    code = DOC.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "docs/protocol.md", "exec"), scope)
    seen: list[int] = []

    def send(body):
        # A scripted model: prose around a fenced query (rejected, retried), then the query, then a conclusion.
        seen.append(len(body["messages"]))
        fenced = (
            "```json\n"
            + json.dumps(decision(query("select count(*) from retries", source="pg:prod")))
            + "\n```"
        )
        if len(seen) == 1:
            return chat_reply("Here is my decision:\n" + fenced)
        if len(seen) == 2:
            return chat_reply(fenced)  # one fenced block that is the whole answer is accepted
        return chat_reply(json.dumps(decision(conclude("supported", "E000007"))))

    ran: list[tuple[str, str]] = []

    def run_query(source, q):
        ran.append((source, q))
        if len(ran) == 1:
            raise ConnectionError(
                "the query runner died"
            )  # the controller crashes between decision and result
        return {"kind": "rows", "columns": ["n"], "rows": [[9000]]}

    store = str(tmp_path / "s.sqlite3")
    with pytest.raises(ConnectionError):
        scope["drive"](store, state_bytes(), send, run_query)
    status = scope["drive"](
        store, state_bytes(), send, run_query
    )  # the restart: the same call again
    assert status == ("completed", "root_cause_found") and seen == [1, 3, 1]
    assert ran == [("pg:prod", "select count(*) from retries")] * 2


def test_the_readme_stays_short_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250, (
        "the README is a front page: move detail to a page in docs/"
    )
    targets = {t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in t}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, f"the README links to files that do not exist: {missing}"
