"""Imports point down: every module sits in a layer of :data:`LAYERS` and imports only its own
layer and those below (storage in particular never imports what is built on top of it), no
module imports itself back through others (no cycle), the separate front ends of
:data:`SEPARATE` import none of each other, no module imports another package's private
(``_name``) module, and imports inside functions are only the lazy loads of optional parts.

The imports of every module under ``src/sessiontree`` are read with :mod:`ast` — at module
level, inside functions (a late import is still an edge) and under ``if TYPE_CHECKING:`` (an
annotation that names a module above is a dependency on it all the same).

The rules are data: a new package is one line in :data:`LAYERS` (a layer whose package does
not exist yet is no error), and an edge that breaks a rule only until other work lands is
listed in :data:`ALLOWED` with its reason, so it stays visible and is removed with the work.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import sessiontree

PACKAGE = Path(sessiontree.__file__).parent

UPPER = ("repos", "session", "harness", "cli", "interop", "integrations", "web")
"""What storage must not import: the layers built on it (``sessiontree.<name>``)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


_Import = tuple[str, tuple[str, ...], bool]
"""One import statement: ``(module, names imported from it, inside a function)``."""


def _statements(path: Path, module: str) -> list[_Import]:
    """The import statements of ``module`` (at ``path``), absolute, wherever in the file."""
    is_package = path.name == "__init__.py"
    found: list[_Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((alias.name, (), in_function) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((target, tuple(alias.name for alias in node.names), in_function))
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for sub in ast.iter_child_nodes(node):
            visit(sub, inside)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return found


def _read_imports(path: Path, module: str) -> tuple[set[str], set[str]]:
    """``(all, inside_functions)``: every name ``module`` imports — ``from a import b`` counts
    ``a`` and ``a.b``, as ``b`` may be a submodule — and those imported inside a function."""
    found: set[str] = set()
    late: set[str] = set()
    for target, names, in_function in _statements(path, module):
        # ``from sessiontree.backends import sql`` imports the submodule sessiontree.backends.sql
        imported = {target, *(f"{target}.{name}" for name in names)}
        found |= imported
        if in_function:
            late |= imported
    return found, late


def _imports(path: Path, module: str) -> set[str]:
    """The ``sessiontree`` modules ``module`` (at ``path``) imports, wherever in the file."""
    found, _ = _read_imports(path, module)
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
    assert "sessiontree.backends.sql.plan" in graph["sessiontree.backends.sql.sqlite"]
    assert "sessiontree.tree" in graph["sessiontree.backends.memory.storage"]
    assert "sessiontree.backends.sql.storage" in graph["sessiontree.backends.sql.repo"]


def test_imports_inside_functions_and_type_checking_ones_count(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from sessiontree.session import Session\n"
        "def f():\n"
        "    from sessiontree.backends.memory.repo import MemoryRepo\n"
        "from . import tree\n",
        encoding="utf-8",
    )
    found = _imports(path, "sessiontree.storage.probe")
    assert "sessiontree.backends.memory.repo" in found
    assert "sessiontree.session" in found
    assert "sessiontree.storage.tree" in found


REPOSITORY_MODULES = ("backends.memory.repo", "backends.jsonl.repo", "backends.sql.repo")
"""The repository module of each backend package: it wraps the backend's storage into a
``Session``, so it sits above ``session``; the rest of the package is storage."""


def _is_storage(module: str) -> bool:
    return (
        _is_under(module, "sessiontree.storage") or _is_under(module, "sessiontree.backends")
    ) and not any(_is_under(module, f"sessiontree.{name}") for name in REPOSITORY_MODULES)


def test_storage_imports_nothing_above_it() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if _is_storage(module)
        for target in targets
        if any(_is_under(target, f"sessiontree.{layer}") for layer in UPPER)
        or any(_is_under(target, f"sessiontree.{name}") for name in REPOSITORY_MODULES)
    )
    assert upward == []


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@functools.cache
def _runtime_graph() -> dict[str, set[str]]:
    """Like :func:`import_graph`, but ``from pkg import mod`` is an edge to ``pkg.mod`` alone.

    Importing ``pkg.mod`` runs ``pkg/__init__`` first, but that is Python's order, not a
    dependency of the importer: ``from sessiontree import _json`` does not depend on
    everything ``sessiontree/__init__`` re-exports.
    """
    files = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges: set[str] = set()
        for target, names, _ in _statements(path, module):
            submodules = {f"{target}.{name}" for name in names} & files.keys()
            edges |= submodules
            if len(submodules) < len(names) or not names:
                edges.add(target)
        graph[module] = {name for name in edges if name in files and name != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def test_the_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back() -> None:
    assert _cycles(_runtime_graph()) == []


LAZY_LOADERS = {
    "sessiontree.repos": "open_repo loads the backend its URL names (sqlite3 on first use)",
    "sessiontree.backends.sql.storage": "the engine for a URL: sqlite3 or psycopg on first use",
    "sessiontree.interop": "the converter of the format asked for",
    "sessiontree.models": "the provider's model class (and its SDK) that resolve_model names",
}
"""Modules whose functions may import other sessiontree modules, and why: each loads a
backend, driver or converter only when it is asked for, so ``import sessiontree`` loads no
driver (tests/test_meta.py checks ``sqlite3``, ``psycopg``, ``openai``, ``anthropic``)."""

LAZY_PACKAGES = ("sessiontree.cli",)
"""Packages whose commands import what they run inside the command, so ``sessiontree --help``
and every other command do not load the whole library."""


def test_imports_inside_functions_are_lazy_loads_of_optional_parts() -> None:
    files = _modules()
    late_edges = sorted(
        f"{module} -> {name}"
        for module, path in files.items()
        if module not in LAZY_LOADERS and not any(_is_under(module, p) for p in LAZY_PACKAGES)
        for name in _read_imports(path, module)[1]
        if name == "sessiontree" or name.startswith("sessiontree.")
    )
    assert late_edges == []


def test_late_imports_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "import os\nclass C:\n    def m(self):\n        from sessiontree import tree\n",
        encoding="utf-8",
    )
    found, late = _read_imports(path, "sessiontree.probe")
    assert "os" in found and "os" not in late
    assert "sessiontree.tree" in late


LAYERS: tuple[tuple[str, ...], ...] = (
    # the model: messages, entries, errors, ids and the exact JSON they are read with
    (
        "_model",
        "_json",
        "_args",
        "messages",
        "entries",
        "stored",
        "errors",
        "ids",
        "metadata",
        "snippets",
        "redact",
        "drafts",
    ),
    ("tree", "tool_pairs", "context", "fold", "wire", "describe"),  # the pure core
    ("providers",),  # endpoints, keys and SDK clients of the model providers
    ("models",),
    ("summarizers",),
    ("compaction",),
    ("storage", "backends"),
    # what reads a session through its storage; verify also needs the JSONL line rule
    ("session", "branching", "harness", "verify"),
    ("repos", *REPOSITORY_MODULES),
    ("interop", "cli", "testing", "integrations", "sync", "usage", "lookup", "web"),
)
"""The layers of ``src/sessiontree``, bottom first (names under ``sessiontree.``). A module
may import its own layer and those below, never one above. A module belongs to the layer of
the longest name it is under (``backends.sql.repo`` is a repository, ``backends.sql.plan``
storage). A name with no module yet (``providers`` before it lands) is no error."""

SEPARATE = ("cli", "web", "interop", "integrations")
"""Front ends on the same layer that share code only through the modules below them
(:mod:`sessiontree.lookup`, :mod:`sessiontree.describe`, ...): none of ``web``, ``interop``
and ``integrations`` imports another of these; ``cli`` drives the others (``sessiontree
import``, ``sessiontree serve``), so it may import them, and nothing imports ``cli``."""

ALLOWED: dict[str, str] = {}
"""Edges that break a rule here only until other work lands: ``"importer -> imported"`` →
why, and what removes it. :func:`test_every_allowed_edge_still_exists` fails once an edge is
gone, so the list only shrinks."""

ENTRY_POINTS = ("sessiontree", "sessiontree.__main__")
"""Above every layer: the package's re-exports and ``python -m sessiontree``."""


def _layer(module: str) -> int | None:
    found = [
        (len(name), index)
        for index, names in enumerate(LAYERS)
        for name in names
        if _is_under(module, f"sessiontree.{name}")
    ]
    return max(found)[1] if found else None


def test_every_module_has_a_layer() -> None:
    assert sorted(m for m in _modules() if m not in ENTRY_POINTS and _layer(m) is None) == []


Graph = dict[str, set[str]]
"""Module → the sessiontree modules it imports."""


def _upward_edges(graph: Graph) -> list[str]:
    """``importer -> imported`` where ``imported`` sits on a higher layer."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module not in ENTRY_POINTS
        for target in targets
        if target in ENTRY_POINTS or (_layer(target) or 0) > (_layer(module) or 0)
    )


def test_every_import_points_down() -> None:
    assert [edge for edge in _upward_edges(_runtime_graph()) if edge not in ALLOWED] == []


def _front_end(module: str) -> str | None:
    """Which of :data:`SEPARATE` ``module`` is under, if any."""
    return next((p for p in SEPARATE if _is_under(module, f"sessiontree.{p}")), None)


def _sibling_edges(graph: Graph) -> list[str]:
    """``importer -> imported`` across two front ends of :data:`SEPARATE`, except from
    ``cli``; and any import of ``cli`` from outside it (but the entry points)."""
    found = []
    for module, targets in graph.items():
        own = _front_end(module)
        for target in targets:
            other = _front_end(target)
            if other is None or other == own or module in ENTRY_POINTS:
                continue
            if own != "cli" or other == "cli":
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_the_front_ends_import_none_of_each_other() -> None:
    assert [edge for edge in _sibling_edges(_runtime_graph()) if edge not in ALLOWED] == []


def _private_edges(graph: Graph) -> list[str]:
    """``importer -> imported`` where ``imported`` is a ``_private`` module of a package the
    importer is not under (``sessiontree._json`` is the root package's: every module may)."""
    found = []
    for module, targets in graph.items():
        for target in targets:
            parts = target.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_")]
            if private and not _is_under(module, ".".join(parts[: private[0]])):
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_no_module_imports_another_packages_private_module() -> None:
    assert [edge for edge in _private_edges(_runtime_graph()) if edge not in ALLOWED] == []


def test_every_allowed_edge_still_exists() -> None:
    graph = _runtime_graph()
    seen = {*_upward_edges(graph), *_sibling_edges(graph), *_private_edges(graph)}
    assert sorted(set(ALLOWED) - seen) == []


def test_the_rules_see_each_breach() -> None:
    graph = {
        "sessiontree.web.app": {"sessiontree.cli._common", "sessiontree.interop.pi"},
        "sessiontree.integrations.langchain": {"sessiontree.sync", "sessiontree.wire"},
        "sessiontree.cli.serve": {"sessiontree.web.app", "sessiontree.cli._common"},
        "sessiontree.__main__": {"sessiontree.cli"},
        "sessiontree.providers.openai": {"sessiontree.models.base"},
        "sessiontree.compaction.compact": {"sessiontree.session", "sessiontree._json"},
        "sessiontree.models.openai_chat": {"sessiontree.providers.openai"},
    }
    assert _upward_edges(graph) == [
        "sessiontree.compaction.compact -> sessiontree.session",
        "sessiontree.providers.openai -> sessiontree.models.base",
    ]
    assert _sibling_edges(graph) == [
        "sessiontree.web.app -> sessiontree.cli._common",
        "sessiontree.web.app -> sessiontree.interop.pi",
    ]
    assert _private_edges(graph) == ["sessiontree.web.app -> sessiontree.cli._common"]


def test_the_issue_order_of_layers() -> None:
    """providers < models < summarizers < compaction < storage < session < repository."""
    order = ["providers", "models", "summarizers", "compaction", "storage", "session", "repos"]
    layers = [_layer(f"sessiontree.{name}.x") for name in order]
    known = [layer for layer in layers if layer is not None]
    assert len(known) == len(order) and known == sorted(known) and len(set(known)) == len(known)


ERRORS = "sessiontree.errors"


def test_every_sessiontree_error_is_defined_in_errors_py() -> None:
    """A class derived from an error of errors.py is defined there too (one exception tree)."""
    files = _modules()
    tree = ast.parse(files[ERRORS].read_text(encoding="utf-8"))
    error_names = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    elsewhere = []
    for module, path in files.items():
        if module == ERRORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if bases & error_names:
                elsewhere.append(f"{module}.{node.name}")
    assert elsewhere == []


def test_the_layers_read_as_the_architecture() -> None:
    order = [
        "sessiontree.entries",
        "sessiontree.tree",
        "sessiontree.compaction.plan",
        "sessiontree.backends.sql.plan",
        "sessiontree.session",
        "sessiontree.backends.jsonl.repo",
        "sessiontree.cli.browse",
    ]
    layers = [_layer(m) for m in order]
    known = [layer for layer in layers if layer is not None]
    assert len(known) == len(order) and known == sorted(known) and len(set(known)) == len(known)
