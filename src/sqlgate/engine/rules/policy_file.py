"""The table rules from the flags and the `--policy` file: TOML, with notes for the agent.

    [tables.users]
    hide = ["ssn", "password_hash"]      # hidden columns: read as NULL, never written
    note = "customer accounts"           # shown to the agent by get_schema, describe_table
    notes = { ssn = "kept by billing" }  # a note per column

    [tables.invoices]
    mode = "protected"                   # read only, in every tool

    [tables.events]
    mode = "append-only"                 # INSERT only, in every tool

Every key is checked: an unknown one, a value of the wrong type, a mode other than those
two stops the server at start with the file, the line and what to fix. Whether the rules
fit the database (a hidden column an existing table lacks, a hidden column an append-only
table needs on every INSERT) is checked against the schema by `check_against`.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from sqlgate.config import Settings
from sqlgate.engine.framing import counted
from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.table_rules import (
    ColumnRule,
    TableRules,
    parse_column_name,
    parse_table_name,
    unique_names,
)
from sqlgate.errors import InvalidArgument, StartupError

if TYPE_CHECKING:  # only its type: reading TOML (Codex's config too) needs no SQLite
    import apsw

__all__ = [
    "MODES",
    "PolicyProblem",
    "check_against",
    "listed",
    "load_policy",
    "parse_policy",
    "rules_from_settings",
    "toml_reader",
]

T = TypeVar("T")

MODES = ("protected", "append-only")
TABLE_KEYS = ("hide", "mode", "note", "notes")
MAX_NOTE_CHARS = 500
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class PolicyProblem:
    """One thing wrong with the rules: where (a line, when known) and what to fix."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def toml_reader() -> ModuleType | None:
    """The TOML reader of this Python: tomllib (3.11+) or its 3.10 backport tomli; None
    when neither is there (the caller says what needs it)."""
    for module in ("tomllib", "tomli"):
        with contextlib.suppress(ModuleNotFoundError):
            return importlib.import_module(module)
    return None


def _line_of(text: str, table: str | None, key: str | None) -> int | None:
    """The line that sets `key` in `[tables.<table>]` (or its header), best effort."""
    lines = text.splitlines()
    start = 0
    if table is not None:
        header = re.compile(r"^\s*\[\s*tables\s*\.\s*[\"']?" + re.escape(table) + r"[\"']?\s*[\].]")
        for number, line in enumerate(lines):
            if header.match(line):
                start = number
                if key is None:
                    return number + 1
                break
    if key is not None:
        wanted = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*[=.]")
        for number in range(start, len(lines)):
            if wanted.match(lines[number]):
                return number + 1
    return None


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.problems: list[PolicyProblem] = []

    def problem(self, table: str | None, key: str | None, message: str) -> None:
        line = _line_of(self.text, table, key)
        where = f"{self.path}" + (f", line {line}" if line else "")
        self.problems.append(PolicyProblem(where, message))

    def names(self, table: str, value: object) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(
                table,
                "hide",
                f'[tables.{table}] hide must be a list of column names, like hide = ["ssn"]',
            )
            return []
        return list(value)

    def text_value(self, table: str, key: str, value: object) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.problem(table, key, f"[tables.{table}] {key} must be a non-empty string")
            return None
        if len(value) > MAX_NOTE_CHARS or any(ord(c) < 32 and c not in "\t" for c in value):
            self.problem(
                table, key,
                f"[tables.{table}] {key} must be one line of at most "
                f"{counted(MAX_NOTE_CHARS, 'character')}",
            )  # fmt: skip
            return None
        return value.strip()


def parse_policy(path: Path, text: str) -> tuple[TableRules, list[PolicyProblem]]:
    """The rules a policy file's text holds, and every problem found in it."""
    toml = toml_reader()
    if toml is None:
        raise StartupError("reading a --policy file needs Python 3.11 or later, or 'tomli'")
    reader = _Reader(path, text)
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        reader.problems.append(PolicyProblem(str(path), f"is not valid TOML: {exc}"))
        return TableRules(), reader.problems
    for key in data:
        if key != "tables":
            reader.problem(
                None, key, f"unknown key {key!r}: a policy file holds [tables.NAME] sections only"
            )
    tables = data.get("tables", {})
    if not isinstance(tables, Mapping):
        reader.problem(None, "tables", "tables must be sections like [tables.users]")
        tables = {}
    found = _Found()
    for given, section in tables.items():
        try:
            table = parse_table_name(given)
        except ValueError as exc:
            reader.problem(given, None, f"[tables.{given}] {exc}")
            continue
        if not isinstance(section, Mapping):
            reader.problem(given, None, f"tables.{given} must be a section, [tables.{given}]")
            continue
        _read_section(reader, found, given, table, section)
    rules = TableRules(
        tuple(found.hidden), tuple(found.protected), tuple(found.append_only), tuple(found.notes)
    )
    return rules, reader.problems


@dataclass
class _Found:
    """The rules read so far, in file order."""

    hidden: list[ColumnRule] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    append_only: list[str] = field(default_factory=list)
    notes: list[tuple[str, str | None, str]] = field(default_factory=list)


