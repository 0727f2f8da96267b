"""`sqlgate policy`: check the table rules before serving, and show the rules in force.

    sqlgate policy check --policy PATH [--db PATH]   the file's form, then its fit to the db
    sqlgate policy show [--db PATH] [rule flags]     each rule and whether it applies now

Both read the rules as `serve` does: the `--hide-column`, `--protect-table` and
`--append-only-table` flags, their environment variables and the `--policy` file together.
The database is only read (never created nor upgraded); without one, only the rules' form
is checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sqlgate.service import counted
from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    reports_errors,
    settings_from,
    settings_options,
)
from sqlgate.surfaces.terminal import visible

if TYPE_CHECKING:
    import apsw

    from sqlgate.service import TableRules

__all__ = ["policy"]

RULE_OPTIONS = ("db", "busy_timeout", "hide_column", "protect_table", "append_only_table", "policy")
DB_HELP = (
    "SQLite database file the rules are checked against (only read, never created; when it "
    "is missing, only the rules' form is checked)"
)
_RULE_TABLE = (
    Column("rule", "rule"),
    Column("table", "table"),
    Column("column", "column"),
    Column("state", "state"),
)


@click.group()
def policy() -> None:
    """The table rules: hidden columns, protected and append-only tables."""


def _reader(db: Path, busy_timeout: float) -> apsw.Connection | None:
    """The user's file to read its schema: read-write with `query_only` when it may be, so
    that closing it removes the -wal and -shm a WAL file's reading made (the file stays
    byte-identical); read-only otherwise."""
    import os

    import apsw

    from sqlgate.service import connect_read_only

    if not db.is_file():
        return None
    if not (os.access(db, os.W_OK) and os.access(db.parent, os.W_OK)):
        return connect_read_only(db, busy_timeout)
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(int(busy_timeout * 1000))
    conn.pragma("query_only", True)
    return conn


def _counts(rules: TableRules) -> str:
    return ", ".join(
        (
            counted(len(rules.hidden), "hidden column"),
            counted(len(rules.protected), "protected table"),
            counted(len(rules.append_only), "append-only table"),
        )
    )


@policy.command("check")
@settings_options(RULE_OPTIONS, db_help=DB_HELP)
@reports_errors
def policy_check(**values: Any) -> None:
    """Check the table rules as `serve` would at start, without serving.

    The --policy file's form (every key, type and mode), then, when --db names an existing
    database, whether each rule fits its schema. Exit 0 when all is well; the problems
    are listed and the exit code is a start-up error's otherwise.
    """
    from sqlgate.errors import StartupError
    from sqlgate.service import check_against, rules_from_settings

    settings = settings_from(values)
    rules = rules_from_settings(settings)  # the file's problems: StartupError, all listed
    conn = _reader(settings.db, settings.busy_timeout)
    where = "no database to check against"
    if conn is not None:
        try:
            problems = check_against(conn, rules)
        finally:
            conn.close()
        if problems:
            for problem in problems:  # one line each, then the exit code of a start-up error
                click.echo(visible(f"sqlgate: error: {problem}"), err=True)
            raise SystemExit(StartupError.exit_code)
        where = f"they fit {settings.db}"
    source = f" ({settings.policy})" if settings.policy is not None else ""
    click.echo(visible(f"ok: {_counts(rules)}{source}; {where}"))


def _states(conn: apsw.Connection | None, rules: TableRules) -> dict[tuple[str, str], str]:
    """(folded table, folded column or "") -> how the rule applies in the schema now."""
    from sqlgate.service import fold_name

    states: dict[tuple[str, str], str] = {}
    if conn is None:
        return states
    tables = {
        fold_name(str(name)) for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table'"
        )
    }  # fmt: skip
    for table in {*(r.table for r in rules.hidden), *rules.protected, *rules.append_only}:
        folded = fold_name(table)
        if folded not in tables:
            states[(folded, "")] = "table not created yet: applies once it is"
            continue
        states[(folded, "")] = "applies"
        columns = {
            fold_name(str(c)) for (c,) in conn.execute(
                "SELECT name FROM pragma_table_xinfo(?)", (table,)
            )
        }  # fmt: skip
        for rule in rules.hidden:
            if fold_name(rule.table) == folded:
                state = "applies" if fold_name(rule.column) in columns else (
                    "column missing: every column of the table is hidden"
                )  # fmt: skip
                states[(folded, fold_name(rule.column))] = state
    return states


@policy.command("show")
@JSON_OPTION
@settings_options(RULE_OPTIONS, db_help=DB_HELP)
@reports_errors
def policy_show(as_json: bool, **values: Any) -> None:
    """The table rules in force (flags, environment and --policy file), one per line, and
    whether each applies to the database now; the file's notes for the agent too."""
    from sqlgate.service import fold_name, rules_from_settings

    settings = settings_from(values)
    rules = rules_from_settings(settings)
    conn = _reader(settings.db, settings.busy_timeout)
    try:
        states = _states(conn, rules)
    finally:
        if conn is not None:
            conn.close()
    unknown = "no database: not checked"

    def state(table: str, column: str = "") -> str:
        return states.get((fold_name(table), fold_name(column)), unknown)

    records: list[dict[str, Any]] = [
        {"rule": "hidden", "table": r.table, "column": r.column, "state": state(r.table, r.column)}
        for r in rules.hidden
    ]
    for mode, tables in (("protected", rules.protected), ("append-only", rules.append_only)):
        records.extend(
            {"rule": mode, "table": t, "column": None, "state": state(t)} for t in tables
        )
    records.extend(
        {"rule": "note", "table": table, "column": column, "state": text}
        for table, column, text in rules.notes
    )
    print_listing(
        records, _RULE_TABLE, as_json=as_json, title=f"table rules for {settings.db}",
        empty="no table rules: give --hide-column, --protect-table, --append-only-table or "
        "--policy (serve takes the same)",
    )  # fmt: skip
