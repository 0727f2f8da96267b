"""Whether a WHERE can filter: does it name a column of the table the statement changes?

An UPDATE whose WHERE names no column of its table (`WHERE 1=1`, `WHERE ?`, an uncorrelated
subquery, `UPDATE t ... FROM o WHERE o.k = 1`) rewrites every row, like one without WHERE.
Preflight's tokens catch a WHERE that names nothing at all; this module reads the rest with
sqlglot's parser and the schema's columns, resolving each name as SQLite does:

    scope         the statement's own (the target, then its FROM tables), and one per
                  subquery, whose FROM tables and result aliases come first
    q.c           the innermost scope with a table exposed as q (its alias, else its name)
    c             the innermost scope with a table that has a column c; a scope holding a
                  table of unknown columns (a view it cannot list, a subquery with `*`)
                  stops the search there: c may be that table's
    rowid         `rowid`, `oid`, `_rowid_` (unless declared columns): the scope's tables
    the WHERE     filters when an AND has one filtering operand, an OR has only filtering
                  operands (`id = 1 OR 1` does not), NOT swapping the two; any other
                  expression filters when it names a column resolved to the target

A name that resolves to nothing counts for nothing: SQLite refuses it anyway. Everything in
doubt counts as no filter, so the refusal errs towards sending the statement to
destructive_query. sqlglot reads a copy of the text in which each parameter SQLite sees
(`?1`, `$v(id)`, `@p`) is a plain `?` and `UPDATE OR <action>` is plain `UPDATE`, so its
tree matches SQLite's reading there; a column counts only where sqlglot's name falls on a
token SQLite reads as a name. The decision is pure: the parse and the columns come in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import bounded_cache, sqlite_tokens, word

__all__ = ["ROWID_NAMES", "Change", "TableColumns", "read_change", "where_filters"]

ROWID_NAMES = frozenset({"rowid", "oid", "_rowid_"})
# folded table (or view, or table-valued function) name -> its folded column names, hidden
# ones included (`pragma_table_xinfo`); a name missing here has unknown columns
TableColumns = Mapping[str, frozenset[str]]
_PARAMETER_MARKS = "?$@:#"


@dataclass(frozen=True)
class Change:
    """An UPDATE or DELETE as sqlglot read it, and the names whose columns it needs."""

    tree: exp.Update | exp.Delete
    target: str  # folded name of the table changed
    tables: frozenset[str]  # folded names of every table, view, CTE and function in FROM
    spans: frozenset[tuple[int, int]]  # (start, end) of each token SQLite reads


def _is_parameter(token: Token) -> bool:
    return token.token_type == TokenType.PLACEHOLDER or (
        token.token_type == TokenType.VAR and token.text[:1] in _PARAMETER_MARKS
    )


def _parse_text(sql: str, tokens: list[Token]) -> str:
    """`sql` with SQLite's parameters as `?` and `UPDATE OR x` as `UPDATE`, same length."""
    chars = list(sql)

    def blank(start: int, end: int, keep: str = "") -> None:
        chars[start : end + 1] = list(keep.ljust(end + 1 - start))

    for token, following in itertools.zip_longest(tokens, tokens[1:]):
        if not _is_parameter(token):
            continue
        end = token.end
        if following is not None and following.token_type == TokenType.NUMBER:
            # sqlglot splits ?NNN in two; a number after any other parameter, or after a
            # space, is a syntax error to SQLite, so taking it in changes no verdict
            end = following.end
        blank(token.start, end, "?")
    # the first UPDATE is the verb: no other may stand before it but in a quoted name
    for verb, conflict, action in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if word(verb) == "UPDATE":
            if word(conflict) == "OR":
                blank(conflict.start, action.end)
            break
    return "".join(chars)


def _table_name(table: exp.Table) -> str:
    """A FROM item's name: the table's, or the table-valued function's (`json_each`)."""
    if isinstance(table.this, exp.Func):
        function = table.this
        name = function.name if isinstance(function, exp.Anonymous) else function.sql_name()
        return fold_name(name)
    return fold_name(table.name)


