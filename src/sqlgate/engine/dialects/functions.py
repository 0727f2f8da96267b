"""Other dialects' functions SQLite has under another name or can be given in its own:

TIMESTAMPDIFF(DAY|HOUR|MINUTE|SECOND, a, b)   julianday(b) - julianday(a), in that unit
UNIX_TIMESTAMP(x), epoch(x)                   unixepoch(x)
LAST_DAY(x), EOMONTH(x)                       date(x, 'start of month', '+1 month', '-1 day')
DAYNAME(x), MONTHNAME(x), '%M' in formats     the English names, from strftime's numbers
STR_TO_DATE(s, fmt), TO_DATE(s, fmt)          the ISO text SQLite's dates are
JSON_UNQUOTE(JSON_EXTRACT(j, p))              j ->> p
JSON_CONTAINS(j, '"v"')                       EXISTS over json_each(j)
jsonb_array_length(j)                         json_array_length(j)
COUNT(DISTINCT a, b)                          COUNT(DISTINCT json_array(a, b)) of rows with both
list_contains([...], x), x ILIKE ANY (...)    x IN (...), x LIKE a OR x LIKE b
GROUP BY ALL                                  GROUP BY the positions of the plain columns
N'text', [dbo].t, public.t                    'text', t
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from sqlglot import exp

from sqlgate.engine.dialects.trees import NoRewrite, Notes, call, part_of, string, unit_of

__all__ = ["FUNCTION_SHAPES", "named_date"]

_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_PER_DAY = {"DAY": 1, "HOUR": 24, "MINUTE": 24 * 60, "SECOND": 24 * 3600}


def _name_case(code: str, of: exp.Expr, names: tuple[str, ...], first: int) -> exp.Expr:
    """CASE strftime(code, of) WHEN '0..' THEN name ... END (names from number `first`)."""
    width = 2 if code == "%m" else 1
    ifs = [
        exp.If(this=string(str(number).zfill(width)), true=string(name))
        for number, name in enumerate(names, start=first)
    ]
    return exp.Case(this=call("strftime", string(code), of), ifs=ifs)


def named_date(code: str, of: exp.Expr) -> exp.Expr | None:
    """A date's name for a strftime code SQLite has not got: %A %a (day), %B %b (month)."""
    if code in ("A", "a"):
        names = _DAYS if code == "A" else tuple(d[:3] for d in _DAYS)
        return _name_case("%w", of, names, 0)
    if code in ("B", "b"):
        names = _MONTHS if code == "B" else tuple(m[:3] for m in _MONTHS)
        return _name_case("%m", of, names, 1)
    return None


