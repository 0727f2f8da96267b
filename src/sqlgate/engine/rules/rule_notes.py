"""What describe_table and get_schema tell the agent of the user's table rules.

The agent is told which columns are hidden and which tables are guarded before it tries,
so a NULL is not a puzzle and a refused write is not a surprise; the `--policy` file's
notes come with them. Names and notes are stored or given text: shown through `inline`.
"""

from __future__ import annotations

from sqlgate.engine.framing import inline
from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.rules.table_rules import TableRules

__all__ = ["schema_notes", "table_notes"]

HIDDEN = "hidden by policy (reads as NULL, never written)"
MODE_NOTES = {"protected": "protected by policy: read only", "append-only": "append-only by "
         "policy: INSERT only"}  # fmt: skip


def _mode(rules: LiveRules, folded: str) -> str | None:
    if folded in rules.protected:
        return MODE_NOTES["protected"]
    if folded in rules.append_only:
        return MODE_NOTES["append-only"]
    return None


def table_notes(live: LiveRules, given: TableRules, table: str, columns: list[str]) -> list[str]:
    """Server lines about `table` (its `columns` as the schema names them)."""
    folded = fold_name(table)
    lines = []
    hidden = [c for c in columns if live.is_hidden(table, c)]
    if hidden:
        lines.append(f"# {HIDDEN}: {', '.join(inline(c) for c in hidden)}")
    mode = _mode(live, folded)
    if mode is not None:
        lines.append(f"# {mode}")
    for note_table, column, text in given.notes:
        if fold_name(note_table) == folded:
            about = f" on {inline(column)}" if column else ""
            lines.append(f"# note{about}: {inline(text)}")
    return lines


def schema_notes(live: LiveRules, given: TableRules) -> list[str]:
    """One server line of every rule and note, for get_schema; none without rules."""
    parts = [
        f"{inline(live.name_of(table))}.{inline(column)} hidden"
        for table, columns in sorted(live.hidden.items())
        for column in sorted(columns)
    ]
    parts.extend(f"{inline(live.name_of(t))}: every column hidden" for t in sorted(live.sealed))
    parts.extend(f"{inline(live.name_of(t))} protected (read only)" for t in sorted(live.protected))
    parts.extend(
        f"{inline(live.name_of(t))} append-only (INSERT only)" for t in sorted(live.append_only)
    )
    lines = []
    if parts:
        lines.append(f"# table rules (hidden reads as NULL, never written): {'; '.join(parts)}")
    for table, column, text in given.notes:
        about = f"{table}.{column}" if column else table
        lines.append(f"# note on {inline(about)}: {inline(text)}")
    return lines
