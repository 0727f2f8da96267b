"""The mutation points of a module's source: where one expression can be changed, and how.

    operator    change
    compare     == <-> !=, < <-> >=, > <-> <=, in <-> not in, is <-> is not; < <-> <=, > <-> >=
    boolop      drop one operand of `and`/`or`; `and` <-> `or`
    not         `not x` -> `x`
    binop       `a OP b` -> `a`, -> `b`
    return      `return x` -> `return None`
    raise       `raise ...` -> `pass`
    constant    int/float n -> n + 1; True <-> False; a one-word string s -> "XXsXX"
    member      drop one member of a set literal, or of the tuple/list right of `in`

Not mutated: docstrings, annotations, decorators, `assert`, `__all__`, imports, f-strings,
`if TYPE_CHECKING:` blocks, and what a `raise` raises (messages are pinned by the tests that
match them); strings with a space or punctuation (prose and SQL text: a change there is a
message change or a syntax error, not a change of logic).

A mutant is found again by its index in a fresh parse of the same source; its key (function,
line text, change) stays the same while the code around it moves, so a list of equivalent
mutants keyed that way survives edits elsewhere in the module.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
    ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
}  # fmt: skip
SYMBOL: dict[type[ast.AST], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.And: "and", ast.Or: "or",
}  # fmt: skip
SKIPPED_FIELDS = frozenset({"annotation", "returns", "decorator_list", "type_comment"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Mutant:
    """One change to a module. `lines` is the range a test must execute to reach it (the
    header of the innermost statement around it); `in_function` is False for code that runs
    when the module is imported, which every test reaches."""

    index: int
    line: int
    function: str  # qualified name of the enclosing def/class, "<module>" at top level
    operator: str
    change: str  # what changed, e.g. "`a < b`: `<` -> `>=`"; " (2)" on a repeat in a line
    text: str  # the source line, stripped
    lines: tuple[int, int]
    in_function: bool
    function_lines: tuple[int, int]  # the innermost def around it, (0, 0) at module level

    def key(self) -> tuple[str, str, str]:
        return (self.function, self.text, self.change)


@dataclass
class _Point:
    line: int
    function: str
    operator: str
    change: str
    lines: tuple[int, int]
    in_function: bool
    function_lines: tuple[int, int]
    apply: Callable[[], None]


def _show(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _header(statement: ast.stmt) -> tuple[int, int]:
    """The lines of a statement up to its first nested block (all of a simple statement)."""
    end = statement.end_lineno or statement.lineno
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        block = getattr(statement, name, None)
        if (
            isinstance(block, list)
            and block
            and isinstance(block[0], (ast.stmt, ast.excepthandler))
        ):
            end = min(end, max(statement.lineno, block[0].lineno - 1))
    return (statement.lineno, end)


class _Finder:
    """Every mutation point of a tree, in a fixed depth-first order."""

    def __init__(self) -> None:
        self.points: list[_Point] = []
        self.scope: list[str] = []
        self.bodies: list[tuple[int, int]] = []  # the functions whose body we are in
        self.statement: tuple[int, int] = (0, 0)
        self.members: set[int] = set()  # ids of constants that are dropped, not changed

    def add(self, node: ast.AST, operator: str, change: str, apply: Callable[[], None]) -> None:
        line = getattr(node, "lineno", 0)
        function = ".".join(self.scope) or "<module>"
        body = self.bodies[-1] if self.bodies else (0, 0)
        point = _Point(
            line, function, operator, change, self.statement, bool(self.bodies), body, apply
        )
        self.points.append(point)

    def visit(self, node: ast.AST, parent: ast.AST | None = None) -> None:
        if isinstance(node, (ast.Assert, ast.JoinedStr, ast.Import, ast.ImportFrom)):
            return
        if _is_docstring(node) or _is_all(node) or _is_type_checking(node):
            return
        outer = self.statement
        if isinstance(node, ast.stmt):
            self.statement = _header(node)
        named = isinstance(node, (*FUNCTIONS, ast.ClassDef))
        if named:
            self.scope.append(node.name)  # type: ignore[attr-defined]
        self._mutations(node, parent)
        if not isinstance(node, ast.Raise):  # what a raise raises is a message
            for name, value in ast.iter_fields(node):
                if name in SKIPPED_FIELDS:
                    continue
                inside = isinstance(node, FUNCTIONS) and name == "body"
                if inside:
                    self.bodies.append((node.lineno, node.end_lineno or node.lineno))  # type: ignore[attr-defined]
                for child in value if isinstance(value, list) else [value]:
                    if isinstance(child, ast.AST):
                        self.visit(child, node)
                if inside:
                    self.bodies.pop()
        if named:
            self.scope.pop()
        self.statement = outer

    def _mutations(self, node: ast.AST, parent: ast.AST | None) -> None:
        if isinstance(node, ast.Compare):
            self._compare(node)
        elif isinstance(node, ast.BoolOp):
            self._boolop(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            _replace(self, node, node.operand, "not", f"`{_show(node)}` -> operand")
        elif isinstance(node, ast.BinOp):
            _replace(self, node, node.left, "binop", f"`{_show(node)}` -> left operand")
            _replace(self, node, node.right, "binop", f"`{_show(node)}` -> right operand")
        elif isinstance(node, ast.Return) and not _is_none(node.value):
            self.add(node, "return", "`return x` -> `return None`", _setter(node, "value", None))
        elif isinstance(node, ast.Raise):
            self.add(node, "raise", "`raise` -> `pass`", _to_pass(node))
        elif isinstance(node, ast.Constant) and id(node) not in self.members:
            self._constant(node)
        if isinstance(node, ast.Set) or _is_in_operand(node, parent):
            self._members(node)

    def _compare(self, node: ast.Compare) -> None:
        for at, op in enumerate(node.ops):
            for table in (NEGATED, BOUNDARY):
                other = table.get(type(op))
                if other is not None:
                    change = f"`{_show(node)}`: `{SYMBOL[type(op)]}` -> `{SYMBOL[other]}`"
                    self.add(node, "compare", change, _op_setter(node, at, other))

    def _boolop(self, node: ast.BoolOp) -> None:
        word = SYMBOL[type(node.op)]
        for at, value in enumerate(node.values):
            rest = [v for i, v in enumerate(node.values) if i != at]
            change = f"drop `{_show(value)}` from `{word}`"
            if len(rest) == 1:
                _replace(self, node, rest[0], "boolop", change)
            else:
                self.add(node, "boolop", change, _setter(node, "values", rest))
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        change = f"`{_show(node)}`: `{word}` -> `{SYMBOL[type(other)]}`"
        self.add(node, "boolop", change, _setter(node, "op", other))

    def _constant(self, node: ast.Constant) -> None:
        value = node.value
        new: object
        if isinstance(value, bool):
            new = not value
        elif isinstance(value, (int, float)):
            new = value + 1
        elif isinstance(value, str) and WORD.fullmatch(value):
            new = f"XX{value}XX"
        else:
            return
        self.add(node, "constant", f"{value!r} -> {new!r}", _setter(node, "value", new))

    def _members(self, node: ast.AST) -> None:
        elements: list[ast.expr] = node.elts  # type: ignore[attr-defined]
        if len(elements) < 2:
            return
        self.members.update(id(element) for element in elements)
        for at, element in enumerate(elements):
            rest = [e for i, e in enumerate(elements) if i != at]
            self.add(
                element, "member", f"drop member `{_show(element)}`", _setter(node, "elts", rest)
            )


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_all(node: ast.AST) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")


def _is_none(node: ast.AST | None) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def _is_in_operand(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, (ast.Tuple, ast.List))
        and isinstance(parent, ast.Compare)
        and any(
            isinstance(op, (ast.In, ast.NotIn)) and right is node
            for op, right in zip(parent.ops, parent.comparators, strict=True)
        )
    )


def _setter(node: ast.AST, name: str, value: object) -> Callable[[], None]:
    def apply() -> None:
        setattr(node, name, value)

    return apply


def _op_setter(node: ast.Compare, at: int, op: type[ast.cmpop]) -> Callable[[], None]:
    def apply() -> None:
        node.ops[at] = op()

    return apply


def _to_pass(node: ast.Raise) -> Callable[[], None]:
    def apply() -> None:
        node.__class__ = ast.Pass  # type: ignore[assignment]
        for name in ("exc", "cause"):
            if hasattr(node, name):
                delattr(node, name)

    return apply


def _replace(finder: _Finder, node: ast.expr, by: ast.expr, operator: str, change: str) -> None:
    """Turn `node` into a copy of `by` in place (its parent keeps pointing at the same object)."""

    def apply() -> None:
        replacement = copy.deepcopy(by)
        node.__class__ = replacement.__class__
        node.__dict__.clear()
        node.__dict__.update(replacement.__dict__)

    finder.add(node, operator, change, apply)


def _points(tree: ast.Module) -> list[_Point]:
    finder = _Finder()
    finder.visit(tree)
    return finder.points


def find_mutants(source: str) -> list[Mutant]:
    """Every mutant of a module's source, numbered in a fixed order, each with a unique key."""
    lines = source.splitlines()
    mutants: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    for at, p in enumerate(_points(ast.parse(source))):
        text = lines[p.line - 1].strip()
        key = (p.function, text, p.change)
        seen[key] = seen.get(key, 0) + 1
        change = p.change if seen[key] == 1 else f"{p.change} ({seen[key]})"
        mutants.append(
            Mutant(
                at,
                p.line,
                p.function,
                p.operator,
                change,
                text,
                p.lines,
                p.in_function,
                p.function_lines,
            )
        )
    return mutants


def mutated_tree(source: str, index: int) -> ast.Module:
    """The module's tree with mutant `index` applied (line numbers kept)."""
    tree = ast.parse(source)
    _points(tree)[index].apply()
    return ast.fix_missing_locations(tree)


def mutated_code(source: str, path: str, index: int) -> CodeType:
    """The code object of the module with mutant `index` applied."""
    return compile(mutated_tree(source, index), path, "exec")


def data_code(source: str, path: str, index: int) -> CodeType:
    """The module's top-level statements other than def and class, mutant `index` applied:
    run in the loaded module's namespace, it rebinds its data names and keeps its functions
    and classes (so no other module holds a stale class)."""
    tree = mutated_tree(source, index)
    tree.body = [s for s in tree.body if not isinstance(s, (*FUNCTIONS, ast.ClassDef))]
    return compile(tree, path, "exec")


def find_code(code: CodeType, name: str, first_line: int) -> CodeType | None:
    """The code object of the function `name` defined at `first_line`, anywhere in `code`."""
    for const in code.co_consts:
        if isinstance(const, CodeType):
            if const.co_name == name and const.co_firstlineno == first_line:
                return const
            found = find_code(const, name, first_line)
            if found is not None:
                return found
    return None
