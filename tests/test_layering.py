"""Imports point down: the storage layer never imports what is built on top of it.

The imports of every module under ``src/sessiontree`` are read with :mod:`ast` — at module
level *and* inside functions (a late import is still an edge), but not under
``if TYPE_CHECKING:`` (annotations only, never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import sessiontree

PACKAGE = Path(sessiontree.__file__).parent

UPPER = ("repos", "session", "harness", "cli", "interop", "integrations", "web")
"""What storage must not import: the layers built on it (``sessiontree.<name>``)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, module: str) -> set[str]:
    """The ``sessiontree`` modules ``module`` (at ``path``) imports, wherever in the file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            # ``from sessiontree.storage import sql`` imports the submodule sessiontree.storage.sql
            found.update(f"{target}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return {name for name in found if name == "sessiontree" or name.startswith("sessiontree.")}


def import_graph() -> dict[str, set[str]]:
    """Module → the sessiontree modules it imports (names that are modules only)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {
        module: {name for name in _imports(path, module) if name in files and name != module}
        for module, path in files.items()
    }


def _is_under(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def test_the_graph_is_read() -> None:
    graph = import_graph()
    # a known downward edge, seen whichever way it is written
    assert "sessiontree.storage.sql.plan" in graph["sessiontree.storage.sql.sqlite"]
    assert "sessiontree.tree" in graph["sessiontree.storage.memory"]
    assert any(_is_under(m, "sessiontree.storage") for m in graph["sessiontree.repos.sql"])


def test_imports_inside_functions_count_and_type_checking_ones_do_not(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from sessiontree.session import Session\n"
        "def f():\n"
        "    from sessiontree.repos.memory import MemoryRepo\n"
        "from . import tree\n",
        encoding="utf-8",
    )
    found = _imports(path, "sessiontree.storage.probe")
    assert "sessiontree.repos.memory" in found
    assert "sessiontree.session" not in found
    assert "sessiontree.storage.tree" in found


def test_storage_imports_nothing_above_it() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if _is_under(module, "sessiontree.storage")
        for target in targets
        if any(_is_under(target, f"sessiontree.{layer}") for layer in UPPER)
    )
    assert upward == []
