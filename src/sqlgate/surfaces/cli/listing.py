"""How every listing command prints its records, following the tools people already pipe
(gh, kubectl, sqlite-utils):

- `--json`: one JSON object per line (JSON Lines), whatever stdout is;
- stdout a terminal: a table that fits the window. Text wraps, and a value too long for its
  column folds onto the next line: nothing is cut, and ids and times are never broken. When
  even that cannot fit (a narrow window), each record is shown as a block of `field value`
  lines instead (psql's expanded display);
- stdout a pipe or a file: tab-separated values with a header line, one record per line,
  nothing wrapped or cut, so `grep`, `cut` and `sort` see whole records.

Every value is agent-written or read from a file, so it is shown through `terminal`: control
and invisible characters (a tab or line break inside a value too) appear as escapes and
never reach the terminal, nor split a TSV record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click

from sqlgate.surfaces import terminal

__all__ = ["Column", "is_terminal", "print_listing", "print_pairs", "tsv_line"]


@dataclass(frozen=True)
class Column:
    """One column of a listing: the record's `key`, its `header`, and how a value reads."""

    key: str
    header: str
    keep_whole: bool = False  # ids and times: never wrapped nor folded on a terminal
    render: Callable[[Any], str] | None = None  # the value as text; default str(value)
    narrowest: int | None = None  # text wrapped no narrower (a date and time: the date's 10)
    widest: int | None = None  # text wrapped no wider, so the columns after it keep room

    def text(self, record: Mapping[str, Any]) -> str:
        value = record.get(self.key)
        if value is None:
            return ""
        return self.render(value) if self.render is not None else str(value)


def is_terminal() -> bool:
    """Whether stdout is a terminal (a person reading) rather than a pipe or a file, as rich
    decides it: `TTY_COMPATIBLE=1` or `0` in the environment overrides what it detects
    (a pipe is told without importing rich: `terminal.is_terminal`)."""
    return terminal.is_terminal()


def tsv_line(cells: Sequence[str]) -> str:
    """One TSV record: every cell on one line, tabs and line breaks in it as `\\t`, `\\n`."""
    return "\t".join(terminal.visible(text) for text in cells)


def print_listing(
    records: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    as_json: bool,
    title: str,
    empty: str,
    terminal_columns: Sequence[Column] | None = None,
) -> None:
    """Print `records` as JSON lines, a terminal table, or TSV (see the module's docstring).

    `empty` is said when there is nothing to list: on stdout on a terminal, on stderr when
    stdout is a pipe (which then receives nothing, as gh does), never with `--json`.
    `terminal_columns`, when given, are the table's (shorter forms of long values); TSV
    keeps `columns`, whole.
    """
    if as_json:
        for record in records:
            click.echo(terminal.json_dumps(dict(record)))
        return
    if not records:
        click.echo(terminal.visible(empty), err=not is_terminal())
        return
    if not is_terminal():
        click.echo(tsv_line([column.header for column in columns]))
        for record in records:
            click.echo(tsv_line([column.text(record) for column in columns]))
        return
    columns = columns if terminal_columns is None else terminal_columns
    console = terminal.console()
    widths = [
        max(len(column.header), *(len(column.text(record)) for record in records))
        for column in columns
    ]
    if _narrowest_table(columns, widths) > console.width:
        _print_records(records, columns, title)
        return
    from rich.table import Table

    table = Table(title=terminal.cell(title))
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            column.header,
            overflow="fold",
            no_wrap=column.keep_whole,
            min_width=_narrowest(column, width),
            max_width=None if column.keep_whole else column.widest,
        )
    for record in records:
        table.add_row(*(terminal.cell(column.text(record)) for column in columns))
    console.print(table)


_NARROWEST_TEXT = 12  # a text column narrower than this is read a few letters a line


def _narrowest_table(columns: Sequence[Column], widths: Sequence[int]) -> int:
    """The width of the table with its text columns at their narrowest readable width:
    ids and times whole, each text column at most `_NARROWEST_TEXT` wide, and the borders."""
    cells = sum(_narrowest(column, width) for column, width in zip(columns, widths, strict=True))
    return cells + 3 * len(columns) + 1


def _narrowest(column: Column, width: int) -> int:
    """The narrowest a column whose widest value is `width` may be made."""
    if column.keep_whole:
        return width
    return min(width, _NARROWEST_TEXT if column.narrowest is None else column.narrowest)


def _print_records(
    records: Sequence[Mapping[str, Any]], columns: Sequence[Column], title: str
) -> None:
    """One record after another, a line per field (psql's expanded display): what a table
    too wide for the terminal becomes, so nothing is squeezed into a column of letters."""
    from rich.rule import Rule
    from rich.table import Table

    console = terminal.console()
    console.print(terminal.cell(title), style="italic")
    for number, record in enumerate(records, start=1):
        console.print(Rule(f"{number} of {len(records)}", align="left", style="dim"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column(overflow="fold")
        for column in columns:
            grid.add_row(terminal.cell(column.header), terminal.cell(column.text(record)))
        console.print(grid)


def print_pairs(pairs: Sequence[tuple[str, Any]], *, title: str) -> None:
    """A report of labelled values: a two-column table on a terminal, `label<TAB>value`
    lines (with a header) in a pipe."""
    records = [{"item": label, "value": value} for label, value in pairs]
    columns = (Column("item", "item"), Column("value", "value"))
    if not is_terminal():
        click.echo(tsv_line(["item", "value"]))
        for record in records:
            click.echo(tsv_line([column.text(record) for column in columns]))
        return
    from rich.table import Table

    table = Table(show_header=False, title=terminal.cell(title))
    table.add_column(overflow="fold", no_wrap=True)
    table.add_column(overflow="fold")
    for record in records:
        table.add_row(*(terminal.cell(column.text(record)) for column in columns))
    terminal.console().print(table)
