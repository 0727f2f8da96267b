"""Moving a file of sqlgate 0.1.0 to the records layout (issue 33).

A 0.1.0 file holds sqlgate's tables inside it (application_id "SQGT", user_version 1..9):
sqlgate's own `memory.db` / `.sqlgate/agent.db`, and app files adopted with `--adopt-db`.
`plan_move` lists what moves and what stays; `move` moves it, in steps that can each be run
again after a crash (the step reached is kept in `migrated/move.json`, which stays as the
record of the move):

    backup    a backup-API copy of the whole file (and of its witness and audit queue) in
              `dbs/<key>/migrated/<name>-0.1.0-<UTC>.sqlite`, 0600: it exists throughout
    copy      a copy of the backup, brought to the newest schema, is attached to a new records
              file, and every server table is copied with its ids in one transaction (the
              full-text index is rebuilt; server_info keeps the database id, so every
              `N@dbid` undo id keeps naming its call); before the commit every copied table is
              checked row for row against its source, then `integrity_check`
    strip     the user's file loses sqlgate's triggers, views, full-text table, indexes and
              tables in one IMMEDIATE transaction, and its application_id and user_version go
              back to 0; its journal mode stays as it is
    relocate  in an auto_vacuum file a DROP moves other tables' root pages: the undo data's
              table shapes are rewritten (old root page -> new, read from the backup), so old
              undo ids stay honoured
    files     `<db>.snapshots/`, `<db>.witness.json` and `<db>.audit-queue` move into the
              records folder (0700 folders, 0600 files)

The whole move holds SQLite's exclusive lock on the user's file: it is refused while another
connection has the file open.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw

from sqlgate.config import Settings
from sqlgate.engine.commands import db_option
from sqlgate.engine.connect import (
    connect_read_only,
    hold_exclusively,
    immediate_transaction,
    open_server_connection,
)
from sqlgate.engine.database.ownership import read_facts, shown_path
from sqlgate.engine.framing import counted
from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import (
    APPLICATION_ID,
    FTS5_SHADOW_SUFFIXES,
    MIGRATIONS,
    REGISTRY,
    RESERVED,
    migrate,
)
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import StartupError
from sqlgate.home import RecordFiles, make_dir, record_files

__all__ = [
    "MIGRATED_DIR",
    "MoveFile",
    "MovePlan",
    "MoveResult",
    "Moving",
    "Relocate",
    "move",
    "move_pending",
    "plan_move",
]

MIGRATED_DIR = "migrated"
JOURNAL = "move.json"
STAGING = ".staging.sqlite"
OLD_SNAPSHOTS = ".snapshots"
OLD_WITNESS = ".witness.json"
OLD_QUEUE = ".audit-queue"
# the steps of a move, in order, as the journal names the last one done
BACKED_UP, COPIED, STRIPPED, RELOCATED, DONE = (
    "backed-up",
    "copied",
    "stripped",
    "relocated",
    "done",
)
# rewrites the undo data's table shapes: (catalog rowid, old root page) -> new root page, in the
# records connection's transaction; returns how many changed (engine.undo.relocate_shapes,
# passed in by the caller: the undo room sits above this one)
Relocate = Callable[[apsw.Connection, Mapping[tuple[int, int], int]], int]
_WAL_READ_VERSION = 2  # byte 18 of the header: 1 rollback journal, 2 WAL
_DROP_ORDER = ("trigger", "view", "fts5", "index", "table")
_RESERVED = frozenset(fold_name(obj.name) for obj in RESERVED)
_MOVED = tuple(obj for obj in REGISTRY if fold_name(obj.name) not in _RESERVED)


@dataclass(frozen=True)
class Moving:
    """One of sqlgate's objects in the user's file: its kind, name and rows (tables)."""

    kind: str  # table, view, trigger, index, fts5
    name: str
    rows: int | None = None


@dataclass(frozen=True)
class MoveFile:
    """A file or folder beside the user's file that moves into the records folder."""

    source: Path
    target: Path


