"""Undo of additive DDL, the record and the decisions: what a CREATE made, and what stands in
the way of dropping it again.

    record     each `sqlite_schema` row the call added (rowid, type, name, tbl_name, sql),
               what it is (table, virtual table, shadow table, index, view), the object it
               belongs to (an autoindex its table, a shadow table its virtual table), for a
               table with a b-tree the count and digest of the rows the call left in it, the
               dependants that already stood when the call ended, and for create_view(replace)
               the SQL of the view it replaced
    decisions  pure functions of the record and the catalog as it is now (`SchemaFacts`):
               each object still the same catalog row; nothing else on it or using it; its
               rows as the call left them. Every finding is an `undo_checks.Conflict` of type
               SCHEMA whose text says what stands in the way and what to do

The capture and the drops are `engine.undo.ddl`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from sqlgate.engine.framing import counted
from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import tokens_of
from sqlgate.engine.undo.checks import Conflict

__all__ = [
    "CreatedObject",
    "SchemaFacts",
    "SchemaRow",
    "content_conflicts",
    "created_json",
    "damaged",
    "dependant_conflicts",
    "dependants",
    "identity_conflicts",
    "parse_created",
    "protected_conflicts",
    "row_mark",
]

_DAMAGED = "undo record"
_LEAVE = "drop it first with destructive_query or leave the {what}"


@dataclass(frozen=True)
class SchemaRow:
    """One row of `main.sqlite_schema`."""

    rowid: int
    type: str
    name: str
    tbl_name: str
    rootpage: int  # 0 for views, triggers and virtual tables; not compared (VACUUM moves it)
    sql: str | None  # None for an autoindex

    def identity(self) -> tuple[str, str, str, str | None]:
        return (self.type, self.name, self.tbl_name, self.sql)


@dataclass(frozen=True)
class CreatedObject:
    """A catalog row the call added, and what its undo checks."""

    rowid: int
    type: str
    name: str
    tbl_name: str
    sql: str | None
    kind: str  # table, virtual table, shadow table, index, view, trigger
    part_of: str | None = None  # goes with this object: an autoindex's table, a shadow's vtable
    rows: int | None = None  # rows the call left in it (tables with a b-tree)
    digest: str | None = None  # their digest (`undo_ddl.table_digest`)
    known: tuple[str, ...] = ()  # `row_mark`s of the dependants that stood when the call ended
    replaces: str | None = None  # create_view(replace=true): the replaced view's SQL

    def identity(self) -> tuple[str, str, str, str | None]:
        return (self.type, self.name, self.tbl_name, self.sql)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class SchemaFacts:
    """The catalog as it is now: its rows, and each foreign key as (child, parent), folded."""

    rows: tuple[SchemaRow, ...]
    foreign_keys: frozenset[tuple[str, str]]


def row_mark(row: SchemaRow) -> str:
    """A catalog row by its place and definition: the same mark means the same dependant."""
    return hashlib.sha256(repr((row.rowid, *row.identity())).encode()).hexdigest()


def created_json(objects: Iterable[CreatedObject]) -> str:
    return json.dumps([asdict(obj) for obj in objects])


_FIELDS: dict[str, tuple[type, ...]] = {
    "rowid": (int,),
    "type": (str,),
    "name": (str,),
    "tbl_name": (str,),
    "sql": (str, type(None)),
    "kind": (str,),
    "part_of": (str, type(None)),
    "rows": (int, type(None)),
    "digest": (str, type(None)),
    "known": (list,),
    "replaces": (str, type(None)),
}


def _parse_one(item: Any) -> CreatedObject:
    if not isinstance(item, dict) or set(item) != set(_FIELDS):
        raise ValueError("an entry is not an object with the record's fields")
    for key, types in _FIELDS.items():
        value = item[key]
        if not isinstance(value, types) or isinstance(value, bool):
            raise ValueError(f"{key} is a {type(value).__name__}")
    if not all(isinstance(mark, str) for mark in item["known"]):
        raise ValueError("known holds something other than text")
    return CreatedObject(**{**item, "known": tuple(item["known"])})


def parse_created(text: str) -> tuple[CreatedObject, ...]:
    """The objects of an `undo_changesets.created` text; ValueError when it is damaged."""
    try:
        items = json.loads(text)
    except (TypeError, ValueError):
        raise ValueError("it is not JSON") from None
    if not isinstance(items, list) or not items:
        raise ValueError("it is not a list of objects")
    return tuple(_parse_one(item) for item in items)


def damaged(reason: str) -> Conflict:
    return Conflict(
        "SCHEMA",
        _DAMAGED,
        (),
        f"it is damaged ({reason}), so the undo cannot tell what the call made; nothing was "
        "changed. Drop what the call made by hand with destructive_query if it is not wanted",
    )


def protected_conflicts(
    objects: tuple[CreatedObject, ...], protected: frozenset[str]
) -> list[Conflict]:
    """An object the record names that the undo must never drop: the server's, or SQLite's."""
    conflicts = []
    for obj in objects:
        names = {fold_name(obj.name), fold_name(obj.tbl_name), fold_name(obj.part_of or "")}
        if names & protected:
            reason = "it is a sqlgate server object, which an undo never drops"
        elif obj.type == "table" and fold_name(obj.name).startswith("sqlite_"):
            reason = "it is SQLite's own table, which an undo never drops"
        else:
            continue
        conflicts.append(
            Conflict(
                "SCHEMA",
                obj.label,
                (),
                f"{reason}: this undo record was changed outside sqlgate; nothing was changed",
            )
        )
    return conflicts


def _named(text: str, row: SchemaRow) -> bool:
    return fold_name(text) == fold_name(row.name)


def _identity_reason(obj: CreatedObject, facts: SchemaFacts) -> str | None:
    """Why the catalog row the call made is not there as it made it, or None when it is."""
    now = next((row for row in facts.rows if row.rowid == obj.rowid), None)
    if now is not None and now.identity() == obj.identity():
        return None
    leave = (
        "the undo cannot tell it is what the call made: drop it with destructive_query if it "
        "is not wanted, or leave it"
    )
    if now is not None and _named(obj.name, now):
        return (
            f"its definition changed after the call (altered, or dropped and re-created); {leave}"
        )
    if any(_named(obj.name, row) for row in facts.rows):
        return (
            "another object has its name now (it was dropped and re-created, or another was "
            f"renamed into its place); {leave}"
        )
    where = "" if now is None else f" (its catalog row now holds {now.type} {now.name})"
    return f"it was renamed or dropped after the call{where}; {leave}"


def identity_conflicts(objects: tuple[CreatedObject, ...], facts: SchemaFacts) -> list[Conflict]:
    """Each object that is gone or is another object now. A part (autoindex, shadow table)
    is looked at only when its owner is fine: a renamed table is one conflict, not three."""
    conflicts: list[Conflict] = []
    failed: set[str] = set()
    for obj in sorted(objects, key=lambda o: o.part_of is not None):
        if obj.part_of is not None and fold_name(obj.part_of) in failed:
            continue
        reason = _identity_reason(obj, facts)
        if reason is not None:
            failed.add(fold_name(obj.name))
            conflicts.append(Conflict("SCHEMA", obj.label, (), reason))
    return conflicts


def references(sql: str, names: frozenset[str]) -> bool:
    """Whether SQL text may name one of `names` (folded): any token, a string included
    (SQLite reads `FROM 'notes'` as a table); unreadable text, or a non-ASCII name found
    anywhere in it, counts as naming it. A false "yes" only refuses an undo."""
    tokens = tokens_of(sql)
    if tokens is None:
        return True
    if any(fold_name(token.text) in names for token in tokens):
        return True
    folded = fold_name(sql)
    return any(not name.isascii() and name in folded for name in names)


def _uses(row: SchemaRow, names: frozenset[str], facts: SchemaFacts) -> str | None:
    """How catalog row `row` stands on one of `names`, or None when it does not."""
    if fold_name(row.tbl_name) in names:  # an index or trigger: other objects are their own
        return f"{row.type} {row.name} is on it"
    if row.type == "table" and any(
        (fold_name(row.name), parent) in facts.foreign_keys for parent in names
    ):
        return f"table {row.name} has a foreign key to it"
    # views, triggers and virtual tables: the catalog rows without a b-tree of their own
    if row.rootpage == 0 and references(row.sql or "", names):
        what = "virtual table" if row.type == "table" else row.type
        return f"{what} {row.name} depends on it"
    return None


def dependants(
    objects: tuple[CreatedObject, ...], facts: SchemaFacts
) -> list[tuple[CreatedObject, SchemaRow, str]]:
    """(owner, dependant, how) for each catalog row outside the record that stands on one
    of the owner's names (its own, or a part's), owners being the record's top objects."""
    ours = {obj.rowid for obj in objects}
    found = []
    for owner in (obj for obj in objects if obj.part_of is None):
        names = frozenset(
            fold_name(obj.name)
            for obj in objects
            if obj is owner or fold_name(obj.part_of or "") == fold_name(owner.name)
        )
        for row in facts.rows:
            how = None if row.rowid in ours else _uses(row, names, facts)
            if how is not None:
                found.append((owner, row, how))
    return found