@bounded_cache
def read_change(sql: str) -> Change | None:
    """The UPDATE or DELETE `sql` holds, read by sqlglot; None for any other statement, or
    when sqlglot cannot read it (the caller then falls back, see `engine.running.where_check`)."""
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return None
    try:
        trees = sqlglot.parse(_parse_text(sql, tokens), dialect="sqlite")
    except Exception:  # any failure of sqlglot's means it cannot read this text
        return None
    statements = [tree for tree in trees if tree is not None]
    if len(statements) != 1 or not isinstance(statements[0], (exp.Update, exp.Delete)):
        return None
    tree = statements[0]
    if not isinstance(tree.this, exp.Table):
        return None
    tables = frozenset(_table_name(table) for table in tree.find_all(exp.Table))
    spans = frozenset((token.start, token.end) for token in tokens)
    return Change(tree, _table_name(tree.this), tables, spans)


@dataclass(frozen=True)
class _Source:
    """A table as a scope sees it: the name it is exposed as, and its columns if known."""

    exposed: str
    schema: str | None
    columns: frozenset[str] | None
    target: bool = False


@dataclass(frozen=True)
class _Scope:
    sources: tuple[_Source, ...]
    aliases: frozenset[str] = frozenset()


def _has_column(source: _Source, name: str) -> bool:
    return source.columns is not None and (name in source.columns or name in ROWID_NAMES)


def _alias(node: exp.Expr) -> str:
    return fold_name(node.alias) if node.alias else ""


def _output_names(query: exp.Expr) -> frozenset[str] | None:
    """The column names a subquery gives, or None when they are not all plain names."""
    while isinstance(query, exp.SetOperation):  # a compound takes its first SELECT's names
        query = query.this
    if not isinstance(query, exp.Select):
        return None
    names = set()
    for projection in query.expressions:
        if isinstance(projection, exp.Alias):
            names.add(fold_name(projection.alias))
        elif isinstance(projection, exp.Column) and not isinstance(projection.this, exp.Star):
            names.add(fold_name(projection.name))
        else:
            return None  # `*`, or an expression SQLite names after its text
    return frozenset(names)


def _from_items(holder: exp.Expr) -> Iterator[exp.Expr]:
    """The tables and subqueries of a FROM clause and its joins, not what is inside them."""
    pending: list[exp.Expr] = []
    if (frm := holder.args.get("from_")) is not None:
        pending.append(frm.this)
    pending += [join.this for join in holder.args.get("joins") or []]
    while pending:
        item = pending.pop(0)
        yield item
        pending += [join.this for join in item.args.get("joins") or []]


