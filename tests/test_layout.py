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
- no module takes another module's private name (`from x import _name`, `x._name`);
- surfaces import only the door: of sqlgate, `sqlgate.service`, `config`, `errors`, `home`
  and other surfaces; the service's door (its `__init__`) lists each name it shows three
  times alike and loads nothing of the rooms below until a name is taken;
- the console (`surfaces.ui`) does not import the MCP room (`surfaces.mcp`);
- no server-table SQL outside its room: a string constant of SQL naming one of sqlgate's
  tables (engine/schema.py) is in the module of the room that owns it (SERVER_TABLE_ROOMS);
- no class over 300 lines, no function over 60, but tables of declarations (listed).

NOT_YET_IN_THEIR_ROOM lists, each with its reason, the modules of a file restore that carry
every room's records forward while they share the user's file (issue 33 moves them out); a
test fails when an entry is no longer needed.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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


@functools.cache
def tree_of(name: str) -> ast.Module:
    """A module's syntax tree, read once (the tests below read each module several times)."""
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def imports_of(name: str) -> Iterator[Import]:
    path = MODULES[name]
    tree = tree_of(name)
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


@functools.cache
def all_imports() -> list[Import]:
    """Every import of every module, read when a test first asks (not when the file is
    collected: each worker of `pytest -n` collects every file)."""
    return [found for name in sorted(MODULES) for found in imports_of(name)]


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
    "home": {"engine", "memory", "claims", "service", "surfaces", "config"},
    "errors": {"engine", "memory", "claims", "service", "surfaces", "config", "home"},
}


@pytest.mark.parametrize("source", sorted(FORBIDDEN))
def test_a_lower_room_never_imports_a_higher_one(source: str) -> None:
    crossings = [
        f"{found.module}:{found.line} imports {target}"
        for found in all_imports()
        if room(found.module) == source
        for target in internal_targets(found)
        if room(target) in FORBIDDEN[source]
    ]
    assert not crossings


