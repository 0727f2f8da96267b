"""SQLite's own forms of what other dialects write, as changes to a sqlglot tree.

sqlglot's transpiler already knows many (`::type`, `ILIKE`, `GREATEST`, `TOP n`, ...); these
are the everyday ones it leaves as they are, or writes as something SQLite has not got:

    NOW(), GETDATE(), SYSDATE()      CURRENT_TIMESTAMP (UTC, as SQLite keeps it)
    DATE_TRUNC(unit, x)              datetime(x, 'start of month'), strftime('%Y-%m-%d %H:00:00', x)
    EXTRACT(part FROM x), YEAR(x)    CAST(strftime('%Y', x) AS INTEGER)
    x - INTERVAL '7 days'            datetime(x, '-7 days')
    DATE_ADD / DATE_SUB / DATEADD    datetime(x, '+1 days')
    DATEDIFF                         whole days between julianday()s
    CAST(x AS DATE), x::timestamp    date(x), datetime(x) (a CAST to DATE keeps only the year)
    SPLIT_PART(s, d, n)              substr() and instr() (n of 1 to 3)
    LEFT(s, n), RIGHT(s, n)          substr(s, 1, n), substr(s, -n)
    x = ANY(ARRAY[...])              x IN (...)
    generate_series(a, b[, step])    a recursive CTE of the same name and column
    TRUNCATE t                       DELETE FROM t
    information_schema.tables, ...   the same columns, read from sqlite_schema and pragmas
    FROM dual                        no FROM

A shape that cannot be written faithfully raises `NoRewrite`: no rewrite rather than one
that gives another result. Each change that alters meaning adds a few words to `notes`.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sqlgate.engine.dialects.catalogs import catalog_tables
from sqlgate.engine.dialects.changes import delete_joined, update_joined, upsert
from sqlgate.engine.dialects.functions import ANONYMOUS, FUNCTION_SHAPES
from sqlgate.engine.dialects.globs import regex_match
from sqlgate.engine.dialects.series import series_tables
from sqlgate.engine.dialects.trees import (
    NoRewrite,
    Notes,
    Shape,
    call,
    integer,
    interval_modifiers,
    part_of,
    strftime,
    string,
    unit_of,
)

__all__ = ["sqlite_shapes"]


UTC_NOTE = "CURRENT_TIMESTAMP is UTC text ('YYYY-MM-DD HH:MM:SS')"
_NOW = frozenset(
    {"NOW", "GETDATE", "SYSDATE", "SYSDATETIME", "GETUTCDATE", "UTC_TIMESTAMP", "LOCALTIMESTAMP"}
)
_TODAY = frozenset({"CURDATE", "TODAY", "UTC_DATE"})
_DATABASE = frozenset({"DATABASE", "SCHEMA", "CURRENT_DATABASE", "CURRENT_SCHEMA", "DB_NAME"})
# strftime's codes for the parts EXTRACT, DATE_PART and YEAR() name
_PARTS = {
    "YEAR": "%Y", "YEARS": "%Y", "Y": "%Y", "YYYY": "%Y", "YY": "%Y",
    "MONTH": "%m", "MONTHS": "%m", "MM": "%m", "M": "%m",
    "DAY": "%d", "DAYS": "%d", "DD": "%d", "D": "%d",
    "HOUR": "%H", "HOURS": "%H", "HH": "%H",
    "MINUTE": "%M", "MINUTES": "%M", "MI": "%M", "N": "%M",
    "SECOND": "%S", "SECONDS": "%S", "SS": "%S", "S": "%S",
    "DOW": "%w", "DAYOFWEEK_ISO": "%u", "ISODOW": "%u",
    "DOY": "%j", "DAYOFYEAR": "%j", "DY": "%j",
    "WEEK": "%V", "WEEKS": "%V", "WK": "%V", "WW": "%V", "ISOWEEK": "%V",
    "ISOYEAR": "%G",
}  # fmt: skip
# the units of intervals, as SQLite's date modifiers name them (a week is seven days)
# DATE_TRUNC: (a modifier of datetime(), or a strftime() pattern)
_TRUNC = {
    "YEAR": ("start of year", None),
    "MONTH": ("start of month", None),
    "DAY": ("start of day", None),
    "HOUR": (None, "%Y-%m-%d %H:00:00"),
    "MINUTE": (None, "%Y-%m-%d %H:%M:00"),
    "SECOND": (None, "%Y-%m-%d %H:%M:%S"),
}
# the codes SQLite's strftime() answers (3.54; any other makes it answer NULL)
_STRFTIME_CODES = frozenset("defgjklmpsuwFGHIJMPRSTUVWY%")


def _datelike(of: exp.Expr) -> exp.Expr:
    """A MySQL YEAR(x)'s argument as sqlglot wraps it (TsOrDsToDate), unwrapped: strftime
    reads text dates as they are."""
    while isinstance(of, (exp.TsOrDsToDate, exp.TsOrDsToTimestamp)):
        of = of.this
    return of


def _extracted(code: str, of: exp.Expr) -> exp.Expr:
    if code == "QUARTER":
        month = integer(strftime("%m", of))
        return exp.Div(this=exp.Add(this=month, expression=exp.Literal.number(2)),
                       expression=exp.Literal.number(3))  # fmt: skip
    if code == "EPOCH":
        return call("unixepoch", of)
    return integer(strftime(code, of))


def _extract(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    part = unit_of(node, "this")
    code = "QUARTER" if part in ("QUARTER", "QQ", "Q") else _PARTS.get(part)
    if part == "EPOCH":
        code = "EPOCH"
    if code is None:
        raise NoRewrite(part)
    return _extracted(code, _datelike(node.expression))


def _named_part(code: str) -> Shape:
    def shape(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
        return _extracted(code, _datelike(node.this))

    return shape


def _day_of_week(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """MySQL's DAYOFWEEK counts Sunday as 1; strftime's %w as 0."""
    return exp.Add(this=_extracted("%w", _datelike(node.this)), expression=exp.Literal.number(1))


def _trunc(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    unit = part_of(unit_of(node))
    of = _datelike(node.this)
    if unit == "WEEK":  # weeks start on Monday: back six days, then on to a Monday
        return call("datetime", of, string("start of day"), string("-6 days"), string("weekday 1"))
    if unit == "QUARTER":
        months = exp.Mod(
            this=exp.Paren(this=exp.Sub(this=integer(strftime("%m", of)),
                                        expression=exp.Literal.number(1))),
            expression=exp.Literal.number(3),
        )  # fmt: skip
        back = exp.DPipe(this=string("-"), expression=months)
        modifier = exp.DPipe(this=back, expression=string(" months"))
        return call("datetime", of, string("start of month"), modifier)
    if unit not in _TRUNC:
        raise NoRewrite(unit)
    start, pattern = _TRUNC[unit]
    if pattern is not None:
        return strftime(pattern, of)
    return call("datetime", of, string(str(start)))


def _dated(of: exp.Expr, modifiers: list[exp.Expr]) -> exp.Expr:
    """`of` moved by `modifiers`: date() when `of` is a day (CURRENT_DATE), else datetime()."""
    day = isinstance(of, exp.CurrentDate)
    return call("date" if day else "datetime", of, *modifiers)


def _a_day(node: exp.Expr) -> bool:
    """Whether `node` is a date (not a timestamp) as the dialect types it."""
    if isinstance(node, exp.CurrentDate):
        return True
    if isinstance(node, exp.Paren):
        return _a_day(node.this)
    to = node.args.get("to") if isinstance(node, exp.Cast) else None
    return isinstance(to, exp.DataType) and to.this == exp.DataType.Type.DATE


def _days(node: exp.Expr) -> exp.Expr | None:
    """`node` as a number of days when it is a whole number literal (`- 90`)."""
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return node
    return None


def _interval_arithmetic(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """Intervals added or taken away; a date minus a date (whole days), a date plus or minus
    a number of days (PostgreSQL's date arithmetic, which SQLite reads as numbers)."""
    left, right = node.this, node.expression
    sign = -1 if isinstance(node, exp.Sub) else 1
    if isinstance(right, exp.Interval):
        return _dated(left, interval_modifiers(right, sign))
    if isinstance(left, exp.Interval) and sign > 0:
        return _dated(right, interval_modifiers(left, 1))
    if dialect not in ("postgres", "duckdb") or not _a_day(left):
        return None
    if sign < 0 and _a_day(right):
        later, earlier = call("julianday", left), call("julianday", right)
        return integer(exp.Sub(this=later, expression=earlier))
    days = _days(right)
    if days is None:
        return None
    shown = ("-" if sign < 0 else "+") + str(days.this) + " days"  # a date modifier
    return call("date", left, string(shown))


def _date_add(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    sign = -1 if isinstance(node, (exp.DateSub, exp.TimestampSub, exp.DatetimeSub)) else 1
    amount = node.expression
    if isinstance(amount, exp.Interval):
        return _dated(node.this, interval_modifiers(amount, sign))
    unit = part_of(unit_of(node))
    interval = exp.Interval(this=amount, unit=exp.Var(this=unit))
    if isinstance(amount, exp.Literal):
        interval = exp.Interval(this=string(str(amount.this)), unit=exp.Var(this=unit))
    elif isinstance(amount, exp.Neg) and isinstance(amount.this, exp.Literal):
        interval = exp.Interval(this=string(f"-{amount.this.this}"), unit=exp.Var(this=unit))
    return _dated(_datelike(node.this), interval_modifiers(interval, sign))


def _date_diff(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    if part_of(unit_of(node)) != "DAY":
        raise NoRewrite("DATEDIFF unit")
    later = call("julianday", call("date", _datelike(node.this)))
    earlier = call("julianday", call("date", _datelike(node.expression)))
    days = exp.Sub(this=later, expression=earlier)
    return integer(days)


_DATE_TYPES = {
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.DATETIME: "datetime",
    exp.DataType.Type.TIMESTAMP: "datetime",
    exp.DataType.Type.TIMESTAMPTZ: "datetime",
    exp.DataType.Type.TIMESTAMPLTZ: "datetime",
    exp.DataType.Type.TIMESTAMPNTZ: "datetime",
    exp.DataType.Type.TIME: "time",
}


# types SQLite gives NUMERIC affinity that hold text elsewhere: a CAST to one makes 0 of it
_TEXT_TYPES = frozenset(
    {
        exp.DataType.Type.JSON,
        exp.DataType.Type.JSONB,
        exp.DataType.Type.UUID,
        exp.DataType.Type.INET,
        exp.DataType.Type.XML,
    }
)
_CHAR_TYPES = frozenset(
    {
        exp.DataType.Type.CHAR,
        exp.DataType.Type.VARCHAR,
        exp.DataType.Type.NCHAR,
        exp.DataType.Type.NVARCHAR,
    }
)


def _length(to: exp.DataType) -> int | None:
    """The n of CHAR(n) or VARCHAR(n), which the dialects cut text to and SQLite does not."""
    params = to.expressions
    if len(params) != 1:
        return None
    value = params[0].this if isinstance(params[0], exp.DataTypeParam) else params[0]
    if isinstance(value, exp.Literal) and str(value.this).isdigit():
        return int(value.this)
    return None


def _typed(of: exp.Expr, to: exp.Expr | None) -> exp.Expr | None:
    """`of` as type `to` in SQLite's words, where a plain CAST would differ; None where it
    would not."""
    if not isinstance(to, exp.DataType):
        return None
    if to.this in _DATE_TYPES:  # a CAST to DATE keeps only the number a date starts with
        return call(_DATE_TYPES[to.this], of)
    if to.this in _TEXT_TYPES:
        return exp.Cast(this=of, to=exp.DataType.build("TEXT"))
    if to.this in _CHAR_TYPES:
        length = _length(to)
        text = exp.Cast(this=of, to=exp.DataType.build("TEXT"))
        if length is None:
            return text
        return call("substr", text, exp.Literal.number(1), exp.Literal.number(length))
    return None


def _cast(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    return _typed(node.this, node.args.get("to"))


# SQL Server's CONVERT styles of dates as text (ISO ones are the stored text itself)
_STYLES = {
    20: None, 21: None, 23: None, 120: None, 121: None, 126: None,
    112: "%Y%m%d", 101: "%m/%d/%Y", 103: "%d/%m/%Y", 102: "%Y.%m.%d", 104: "%d.%m.%Y",
    108: "%H:%M:%S", 111: "%Y/%m/%d",
}  # fmt: skip


def _convert(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """SQL Server's CONVERT(type, value[, style])."""
    to, of, style = node.this, node.expression, node.args.get("style")
    if style is None:
        return _typed(of, to) or exp.Cast(this=of, to=to)
    if not (isinstance(style, exp.Literal) and str(style.this).isdigit()):
        raise NoRewrite("a CONVERT style that is not a number")
    if int(style.this) not in _STYLES or not isinstance(to, exp.DataType):
        raise NoRewrite(f"CONVERT style {style.this}")
    pattern = _STYLES[int(style.this)]
    text = of if pattern is None else strftime(pattern, of)
    return _typed(text, to) or exp.Cast(this=text, to=to)


def _now(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    name = str(node.name).upper()
    if node.expressions:
        return ANONYMOUS(node, dialect, notes)
    if name in _NOW:
        notes.append(UTC_NOTE)
        return exp.CurrentTimestamp()
    if name in _TODAY:
        return exp.CurrentDate()
    if name in _DATABASE:
        return string("main")
    return None


def _current_timestamp(node: exp.Expr, dialect: str, notes: Notes) -> None:
    notes.append(UTC_NOTE)


def _split_part(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    index = node.args.get("part_index")
    delimiter = node.args.get("delimiter")
    if not (isinstance(index, exp.Literal) and not index.is_string and str(index.this) in "123"):
        raise NoRewrite("SPLIT_PART index")
    if not (isinstance(delimiter, exp.Literal) and delimiter.is_string and delimiter.this):
        raise NoRewrite("SPLIT_PART delimiter")
    text: exp.Expr = node.this
    for _ in range(int(index.this) - 1):
        text = _after(text, delimiter)
    return _before(text, delimiter)


def _found(text: exp.Expr, delimiter: exp.Expr) -> exp.Expr:
    return exp.GT(this=call("instr", text, delimiter), expression=exp.Literal.number(0))


def _before(text: exp.Expr, delimiter: exp.Expr) -> exp.Expr:
    """The text before the first `delimiter` (all of it when there is none)."""
    length = exp.Sub(this=call("instr", text, delimiter), expression=exp.Literal.number(1))
    head = call("substr", text, exp.Literal.number(1), length)
    return exp.Case(ifs=[exp.If(this=_found(text, delimiter), true=head)], default=text)


def _after(text: exp.Expr, delimiter: exp.Expr) -> exp.Expr:
    """The text after the first `delimiter` ('' when there is none)."""
    start = exp.Add(this=call("instr", text, delimiter), expression=call("length", delimiter))
    tail = call("substr", text, start)
    return exp.Case(ifs=[exp.If(this=_found(text, delimiter), true=tail)], default=string(""))


def _left(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    return call("substr", node.this, exp.Literal.number(1), node.expression)


def _right(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    count = node.expression
    if isinstance(count, exp.Literal) and not count.is_string and int(count.this) > 0:
        return call("substr", node.this, exp.Literal.number(-int(count.this)))
    tail = call("substr", node.this, exp.Neg(this=exp.Paren(this=count)))
    return exp.Case(ifs=[exp.If(this=exp.GT(this=count, expression=exp.Literal.number(0)),
                                true=tail)], default=string(""))  # fmt: skip


def _any_array(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """`x = ANY(ARRAY[...])` as `x IN (...)`, `x <> ALL(ARRAY[...])` as `x NOT IN (...)`."""
    right = node.expression
    wanted = exp.Any if isinstance(node, exp.EQ) else exp.All
    if not isinstance(right, wanted):
        return None
    inner = right.this.this if isinstance(right.this, exp.Paren) else right.this
    if not isinstance(inner, exp.Array):
        raise NoRewrite("ANY over something other than an ARRAY[...]")
    found = exp.In(this=node.this, expressions=list(inner.expressions))
    return found if isinstance(node, exp.EQ) else exp.Not(this=found)


def _truncate(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    tables = node.expressions
    if len(tables) != 1 or not isinstance(tables[0], exp.Table):
        raise NoRewrite("TRUNCATE of several tables: one DELETE FROM per table")
    notes.append("SQLite has no TRUNCATE: DELETE without WHERE empties the table")
    return exp.Delete(this=tables[0])


GREATEST_NOTE = (
    "NULLs are skipped as PostgreSQL does (MySQL gives NULL if any argument is: "
    "max(...) or min(...) alone)"
)


def _greatest(node: exp.Expr, dialect: str, notes: Notes) -> None:
    """The same text means two things: PostgreSQL and SQL Server skip NULL arguments,
    MySQL answers NULL. The rewrite is PostgreSQL's; the note names MySQL's."""
    if dialect != "mysql":
        notes.append(GREATEST_NOTE)


def _ilike(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    notes.append("LIKE ignores case in SQLite, for ASCII letters only")
    pattern = node.expression
    if isinstance(pattern, exp.Any):  # x ILIKE ANY (ARRAY['a%', 'b%'])
        inner = pattern.this.this if isinstance(pattern.this, exp.Paren) else pattern.this
        if not isinstance(inner, exp.Array) or node.args.get("negate"):
            raise NoRewrite("ILIKE ANY over something other than an ARRAY[...]")
        likes = [exp.Like(this=node.this.copy(), expression=p) for p in inner.expressions]
        return exp.Paren(this=exp.or_(*likes))
    return exp.Like(**node.args)  # NOT ILIKE keeps its NOT (`negate`), ESCAPE its escape


SHAPES: dict[type[exp.Expr], Shape] = {
    exp.ILike: _ilike,
    exp.Anonymous: _now,
    exp.CurrentTimestamp: _current_timestamp,
    exp.TimestampTrunc: _trunc,
    exp.DateTrunc: _trunc,
    exp.DatetimeTrunc: _trunc,
    exp.Extract: _extract,
    exp.Year: _named_part("%Y"),
    exp.Month: _named_part("%m"),
    exp.Day: _named_part("%d"),
    exp.DayOfMonth: _named_part("%d"),
    exp.DayOfYear: _named_part("%j"),
    exp.Quarter: _named_part("QUARTER"),
    exp.DayOfWeek: _day_of_week,
    exp.Add: _interval_arithmetic,
    exp.Sub: _interval_arithmetic,
    exp.DateAdd: _date_add,
    exp.DateSub: _date_add,
    exp.TsOrDsAdd: _date_add,
    exp.TimestampAdd: _date_add,
    exp.TimestampSub: _date_add,
    exp.DatetimeAdd: _date_add,
    exp.DatetimeSub: _date_add,
    exp.DateDiff: _date_diff,
    exp.Greatest: _greatest,
    exp.Least: _greatest,
    exp.Cast: _cast,
    exp.Convert: _convert,
    exp.SplitPart: _split_part,
    exp.Left: _left,
    exp.Right: _right,
    exp.EQ: _any_array,
    exp.NEQ: _any_array,
    exp.TruncateTable: _truncate,
    exp.RegexpLike: regex_match,
    exp.RegexpILike: regex_match,
    exp.Update: update_joined,
    exp.Delete: delete_joined,
    exp.Insert: upsert,
    **FUNCTION_SHAPES,
}


def _shape(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    shape = SHAPES.get(type(node))
    if shape is None:
        return node
    # the shape builds from a twin's children: when it gives the same text back, the node
    # keeps its own (a replaced node's children are reached only at the next pass)
    twin = node.copy()
    twin.parent, twin.arg_key, twin.index = node.parent, node.arg_key, node.index
    found = shape(twin, dialect, notes)
    if found is None or found.sql() == node.sql():
        return node
    return found


def _check_formats(tree: exp.Expr, dialect: str) -> None:
    """A TO_CHAR or DATE_FORMAT pattern SQLite's strftime() would answer NULL for, or (in
    PostgreSQL's TO_CHAR, where literal text is double-quoted) a word sqlglot left as it was
    (`Mon`, `Day`): SQLite would print the word itself."""
    for node in tree.find_all(exp.TimeToStr):
        pattern = node.args.get("format")
        if not isinstance(pattern, exp.Literal) or not pattern.is_string:
            raise NoRewrite("a date format that is not a string")
        codes = set(re.findall(r"%(.)", str(pattern.this))) - set("AaBb")  # names: functions.py
        if not codes <= _STRFTIME_CODES:
            raise NoRewrite(f"date format codes {sorted(codes - _STRFTIME_CODES)}")
        if dialect == "postgres" and re.search(r"[A-Za-z]", re.sub(r"%.", "", pattern.this)):
            raise NoRewrite("a TO_CHAR pattern word strftime() has no code for")


def sqlite_shapes(tree: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """`tree` (read as `dialect`) with the shapes above in SQLite's forms; NoRewrite when one
    cannot be. Run until nothing changes, so a shape inside a replaced one is reached too."""
    _check_formats(tree, dialect)
    tree = catalog_tables(tree, dialect, notes)
    tree = series_tables(tree)
    for _ in range(6):
        before = tree.sql()
        tree = tree.transform(_shape, dialect, notes)
        if tree.sql() == before:
            return tree
    return tree