class _Resolver:
    """Resolves the WHERE's columns of one statement, as SQLite would, against `columns`."""

    def __init__(self, change: Change, columns: TableColumns) -> None:
        self.change = change
        self.columns = columns

    def _ctes(self, node: exp.Expr) -> dict[str, frozenset[str] | None]:
        """The CTEs visible at `node`: its own WITH and those of the queries around it."""
        visible: dict[str, frozenset[str] | None] = {}
        at: exp.Expr | None = node
        while at is not None:
            with_ = at.args.get("with_")
            for cte in with_.expressions if isinstance(with_, exp.With) else []:
                name = _alias(cte)
                listed = cte.args["alias"].columns  # sqlglot gives every CTE its alias
                names = frozenset(fold_name(c.name) for c in listed) if listed else None
                visible.setdefault(name, names or _output_names(cte.this))
            at = at.parent
        return visible

    def _source(self, item: exp.Expr, ctes: Mapping[str, frozenset[str] | None]) -> _Source:
        if isinstance(item, exp.Table):
            name = _table_name(item)
            schema = fold_name(item.db) if item.db else None
            exposed = _alias(item) or name
            if schema is None and name in ctes:
                return _Source(exposed, None, ctes[name])
            return _Source(exposed, schema, self.columns.get(name))
        if isinstance(item, exp.Subquery):  # SQLite takes no column list after its alias
            return _Source(_alias(item), None, _output_names(item.this))
        return _Source(_alias(item), None, None)  # VALUES, ...: columns not read here

    def _top(self) -> _Scope:
        """The statement's own scope: its target, then the tables of UPDATE ... FROM (which
        change a verdict only when one is exposed under the target's name: ambiguous)."""
        tree, ctes = self.change.tree, self._ctes(self.change.tree)
        table = tree.this
        schema = fold_name(table.db) if table.db else None
        columns = self.columns.get(self.change.target)
        target = _Source(_alias(table) or self.change.target, schema, columns, True)
        return _Scope((target, *(self._source(item, ctes) for item in _from_items(tree))))

    def _scope(self, select: exp.Select, in_projection: bool) -> _Scope:
        ctes = self._ctes(select)
        sources = tuple(self._source(item, ctes) for item in _from_items(select))
        if in_projection:  # a result alias names nothing inside the result list itself
            return _Scope(sources)
        aliases = (fold_name(p.alias) for p in select.expressions if isinstance(p, exp.Alias))
        return _Scope(sources, frozenset(aliases))

    def _scopes_of(self, column: exp.Column) -> list[_Scope]:
        """The scopes `column` is resolved in, innermost first, the statement's last."""
        scopes: list[_Scope] = []
        child: exp.Expr = column
        at = column.parent
        while at is not None:
            if isinstance(at, exp.Select):
                scopes.append(self._scope(at, child.arg_key == "expressions"))
            child, at = at, at.parent
        return [*scopes, self._top()]

    def _read_as_sqlite_reads(self, column: exp.Column) -> bool:
        """Whether each part of the name stands where SQLite reads a name token."""
        for part in column.parts:
            start, end = part.meta.get("start"), part.meta.get("end")
            if (start, end) not in self.change.spans:
                return False
        return True

    def is_target_column(self, column: exp.Column) -> bool:
        # sqlglot drew a boundary SQLite does not (`t.*` has none at all), or this is
        # `x IN t` (only IN has a field), where t names a table
        if not self._read_as_sqlite_reads(column) or column.arg_key == "field":
            return False
        name, table = fold_name(column.name), fold_name(column.table)
        schema = fold_name(column.db) if column.db else None
        for scope in self._scopes_of(column):
            if table:
                hits = [
                    s
                    for s in scope.sources
                    if s.exposed == table and schema in (None, s.schema or "main")
                ]
                if hits:
                    return len(hits) == 1 and hits[0].target and _has_column(hits[0], name)
                continue
            having = [s for s in scope.sources if s.columns is not None and name in s.columns]
            if having:
                return any(s.target for s in having)  # the target's, or ambiguous (refused)
            if name in ROWID_NAMES and scope.sources:
                return any(s.target for s in scope.sources)
            if name in scope.aliases or any(s.columns is None for s in scope.sources):
                return False
        return False

    def names_target(self, node: exp.Expr) -> bool:
        return any(self.is_target_column(column) for column in node.find_all(exp.Column))

    def filters(self, node: exp.Expr, negated: bool = False) -> bool:
        node = node.unnest()  # (...)
        if isinstance(node, exp.Not):
            return self.filters(node.this, not negated)
        if isinstance(node, (exp.And, exp.Or)):
            every = isinstance(node, exp.Or) != negated  # OR, or NOT (... AND ...)
            # a chain of one connector, taken flat: a long OR is no deep recursion
            parts = [self.filters(part, negated) for part in node.flatten()]
            return all(parts) if every else any(parts)
        return self.names_target(node)


def where_filters(change: Change, columns: TableColumns) -> bool:
    """Whether the WHERE of `change` names a column of its target, so that it can filter.

    `columns` holds the folded columns of the tables `change.tables` names (those missing
    are unknown). Pure: the same statement and columns give the same answer.
    """
    where = change.tree.args.get("where")
    if not isinstance(where, exp.Where):
        return False
    return _Resolver(change, columns).filters(where.this)
