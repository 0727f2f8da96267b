"""What a snapshot restore would take away, and whether the snapshot may be restored at all.

`plan_restore` only reads: the live database and the snapshot, each on a read-only
connection. It gathers the facts (row counts of the user's tables on both sides, the rows
of sqlgate's own tables the snapshot lacks, both database ids, whether the snapshot's memory
chain is a prefix of the live one) and `restore_refusal` decides, a pure function of them:

- both files carry a database id (migration 8) and the ids differ: the snapshot is another
  database's (a byte copy keeps its id), so it is refused;
- the snapshot has no id (older than migration 8) or the live file has none: allowed, and
  the plan says that only the memory chain vouches for its origin;
- the snapshot's memory chain is not a prefix of the live one (an event of the snapshot is
  missing from the live file or differs from it): refused, for a snapshot of another
  database or a chain rewritten on one side;
- a snapshot of another application (its application_id) is refused.

Snapshots are named as `snapshots list` shows them: `NAME.sqlite` in `<db>.snapshots/`, or
`restored/NAME.sqlite` for a copy of before kept by a restore (outside the rotation).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from sqlgate.engine.commands import db_option
from sqlgate.engine.connect import SQLITE_HEADER
from sqlgate.engine.names import fold_name
from sqlgate.engine.records import database_id
from sqlgate.engine.schema import APPLICATION_ID, FTS5_SHADOW_SUFFIXES, protected_names
from sqlgate.engine.snapshots.restore_members import member_facts
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import NotFound, SnapshotError

__all__ = [
    "CARRIED_TABLES",
    "KEPT_FOLDER",
    "ChainFacts",
    "RestorePlan",
    "TableChange",
    "chain_facts",
    "has_table",
    "is_sqlgate",
    "open_read_only",
    "plan_on",
    "plan_restore",
    "restore_refusal",
    "scalar",
    "snapshot_path",
]

SNAPSHOT_SUFFIX = ".sqlite"  # how a snapshot file's name ends
_EVENT_FIELDS = ("ts", "session", "kind", "content", "tags", "prev_hash", "hash")
KEPT_FOLDER = "restored"  # <db>.snapshots/restored/: copies of before, never rotated
# sqlgate's append-only records, carried by id into a restored file
CARRIED_TABLES = ("query_log", "memory_events", "memory_checkpoints", "claims_history")


@dataclass(frozen=True)
class TableChange:
    """A user table whose row count differs, or that exists on one side only (None)."""

    name: str
    now: int | None
    snapshot: int | None


@dataclass(frozen=True)
class ChainFacts:
    """The memory chains of both files: (events, head id) each, and the first snapshot event
    that is missing from the live chain or differs from it (None: a prefix)."""

    live_head: int = 0
    snapshot_head: int = 0
    first_difference: int | None = None


@dataclass(frozen=True)
class RestorePlan:
    db: Path
    snapshot: Path
    name: str
    tables: tuple[TableChange, ...]
    carried: dict[str, int] = field(default_factory=dict)  # server rows the snapshot lacks
    events: tuple[int, int] | None = None  # the ids of the memory events carried forward
    database_id: str | None = None
    snapshot_id: str | None = None
    note: str | None = None
    # members and tokens only the snapshot holds (of a copy): never restored
    not_carried: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "db": str(self.db),
            "snapshot": self.name,
            "snapshot_path": str(self.snapshot),
            "tables": [
                {"name": t.name, "rows_now": t.now, "rows_in_snapshot": t.snapshot}
                for t in self.tables
            ],
            "carried_forward": self.carried,
            "not_carried": self.not_carried,
            "events": None if self.events is None else list(self.events),
            "database_id": self.database_id,
            "snapshot_database_id": self.snapshot_id,
            "note": self.note,
        }


def snapshot_path(folder: Path, name: str, db: Path) -> Path:
    """The snapshot file `name` names in `folder`, of database `db`; NotFound for anything
    else (a path that leaves the folder, a name that is not a snapshot's, a missing file)."""
    listing = f"`sqlgate snapshots list {db_option(db)}` shows them"
    parts = name.split("/")
    if (
        not name.endswith(SNAPSHOT_SUFFIX)
        or len(parts) > 2
        or (len(parts) == 2 and parts[0] != KEPT_FOLDER)
        or any(Path(part).name != part or part in ("", ".", "..") for part in parts)
    ):
        raise NotFound(f"{name!r} is not a snapshot name; {listing}")
    path = folder.joinpath(*parts)
    if not path.is_file() or path.is_symlink():
        raise NotFound(f"no snapshot {name} in {folder}; {listing}")
    with path.open("rb") as handle:
        if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise SnapshotError(f"{path} is not a SQLite database; nothing was restored")
    return path


@contextmanager
def open_read_only(path: Path) -> Iterator[apsw.Connection]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        yield conn
    finally:
        conn.close()


def scalar(conn: apsw.Connection, sql: str, params: tuple[object, ...] = ()) -> int:
    """The whole number a one-row, one-column query returns (0 for no row or NULL)."""
    row = conn.execute(sql, params).fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def has_table(conn: apsw.Connection, table: str, schema: str = "main") -> bool:
    row = conn.execute(
        f"SELECT 1 FROM {quote_identifier(schema)}.sqlite_schema WHERE type = 'table' AND name = ?",
        (table,),
    ).fetchone()
    return row is not None


def is_sqlgate(conn: apsw.Connection) -> bool:
    """Whether the file holds sqlgate's tables (a plain SQLite file has none to carry)."""
    return int(conn.pragma("application_id")) == APPLICATION_ID and has_table(conn, "query_log")


def _user_tables(conn: apsw.Connection, schema: str = "main") -> dict[str, int]:
    """Row counts of the user's tables in `schema` (sqlgate's and FTS5 shadows left out)."""
    protected = protected_names()
    listed = [
        (str(name), str(kind))
        for name, kind in conn.execute(
            "SELECT name, type FROM pragma_table_list WHERE schema = ? "
            "AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            (schema,),
        )
    ]
    shadows = {
        fold_name(name) + suffix
        for name, kind in listed
        if kind == "virtual"
        for suffix in FTS5_SHADOW_SUFFIXES
    }
    counts: dict[str, int] = {}
    for name, _ in listed:
        folded = fold_name(name)
        if folded in protected or folded in shadows:
            continue
        try:
            row = conn.execute(
                f"SELECT count(*) FROM {quote_identifier(schema)}.{quote_identifier(name)}"
            ).fetchone()
        except apsw.Error:
            continue  # a virtual table whose module is not loaded here
        counts[name] = int(row[0]) if row else 0
    return counts


def _table_changes(live: dict[str, int], snap: dict[str, int]) -> tuple[TableChange, ...]:
    """Every user table of either side, with its rows now and in the snapshot."""
    return tuple(
        TableChange(name, live.get(name), snap.get(name)) for name in sorted(set(live) | set(snap))
    )


def _missing(live: apsw.Connection, table: str) -> int:
    """Rows of `table` in the live file ("main") whose id the snapshot ("snap") lacks."""
    if not has_table(live, table):
        return 0
    if not has_table(live, table, "snap"):
        return scalar(live, f"SELECT count(*) FROM main.{table}")
    return scalar(
        live, f"SELECT count(*) FROM main.{table} WHERE id NOT IN (SELECT id FROM snap.{table})"
    )


def chain_facts(conn: apsw.Connection, snapshot_schema: str = "snap") -> ChainFacts:
    """The chains of "main" (live) and `snapshot_schema`: is the snapshot's a prefix?"""
    snap = quote_identifier(snapshot_schema)
    if not has_table(conn, "memory_events"):
        return ChainFacts()
    live_head = scalar(conn, "SELECT max(id) FROM main.memory_events")
    if not has_table(conn, "memory_events", snapshot_schema):
        return ChainFacts(live_head=live_head)
    snap_head = scalar(conn, f"SELECT max(id) FROM {snap}.memory_events")
    differs = scalar(
        conn,
        f"SELECT min(s.id) FROM {snap}.memory_events AS s LEFT JOIN main.memory_events AS m "
        "ON m.id = s.id WHERE m.id IS NULL OR "
        + " OR ".join(f"m.{column} IS NOT s.{column}" for column in _EVENT_FIELDS),
    )
    first = differs or None
    if first is None:  # every snapshot event is in the live chain: no live gap before its head
        live_before = scalar(
            conn, "SELECT count(*) FROM main.memory_events WHERE id <= ?", (snap_head,)
        )
        if live_before != scalar(conn, f"SELECT count(*) FROM {snap}.memory_events"):
            first = snap_head
    return ChainFacts(live_head, snap_head, first)


def restore_refusal(
    live_id: str | None, snapshot_id: str | None, chain: ChainFacts, foreign: bool
) -> str | None:
    """Why the snapshot must not be restored onto this database, or None (a pure decision)."""
    if foreign:
        return "it is not a sqlgate file of this database (another application's id)"
    if live_id is not None and snapshot_id is not None and live_id != snapshot_id:
        return (
            f"it is a snapshot of another database (its id {snapshot_id}, this database's "
            f"{live_id})"
        )
    if chain.first_difference is not None:
        return (
            f"its memory chain is not a prefix of this database's: event "
            f"{chain.first_difference} differs or is missing here (a snapshot of another "
            "database, or a chain rewritten on one side)"
        )
    return None


def plan_restore(db: Path, folder: Path, name: str) -> RestorePlan:
    """What restoring `name` onto `db` takes away and carries forward; SnapshotError when
    the snapshot must not be restored onto it (see `restore_refusal`), NotFound when either is
    missing. Reads only."""
    source = snapshot_path(folder, name, db)
    if not db.is_file():
        raise NotFound(f"database {db} does not exist")
    with open_read_only(db) as live:
        return plan_on(live, db, source, name)


def plan_on(live: apsw.Connection, db: Path, source: Path, name: str) -> RestorePlan:
    """`plan_restore` on an open connection to the live file (the restore's, under its
    exclusive lock, or a read-only one)."""
    live.execute("ATTACH DATABASE ? AS snap", (str(source),))
    try:
        ours = is_sqlgate(live)
        snap_app = scalar(live, "PRAGMA snap.application_id")
        foreign = ours and snap_app not in (0, APPLICATION_ID)
        live_id = database_id(live) if ours else None
        snap_id = _snapshot_id(live) if ours else None
        chain = chain_facts(live) if ours else ChainFacts()
        why = restore_refusal(live_id, snap_id, chain, foreign)
        if why is not None:
            raise SnapshotError(
                f"snapshot {name} cannot be restored onto {db}: {why}; nothing was restored"
            )
        snap_tables = _user_tables(live, "snap")
        carried = {t: _missing(live, t) for t in (*CARRIED_TABLES, "claims")} if ours else {}
        if ours and has_table(live, "undo_changesets"):
            carried["undo_changesets"] = _missing(live, "undo_changesets")
        not_carried: dict[str, int] = {}
        if ours:
            members = member_facts(live, "main", "snap")
            carried.update(members.newer)
            not_carried = members.snapshot_only
    finally:
        live.execute("DETACH DATABASE snap")
    events = None
    if chain.live_head > chain.snapshot_head:
        events = (chain.snapshot_head + 1, chain.live_head)
    note = None
    if ours and snap_id is None and live_id is not None:
        note = (
            "the snapshot is older than database ids (schema 8): only its memory chain "
            "vouches that it is of this database"
        )
    return RestorePlan(
        db, source, name, _table_changes(_user_tables(live), snap_tables), carried, events,
        live_id, snap_id, note, not_carried,
    )  # fmt: skip


def _snapshot_id(conn: apsw.Connection) -> str | None:
    if not has_table(conn, "server_info", "snap"):
        return None
    row = conn.execute("SELECT value FROM snap.server_info WHERE key = 'database_id'").fetchone()
    return None if row is None else str(row[0])
