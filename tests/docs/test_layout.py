"""The package layout: no import cycles between workingset's modules, and few top-level rooms."""

import ast
import re
from pathlib import Path

import pytest

import workingset

ROOT = Path(workingset.__file__).parent

# About a dozen rooms (docs/architecture.md): today 17 packages and modules besides
# `__init__.py` and `py.typed` (the 17th, `testing/`: what a user's tests import, and the
# pytest plugin). A new flat module belongs in one of them.
MAX_TOP_LEVEL = 17


def module_name(path: Path) -> str:
    """Return the dotted name of the module at `path` inside workingset."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Return the workingset modules that the file at `path` imports, at any depth of its code.

    Function-level imports count: a cycle hidden in a function still ties the two modules
    together. `from pkg import name` counts `pkg.name` when that is a module, else `pkg`.
    """
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    """Return each workingset module's imports of other workingset modules."""
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one cycle of `graph` as a path that starts and ends at the same node, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Collapse the module graph onto workingset's top-level entries (packages or modules).

    The package's own `__init__` (the public API) re-exports from everywhere, so it is left out.
    """

    def room(module: str) -> str:
        return ".".join(module.split(".")[:2])

    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module == "workingset":
            continue
        rooms.setdefault(room(module), set()).update(
            room(t) for t in targets if t != "workingset" and room(t) != room(module)
        )
    return rooms


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The import graph of the package, built once (it parses every module) for the tests that read it."""
    return import_graph()


def test_the_graph_builder_sees_function_level_and_relative_imports(graph):
    # Guards the check itself: an import inside a function, relative or not, is an edge.
    assert "workingset.errors" in graph["workingset.controller"]  # from ..errors, module level
    assert "workingset.providers" in graph["workingset.cli.sessions"]  # inside a command function
    assert "workingset.tokens.disk_cache" in graph["workingset.tokens.count"]  # inside a function
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_modules(graph):
    assert find_cycle(graph) is None


def test_no_import_cycle_between_top_level_packages(graph):
    assert find_cycle(package_graph(graph)) is None


def test_workingset_has_about_a_dozen_top_level_entries():
    entries = [
        p.name for p in ROOT.iterdir() if p.name not in ("__init__.py", "py.typed", "__pycache__")
    ]
    assert len(entries) <= MAX_TOP_LEVEL, sorted(entries)


# -- the tests mirror the packages (tests/README.md) --------------------------------------------

TESTS = ROOT.parent / "tests"
# Folders of tests/ that are not named after a room of workingset/: the docs and the benchmarks
# are checked as the repository's own folders; helpers, data and the frozen corpus hold no tests.
NOT_ROOMS = {"docs", "benchmarks", "helpers", "data", "frozen", "__snapshots__", "__pycache__"}


def imports_of_tests(source: str) -> list[str]:
    """Return the imports in `source`, at any depth, of a test module or of conftest."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            last = name.rpartition(".")[2]
            if last == "conftest" or last.startswith("test_"):
                found.append(name)
    return found


def test_the_test_import_check_sees_every_form():
    # Guards the check itself: plain, from, dotted and function-level imports all count.
    source = (
        "import test_v13\nfrom conftest import ROOT\nfrom tests.encoders import test_v12\n"
        "def f():\n    from tests.session.test_turn import x\n"
        "from tests.helpers.factory import sample_state\nimport pytest\n"
    )
    assert imports_of_tests(source) == [
        "test_v13", "conftest", "tests.encoders.test_v12", "tests.session.test_turn",
    ]  # fmt: skip


def test_no_test_module_imports_another_test_module_or_conftest():
    # Shared code lives in tests/helpers/ and fixtures in conftest.py, which pytest loads itself.
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 50
    offenders = {
        str(p.relative_to(TESTS)): found
        for p in modules
        if (found := imports_of_tests(p.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_test_folders_are_named_after_rooms_of_workingset():
    rooms = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__"}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()} - NOT_ROOMS
    assert folders and folders <= rooms, sorted(folders - rooms)
    assert not list((TESTS / "helpers").glob("test_*.py"))  # helpers hold no tests


def test_every_test_path_the_docs_name_exists():
    # The tests moved into folders once; a page that still names an old path misleads a reader.
    repo = ROOT.parent
    pages = [repo / "README.md", *repo.glob("docs/*.md"), *repo.glob("encodings/*.md"),
             *repo.glob("benchmarks/*.md"), *repo.glob("fixtures/*/README.md"), *TESTS.rglob("*.md")]  # fmt: skip
    named = {
        (page.relative_to(repo), path)
        for page in pages
        for path in re.findall(r"(?<![\w/.])tests/[\w/]+\.py", page.read_text(encoding="utf-8"))
    }
    assert len(named) > 10
    assert sorted((str(p), t) for p, t in named if not (repo / t).is_file()) == []
