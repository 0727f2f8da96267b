"""Row changes written with another dialect's joins and upserts, in SQLite's forms.

    UPDATE t JOIN u ON c SET t.x = ...        UPDATE t SET x = ... FROM u WHERE c AND ...
    UPDATE a SET ... FROM t a JOIN u ON c     (SQL Server's: the same)
    DELETE FROM t USING u WHERE c             DELETE FROM t WHERE EXISTS (SELECT 1 FROM u
                                              WHERE c)
    DELETE t FROM t JOIN u ON c WHERE w       DELETE FROM t WHERE EXISTS (SELECT 1 FROM u
                                              WHERE c AND w)
    INSERT ... ON DUPLICATE KEY UPDATE        INSERT ... ON CONFLICT DO UPDATE SET x = excluded.x
    UPDATE t ... ORDER BY o LIMIT n           UPDATE t ... WHERE rowid IN (SELECT rowid FROM t
                                              WHERE ... ORDER BY o LIMIT n)

Only inner joins: an outer join's rows without a match have no SQLite form here.
"""

from __future__ import annotations

from sqlglot import exp

from sqlgate.engine.dialects.trees import NoRewrite, Notes

__all__ = ["delete_joined", "update_joined", "upsert"]


def _inner(join: exp.Join) -> exp.Expr | None:
    """The ON condition of an inner join; NoRewrite for any other join."""
    if join.side or join.kind not in ("", "INNER", "CROSS") or join.args.get("using"):
        raise NoRewrite("an outer join or USING in a row change")
    return join.args.get("on")


def _all(conditions: list[exp.Expr | None]) -> exp.Expr | None:
    kept = [c for c in conditions if c is not None]
    if not kept:
        return None
    found = kept[0]
    for condition in kept[1:]:
        found = exp.And(this=found, expression=condition)
    return found


def _bare_targets(assignments: list[exp.Expr]) -> list[exp.Expr]:
    """SET targets without their table (SQLite names the column alone)."""
    bare = []
    for assignment in assignments:
        target = assignment.this
        if isinstance(target, exp.Column) and target.table:
            assignment = assignment.copy()
            assignment.set("this", exp.column(target.name, quoted=target.this.quoted))
        bare.append(assignment)
    return bare


def _limited(node: exp.Expr) -> exp.Expr | None:
    """MySQL's UPDATE/DELETE ... ORDER BY ... LIMIT n (SQLite takes them only when built
    to): the rows chosen by rowid in a subquery of the same order and limit."""
    order, limit = node.args.get("order"), node.args.get("limit")
    table = node.this
    if limit is None or not isinstance(table, exp.Table) or table.args.get("joins"):
        return None
    chosen = exp.select("rowid").from_(table.copy())
    where = node.args.get("where")
    if where is not None:
        chosen = chosen.where(where.this.copy())
    if order is not None:
        chosen.set("order", order.copy())
    chosen.set("limit", limit.copy())
    rewritten = node.copy()
    rewritten.set("order", None)
    rewritten.set("limit", None)
    inside = exp.In(this=exp.column("rowid"), query=exp.Subquery(this=chosen))
    rewritten.set("where", exp.Where(this=inside))
    return rewritten


def update_joined(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    limited = _limited(node)
    if limited is not None:
        return limited
    table, source = node.this, node.args.get("from_") or node.args.get("from")
    joins = list(table.args.get("joins") or []) if isinstance(table, exp.Table) else []
    if not joins and source is None:
        return None
    if joins:  # MySQL: UPDATE t JOIN u ON c SET ...
        target = table.copy()
        target.set("joins", None)
        others, conditions = [j.this for j in joins], [_inner(j) for j in joins]
    else:  # SQL Server: UPDATE alias SET ... FROM t alias JOIN u ON c
        assert source is not None
        first = source.this
        if not isinstance(first, exp.Table):
            return None
        joined = list(first.args.get("joins") or source.args.get("joins") or [])
        if not joined or table.name not in (first.alias_or_name, first.name):
            return None
        target = first.copy()
        target.set("joins", None)
        others, conditions = [j.this for j in joined], [_inner(j) for j in joined]
    where = node.args.get("where")
    condition = _all([*conditions, where.this if where is not None else None])
    updated = exp.Update(
        this=target,
        expressions=_bare_targets(list(node.expressions)),
        from_=exp.From(this=others[0]),
        where=exp.Where(this=condition) if condition is not None else None,
    )
    if len(others) > 1:  # the further tables joined without a condition of their own
        origin = updated.args.get("from_")
        assert origin is not None
        origin.set("joins", [exp.Join(this=other) for other in others[1:]])
    return updated


def delete_joined(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    limited = _limited(node)
    if limited is not None:
        return limited
    using = list(node.args.get("using") or [])
    table = node.this
    joins = list(table.args.get("joins") or []) if isinstance(table, exp.Table) else []
    if not using and not joins:
        return None
    if node.args.get("tables") and len(node.args["tables"]) != 1:
        raise NoRewrite("a DELETE from several tables")
    where = node.args.get("where")
    conditions = [_inner(j) for j in joins]
    condition = _all([*conditions, where.this if where is not None else None])
    target = table.copy()
    target.set("joins", None)
    inner = exp.select("1").from_(*(using or [j.this for j in joins]))
    if condition is not None:
        inner = inner.where(condition)
    exists = exp.Exists(this=inner)
    return exp.Delete(this=target, where=exp.Where(this=exists))


def _excluded(node: exp.Expr, alias: str) -> exp.Expr:
    """MySQL's VALUES(col) and `new.col` (the row alias) as SQLite's `excluded.col`."""
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "VALUES":
        args = node.expressions
        if len(args) == 1 and isinstance(args[0], (exp.Column, exp.Identifier)):
            return exp.column(args[0].name, table="excluded")
    if isinstance(node, exp.Values) and len(node.expressions) == 1:
        only = node.expressions[0]
        inner = only.expressions[0] if isinstance(only, exp.Tuple) else only
        if isinstance(inner, exp.Column):
            return exp.column(inner.name, table="excluded")
    if isinstance(node, exp.Column) and alias and node.table == alias:
        return exp.column(node.name, table="excluded")
    return node


def upsert(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    conflict = node.args.get("conflict")
    if not isinstance(conflict, exp.OnConflict) or not conflict.args.get("duplicate"):
        return None
    if not isinstance(node.expression, exp.Values):
        raise NoRewrite("ON DUPLICATE KEY after a SELECT")
    values = node.expression
    alias = values.alias
    assignments = [a.transform(_excluded, alias) for a in conflict.expressions]
    rewritten = node.copy()
    if alias:
        plain = values.copy()
        plain.set("alias", None)
        rewritten.set("expression", plain)
    rewritten.set(
        "conflict",
        exp.OnConflict(action=exp.var("DO UPDATE"), expressions=_bare_targets(assignments)),
    )
    notes.append("ON CONFLICT DO UPDATE fires on any UNIQUE or PRIMARY KEY conflict")
    return rewritten
