"""Every catalog query that runs on an agent's connection names the main database.

sqlgate's records are attached to the agent's connections as `sqlgate` (`engine.connect`).
A table-valued pragma without a schema argument (`pragma_table_info(?)`) looks a name that
main lacks up in the attached file, and `pragma_table_list` lists both files: so each one
in the modules below passes `'main'`, `pragma_table_list` is filtered on `schema`, and
`sqlite_schema` is spelled `main.sqlite_schema`. Read from the source with `ast` (string
constants, f-strings' constant parts), like tests/test_layout.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "sqlgate"
# modules whose SQL runs on the agent's connections (the writer and the reader); memory,
# claims, records and the schema run on the records' own connection, where they are main
AGENT_MODULES = sorted(
    [
        *(SRC / "engine" / "rules").glob("*.py"),
        *(SRC / "engine" / "statements").glob("*.py"),
        *(SRC / "engine" / "undo").glob("*.py"),
        *(SRC / "engine" / "running").glob("*.py"),
        SRC / "engine" / "database" / "introspect.py",
    ]
)
# the table-valued pragmas that take a schema as their last argument
_SCHEMA_PRAGMAS = re.compile(
    r"\bpragma_(table_info|table_xinfo|index_list|index_info|index_xinfo|foreign_key_list"
    r"|foreign_key_check)\s*\(",
    re.IGNORECASE,
)
_TABLE_LIST = re.compile(r"\bpragma_table_list\b", re.IGNORECASE)
_CATALOG = re.compile(r"(?<![\w.])(sqlite_schema|sqlite_master)\b", re.IGNORECASE)
# a query starts with its verb; a message that quotes SQL as advice does not
_SQL = re.compile(r"\s*\(?\s*(SELECT|WITH)\b")


def _arguments(text: str, start: int) -> list[str]:
    """The top-level arguments of the call whose `(` is just before `start`."""
    depth, current, found = 0, [], []
    for ch in text[start:]:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth == 0:
            break
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            found.append("".join(current))
            current = []
        else:
            current.append(ch)
    found.append("".join(current))
    return [arg.strip() for arg in found]


def problems_in(sql: str) -> list[str]:
    """What in one SQL text may reach the attached records instead of main."""
    if not _SQL.match(sql):
        return []  # a message, not a query
    found = []
    for match in _SCHEMA_PRAGMAS.finditer(sql):
        args = _arguments(sql, match.end())
        if len(args) < 2 or not args[-1]:
            found.append(f"{match.group(0)}{', '.join(args)}) has no schema argument")
    filtered = re.search(r"\bschema\s*(=|IN\b)", sql, re.IGNORECASE)
    if _TABLE_LIST.search(sql) and not filtered:
        found.append("pragma_table_list is not filtered on schema")
    for match in _CATALOG.finditer(sql):
        found.append(f"{match.group(1)} is not spelled main.{match.group(1)}")
    return found


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Each string constant and f-string (its constant parts joined) with its line."""
    found: list[tuple[int, str]] = []
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v for v in node.values if isinstance(v, ast.Constant)]
            inside |= {id(v) for v in parts}
            found.append((node.lineno, "".join(str(v.value) for v in parts)))
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in inside:
            found.append((node.lineno, str(node.value)))
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            ids.add(first.value.lineno)
    return ids


def catalog_problems(source: str) -> list[tuple[int, str]]:
    """(line, problem) of each query of a module's source that may reach the records."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    return [
        (line, problem)
        for line, text in _strings(tree)
        if line not in skipped
        for problem in problems_in(text)
    ]


@pytest.mark.parametrize(
    ("sql", "problems"),
    [
        ("SELECT name FROM pragma_table_info(?, 'main')", 0),
        ("SELECT name FROM pragma_table_list WHERE schema IN ('main', ?)", 0),
        ("SELECT name FROM pragma_table_list WHERE type = 'table'", 1),
        ("SELECT name FROM pragma_table_info(?)", 1),
        ("SELECT name FROM PRAGMA_TABLE_XINFO(?)", 1),
        ("SELECT name FROM pragma_table_xinfo(m.name, 'main')", 0),
        ("SELECT name FROM pragma_index_list( ? , 'main' )", 0),
        ("SELECT name FROM pragma_index_info(?) ORDER BY seqno", 1),
        ("SELECT name FROM pragma_index_xinfo(?)", 1),
        ('SELECT "table" FROM pragma_foreign_key_list(t.name)', 1),
        ("SELECT fkid FROM pragma_foreign_key_check(?)", 1),
        ("SELECT fkid FROM pragma_foreign_key_check(?, 'main')", 0),
        ("SELECT 1 FROM pragma_table_info(lower(?))", 1),
        ("SELECT 1 FROM pragma_table_info(lower(?), 'main')", 0),
        ("SELECT 1 FROM pragma_table_info(?, )", 1),
        ("SELECT name FROM pragma_table_list WHERE type = 'shadow'", 1),
        ("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'", 0),
        ("SELECT name FROM pragma_table_list(?) WHERE schema = ?", 0),
        ("SELECT sql FROM sqlite_schema WHERE type = 'view'", 1),
        ("SELECT sql FROM sqlite_master", 1),
        ("SELECT sql FROM main.sqlite_schema", 0),
        ("SELECT name FROM pragma_function_list", 0),
        ("use pragma_table_info('t') in read_query", 0),  # advice, not a query
        ("or run (SELECT * FROM pragma_table_info('t'))", 0),
        ("(SELECT * FROM pragma_table_info('t'))", 1),
        ("\n    WITH x AS (SELECT 1) SELECT * FROM pragma_table_info(?)", 1),
        ("SELECT 1", 0),
    ],
)
def test_the_check_reads_each_shape(sql: str, problems: int) -> None:
    assert len(problems_in(sql)) == problems


def test_the_check_reads_strings_and_f_strings_of_a_module() -> None:
    source = (
        '"""SELECT name FROM pragma_table_info(?) in a docstring is prose."""\n'
        'A = "SELECT name FROM pragma_table_info(?)"\n'
        "B = f\"SELECT {x} FROM pragma_index_list(?, 'main')\"\n"
        'C = f"SELECT {x} FROM sqlite_schema"\n'
        'D = ("SELECT name FROM pragma_table_xinfo("\n    "?)")\n'
        "def f():\n"
        '    """SELECT 1 FROM sqlite_master, in a docstring."""\n'
        '    return "SELECT 1 FROM sqlite_master"\n'
    )
    assert sorted(line for line, _ in catalog_problems(source)) == [2, 4, 5, 9]


def test_there_are_agent_modules_to_read() -> None:
    names = {path.name for path in AGENT_MODULES}
    assert {"authorizer.py", "hidden_facts.py", "keys.py", "introspect.py"} <= names


@pytest.mark.parametrize("path", AGENT_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_every_catalog_query_on_an_agent_connection_names_main(path: Path) -> None:
    assert catalog_problems(path.read_text(encoding="utf-8")) == []
