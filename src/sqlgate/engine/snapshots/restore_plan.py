"""What a snapshot restore would change, and whether the snapshot may be restored at all.

A snapshot is a copy of the user's file alone: sqlgate's records (audit log, undo data,
memory, claims, members) live in the records file of the database's home and a restore
leaves them as they are (engine/snapshots/restore_records.py only adds the restore to
them). So the plan is about the user's tables: each one's rows now and in the snapshot.

The snapshot must be one of this database's: a file in this database's snapshots folder
(`snapshots/` of its records folder, `sqlgate.home`), named as `snapshots list` shows it:
`NAME.sqlite`, or `restored/NAME.sqlite` for a copy of before kept by a restore (outside the
rotation). Anything else is refused: a path that leaves the folder, another database's
folder, a file that is not SQLite.

A snapshot taken by sqlgate 0.1.0 holds sqlgate's own tables too (they lived inside the
user's file then; its application_id is sqlgate's): the plan names them (`left_out`) and
the restore leaves them out (files.py strips a staged copy first), so they never come back
into the user's file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.engine.commands import db_option
from sqlgate.engine.connect import SQLITE_HEADER
from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import APPLICATION_ID, FTS5_SHADOW_SUFFIXES, protected_names
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import NotFound, SnapshotError
from sqlgate.home import record_files

__all__ = [
    "KEPT_FOLDER",
    "SNAPSHOT_SUFFIX",
    "RestorePlan",
    "TableChange",
    "check_folder",
    "open_read_only",
    "plan_on",
    "server_objects",
    "snapshot_path",
]

SNAPSHOT_SUFFIX = ".sqlite"  # how a snapshot file's name ends
KEPT_FOLDER = "restored"  # snapshots/restored/: copies of before, never rotated


@dataclass(frozen=True)
class TableChange:
    """A user table whose row count differs, or that exists on one side only (None)."""

    name: str
    now: int | None
    snapshot: int | None


@dataclass(frozen=True)
class RestorePlan:
    db: Path
    snapshot: Path
    name: str
    tables: tuple[TableChange, ...]
    undone: int = 0  # calls made after the snapshot whose undo the restore marks done
    left_out: tuple[str, ...] = ()  # sqlgate 0.1.0's objects in the snapshot, left out
    # the memory events a restore carried forward in 0.1.0; none now (the memory is in the
    # records and stays as it is), kept for the memory's restore event text
    events: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "db": str(self.db),
            "snapshot": self.name,
            "snapshot_path": str(self.snapshot),
            "tables": [
                {"name": t.name, "rows_now": t.now, "rows_in_snapshot": t.snapshot}
                for t in self.tables
            ],
            "calls_rolled_back": self.undone,
            "left_out": list(self.left_out),
        }


def check_folder(db: Path, folder: Path) -> None:
    """`folder` must be the snapshots folder of `db`; SnapshotError otherwise."""
    expected = record_files(db).snapshots
    if folder.resolve() != expected.resolve():
        raise SnapshotError(
            f"{folder} is not the snapshots folder of {db} ({expected}); only a snapshot of "
            "this database is restored onto it; nothing was restored"
        )


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
    if not path.is_file() or path.is_symlink() or path.stat().st_size == 0:
        # an empty file is a claim: a snapshot still being written, or one that never was
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


def server_objects(conn: apsw.Connection, schema: str = "main") -> tuple[str, ...]:
    """sqlgate 0.1.0's objects in `schema` (its tables, FTS5 shadows, indexes, triggers and
    views), when the file is one sqlgate kept its tables in (its application_id); () for
    any other file, whose tables named like sqlgate's are the user's own."""
    quoted = quote_identifier(schema)
    row = conn.execute(f"PRAGMA {quoted}.application_id").fetchone()
    if row is None or int(row[0]) != APPLICATION_ID:
        return ()
    protected = protected_names()
    return tuple(
        str(name)
        for (name,) in conn.execute(f"SELECT name FROM {quoted}.sqlite_schema ORDER BY name")
        if fold_name(str(name)) in protected
    )


def _user_tables(conn: apsw.Connection, schema: str = "main") -> dict[str, int]:
    """Row counts of the user's tables in `schema` (0.1.0's server tables and FTS5 shadows
    left out)."""
    left_out = {fold_name(name) for name in server_objects(conn, schema)}
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
        if folded in left_out or folded in shadows:
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


def plan_on(live: apsw.Connection, db: Path, source: Path, name: str) -> RestorePlan:
    """What restoring `source` onto the live file changes, on an open connection to it (the
    restore's, under its exclusive lock, or a read-only one); `undone` is left 0 (the
    records count it: files.plan_restore)."""
    live.execute("ATTACH DATABASE ? AS snap", (str(source),))
    try:
        left_out = server_objects(live, "snap")
        snap_tables = _user_tables(live, "snap")
    except apsw.Error as exc:
        raise SnapshotError(f"cannot read snapshot {name}: {exc}; nothing was restored") from None
    finally:
        live.execute("DETACH DATABASE snap")
    return RestorePlan(
        db, source, name, _table_changes(_user_tables(live), snap_tables), left_out=left_out
    )
