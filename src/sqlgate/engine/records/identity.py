"""Which database a call belongs to: the random id each sqlgate database is given.

Audit ids are small integers that repeat across databases, so every undo id a person or an
agent is shown carries the database's id too (`15@3f9a1c07`): given to another database it
is refused, never applied to whatever call has that number there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import apsw

from sqlgate.engine.framing import counted
from sqlgate.errors import InvalidArgument

__all__ = ["CallRef", "database_id", "parse_call_ref"]

_DATABASE_ID = "SELECT value FROM server_info WHERE key = 'database_id'"
_LARGEST_ID = 2**63 - 1
_REF = re.compile(r"([0-9]{1,19})(?:@([0-9a-fA-F]{1,32}))?")


def database_id(conn: apsw.Connection) -> str | None:
    """This database's id; None for a file of an older schema (before server_info)."""
    try:
        row = conn.execute(_DATABASE_ID).fetchone()
    except apsw.SQLError:  # no such table: a file the server has not upgraded yet
        return None
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class CallRef:
    """A call as a person names it: its audit id, and the database it belongs to (when
    given: a bare number means "of the database named by --db")."""

    audit_id: int
    database: str | None = None

    def __str__(self) -> str:
        return str(self.audit_id) if self.database is None else f"{self.audit_id}@{self.database}"


LIST_CALLS = "`sqlgate undo --list` shows the calls that can be undone"
# the agent runs no command: the ids it can pass are in its own answers and in query_log
AGENT_FINDS_CALLS = (
    "the undo hint in a change's answer names its call (`undo: sqlgate undo N@DB`), and "
    "read_query over query_log lists the calls"
)


def parse_call_ref(text: str, next_step: str = LIST_CALLS) -> CallRef:
    """`15@3f9a1c07` or `15`; InvalidArgument for anything else, ending with `next_step`."""
    match = _REF.fullmatch(text.strip())
    if match is None or not 1 <= int(match.group(1)) <= _LARGEST_ID:
        shown = (
            repr(text) if len(text) <= 60 else f"{text[:40]!r}… ({counted(len(text), 'character')})"
        )
        raise InvalidArgument(
            f"{shown} is not a call id: give it as the undo hint shows it, AUDIT_ID@DATABASE_ID "
            f"(e.g. 15@3f9a1c07); {next_step}"
        )
    database = match.group(2)
    return CallRef(int(match.group(1)), database.lower() if database else None)