@dataclass(frozen=True)
class MovePlan:
    """What a move of `db` does; `needed` is False for a file with nothing to move."""

    db: Path
    folder: Path  # the records folder
    version: int  # the file's sqlgate schema version (user_version)
    moving: tuple[Moving, ...]
    files: tuple[MoveFile, ...]
    staying: tuple[tuple[str, str], ...]  # (type, name) of every other object
    journal_mode: str
    auto_vacuum: int
    unfinished: str | None = None  # the last step a stopped move finished

    @property
    def needed(self) -> bool:
        return bool(self.moving) or self.unfinished is not None

    @property
    def backups(self) -> Path:
        return self.folder / MIGRATED_DIR

    def as_dict(self) -> dict[str, Any]:
        return {
            "db": str(self.db),
            "records": str(self.folder),
            "version": self.version,
            "moving": [{"kind": m.kind, "name": m.name, "rows": m.rows} for m in self.moving],
            "files": [{"from": str(f.source), "to": str(f.target)} for f in self.files],
            "staying": [{"kind": kind, "name": name} for kind, name in self.staying],
            "journal_mode": self.journal_mode,
            "auto_vacuum": self.auto_vacuum,
            "unfinished": self.unfinished,
        }


@dataclass(frozen=True)
class MoveResult:
    """What `move` did: the plan it followed, where the backup is, the rows copied and the
    undo table shapes whose root page moved."""

    plan: MovePlan
    backup: Path | None
    copied: dict[str, int]
    relocated: int

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.plan.as_dict(),
            "backup": None if self.backup is None else str(self.backup),
            "copied": self.copied,
            "relocated": self.relocated,
        }


# -- the journal: the last step done, kept in migrated/move.json ------------------------------


def _journal_path(files: RecordFiles) -> Path:
    return files.folder / MIGRATED_DIR / JOURNAL