def dependant_conflicts(objects: tuple[CreatedObject, ...], facts: SchemaFacts) -> list[Conflict]:
    """Each dependant that did not stand when the call ended: dropping the object would
    break it (a view, trigger or virtual table using it) or take it along (an index or
    trigger on it), or SQLite would refuse (a foreign key to it)."""
    return [
        Conflict("SCHEMA", owner.label, (), f"{how}: {_LEAVE.format(what=owner.kind)}")
        for owner, row, how in dependants(objects, facts)
        if row_mark(row) not in owner.known
    ]


def content_conflicts(
    objects: tuple[CreatedObject, ...], contents: dict[int, tuple[int, str]]
) -> list[Conflict]:
    """Each table whose rows are not those the call left (`contents`: count and digest now,
    by catalog rowid); a shadow table's finding is its virtual table's, told once."""
    conflicts: list[Conflict] = []
    told: set[str] = set()
    owners = {fold_name(obj.name): obj for obj in objects}
    keep = "copy what is wanted elsewhere and leave the table, or delete those rows first"
    for obj in objects:
        if obj.rows is None or contents[obj.rowid] == (obj.rows, obj.digest):
            continue
        count, _ = contents[obj.rowid]
        owner = owners.get(fold_name(obj.part_of or ""), obj)
        if owner is not obj:
            reason = f"rows were written into it after the call; {keep}"
        elif obj.rows == 0:
            reason = (
                f"{counted(count, 'row was', 'rows were')} written into it after the call; {keep}"
            )
        elif count != obj.rows:
            reason = (
                f"it holds {counted(count, 'row')}, the call left {obj.rows}: rows were "
                f"written or deleted after the call; {keep}"
            )
        else:
            reason = f"its rows changed after the call; {keep}"
        if owner.name not in told:
            told.add(owner.name)
            conflicts.append(Conflict("SCHEMA", owner.label, (), reason))
    return conflicts
