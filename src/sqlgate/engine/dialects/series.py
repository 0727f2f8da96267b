"""PostgreSQL's `generate_series(start, stop[, step])` in a FROM, as a recursive CTE.

SQLite's own generate_series is an extension that agent connections do not load, and none
is registered (a view using it would break in the application's own connections). The
series becomes a CTE of the same name and column: `FROM generate_series(1, 3) AS g(n)` reads
`FROM g` with `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n + 1 <= 3)`.
A series of timestamps steps with datetime() by its interval.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["series_tables"]

_SERIES = (exp.GenerateSeries, exp.ExplodingGenerateSeries)


def _numbers(start: exp.Expr, stop: exp.Expr, step: exp.Expr | None) -> bool:
    """Whether the series counts (its step a number, up or down), not dates."""
    return step is None or not isinstance(step, exp.Interval)


def _recursive(name: str, column: str, call: exp.Expr) -> exp.CTE:
    from sqlgate.engine.dialects.trees import NoRewrite, from_sqlite, interval_modifiers

    start, stop = call.args.get("start"), call.args.get("end")
    step = call.args.get("step")
    to = step.args.get("to") if isinstance(step, exp.Cast) else None
    interval = isinstance(to, exp.DataType) and to.this == exp.DataType.Type.INTERVAL
    if step is not None and interval:
        step = exp.Interval(this=step.this)  # '1 day'::interval
    if start is None or stop is None:
        raise NoRewrite("generate_series without its bounds")
    quoted = exp.to_identifier(column).sql(dialect="sqlite")
    table = exp.to_identifier(name).sql(dialect="sqlite")
    first, last = start.sql(dialect="sqlite"), stop.sql(dialect="sqlite")
    if _numbers(start, stop, step):
        by = "1" if step is None else step.sql(dialect="sqlite")
        down = step is not None and by.lstrip("(").startswith("-")
        if step is not None and not isinstance(step, (exp.Literal, exp.Neg)):
            raise NoRewrite("a series step that is not a number")
        comparison = ">=" if down else "<="
        if call.args.get("is_end_exclusive"):  # DuckDB's range(): the stop is left out
            comparison = comparison[0]
        body = (
            f"SELECT {first} UNION ALL SELECT {quoted} + {by} FROM {table} "
            f"WHERE {quoted} + {by} {comparison} {last}"
        )
    else:
        assert isinstance(step, exp.Interval)
        modifiers = ", ".join(m.sql(dialect="sqlite") for m in interval_modifiers(step, 1))
        following = f"datetime({quoted}, {modifiers})"
        body = (
            f"SELECT datetime({first}) UNION ALL SELECT {following} FROM {table} "
            f"WHERE {following} <= datetime({last})"
        )
    alias = exp.TableAlias(this=exp.to_identifier(name), columns=[exp.to_identifier(column)])
    return exp.CTE(this=from_sqlite(body), alias=alias)


def series_tables(tree: exp.Expr) -> exp.Expr:
    """`tree` with each generate_series in a FROM or JOIN read from a recursive CTE."""
    from sqlgate.engine.dialects.trees import NoRewrite

    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if not isinstance(call, _SERIES):
            continue
        select = table.find_ancestor(exp.Select)
        if select is None or select.find_ancestor(exp.Select) is not None:
            raise NoRewrite("generate_series inside a subquery")
        alias = table.args.get("alias")
        name = alias.name if alias is not None and alias.name else "generate_series"
        columns = alias.columns if alias is not None else []
        column = columns[0].name if columns else name
        cte = _recursive(name, column, call)
        table.replace(exp.Table(this=exp.to_identifier(name)))
        existing = select.args.get("with_") or select.args.get("with")
        if existing is not None:
            existing.set("recursive", True)
            existing.append("expressions", cte)
        else:
            key = "with_" if "with_" in select.arg_types else "with"
            select.set(key, exp.With(expressions=[cte], recursive=True))
    return tree
