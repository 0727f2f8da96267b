"""The layout says what the code is (DESIGN.md, "rooms with one-way doors").

Read from the source with `ast`, every import counted, those inside functions too (a lazy
import is still a dependency):

- the doors: `engine` imports nothing of `memory`, `claims`, `service` or `surfaces`;
  `memory` nothing of `claims`, `service` or `surfaces`; `claims` nothing of `service` or
  `surfaces`; only `surfaces` import `mcp`, `click`, `starlette` or `uvicorn`;
- no two modules import each other, directly or around a circle, and no two packages of
  `engine` either;
- a package of `engine` has a front door, its `__init__`: code outside the package imports
  that, never one of the modules behind it;
- no module takes another module's private name (`from x import _name`, `x._name`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "sqlgate"
SURFACE_LIBRARIES = ("mcp", "click", "starlette", "uvicorn", "rich")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # what it imports: a module, or module.name
    names: tuple[str, ...]  # for `from target import a, b`
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> Iterator[Import]:
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield Import(name, base, tuple(a.name for a in node.names), node.lineno)


ALL_IMPORTS = [found for name in sorted(MODULES) for found in imports_of(name)]


def internal_targets(found: Import) -> set[str]:
    """The sqlgate modules an import depends on: the module named, or a submodule taken
    from a package by `from package import submodule`."""
    targets = {found.target} if found.target in MODULES else set()
    targets |= {f"{found.target}.{n}" for n in found.names if f"{found.target}.{n}" in MODULES}
    return targets - {found.module}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


# -- doors ----------------------------------------------------------------------------------
FORBIDDEN = {
    "engine": {"memory", "claims", "service", "surfaces"},
    "memory": {"claims", "service", "surfaces"},
    "claims": {"service", "surfaces"},
    "config": {"engine", "memory", "claims", "service", "surfaces"},
    "errors": {"engine", "memory", "claims", "service", "surfaces", "config"},
}


@pytest.mark.parametrize("source", sorted(FORBIDDEN))
def test_a_lower_room_never_imports_a_higher_one(source: str) -> None:
    crossings = [
        f"{found.module}:{found.line} imports {target}"
        for found in ALL_IMPORTS
        if room(found.module) == source
        for target in internal_targets(found)
        if room(target) in FORBIDDEN[source]
    ]
    assert not crossings


def test_only_surfaces_import_the_protocol_and_terminal_libraries() -> None:
    outside = [
        f"{found.module}:{found.line} imports {found.target}"
        for found in ALL_IMPORTS
        if room(found.module) != "surfaces" and found.target.split(".")[0] in SURFACE_LIBRARIES
    ]
    assert not outside


# -- engine's packages: one front door each ----------------------------------------------------
ENGINE_PACKAGES = {
    name
    for name, path in MODULES.items()
    if path.name == "__init__.py" and name.startswith("sqlgate.engine.") and name.count(".") == 2
}


def engine_package(module: str) -> str | None:
    """The package of `engine` a module belongs to (None for engine's own modules)."""
    package = ".".join(module.split(".")[:3])
    return package if package in ENGINE_PACKAGES else None


def behind_the_door(imports: list[Import]) -> list[str]:
    return [
        f"{found.module}:{found.line} imports {target}: outside {package}, "
        f"import only its front door ({package})"
        for found in imports
        for target in sorted(internal_targets(found))
        if (package := engine_package(target)) is not None
        and target != package
        and engine_package(found.module) != package
    ]


def test_engine_has_packages_and_few_loose_modules() -> None:
    loose = [name for name in MODULES if name.count(".") == 2 and room(name) == "engine"]
    assert len(ENGINE_PACKAGES) >= 7
    assert len(loose) - len(ENGINE_PACKAGES) <= 15


def test_code_outside_an_engine_package_imports_only_its_front_door() -> None:
    """Rule: outside an engine package, import only its front door."""
    assert not behind_the_door(ALL_IMPORTS)


@pytest.mark.parametrize(
    ("importer", "target", "names", "crosses"),
    [
        ("sqlgate.service", "sqlgate.engine.undo.capture", ("Capture",), True),
        ("sqlgate.service", "sqlgate.engine.undo", ("capture",), True),
        ("sqlgate.engine.running.queries", "sqlgate.engine.rules.live_rules", ("x",), True),
        ("sqlgate.service", "sqlgate.engine.undo", ("UndoRestore",), False),
        ("sqlgate.engine.undo.writes", "sqlgate.engine.undo.keys", ("x",), False),
        ("sqlgate.engine.running.queries", "sqlgate.engine.names", ("x",), False),
    ],
)
def test_the_door_rule_sees_an_import_behind_the_door(
    importer: str, target: str, names: tuple[str, ...], crosses: bool
) -> None:
    assert bool(behind_the_door([Import(importer, target, names, 0)])) is crosses


# -- circles --------------------------------------------------------------------------------
def module_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for found in ALL_IMPORTS:
        graph[found.module] |= internal_targets(found)
    return graph


def engine_package_graph() -> dict[str, set[str]]:
    """engine's packages (and its modules outside them) as nodes: who imports whom."""
    graph: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        if room(module) != "engine" or module == "sqlgate.engine":
            continue
        source = engine_package(module) or module
        graph.setdefault(source, set())
        graph[source] |= {
            engine_package(t) or t for t in targets if room(t) == "engine" and t != "sqlgate.engine"
        } - {source}
    return graph


def import_circles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """The strongly connected groups of more than one node (iterative Tarjan)."""
    graph = module_graph() if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    circles.append(sorted(group))
    return circles


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert import_circles() == []


def test_no_engine_packages_import_each_other_in_a_circle() -> None:
    assert import_circles(engine_package_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    extra = Import("sqlgate.engine.names", "sqlgate.engine.statements.policy", (), 0)
    ALL_IMPORTS.append(extra)
    try:
        assert any("sqlgate.engine.names" in group for group in import_circles())
    finally:
        ALL_IMPORTS.remove(extra)


# -- private names --------------------------------------------------------------------------
def test_no_module_imports_a_private_name_of_another() -> None:
    taken = [
        f"{found.module}:{found.line} takes {found.target}.{name}"
        for found in ALL_IMPORTS
        if found.target.startswith("sqlgate")
        for name in found.names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not taken


def test_no_module_reads_a_private_attribute_of_an_imported_module() -> None:
    found_uses = []
    for name, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {
            (alias.asname or alias.name.split(".")[0]): alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.name.startswith("sqlgate")
        }
        aliases |= {
            (alias.asname or alias.name): f"{found.target}.{alias.name}"
            for found in imports_of(name)
            for alias in [ast.alias(n) for n in found.names]
            if f"{found.target}.{alias.name}" in MODULES
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found_uses.append(f"{name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not found_uses
