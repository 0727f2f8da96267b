"""Members and their tokens through a snapshot restore: who may connect is never rolled back.

A restore puts back the user's tables and schema; the members (`members`, `member_tokens`,
engine/records/members.py) are sqlgate's records, and the live file's are always newer than the
snapshot's: a member is never deleted and a token is never un-revoked. So the restored file
takes the live file's members and tokens, row for row (ids, tiers, names, removals), and
then every revocation and removal the snapshot alone records is applied too (a snapshot of a
byte copy of the database, which keeps its id, may have revoked a token there): a
revocation, a rotation or a removal is never undone, whichever file made it.

A token only the snapshot knows (issued on a copy, or on a file an older restore rolled
back) is not carried: a token the live file does not accept never starts working through a
restore. Such rows stay in the snapshot file, which a restore never changes.

`member_facts` counts, for the plan (both files attached: the live one as `live`, the
snapshot as `snapshot`), what the live file holds that the snapshot lacks or holds in an
older state, and what only the snapshot holds; `carry_members` does the restore's part, on
the staging copy ("main": the snapshot, migrated) with the live file attached as "before".
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from sqlgate.engine.sqltext import quote_identifier

__all__ = ["MEMBER_TABLES", "MemberFacts", "carry_members", "member_facts"]

MEMBER_TABLES = ("members", "member_tokens")
# what names a row of each table (a member by its id and who it was made for; a token by
# its digest), and the columns whose value tells its state
_KEYS = {"members": ("id", "name", "created"), "member_tokens": ("digest",)}
_STATE = {"members": ("tier", "removed"), "member_tokens": ("member_id", "revoked")}


@dataclass(frozen=True)
class MemberFacts:
    """Rows of each members table the live file holds that the snapshot lacks or holds in
    an older state (`newer`), and rows only the snapshot holds (`snapshot_only`)."""

    newer: dict[str, int]
    snapshot_only: dict[str, int]


def _has(conn: apsw.Connection, schema: str, table: str) -> bool:
    return (
        conn.execute(
            f"SELECT 1 FROM {quote_identifier(schema)}.sqlite_schema "
            "WHERE type = 'table' AND name = ?",
            (table,),
        ).fetchone()
        is not None
    )


def _rows(
    conn: apsw.Connection, schema: str, table: str, columns: tuple[str, ...]
) -> set[tuple[object, ...]]:
    if not _has(conn, schema, table):
        return set()
    chosen = ", ".join(map(quote_identifier, columns))
    return {
        tuple(row)
        for row in conn.execute(
            f"SELECT {chosen} FROM {quote_identifier(schema)}.{quote_identifier(table)}"
        )
    }


def member_facts(conn: apsw.Connection, live: str, snapshot: str) -> MemberFacts:
    """What `live` holds of members and tokens that `snapshot` lacks or holds older, and
    what `snapshot` alone holds (both schemas attached to `conn`)."""
    newer: dict[str, int] = {}
    only: dict[str, int] = {}
    for table in MEMBER_TABLES:
        keys = _KEYS[table]
        whole = keys + _STATE[table]
        ours = _rows(conn, live, table, whole)
        theirs = _rows(conn, snapshot, table, whole)
        newer[table] = len(ours - theirs)
        known = {row[: len(keys)] for row in ours}
        only[table] = len({row[: len(keys)] for row in theirs} - known)
    return MemberFacts(newer, only)


def _columns(conn: apsw.Connection, schema: str, table: str) -> list[str]:
    return [
        str(row[1])
        for row in conn.execute(
            f"PRAGMA {quote_identifier(schema)}.table_info({quote_identifier(table)})"
        )
    ]


def carry_members(conn: apsw.Connection) -> dict[str, int]:
    """Make "main"'s members and tokens the live file's ("before"), keeping every
    revocation and removal "main" records; returns the rows of each table the live file
    held newer than the snapshot. The caller holds the transaction."""
    facts = member_facts(conn, "before", "main")
    ended = conn.execute(
        "SELECT revoked, digest FROM main.member_tokens WHERE revoked IS NOT NULL"
    ).fetchall()
    removed = conn.execute(
        "SELECT removed, id, name, created FROM main.members WHERE removed IS NOT NULL"
    ).fetchall()
    conn.execute("DELETE FROM main.member_tokens")
    conn.execute("DELETE FROM main.members")
    for table in MEMBER_TABLES:
        if _has(conn, "before", table):
            ours = set(_columns(conn, "before", table))
            shared = [c for c in _columns(conn, "main", table) if c in ours]
            columns = ", ".join(map(quote_identifier, shared))
            name = quote_identifier(table)
            conn.execute(f"INSERT INTO main.{name} ({columns}) SELECT {columns} FROM before.{name}")
    conn.executemany(
        "UPDATE main.member_tokens SET revoked = ? WHERE digest = ? AND revoked IS NULL", ended
    )
    conn.executemany(
        "UPDATE main.members SET removed = ? "
        "WHERE id = ? AND name = ? AND created = ? AND removed IS NULL",
        removed,
    )
    return facts.newer