def _read_section(
    reader: _Reader, found: _Found, given: str, table: str, section: Mapping[str, Any]
) -> None:
    """The rules of one `[tables.<given>]` section (`table` is its parsed name)."""
    for key in section:
        if key not in TABLE_KEYS:
            reader.problem(
                given, key,
                f"[tables.{given}] has an unknown key {key!r}; the keys are "
                f"{', '.join(TABLE_KEYS)}",
            )  # fmt: skip
    for column in reader.names(given, section.get("hide", [])):
        found.hidden.append(ColumnRule(table, column))
    mode = section.get("mode")
    if mode is not None and mode not in MODES:
        reader.problem(
            given, "mode",
            f"[tables.{given}] mode must be \"protected\" or \"append-only\", not {mode!r}",
        )  # fmt: skip
    elif mode == "protected":
        found.protected.append(table)
    elif mode == "append-only":
        found.append_only.append(table)
    if "note" in section:
        note = reader.text_value(given, "note", section["note"])
        if note is not None:
            found.notes.append((table, None, note))
    column_notes = section.get("notes", {})
    if not isinstance(column_notes, Mapping):
        reader.problem(
            given,
            "notes",
            f'[tables.{given}] notes must map columns to text, like notes = {{ ssn = "..." }}',
        )
        column_notes = {}
    for column, value in column_notes.items():
        note = reader.text_value(given, "notes", value)
        if note is not None:
            found.notes.append((table, str(column), note))


def load_policy(path: Path) -> TableRules:
    """The rules of the file at `path`; StartupError lists every problem in it."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise StartupError(
                f"--policy {path} is {counted(size, 'byte')}; a policy file is at most 1 MB"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StartupError(
            f"--policy {path}: no such file; give the path of a TOML policy file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StartupError(f"--policy {path} cannot be read: {exc}") from None
    rules, problems = parse_policy(path, text)
    if problems:
        raise StartupError(listed(problems))
    return rules


def listed(problems: list[PolicyProblem]) -> str:
    """The problems as one message (a CLI error is one line): numbered, `;` between."""
    shown = "; ".join(f"({n}) {problem}" for n, problem in enumerate(problems, 1))
    count = counted(len(problems), "problem")
    return f"the table rules have {count}; fix them and start again: {shown}"


def _columns(conn: apsw.Connection, table: str) -> dict[str, tuple[bool, bool]] | None:
    """folded column -> (NOT NULL without a default, generated); None: no such table."""
    rows = list(
        conn.execute(
            "SELECT name, \"notnull\", dflt_value, hidden FROM pragma_table_xinfo(?, 'main')",
            (table,),
        )
    )
    if not rows:
        return None
    return {
        fold_name(str(name)): (bool(notnull) and default is None, int(hidden) in (2, 3))
        for name, notnull, default, hidden in rows
    }


def check_against(conn: apsw.Connection, rules: TableRules) -> list[PolicyProblem]:
    """What in `rules` does not fit the schema of `conn` now. A table that does not exist
    yet is no problem: its rules apply once it is created."""
    problems: list[PolicyProblem] = []
    where = "the table rules"
    protected = {fold_name(t) for t in rules.protected}
    for table in rules.append_only:
        if fold_name(table) in protected:
            problems.append(PolicyProblem(
                where, f"{table} is both protected and append-only; keep one mode for it",
            ))  # fmt: skip
    appending = {fold_name(t) for t in rules.append_only}
    shapes: dict[str, dict[str, tuple[bool, bool]] | None] = {}
    for rule in rules.hidden:
        folded = fold_name(rule.table)
        if folded not in shapes:
            shapes[folded] = _columns(conn, rule.table)
        shape = shapes[folded]
        if shape is None:
            continue
        column = shape.get(fold_name(rule.column))
        if column is None:
            known = ", ".join(sorted(shape)) or "none"
            problems.append(PolicyProblem(
                where,
                f"{rule} names no column of {rule.table} (its columns: {known}); fix the name "
                "or drop the rule",
            ))  # fmt: skip
            continue
        required, _generated = column
        if required and folded in appending:
            problems.append(PolicyProblem(
                where,
                f"{rule} is hidden, but {rule.table} is append-only and needs {rule.column} on "
                "every INSERT (NOT NULL without a default), which the agent may not write: no "
                "INSERT could succeed; give it a DEFAULT, or do not hide it",
            ))  # fmt: skip
    return problems


def _each(parse: Callable[[str], T], given: tuple[str, ...], option: str) -> tuple[T, ...]:
    parsed = []
    for text in given:
        try:
            parsed.append(parse(text))
        except ValueError as exc:
            raise InvalidArgument(f"{option} {text!r} {exc}") from None
    return tuple(parsed)


def rules_from_settings(settings: Settings) -> TableRules:
    """The rules of the flags (and their environment variables) and of the --policy file;
    InvalidArgument names the flag and the value whose form is wrong, StartupError every
    problem of the file."""
    flags = TableRules(
        hidden=_each(parse_column_name, settings.hide_column, "--hide-column"),
        protected=unique_names(_each(parse_table_name, settings.protect_table, "--protect-table")),
        append_only=unique_names(
            _each(parse_table_name, settings.append_only_table, "--append-only-table")
        ),
    )
    if settings.policy is None:
        return flags.merged(TableRules())  # each hidden column once
    return flags.merged(load_policy(settings.policy))
