"""Which undo data a call kept: the call the user named (`UndoTarget`), the changeset its
audit row points to, and the calls that can still be undone (`sqlgate undo --list`).

    check      the id is a whole number, and of this database (`15@3f9a1c07`)
    find       the audit row's detail names the call's changeset (`undo`), or why it kept
               none: a whole-file snapshot, undo data it could not keep, nothing changed
    describe   what a call was, for the person asked to confirm its undo
    list       undo data not undone yet, newest first, matched to its calls' audit rows

Nothing here writes: the undo itself is `engine.undo.restore`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.commands import db_option, list_calls, shell_word
from sqlgate.engine.database import Database
from sqlgate.engine.framing import counted
from sqlgate.engine.records import AGENT_FINDS_CALLS, one_call, succeeded_calls
from sqlgate.errors import InvalidArgument, NotFound, UndoRefused, WrongDatabase

__all__ = ["UNDOABLE_TOOLS", "UndoLookup", "UndoTarget"]

# ids are SQLite integers: signed 64-bit
_LARGEST_ID = 2**63 - 1

# the tools whose successful calls keep undo data (and so can be undone)
UNDOABLE_TOOLS = ("destructive_query", "write_query", "create_view")


@dataclass(frozen=True)
class UndoTarget:
    """Which call to undo, as the user named it: an audit id or a changeset id, and the
    database it belongs to (`15@3f9a1c07`; None: the database the command was given)."""

    audit_id: int | None = None
    changeset: int | None = None
    database: str | None = None
    by_agent: bool = False  # undo_call: the next steps name tools, not commands

    def next_step(self, command: str, agent: str) -> str:
        """A refusal's next step in the words of who asked: a command for a person at the
        CLI; for an agent, a tool, or what to ask the person who runs sqlgate."""
        return agent if self.by_agent else command

    @property
    def label(self) -> str:
        if self.audit_id is not None:
            return f"call {self.audit_id}"
        return f"changeset {self.changeset}"


def _whole_number(value: object, what: str, target: UndoTarget, listing: str) -> int:
    """`value`, when it is an id; `listing` is the command that lists the ids."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= _LARGEST_ID:
        raise InvalidArgument(
            f"{what} must be a whole number from 1 to {_LARGEST_ID}; "
            + target.next_step(listing, AGENT_FINDS_CALLS)
        )
    return value