def _time_to_str(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """A format with day or month names: strftime() for the rest, joined with the names."""
    pattern = node.args.get("format")
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return None
    text = str(pattern.this)
    if not re.search(r"%[AaBb]", text):
        return None
    of = node.this
    parts: list[exp.Expr] = []
    for piece in re.split(r"(%[AaBb])", text):
        if not piece:
            continue
        named = named_date(piece[1], of) if len(piece) == 2 and piece[0] == "%" else None
        parts.append(named or call("strftime", string(piece), of))
    joined = parts[0]
    for part in parts[1:]:
        joined = exp.DPipe(this=joined, expression=part)
    return joined


def _timestamp_diff(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    unit = part_of(unit_of(node))
    if unit not in _PER_DAY:
        raise NoRewrite(f"TIMESTAMPDIFF in {unit}")
    later, earlier = call("julianday", node.this), call("julianday", node.expression)
    days = exp.Paren(this=exp.Sub(this=later, expression=earlier))
    per_day = exp.Literal.number(_PER_DAY[unit])
    scaled = days if unit == "DAY" else exp.Mul(this=days, expression=per_day)
    # whole units, cut toward zero as MySQL does (a float's error could cut one too few)
    rounded = call("round", scaled, exp.Literal.number(6))
    return exp.Cast(this=rounded, to=exp.DataType.build("INTEGER"))


def _last_day(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    of = node.this.this if isinstance(node.this, exp.TsOrDsToDate) else node.this
    return call("date", of, string("start of month"), string("+1 month"), string("-1 day"))


def _dayname(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    return _name_case("%w", node.this, _DAYS, 0)


def _epoch(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    return call("unixepoch", node.this)


_DATE_CODES = {"%Y": 4, "%m": 2, "%d": 2, "%H": 2, "%M": 2, "%S": 2}


def _str_to_date(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """A literal read now into ISO text; a column only with fixed-width codes (substr)."""
    value, pattern = node.this, node.args.get("format")
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise NoRewrite("a date format that is not a string")
    fmt = str(pattern.this)
    timed = any(code in fmt for code in ("%H", "%M", "%S", "%I"))
    shape = "%Y-%m-%d %H:%M:%S" if timed else "%Y-%m-%d"
    if isinstance(value, exp.Literal) and value.is_string:
        try:
            return string(datetime.strptime(str(value.this), fmt).strftime(shape))
        except ValueError:
            raise NoRewrite("a date the format does not read") from None
    positions: dict[str, tuple[int, int]] = {}
    at = 1
    for token in re.findall(r"%.|[^%]", fmt):
        width = _DATE_CODES.get(token, 1 if not token.startswith("%") else 0)
        if width == 0:
            raise NoRewrite(f"date code {token}")
        positions[token] = (at, width)
        at += width
    pieces = ["%Y", "-", "%m", "-", "%d"] + ([" ", "%H", ":", "%M", ":", "%S"] if timed else [])
    parts: list[exp.Expr] = []
    for piece in pieces:
        if piece in positions:
            start, width = positions[piece]
            parts.append(
                call("substr", value, exp.Literal.number(start), exp.Literal.number(width))
            )
        elif piece.startswith("%"):
            parts.append(string("00"))
        else:
            parts.append(string(piece))
    joined = parts[0]
    for part in parts[1:]:
        joined = exp.DPipe(this=joined, expression=part)
    return joined


def _anonymous(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    name = str(node.name).upper()
    args = node.expressions
    if name == "UNIX_TIMESTAMP":
        return call("unixepoch", *args)
    if name in ("JSONB_ARRAY_LENGTH", "JSON_ARRAY_LENGTH") and len(args) == 1:
        return call("json_array_length", args[0])
    if name == "JSON_UNQUOTE" and len(args) == 1 and isinstance(args[0], exp.JSONExtract):
        inner = args[0]
        return exp.JSONExtractScalar(this=inner.this, expression=inner.expression)
    if name == "JSON_CONTAINS" and len(args) == 2:
        return _json_contains(args[0], args[1])
    if name in ("LIST_CONTAINS", "ARRAY_CONTAINS") and len(args) == 2:
        return _in_list(args[1], args[0])
    return None


def _json_contains(document: exp.Expr, candidate: exp.Expr) -> exp.Expr:
    """JSON_CONTAINS of an array and one scalar, as EXISTS over json_each."""
    if not (isinstance(candidate, exp.Literal) and candidate.is_string):
        raise NoRewrite("JSON_CONTAINS of something other than a literal")
    try:
        value = json.loads(str(candidate.this))
    except ValueError:
        raise NoRewrite("JSON_CONTAINS of text that is not JSON") from None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise NoRewrite("JSON_CONTAINS of an object, array or boolean")
    wanted = string(value) if isinstance(value, str) else exp.Literal.number(value)
    each = exp.select("1").from_(exp.Table(this=call("json_each", document)))
    each = each.where(exp.and_(
        exp.EQ(this=call("json_type", document), expression=string("array")),
        exp.EQ(this=exp.column("value"), expression=wanted),
    ))  # fmt: skip
    return exp.Exists(this=each)


def _in_list(subject: exp.Expr, array: exp.Expr) -> exp.Expr:
    if not isinstance(array, exp.Array):
        raise NoRewrite("a list that is not written out")
    return exp.In(this=subject, expressions=list(array.expressions))


def _array_contains(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    return _in_list(node.expression, node.this)


def _count_distinct(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    distinct = node.this
    if not isinstance(distinct, exp.Distinct) or len(distinct.expressions) < 2:
        return None
    columns = list(distinct.expressions)
    present = exp.and_(
        *(exp.Not(this=exp.Is(this=c.copy(), expression=exp.Null())) for c in columns)
    )
    row = exp.Case(ifs=[exp.If(this=present, true=call("json_array", *columns))])
    return exp.Count(this=exp.Distinct(expressions=[row]))


def _group_all(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    if not node.args.get("all"):
        return None
    select = node.parent
    if not isinstance(select, exp.Select):
        raise NoRewrite("GROUP BY ALL outside a SELECT")
    positions = [
        exp.Literal.number(at)
        for at, expression in enumerate(select.expressions, start=1)
        if not expression.find(exp.AggFunc)
    ]
    if not positions:
        raise NoRewrite("GROUP BY ALL of aggregates only")
    return exp.Group(expressions=positions)


def _substring_index(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """MySQL's SUBSTRING_INDEX(s, d, 1) (before the first d) and (s, d, -1) (after the
    last d, for a one-character d: rtrim() takes every other character off the end)."""
    text, delimiter, count = node.this, node.args.get("delimiter"), node.args.get("count")
    if not (isinstance(delimiter, exp.Literal) and delimiter.is_string and delimiter.this):
        raise NoRewrite("SUBSTRING_INDEX of a delimiter that is not written out")
    shown = count.sql() if count is not None else ""
    if shown == "1":
        found = exp.GT(this=call("instr", text, delimiter), expression=exp.Literal.number(0))
        length = exp.Sub(this=call("instr", text, delimiter), expression=exp.Literal.number(1))
        head = call("substr", text, exp.Literal.number(1), length)
        return exp.Case(ifs=[exp.If(this=found, true=head)], default=text.copy())
    if shown == "-1" and len(str(delimiter.this)) == 1:
        others = call("replace", text, delimiter, string(""))
        kept = call("length", call("rtrim", text.copy(), others))
        return call("substr", text.copy(), exp.Add(this=kept, expression=exp.Literal.number(1)))
    raise NoRewrite("SUBSTRING_INDEX beyond the first or last part")


_UTC = frozenset({"UTC", "ETC/UTC", "GMT", "Z", "+00:00", "ETC/GMT"})


def _at_time_zone(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    """`x AT TIME ZONE 'UTC'`: SQLite keeps times as UTC text already; other zones it has
    no table of (no rewrite)."""
    zone = node.args.get("zone")
    if isinstance(zone, exp.Literal) and str(zone.this).upper() in _UTC:
        inner: exp.Expr = node.this
        return inner
    raise NoRewrite("a time zone other than UTC")


def _returning(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """SQL Server's OUTPUT INSERTED.x (and a DELETE's DELETED.x) as RETURNING x."""
    statement = node.parent
    changed = False
    columns: list[exp.Expr] = []
    for column in node.expressions:
        table = column.table.upper() if isinstance(column, exp.Column) else ""
        if table == "DELETED" and not isinstance(statement, exp.Delete):
            raise NoRewrite("OUTPUT DELETED of an UPDATE: RETURNING gives the new values")
        if table in ("INSERTED", "DELETED"):
            column = exp.column(column.name)
            changed = True
        columns.append(column)
    return exp.Returning(expressions=columns) if changed else None


def _unnest(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """`unnest(ARRAY[3, 1, 2]) AS x` in a FROM: a VALUES subquery of one column x."""
    arrays = node.expressions
    if len(arrays) != 1 or not isinstance(arrays[0], exp.Array):
        raise NoRewrite("unnest of something other than one ARRAY[...]")
    alias = node.args.get("alias")
    name = alias.name if alias is not None and alias.name else "unnest"
    column = alias.columns[0].name if alias is not None and alias.columns else name
    rows = [exp.Tuple(expressions=[value.copy()]) for value in arrays[0].expressions]
    values = exp.Subquery(this=exp.Values(expressions=rows))
    inner = exp.select(exp.alias_(exp.column("column1"), column)).from_(values)
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(name)))


def _national(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr:
    return string(str(node.this))


def _schema_of_table(node: exp.Expr, dialect: str, notes: Notes) -> exp.Expr | None:
    """`dbo.t`, `public.t`: SQLite has one schema for the user's tables (main)."""
    if node.args.get("catalog") is not None or str(getattr(node, "db", "")).lower() not in (
        "dbo",
        "public",
    ):
        return None
    bare = node.copy()
    bare.set("db", None)
    return bare


FUNCTION_SHAPES = {
    exp.TimeToStr: _time_to_str,
    exp.TimestampDiff: _timestamp_diff,
    exp.LastDay: _last_day,
    exp.Dayname: _dayname,
    exp.TimeToUnix: _epoch,
    exp.StrToUnix: _epoch,
    exp.StrToDate: _str_to_date,
    exp.ArrayContains: _array_contains,
    exp.Count: _count_distinct,
    exp.Group: _group_all,
    exp.National: _national,
    exp.AtTimeZone: _at_time_zone,
    exp.Returning: _returning,
    exp.Unnest: _unnest,
    exp.SubstringIndex: _substring_index,
    exp.Table: _schema_of_table,
}
ANONYMOUS = _anonymous