def _read_journal(files: RecordFiles) -> dict[str, Any] | None:
    try:
        data = json.loads(_journal_path(files).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise StartupError(
            f"cannot read {_journal_path(files)}, the record of a move of a sqlgate 0.1.0 "
            "file; move it away and run `sqlgate migrate` again"
        ) from None
    return data if isinstance(data, dict) else None


def _write_journal(files: RecordFiles, **fields: Any) -> dict[str, Any]:
    path = _journal_path(files)
    data = {"format": 1, **(_read_journal(files) or {}), **fields}
    temp = path.with_name(f"{path.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
        out.write("\n")
    os.replace(temp, path)
    return data


def _set_aside_journal(files: RecordFiles) -> None:
    path = _journal_path(files)
    if path.exists():
        os.replace(path, path.with_name(f"move-{_stamp()}.json"))


def move_pending(db: Path) -> bool:
    """Whether `db` is a 0.1.0 file, or a move of it stopped before its end."""
    journal = _read_journal(record_files(db))
    return (journal is not None and journal.get("step") != DONE) or _is_legacy(db, 0.0)


def _is_legacy(db: Path, busy_timeout: float) -> bool:
    if not db.is_file() or db.stat().st_size == 0:
        return False
    return read_facts(db, busy_timeout).application_id == APPLICATION_ID


# -- the plan ---------------------------------------------------------------------------------


def _ours(conn: apsw.Connection) -> list[Moving]:
    """sqlgate's objects in `conn`'s main schema, tables with their row counts."""
    kinds = {fold_name(obj.name): obj.kind for obj in _MOVED}
    found = []
    for kind, name in conn.execute("SELECT type, name FROM main.sqlite_schema ORDER BY rowid"):
        registered = kinds.get(fold_name(str(name)))
        if registered is None:
            continue
        if (registered == "fts5") != (kind == "table" and _virtual(conn, name)):
            continue
        rows = None
        if registered == "table":
            rows = _count(conn, f"SELECT count(*) FROM main.{quote_identifier(str(name))}")
        found.append(Moving(registered, str(name), rows))
    return found


def _count(conn: apsw.Connection, sql: str) -> int:
    found = conn.execute(sql).fetchone()
    return 0 if found is None else int(found[0])


def _virtual(conn: apsw.Connection, name: object) -> bool:
    found = conn.execute(
        "SELECT 1 FROM main.sqlite_schema WHERE name = ? AND sql LIKE 'CREATE VIRTUAL%'", (name,)
    ).fetchone()
    return found is not None


def _shadows() -> frozenset[str]:
    return frozenset(
        fold_name(f"{obj.name}{suffix}")
        for obj in _MOVED
        if obj.kind == "fts5"
        for suffix in FTS5_SHADOW_SUFFIXES
    )


def _staying(conn: apsw.Connection, moving: list[Moving]) -> list[tuple[str, str]]:
    ours = {fold_name(m.name) for m in moving} | _shadows()
    return [
        (str(kind), str(name))
        for kind, name in conn.execute("SELECT type, name FROM main.sqlite_schema ORDER BY rowid")
        if fold_name(str(name)) not in ours and not str(name).startswith("sqlite_autoindex_")
    ]


def _beside(db: Path, files: RecordFiles) -> tuple[MoveFile, ...]:
    pairs = (
        (OLD_SNAPSHOTS, files.snapshots),
        (OLD_WITNESS, files.witness),
        (OLD_QUEUE, files.queue),
    )
    return tuple(
        MoveFile(db.with_name(db.name + suffix), target)
        for suffix, target in pairs
        if os.path.lexists(db.with_name(db.name + suffix))
    )


def _plan_on(conn: apsw.Connection, db: Path, files: RecordFiles) -> MovePlan:
    journal = _read_journal(files)
    moving = _ours(conn) if int(conn.pragma("application_id")) == APPLICATION_ID else []
    return MovePlan(
        db=db,
        folder=files.folder,
        version=int(conn.pragma("user_version")),
        moving=tuple(moving),
        files=_beside(db, files),
        staying=tuple(_staying(conn, moving)),
        journal_mode=str(conn.pragma("journal_mode")),
        auto_vacuum=int(conn.pragma("auto_vacuum")),
        unfinished=None if journal is None or journal.get("step") == DONE else journal.get("step"),
    )


def _reading(db: Path, busy_timeout: float) -> apsw.Connection:
    """A read-only connection that leaves no file beside `db`: a WAL file nobody has open
    (no -wal, no -shm) is read as immutable, as `ownership.read_facts` reads it."""
    with db.open("rb") as handle:
        header = handle.read(100)
    beside = [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm")]
    if (
        len(header) > 18
        and header[18] == _WAL_READ_VERSION
        and not any(path.exists() for path in beside)
    ):
        uri = f"{db.resolve().as_uri()}?immutable=1"
        return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    return connect_read_only(db, busy_timeout)


def plan_move(db: Path, busy_timeout: float = 5.0) -> MovePlan:
    """What `move` would do with the file at `db`, read without changing anything."""
    db = Path(os.path.abspath(db))
    if not db.is_file() or db.stat().st_size == 0:
        raise StartupError(f"no database at {shown_path(db)}; nothing to move")
    try:
        conn = _reading(db, busy_timeout)
        conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    except apsw.Error as exc:
        raise StartupError(f"cannot read {shown_path(db)}: {exc}") from None
    try:
        return _plan_on(conn, db, record_files(db))
    except apsw.Error as exc:
        raise StartupError(f"cannot read {shown_path(db)}: {exc}") from None
    finally:
        conn.close()


# -- the steps --------------------------------------------------------------------------------


def _lock(db: Path, busy_timeout: float) -> apsw.Connection:
    """A connection holding SQLite's exclusive lock on `db` until it is closed: refused
    (StartupError, nothing changed) while another connection has the file open (a 0.1.0 file
    is in WAL mode, which 0.1.0 switched it to: `hold_exclusively`)."""
    try:
        conn = hold_exclusively(db)
    except apsw.BusyError:
        raise _held(db, "another connection has it open") from None
    except apsw.Error as exc:
        raise StartupError(
            f"cannot open {shown_path(db)} to move sqlgate's tables: {exc}"
        ) from None
    conn.set_busy_timeout(int(busy_timeout * 1000))
    return conn


def _held(db: Path, why: str) -> StartupError:
    return StartupError(
        f"{shown_path(db)} holds sqlgate 0.1.0's tables, which move to .sqlgate/ before this "
        f"version uses it, but {why}; it was left untouched. Stop the program that has it "
        f"open (a sqlgate 0.1.0 server, your app), then run `sqlgate migrate "
        f"{db_option(db)}`"
    )


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def _private_copy(source: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)
    shutil.copyfile(source, partial)
    os.replace(partial, target)


def _back_up(live: apsw.Connection, db: Path, files: RecordFiles) -> Path:
    """The backup of the whole file (and its witness and audit queue) in migrated/."""
    folder = make_dir(files.folder / MIGRATED_DIR, files.home)
    base = f"{db.name}-0.1.0-{_stamp()}"
    target = folder / f"{base}.sqlite"
    partial = folder / f"{base}.sqlite.partial"
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    copy = apsw.Connection(str(partial))
    try:
        with copy.backup("main", live, "main") as backup:
            backup.step()
    finally:
        copy.close()
    for suffix in (OLD_WITNESS, OLD_QUEUE):
        beside = db.with_name(db.name + suffix)
        if beside.is_file():
            _private_copy(beside, folder / f"{base}{suffix}")
    os.replace(partial, target)
    return target


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _empty_records(files: RecordFiles, settings: Settings, *, ours: bool) -> None:
    """Clear the way for the copy: the records file of a copy this move made before it
    stopped (`ours`), or one that holds no rows, goes; any other is history this move must
    not replace."""
    if not files.records.is_file():
        return
    if ours:
        _remove_database(files.records)
        return
    conn = apsw.Connection(str(files.records), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [
            str(n)
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' "
                "AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        rows = sum(_count(conn, f"SELECT count(*) FROM {quote_identifier(t)}") for t in tables)
    finally:
        conn.close()
    if rows > (1 if tables else 0):  # a new records file holds one row: its database id
        raise StartupError(
            f"{files.records} already holds sqlgate records, and {shown_path(settings.db)} "
            "still holds sqlgate 0.1.0's tables: sqlgate will not merge two histories. Move "
            f"one of them away, then run `sqlgate migrate {db_option(settings.db)}`"
        )
    _remove_database(files.records)


def _staged(backup: Path, files: RecordFiles) -> Path:
    """A copy of the backup with sqlgate's tables at the newest schema: the copy's source."""
    staging = files.folder / MIGRATED_DIR / STAGING
    _remove_database(staging)
    _private_copy(backup, staging)
    conn = apsw.Connection(str(staging))
    try:
        conn.pragma("journal_mode", "delete")
        migrate(conn)
    finally:
        conn.close()
    return staging


def _copy(
    backup: Path, files: RecordFiles, settings: Settings, *, again: bool = False
) -> dict[str, int]:
    """Every server table of the backup into a new records file, ids and all, checked row
    for row before its one commit. `again`: a copy of this move stopped before, its records
    file is replaced."""
    _empty_records(files, settings, ours=again)
    staging = _staged(backup, files)
    conn = open_server_connection(files.records, settings)
    try:
        migrate(conn)
        conn.execute("ATTACH ? AS legacy", (str(staging),))
        with immediate_transaction(conn):
            copied = _copy_tables(conn)
        conn.execute("DETACH legacy")
        problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise StartupError(f"the records file {files.records} failed its check: {problems[:3]}")
        os.chmod(files.records, 0o600)
    finally:
        conn.close()
    _remove_database(staging)
    return copied


def _copy_tables(conn: apsw.Connection) -> dict[str, int]:
    """In the caller's transaction: triggers set aside (they guard the tables against
    changes of their rows, not against a first fill), each table emptied and filled from
    `legacy`, the full-text index rebuilt, the triggers put back, every table checked."""
    triggers = conn.execute(
        "SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' ORDER BY rowid"
    ).fetchall()
    for name, _ in triggers:
        conn.execute(f"DROP TRIGGER main.{quote_identifier(str(name))}")
    copied: dict[str, int] = {}
    for obj in _MOVED:
        if obj.kind != "table":
            continue
        table = quote_identifier(obj.name)
        columns = ", ".join(
            quote_identifier(str(c))
            for (c,) in conn.execute("SELECT name FROM pragma_table_info(?, 'main')", (obj.name,))
        )
        conn.execute(f"DELETE FROM main.{table}")
        conn.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM legacy.{table}")
        copied[obj.name] = _checked_copy(conn, table, columns)
    for obj in _MOVED:
        if obj.kind == "fts5":
            fts = quote_identifier(obj.name)
            conn.execute(f"INSERT INTO main.{fts} ({fts}) VALUES ('rebuild')")
    for _, sql in triggers:
        conn.execute(str(sql))
    return copied


def _checked_copy(conn: apsw.Connection, table: str, columns: str) -> int:
    """The rows of `table` in main, after checking they are those of `legacy`, each one."""
    here = _count(conn, f"SELECT count(*) FROM main.{table}")
    there = _count(conn, f"SELECT count(*) FROM legacy.{table}")
    differ = _count(
        conn,
        f"SELECT (SELECT count(*) FROM (SELECT {columns} FROM main.{table} EXCEPT "
        f"SELECT {columns} FROM legacy.{table})) + (SELECT count(*) FROM (SELECT {columns} "
        f"FROM legacy.{table} EXCEPT SELECT {columns} FROM main.{table}))",
    )
    if here != there or differ:
        raise StartupError(
            f"copying {table} into the records changed it ({counted(there, 'row')}, "
            f"{here} copied, {differ} differ); nothing was changed in the database"
        )
    return here


def _strip(live: apsw.Connection) -> None:
    """sqlgate's objects out of the user's file, its header fields back to 0, in one
    IMMEDIATE transaction; the journal mode stays."""
    with immediate_transaction(live):
        found = _ours(live)
        for kind in _DROP_ORDER:
            verb = "TABLE" if kind in ("table", "fts5") else kind.upper()
            for obj in found:
                if obj.kind == kind:
                    live.execute(f"DROP {verb} IF EXISTS main.{quote_identifier(obj.name)}")
        live.pragma("application_id", 0)
        live.pragma("user_version", 0)


def _roots(conn: apsw.Connection) -> dict[str, tuple[int, int]]:
    """(catalog rowid, root page) of each table in main, by folded name."""
    return {
        fold_name(str(name)): (int(rowid), int(root))
        for rowid, name, root in conn.execute(
            "SELECT rowid, name, rootpage FROM main.sqlite_schema WHERE type = 'table'"
        )
    }


def _relocate(
    live: apsw.Connection, backup: Path, files: RecordFiles, settings: Settings, relocate: Relocate
) -> int:
    """The undo shapes of each table whose root page the strip moved, rewritten (the old
    root pages are read from the backup, taken before the strip)."""
    old_file = apsw.Connection(str(backup), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        before = _roots(old_file)
    finally:
        old_file.close()
    after = _roots(live)
    moved = {
        was: now[1]
        for name, was in before.items()
        if (now := after.get(name)) is not None and now[0] == was[0] and now[1] != was[1]
    }
    if not moved:
        return 0
    conn = open_server_connection(files.records, settings)
    try:
        with immediate_transaction(conn):
            return relocate(conn, moved)
    finally:
        conn.close()


def _recount(live: apsw.Connection, files: RecordFiles, settings: Settings) -> dict[str, int]:
    """After a move stopped between its copy and the strip: the records still hold as many
    rows as the file, table by table, or nothing is stripped."""
    conn = apsw.Connection(str(files.records), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        copied = {}
        for found in _ours(live):
            if found.kind != "table":
                continue
            table = quote_identifier(found.name)
            rows = _count(conn, f"SELECT count(*) FROM main.{table}")
            if rows != found.rows:
                raise StartupError(
                    f"{files.records} holds {counted(rows, 'row')} of {found.name} and "
                    f"{shown_path(settings.db)} {found.rows}: the file changed since its "
                    "tables were copied, so it was left as it is. Move the records folder "
                    f"away and run `sqlgate migrate {db_option(settings.db)}` again"
                )
            copied[found.name] = rows
        return copied
    finally:
        conn.close()


def _private(path: Path) -> None:
    """0700 for a folder (and each below it), 0600 for a file."""
    if path.is_dir() and not path.is_symlink():
        os.chmod(path, 0o700)
        for entry in path.iterdir():
            _private(entry)
    elif path.is_file() and not path.is_symlink():
        os.chmod(path, 0o600)


def _merge_folder(source: Path, target: Path) -> None:
    """Every entry of `source` into `target` (an entry there of the same name is the
    unfinished copy of an earlier run: replaced), then `source` removed."""
    if not target.exists():
        shutil.move(str(source), str(target))
        return
    for entry in sorted(source.iterdir()):
        into = target / entry.name
        if entry.is_dir() and not entry.is_symlink():
            into.mkdir(mode=0o700, exist_ok=True)
            _merge_folder(entry, into)
        else:
            shutil.move(str(entry), str(into))
    source.rmdir()


def _move_queue(source: Path, target: Path) -> None:
    if not target.exists():
        shutil.move(str(source), str(target))
        return
    conn = apsw.Connection(str(target))
    try:
        conn.execute("ATTACH ? AS old", (str(source),))
        with immediate_transaction(conn):
            conn.execute("INSERT OR IGNORE INTO main.pending SELECT * FROM old.pending")
        conn.execute("DETACH old")
    finally:
        conn.close()
    _remove_database(source)


def _move_files(db: Path, files: RecordFiles) -> None:
    """The snapshots folder, witness and audit queue into the records folder."""
    for found in _beside(db, files):
        if found.source.name.endswith(OLD_SNAPSHOTS):
            _merge_folder(found.source, found.target)
        elif found.source.name.endswith(OLD_QUEUE):
            _move_queue(found.source, found.target)
        else:
            shutil.move(str(found.source), str(found.target))
        _private(found.target)


def move(db: Path, settings: Settings, relocate: Relocate) -> MoveResult | None:
    """Move the 0.1.0 file at `db` to the records layout (the module's steps), or finish a
    move that stopped; None when there is nothing to move. Raises StartupError, having
    changed nothing in the user's file, when it cannot. `relocate` rewrites the undo data's
    table shapes (`engine.undo.relocate_shapes`)."""
    db = Path(os.path.abspath(db))
    files = record_files(db)
    journal = _read_journal(files)
    unfinished = journal is not None and journal.get("step") != DONE
    if not unfinished and not _is_legacy(db, settings.busy_timeout):
        return None
    live = _lock(db, settings.busy_timeout)  # refused: nothing created, nothing changed
    try:
        files.make(db)
        make_dir(files.folder / MIGRATED_DIR, files.home)
        plan = _plan_on(live, db, files)
        newest = MIGRATIONS[-1].version
        if plan.moving and not 1 <= plan.version <= newest:
            raise StartupError(
                f"{shown_path(db)} holds sqlgate's tables of schema {plan.version}, which this "
                f"sqlgate (schema 1 to {newest}) cannot move; it was left untouched"
            )
        return _run(live, plan, files, settings, journal if unfinished else None, relocate)
    finally:
        live.close()


def _run(
    live: apsw.Connection,
    plan: MovePlan,
    files: RecordFiles,
    settings: Settings,
    journal: dict[str, Any] | None,
    relocate: Relocate,
) -> MoveResult:
    step = None if journal is None else journal.get("step")
    backup = None if journal is None or "backup" not in journal else Path(journal["backup"])
    copied: dict[str, int] = {}
    marked = int(live.pragma("application_id")) == APPLICATION_ID
    if plan.moving or marked:  # the user's file still holds sqlgate's tables (or its mark)
        if step == COPIED and backup is not None:
            copied = _recount(live, files, settings)
        else:
            again = step == BACKED_UP  # the copy of this move may have committed
            if not again:  # refused before anything is written when records hold history
                _empty_records(files, settings, ours=False)
                _set_aside_journal(files)  # the record of an earlier move stays, renamed
            backup = _back_up(live, plan.db, files)
            _write_journal(files, step=BACKED_UP, db=str(plan.db), backup=str(backup))
            copied = _copy(backup, files, settings, again=again)
            _write_journal(files, step=COPIED, copied=copied)
        _strip(live)
        step = _write_journal(files, step=STRIPPED)["step"]
    journal = _read_journal(files) or {}
    copied = copied or dict(journal.get("copied", {}))
    if step in (COPIED, STRIPPED) and backup is not None:
        relocated = _relocate(live, backup, files, settings, relocate)
        journal = _write_journal(files, step=RELOCATED, relocated=relocated)
    _move_files(plan.db, files)
    journal = _write_journal(
        files, step=DONE, finished=datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    return MoveResult(plan, backup, copied, int(journal.get("relocated", 0)))