def test_only_surfaces_import_the_protocol_and_terminal_libraries() -> None:
    outside = [
        f"{found.module}:{found.line} imports {found.target}"
        for found in all_imports()
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
    assert not behind_the_door(all_imports())


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
    for found in all_imports():
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
    all_imports().append(extra)
    try:
        assert any("sqlgate.engine.names" in group for group in import_circles())
    finally:
        all_imports().remove(extra)


# -- private names --------------------------------------------------------------------------
def test_no_module_imports_a_private_name_of_another() -> None:
    taken = [
        f"{found.module}:{found.line} takes {found.target}.{name}"
        for found in all_imports()
        if found.target.startswith("sqlgate")
        for name in found.names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not taken


def test_no_module_reads_a_private_attribute_of_an_imported_module() -> None:
    found_uses = []
    for name in sorted(MODULES):
        tree = tree_of(name)
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


# -- surfaces import only the door ----------------------------------------------------------
# what a surface module may import of sqlgate: the service's door, the settings, the errors,
# sqlgate's home (where a project's records are), other surfaces, and the package itself
# (`sqlgate/__init__`: the version, settings and errors)
DOOR = ("sqlgate.service", "sqlgate.config", "sqlgate.errors", "sqlgate.home")


def past_the_door(imports: list[Import]) -> list[str]:
    """Rule "surfaces import only the door": what a surface imports of sqlgate behind it."""
    crossings = []
    for found in imports:
        if room(found.module) != "surfaces":
            continue
        if found.target == "sqlgate":  # `from sqlgate import x`: x may be a room
            taken = [f"sqlgate.{n}" for n in found.names if f"sqlgate.{n}" in MODULES]
        elif found.target.startswith("sqlgate."):
            taken = [found.target]
        else:
            continue
        crossings += [
            f"{found.module}:{found.line} imports {target}: surfaces import only the door "
            f"({', '.join(DOOR)} and other surfaces)"
            for target in taken
            if target not in DOOR and room(target) != "surfaces"
        ]
    return crossings


def test_surfaces_import_only_the_door() -> None:
    """Rule: surfaces import only the door (sqlgate.service), config, errors and surfaces."""
    assert not past_the_door(all_imports())


@pytest.mark.parametrize(
    ("target", "names", "crosses"),
    [
        ("sqlgate.engine.records", ("Members",), True),
        ("sqlgate.memory.store", ("Memory",), True),
        ("sqlgate.claims", (), True),
        ("sqlgate.service.calls", ("Calls",), True),
        ("sqlgate", ("engine",), True),
        ("sqlgate", ("service", "config", "errors"), False),
        ("sqlgate", ("home",), False),
        ("sqlgate.home", ("find_root",), False),
        ("sqlgate", ("__version__",), False),
        ("sqlgate.service", ("Service",), False),
        ("sqlgate.errors", ("NotFound",), False),
        ("sqlgate.surfaces.cli.options", ("db_option",), False),
        ("click", ("echo",), False),
    ],
)
def test_the_door_rule_sees_a_surface_import_past_the_door(
    target: str, names: tuple[str, ...], crosses: bool
) -> None:
    found = Import("sqlgate.surfaces.cli.app", target, names, 0)
    assert bool(past_the_door([found])) is crosses
    beside = Import("sqlgate.service.calls", target, names, 0)  # the rule is for surfaces
    assert past_the_door([beside]) == []


# -- the console does not import the MCP room ---------------------------------------------------
CONSOLE, MCP_ROOM = "sqlgate.surfaces.ui", "sqlgate.surfaces.mcp"


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def console_into_mcp(imports: list[Import]) -> dict[str, list[str]]:
    """Rule "the console does not import the MCP room": by console module, what it takes."""
    found_by: dict[str, list[str]] = {}
    for found in imports:
        if not in_package(found.module, CONSOLE):
            continue
        taken = {found.target} | {f"{found.target}.{n}" for n in found.names}
        for target in sorted(t for t in taken if in_package(t, MCP_ROOM)):
            found_by.setdefault(found.module, []).append(f"{found.module}:{found.line} {target}")
    return found_by


def test_the_console_does_not_import_the_mcp_room() -> None:
    """Rule: the console (surfaces.ui) does not import the MCP room (surfaces.mcp)."""
    crossings = [line for lines in console_into_mcp(all_imports()).values() for line in lines]
    assert not crossings, (
        "the console does not import the MCP room; what both need goes to a room both "
        f"import (surfaces/web): {crossings}"
    )


@pytest.mark.parametrize(
    ("importer", "target", "names", "crosses"),
    [
        ("sqlgate.surfaces.ui.serve", "sqlgate.surfaces.mcp.http", ("x",), True),
        ("sqlgate.surfaces.ui", "sqlgate.surfaces.mcp", ("http_access",), True),
        ("sqlgate.surfaces.ui.app", "sqlgate.surfaces", ("mcp",), True),
        ("sqlgate.surfaces.ui.app", "sqlgate.surfaces.cli.options", ("x",), False),
        ("sqlgate.surfaces.mcp.http", "sqlgate.surfaces.mcp.http_access", ("x",), False),
        ("sqlgate.surfaces.uix", "sqlgate.surfaces.mcp.http", ("x",), False),
    ],
)
def test_the_console_rule_sees_an_import_of_the_mcp_room(
    importer: str, target: str, names: tuple[str, ...], crosses: bool
) -> None:
    assert bool(console_into_mcp([Import(importer, target, names, 0)])) is crosses


# -- no server-table SQL outside its room --------------------------------------------------------
# the room that owns each of sqlgate's tables, views and FTS5 tables (engine/schema.py, REGISTRY):
# only its modules write SQL naming them, others call its functions
SERVER_TABLE_ROOMS = {
    "sqlgate.engine.records": (
        "member_tokens",
        "members",
        "query_errors",
        "query_log",
        "query_patterns",
        "server_info",
    ),
    "sqlgate.engine.undo": (
        "undo_changesets",
        "undo_chunks",
        "undo_row_states",
        "undo_table_shapes",
    ),
    "sqlgate.memory": ("memory_checkpoints", "memory_events", "memory_events_fts"),
    "sqlgate.claims": ("claims", "claims_history"),
}
# the migrations create every server object: they name them all
MIGRATIONS_MODULE = "sqlgate.engine.schema"
# a snapshot restore marks the calls it rolled back as undone: this goes when engine.undo
# offers a function for it
NOT_YET_IN_THEIR_ROOM = {
    "sqlgate.engine.snapshots.restore_records": (
        "marks the undo data of the calls a snapshot restore rolled back as undone"
    ),
}
SQL_NAMING = re.compile(
    # a keyword of SQL before the name (upper case, as sqlgate writes its SQL; English text
    # that mentions a table, "read_query over query_log", is not SQL), with an optional
    # schema (`main.`, `{schema}.`) and quote
    r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|VIEW|ON)\s+(?:[\w{}\"]+\.)?[\"`\[]?(?P<table>\w+)\b"
)


def table_owners() -> dict[str, str]:
    return {table: owner for owner, tables in SERVER_TABLE_ROOMS.items() for table in tables}


def string_constants(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """The string constants of a module, docstrings and other bare strings left out; an
    f-string whole, each `{...}` read as `{}`."""
    bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in bare or id(node) in parts:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, text


def server_sql_outside(module: str, tree: ast.AST) -> list[str]:
    """Rule "no server-table SQL outside its room": SQL in `module` naming a server table
    another room owns."""
    owners = table_owners()
    found = []
    for line, text in string_constants(tree):
        for match in SQL_NAMING.finditer(text):
            owner = owners.get(match["table"])
            if owner is None or module == MIGRATIONS_MODULE or in_package(module, owner):
                continue
            found.append(f"{module}:{line} names {match['table']} (its room: {owner})")
    return found


@functools.cache
def server_sql_offenders() -> dict[str, list[str]]:
    offenders: dict[str, list[str]] = {}
    for name in sorted(MODULES):
        if found := server_sql_outside(name, tree_of(name)):
            offenders[name] = found
    return offenders


def test_every_server_table_has_a_room() -> None:
    from sqlgate.engine.schema import REGISTRY, RESERVED

    named = {o.name for o in REGISTRY if o.kind in ("table", "view", "fts5")}
    litestream = {o.name for o in RESERVED}  # Litestream's, never read by sqlgate's SQL
    assert sorted(named - litestream) == sorted(table_owners())


def test_no_server_table_sql_outside_its_room() -> None:
    """Rule: no server-table SQL outside its room (SERVER_TABLE_ROOMS)."""
    offenders = server_sql_offenders()
    new = [
        line
        for module in sorted(offenders)
        if module not in NOT_YET_IN_THEIR_ROOM
        for line in offenders[module]
    ]
    assert not new, (
        "no server-table SQL outside its room: call a function of the room that owns the table"
    )


def test_the_server_sql_allowance_has_no_stale_entry() -> None:
    stale = sorted(set(NOT_YET_IN_THEIR_ROOM) - set(server_sql_offenders()))
    assert not stale, f"its SQL went home: drop from NOT_YET_IN_THEIR_ROOM: {stale}"


@pytest.mark.parametrize(
    ("module", "source", "found"),
    [
        ("sqlgate.surfaces.cli.inspection", 'q = "SELECT ts FROM query_log WHERE id = ?"', 1),
        ("sqlgate.surfaces.ui.memory", 'q = f"SELECT {c} FROM {schema}.memory_events"', 1),
        ("sqlgate.surfaces.ui.memory", 'q = "SELECT 1 FROM main.\\"claims\\" JOIN members"', 2),
        ("sqlgate.claims.store", 'q = "INSERT INTO memory_events (x) VALUES (?)"', 1),
        ("sqlgate.engine.undo.restore", 'q = "UPDATE undo_changesets SET undone = 1"', 0),
        ("sqlgate.claims.store", 'q = "DELETE FROM claims_history"', 0),
        ("sqlgate.engine.schema", 'q = "CREATE TABLE claims (id INTEGER)"', 0),
        ("sqlgate.surfaces.ui.memory", 'q = "SELECT x FROM memory_eventsx"', 0),
        ("sqlgate.surfaces.cli.app", 'hint = "read_query over query_log shows them"', 0),
        ("sqlgate.surfaces.cli.app", 'hint = "rows from query_log"', 0),
        ("sqlgate.surfaces.cli.app", 'def f():\n    """SELECT * FROM query_log"""', 0),
    ],
)
def test_the_sql_rule_sees_server_table_sql(module: str, source: str, found: int) -> None:
    assert len(server_sql_outside(module, ast.parse(source))) == found


# -- sizes ----------------------------------------------------------------------------------
MAX_CLASS_LINES, MAX_FUNCTION_LINES = 300, 60
# tables of declarations: one short entry per tool, read top to bottom, not logic to cut
DECLARATION_TABLES = {
    "sqlgate.surfaces.mcp.sql_tools.register_sql_tools": "a few lines per SQL tool",
    "sqlgate.surfaces.mcp.claims_tools.register_claims_tools": "a few lines per claims tool",
    "sqlgate.surfaces.mcp.memory_tools.register_memory_tools": "a few lines per memory tool",
}


def oversized(module: str, tree: ast.AST) -> dict[str, str]:
    """Rule "no class over 300 lines, no function over 60": what is over, by qualified name
    (lines from `def`/`class` to the end, decorators left out)."""
    found: dict[str, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                size = (child.end_lineno or child.lineno) - child.lineno + 1
                is_class = isinstance(child, ast.ClassDef)
                if size > (MAX_CLASS_LINES if is_class else MAX_FUNCTION_LINES):
                    found[name] = f"{'class' if is_class else 'function'} {name}: {size} lines"
                visit(child, name)
            else:
                visit(child, prefix)

    visit(tree, module)
    return found


@functools.cache
def oversized_everywhere() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in sorted(MODULES):
        found |= oversized(name, tree_of(name))
    return found


def test_no_class_over_300_lines_and_no_function_over_60() -> None:
    """Rule: no class over 300 lines, no function over 60 (DECLARATION_TABLES aside)."""
    over = oversized_everywhere()
    new = [over[n] for n in sorted(over) if n not in DECLARATION_TABLES]
    assert not new, f"no class over 300 lines, no function over 60: cut it into parts: {new}"


def test_the_size_allowances_have_no_stale_entry() -> None:
    over = oversized_everywhere()
    stale = sorted(set(DECLARATION_TABLES) - set(over))
    assert not stale, f"within the limits now: drop from DECLARATION_TABLES: {stale}"


@pytest.mark.parametrize(
    ("lines", "kind", "over"),
    [(60, "def", False), (61, "def", True), (300, "class", False), (301, "class", True)],
)
def test_the_size_rule_counts_lines(lines: int, kind: str, over: bool) -> None:
    body = "\n".join("    x = 1" for _ in range(lines - 1))
    source = f"{kind} f{'()' if kind == 'def' else ''}:\n{body}\n"
    assert bool(oversized("m", ast.parse(source))) is over
    nested = f"class C:\n    {source.replace(chr(10), chr(10) + '    ')}"
    assert ("m.C.f" in oversized("m", ast.parse(nested))) is over


# -- the service's door -----------------------------------------------------------------------
def service_door() -> ModuleType:
    return importlib.import_module("sqlgate.service")


def door_source(key: str) -> str:
    """The module a key of BEHIND_THE_DOOR names: the door's own, or another room's whole."""
    return key if key.startswith("sqlgate.") else f"sqlgate.service.{key}"


def test_the_service_door_lists_what_it_shows() -> None:
    door = service_door()
    behind = [n for names in door.BEHIND_THE_DOOR.values() for n in names]
    rule = "the service door lists each name once, in __all__ and BEHIND_THE_DOOR alike"
    assert len(behind) == len(set(behind)), rule
    assert sorted(behind) == sorted(door.__all__), rule


def test_the_service_door_imports_for_type_checkers_what_it_shows() -> None:
    tree = tree_of("sqlgate.service")
    checked = {
        (node.module, alias.name)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    door = service_door()
    shown = {(door_source(k), n) for k, names in door.BEHIND_THE_DOOR.items() for n in names}
    assert checked == shown, "the service door imports under TYPE_CHECKING what it shows"


def test_every_name_of_the_service_door_is_the_object_its_module_defines() -> None:
    door = service_door()
    for key, names in door.BEHIND_THE_DOOR.items():
        inner = importlib.import_module(door_source(key))
        for name in names:
            assert getattr(door, name) is getattr(inner, name), f"the door shows {key}.{name}"


def test_the_service_door_shows_only_what_the_surfaces_take() -> None:
    taken = {
        name
        for found in all_imports()
        if room(found.module) == "surfaces" and found.target == "sqlgate.service"
        for name in found.names
    }
    unused = sorted(set(service_door().__all__) - taken)
    assert not unused, (
        f"no surface takes {unused} from the service door: drop them from it "
        "(__all__, TYPE_CHECKING and BEHIND_THE_DOOR)"
    )


@pytest.mark.parametrize("name", ["nothing", "_private", "Database", "Calls", "SqlTools"])
def test_a_name_the_service_door_does_not_list_is_refused(name: str) -> None:
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(service_door(), name)
    with pytest.raises(ImportError):
        exec(f"from sqlgate.service import {name}", {})


DOOR_PROBE = """
import json, sys
{statement}
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("sqlgate", "sqlglot")))))
"""
ROOMS_BELOW = ("sqlgate.engine.", "sqlgate.memory", "sqlgate.claims", "sqlglot")


@pytest.mark.parametrize(
    ("statement", "loaded"),
    [
        ("import sqlgate.service", set()),
        ("from sqlgate.service import counted", {"sqlgate.engine.framing"}),
        ("from sqlgate.service import Claim", {"sqlgate.claims", "sqlgate.claims.model"}),
    ],
)
def test_the_service_door_loads_only_what_is_taken(statement: str, loaded: set[str]) -> None:
    """A fresh interpreter: the door loads no module of engine, memory or claims but the
    front door machinery (engine/front_door.py) and what a name taken needs."""
    found = subprocess.run(
        [sys.executable, "-c", DOOR_PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
    )
    below = {m for m in json.loads(found.stdout) if m.startswith(ROOMS_BELOW)}
    rule = "the service door loads a room's module only when one of its names is taken"
    assert below - loaded - {"sqlgate.engine.front_door"} == set(), rule
    assert loaded <= below, rule
