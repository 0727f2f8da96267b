"""Whether a read's answer is the same in whatever order its rows are visited. Pure.

A plan that walks an index over a hidden column visits rows in the order of the hidden
values (`engine.rules.hidden_checks`). The read may still run when nothing it answers can depend
on that order: it is one SELECT of counts, over plain row sources (sqlglot reads the text;
views and CTEs are read from their own text):

    counts      SELECT <count(*), count(x), count(DISTINCT x), with literals, parameters,
                operators and scalar functions around them> FROM <sources>
                [WHERE <condition>] [ORDER BY ...] [LIMIT n] [OFFSET n]: one row
    sources     tables, views, CTEs and subqueries, joined with ON or USING, whose every
                SELECT is plain: no aggregate, window function, DISTINCT, GROUP BY, HAVING,
                LIMIT or OFFSET, and compound only by UNION ALL
    everywhere  no subquery inside an expression; no function SQLite knows as an aggregate
                or window function but count (`functions`: the names SQLite's authorizer
                reported for the statement, its views included)

Each of those others can answer with the order: min and max keep the first of values that
compare equal (1 and 1.0; 'A' and 'a' under NOCASE), a sum of floating-point numbers
depends on the order it adds them in, group_concat and its kind list the rows in order,
DISTINCT, GROUP BY, UNION and INTERSECT keep one row of those that compare equal, LIMIT,
OFFSET and a scalar subquery keep the first rows, EXISTS and IN stop at the first match
(and so decide which rows are evaluated, and which one fails first). Anything else, and text
sqlglot cannot read, answers False: the statement is refused as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sqlgate.engine.names import fold_name

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["order_free"]

_NESTING = 16  # views, CTEs and subqueries read within one another, at most
# the clauses each node may have (an argument that holds anything); any other refuses
_TOP_KEYS = frozenset({"expressions", "from_", "joins", "where", "order", "limit", "offset"})
_PLAIN_KEYS = frozenset({"expressions", "from_", "joins", "where", "order"})
_JOIN_KEYS = frozenset({"this", "on", "using", "kind", "side", "method"})
_TABLE_KEYS = frozenset({"this", "db", "alias", "indexed"})
_UNION_KEYS = frozenset({"this", "expression"})  # UNION ALL: `distinct` holds nothing


def order_free(
    sql: str, views: Mapping[str, str], functions: Iterable[str], aggregates: frozenset[str]
) -> bool:
    """Whether `sql` answers alike in any row order (above). `views`: each view's folded
    name and its CREATE VIEW text; `aggregates`: SQLite's aggregate and window functions."""
    if {fold_name(name) for name in functions} & aggregates - {"count"}:
        return False
    return _Judge(views).counts(_parsed(sql), {})


def _parsed(sql: str) -> exp.Expr | None:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except (SqlglotError, RecursionError):
        return None
    return trees[0] if len(trees) == 1 else None


def _extra(node: exp.Expr, allowed: frozenset[str]) -> bool:
    """Whether `node` has a clause (an argument that holds anything) not in `allowed`."""
    return any(value for key, value in node.args.items() if key not in allowed | {"with_"})


def _clauses(node: exp.Expr, *keys: str) -> list[exp.Expr]:
    """The clauses `keys` of `node` that it has."""
    return [node.args[key] for key in keys if node.args.get(key) is not None]


class _Judge:
    def __init__(self, views: Mapping[str, str]) -> None:
        self.views = views
        self.depth = 0

    def counts(self, node: exp.Expr | None, ctes: dict[str, exp.Expr]) -> bool:
        """`node` is the one-row SELECT of counts above."""
        from sqlglot import exp

        if not isinstance(node, exp.Select) or _extra(node, _TOP_KEYS):
            return False
        scope = self._with(node, ctes)
        shown = [*node.expressions, *_clauses(node, "order", "limit", "offset")]
        return (
            scope is not None
            and any(isinstance(n, exp.Count) for e in node.expressions for n in e.walk())
            and all(_counted(clause) for clause in shown)
            and all(self._expression(clause) for clause in [*shown, *_clauses(node, "where")])
            and self._sources(node, scope)
        )

    def plain(self, node: exp.Expr | None, ctes: dict[str, exp.Expr]) -> bool:
        """Every SELECT of `node` is plain (above)."""
        from sqlglot import exp

        if isinstance(node, exp.Subquery):  # a parenthesized arm of a UNION ALL
            return self._source(node, ctes)
        if isinstance(node, exp.Union):
            return (
                not _extra(node, _UNION_KEYS)
                and self.plain(node.this, ctes)
                and self.plain(node.expression, ctes)
            )
        if not isinstance(node, exp.Select) or _extra(node, _PLAIN_KEYS):
            return False
        scope = self._with(node, ctes)
        clauses = [*node.expressions, *_clauses(node, "where", "order")]
        return (
            scope is not None
            and not any(isinstance(n, exp.AggFunc) for clause in clauses for n in clause.walk())
            and all(self._expression(clause) for clause in clauses)
            and self._sources(node, scope)
        )

    def _with(self, node: exp.Expr, ctes: dict[str, exp.Expr]) -> dict[str, exp.Expr] | None:
        """The CTE names `node` sees, each with its query; None when its WITH is recursive."""
        clause = node.args.get("with_")
        if clause is None:
            return ctes
        scope = dict(ctes)
        for cte in clause.expressions:
            scope[fold_name(cte.alias)] = cte.this
        return None if clause.args.get("recursive") else scope

    def _expression(self, node: exp.Expr) -> bool:
        """No subquery and no window in `node` (aggregates are judged by the caller)."""
        from sqlglot import exp

        return not any(isinstance(n, (exp.Query, exp.Subquery, exp.Window)) for n in node.walk())

    def _sources(self, node: exp.Expr, ctes: dict[str, exp.Expr]) -> bool:
        joins = node.args.get("joins") or []
        sources = [from_.this for from_ in _clauses(node, "from_")]
        sources += [join.this for join in joins]
        return (
            not any(_extra(join, _JOIN_KEYS) for join in joins)
            and all(self._expression(on) for join in joins for on in _clauses(join, "on"))
            and all(self._source(source, ctes) for source in sources)
        )

    def _source(self, node: exp.Expr, ctes: dict[str, exp.Expr]) -> bool:
        from sqlglot import exp

        if _extra(node, _TABLE_KEYS):
            return False
        if isinstance(node, exp.Subquery):
            return self._nested(node.this, ctes)
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            return False  # a table-valued function, VALUES, ...
        name = fold_name(node.name)
        if name in ctes and not node.args.get("db"):
            return self._nested(ctes[name], {})  # a CTE's names are its own to resolve
        if name in self.views:
            view = _parsed(self.views[name])
            return self._nested(view.args.get("expression") if view is not None else None, {})
        return True  # a table

    def _nested(self, node: exp.Expr | None, ctes: dict[str, exp.Expr]) -> bool:
        self.depth += 1
        try:
            return self.depth <= _NESTING and self.plain(node, ctes)
        finally:
            self.depth -= 1


def _counted(node: exp.Expr) -> bool:
    """Every column `node` reads is inside a count, and its only aggregate is count."""
    from sqlglot import exp

    return not any(
        (isinstance(n, exp.AggFunc) and not isinstance(n, exp.Count))
        or (isinstance(n, exp.Column) and n.find_ancestor(exp.Count) is None)
        for n in node.walk()
    )
