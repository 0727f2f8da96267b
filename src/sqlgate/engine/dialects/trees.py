"""The building blocks of SQLite trees the dialect shapes share: calls, literals, date parts
and units, intervals as SQLite's date modifiers, and the refusal to rewrite."""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp, parse_one

__all__ = [
    "UNITS",
    "NoRewrite",
    "Notes",
    "Shape",
    "call",
    "from_sqlite",
    "integer",
    "interval_modifiers",
    "part_of",
    "strftime",
    "string",
    "unit_of",
]


class NoRewrite(Exception):
    """The statement holds a shape SQLite cannot be given faithfully."""


Notes = list[str]
Shape = Callable[[exp.Expr, str, Notes], exp.Expr | None]

UNITS = {
    "YEAR": ("years", 1), "MONTH": ("months", 1), "WEEK": ("days", 7), "DAY": ("days", 1),
    "HOUR": ("hours", 1), "MINUTE": ("minutes", 1), "SECOND": ("seconds", 1),
    "QUARTER": ("months", 3),
}  # fmt: skip


def call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def string(value: str) -> exp.Expr:
    return exp.Literal.string(value)


def integer(of: exp.Expr) -> exp.Expr:
    return exp.Cast(this=of, to=exp.DataType.build("INTEGER"))


def unit_of(node: exp.Expr, key: str = "unit") -> str:
    unit = node.args.get(key)
    if unit is None:
        return "DAY"
    name = unit.name if isinstance(unit, (exp.Var, exp.Column, exp.Identifier)) else unit.this
    return str(name).upper().strip("'\"")


def part_of(unit: str) -> str:
    return unit[:-1] if unit.endswith("S") and unit[:-1] in UNITS else unit


def strftime(code: str, of: exp.Expr) -> exp.Expr:
    return call("strftime", string(code), of)


def interval_modifiers(interval: exp.Interval, sign: int) -> list[exp.Expr]:
    """`INTERVAL '1 day 2 hours'` (or `INTERVAL 1 DAY`) as SQLite's date modifiers."""
    value = interval.this
    unit = unit_of(interval) if interval.args.get("unit") is not None else ""
    if not isinstance(value, exp.Literal):
        if unit and part_of(unit) in UNITS:
            name, times = UNITS[part_of(unit)]
            scaled = (
                value if times == 1 else exp.Mul(this=value, expression=exp.Literal.number(times))
            )
            signed = scaled if sign > 0 else exp.Neg(this=exp.Paren(this=scaled))
            return [exp.DPipe(this=exp.Paren(this=signed), expression=string(f" {name}"))]
        raise NoRewrite("interval")
    text = f"{value.this} {unit}".strip()
    pairs = re.findall(r"([+-]?\d+(?:\.\d+)?)\s*([A-Za-z]+)", text)
    if not pairs or re.sub(r"[+-]?\d+(?:\.\d+)?\s*[A-Za-z]+", "", text).strip():
        raise NoRewrite(text)
    modifiers: list[exp.Expr] = []
    for amount, word in pairs:
        part = part_of(word.upper())
        if part not in UNITS:
            raise NoRewrite(word)
        name, times = UNITS[part]
        number = float(amount) * times * sign
        shown = f"{number:+g}" if number != int(number) else f"{int(number):+d}"
        modifiers.append(string(f"{shown} {name}"))
    return modifiers


def from_sqlite(text: str) -> exp.Expr:
    """A fragment of SQLite SQL as a tree (the catalogs' and series' templates)."""
    return parse_one(text, read="sqlite")