def _detail(text: object) -> dict[str, Any]:
    try:
        parsed = json.loads(str(text)) if text is not None else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class UndoLookup:
    """The calls of one `Database` that kept undo data, found from its audit log."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def db_option(self) -> str:
        """`--db PATH`: the commands a refusal names run as written from any folder."""
        return db_option(self.db.path)

    def check(self, target: UndoTarget) -> None:
        """Refuse a target that names no call, an id that is not one, or another database."""
        if (target.audit_id is None) == (target.changeset is None):
            raise InvalidArgument("name the call to undo: an audit id, or --changeset N")
        if target.audit_id is not None:
            _whole_number(target.audit_id, "the audit id", target, list_calls(self.db.path))
        else:
            _whole_number(target.changeset, "the changeset id", target, list_calls(self.db.path))
        self.check_database(target)

    def changeset_of_call(self, conn: apsw.Connection, audit_id: int, target: UndoTarget) -> int:
        row = one_call(conn, audit_id, ("tool", "ok", "detail"))
        if row is None:
            raise self._no_call(audit_id, target)
        tool, ok, text = row
        detail = _detail(text)
        if tool in ("undo", "undo_call"):
            raise UndoRefused(
                f"call {audit_id} is itself an undo, which cannot be undone; to have the change "
                "back, run the original statement again"
            )
        if tool not in UNDOABLE_TOOLS or not ok:
            what = "a failed call" if tool in UNDOABLE_TOOLS else f"a call of {tool}"
            raise UndoRefused(
                f"call {audit_id} is {what}, which changed nothing: there is nothing to undo. "
                "Only successful write_query, destructive_query and create_view calls can be; "
                + target.next_step(
                    f"`sqlgate undo --list {self.db_option}` shows those that can",
                    "the undo hint in such a call's answer names the id to pass to undo_call",
                )
            )
        if "undo" in detail:
            return int(detail["undo"])
        snapshot = detail.get("snapshot")
        if snapshot:
            restore = (
                f"sqlgate snapshots restore {shell_word(Path(str(snapshot)).name)} {self.db_option}"
            )
            raise UndoRefused(
                f"call {audit_id} took a whole-file snapshot instead of row-level undo data. "
                + target.next_step(
                    f"To go back, run `{restore}` with the server stopped: that restores the "
                    "WHOLE file (sqlgate lists what it would take away first)",
                    "No tool restores a whole file: ask the person who runs sqlgate to run "
                    f"`{restore}` with the server stopped (it lists what the restore would take "
                    "away first)",
                )
            )
        if detail.get("undo_fallback"):
            raise UndoRefused(
                f"call {audit_id} kept no undo data ({detail['undo_fallback']}); nothing was "
                "undone. Fix the rows by hand with write_query or destructive_query"
            )
        raise UndoRefused(f"call {audit_id} changed no rows: there is nothing to undo")

    def check_database(self, target: UndoTarget) -> None:
        mine = self.db.database_id
        if target.database is not None and target.database != mine:
            raise WrongDatabase(
                f"{target.label}@{target.database} belongs to another database: "
                f"{self.db.path.absolute()} is database {mine}. Nothing was undone; "
                + target.next_step(
                    "run the command with the --db that the undo hint names",
                    "this server serves only that file and no tool reaches another. Ask the "
                    "person who runs sqlgate to run the whole undo hint (its --db names the "
                    f"database), or undo_call an id ending in @{mine}",
                )
            )

    def _no_call(self, audit_id: object, target: UndoTarget) -> NotFound:
        return NotFound(
            f"no call {audit_id} in query_log; "
            + target.next_step(
                f"`sqlgate undo --list {self.db_option}` shows them", AGENT_FINDS_CALLS
            )
        )

    def describe(self, target: UndoTarget) -> str:
        """What call `target` was (its tool, statement and rows), for the person asked to
        confirm its undo; NotFound / WrongDatabase as the undo would raise them."""
        self.check_database(target)
        if target.audit_id is None:
            return target.label
        _whole_number(target.audit_id, "the audit id", target, list_calls(self.db.path))
        with self.db.reading_records() as conn:
            row = one_call(conn, target.audit_id, ("tool", "query", "rows"))
        if row is None:
            raise self._no_call(target.audit_id, target)
        tool, query, rows = row
        said = counted(rows, "row") if isinstance(rows, int) else "rows not recorded"
        return f"{tool} ({said}): {query or ''}"

    def undoable(self) -> list[dict[str, Any]]:
        """Changesets not undone yet, newest first, each with the audit id of its call."""
        with self.db.reading_records() as conn:
            found = [
                {
                    "changeset": int(cid),
                    "audit_id": None,
                    "ts": str(ts),
                    "tool": str(tool),
                    "kind": str(kind),
                    "tables": json.loads(str(tables)),
                    "rows": int(changes),
                    "reason": None,
                }
                for cid, ts, tool, kind, tables, changes in conn.execute(
                    "SELECT id, ts, tool, kind, tables, changes FROM undo_changesets "
                    "WHERE undone_at IS NULL ORDER BY id DESC"
                )
            ]
            if found:
                self._match_calls(conn, found)
        return found

    @staticmethod
    def _match_calls(conn: apsw.Connection, found: list[dict[str, Any]]) -> None:
        """Fill in each changeset's audit id and reason: walk query_log back from its end
        until every changeset is matched (a call's audit row is written just after it)."""
        wanted = {item["changeset"]: item for item in found}
        for audit_id, text in succeeded_calls(conn, UNDOABLE_TOOLS):
            detail = _detail(text)
            item = wanted.pop(detail.get("undo"), None) if "undo" in detail else None
            if item is not None:
                item["audit_id"] = int(audit_id)
                item["reason"] = detail.get("reason")
            if not wanted:
                break
