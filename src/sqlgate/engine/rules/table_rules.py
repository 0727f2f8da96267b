"""The user's rules about their own tables, as given: hidden columns, protected and
append-only tables.

    --hide-column TABLE.COLUMN    reads as NULL for the agent, never written by it
    --protect-table TABLE         read only, in every tier
    --append-only-table TABLE     INSERT only, in every tier

They come from flags, their environment variables and a `--policy` TOML file; this module
holds them as data and checks each name's form. Which live tables and columns they name is
worked out against the schema, again whenever it changes (`engine.rules.live_rules`).

Names are kept as given (for messages) and compared folded as SQLite folds them
(`engine.names.fold_name`): `Users.SSN`, `"users"."ssn"` and `main.users.ssn` are one rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlgate.engine.names import SERVER_SCHEMA, fold_name

__all__ = [
    "FLAG_ORIGIN",
    "ColumnRule",
    "TableRules",
    "parse_column_name",
    "parse_table_name",
    "unique_names",
]

# who set a rule, as a refusal names it ("users is protected by the server's policy")
FLAG_ORIGIN = "the server's policy"
_MAX_NAME = 200


@dataclass(frozen=True)
class ColumnRule:
    """One hidden column, named as given."""

    table: str
    column: str

    @property
    def key(self) -> tuple[str, str]:
        return fold_name(self.table), fold_name(self.column)

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


def _unquoted(part: str, what: str) -> str:
    text = part.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"`'":
        text = text[1:-1].replace(text[0] * 2, text[0])
    elif len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        text = text[1:-1]
    if not text:
        raise ValueError(f"has an empty {what} name")
    if len(text) > _MAX_NAME or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise ValueError(f"has a {what} name that is too long or holds control characters")
    return text


def _split_dotted(text: str) -> list[str]:
    """`a.b.c` into its parts; a dot inside "quotes", `backticks` or [brackets] is kept."""
    parts: list[str] = []
    current: list[str] = []
    closing: str | None = None
    for ch in text:
        if closing is not None:
            current.append(ch)
            if ch == closing:
                closing = None
            continue
        if ch in "\"`'":
            closing = ch
        elif ch == "[":
            closing = "]"
        if ch == "." and closing is None:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if closing is not None:
        raise ValueError("has an unclosed quote")
    parts.append("".join(current))
    return parts


RECORDS_RULE = (
    "names a table of sqlgate's own records (the sqlgate schema): rules are about your "
    "database's tables (main); agents never change sqlgate's tables, and their undo data "
    "reads NULL while any column is hidden"
)


def _without_schema(parts: list[str], size: int) -> list[str]:
    """`parts` without a `main.` before them; a `sqlgate.` before `size` parts is refused."""
    if len(parts) < 2:
        return parts
    schema = fold_name(_unquoted(parts[0], "schema"))
    if schema == "main":
        return parts[1:]
    if schema == SERVER_SCHEMA and len(parts) == size + 1:
        raise ValueError(RECORDS_RULE)
    return parts


def parse_table_name(text: str) -> str:
    """`users`, `"Users"` or `main.users` -> the table's name; ValueError says what is wrong."""
    parts = _without_schema(_split_dotted(text.strip()), 1)
    if len(parts) != 1:
        raise ValueError("must name one table of the main database, like invoices")
    return _unquoted(parts[0], "table")


def parse_column_name(text: str) -> ColumnRule:
    """`users.ssn`, `"users"."ssn"` or `main.users.ssn` -> a rule; ValueError says what is
    wrong, in words that follow the flag's name."""
    parts = _without_schema(_split_dotted(text.strip()), 2)
    if len(parts) != 2:
        raise ValueError("must name a column as TABLE.COLUMN, like users.ssn")
    return ColumnRule(_unquoted(parts[0], "table"), _unquoted(parts[1], "column"))


@dataclass(frozen=True)
class TableRules:
    """Every rule in force, from flags and the policy file together.

    `notes` are the policy file's words for the agent, shown by get_schema and
    describe_table: (table, column or None, text)."""

    hidden: tuple[ColumnRule, ...] = ()
    protected: tuple[str, ...] = ()
    append_only: tuple[str, ...] = ()
    notes: tuple[tuple[str, str | None, str], ...] = ()
    origin: str = FLAG_ORIGIN

    def __bool__(self) -> bool:
        return bool(self.hidden or self.protected or self.append_only)

    def merged(self, other: TableRules) -> TableRules:
        """These rules and `other`'s, each named once (first spelling kept)."""
        hidden: dict[tuple[str, str], ColumnRule] = {}
        for rule in self.hidden + other.hidden:
            hidden.setdefault(rule.key, rule)
        return TableRules(
            hidden=tuple(hidden.values()),
            protected=unique_names(self.protected + other.protected),
            append_only=unique_names(self.append_only + other.append_only),
            notes=self.notes + other.notes,
            origin=self.origin,
        )


def unique_names(names: tuple[str, ...]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(fold_name(name), name)
    return tuple(seen.values())
