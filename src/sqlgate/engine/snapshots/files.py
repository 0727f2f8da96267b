"""Whole-file snapshots of the user's file, in `snapshots/` of its records folder
(`sqlgate.home`), taken with SQLite's online backup; and restoring the file from one.

The folders are made 0700 and every file 0600: a snapshot holds the user's data. Names sort
by time and never collide: `<UTC time to the microsecond>-<random>.sqlite`, claimed with
O_EXCL (an empty file, never listed). A new name is always later than every name already in
the folder, so the order holds even when the clock is coarse (Windows) or steps back. Only
the newest `keep` are kept.

A snapshot is written to `<name>.partial` beside its claim, synced, and renamed over the
claim only once complete (`os.replace`, then the folder synced): a snapshot killed halfway
leaves an empty claim and a partial file, neither of which is ever listed, restored or
counted by the rotation; they may be deleted by hand.

A restore runs only when no other connection (in any process) has the database open: it
holds SQLite's exclusive lock from that check to the end. Under it, it

1. plans (restore_plan.py): a snapshot that is not in this database's snapshots folder is
   refused;
2. copies the current file to `snapshots/restored/` (kept outside the rotation);
3. for a snapshot of sqlgate 0.1.0 (its tables lived in the user's file then), stages a
   copy and drops sqlgate's objects from it (`strip_server_objects`);
4. writes the restore into the records (restore_records.py) in a transaction left open;
5. copies the snapshot (or the staged copy) into the database through the backup API,
   keeping the database's journal mode;
6. commits the records.

Anything failing before step 5 ends leaves the database as it was (the copy of before is
then removed: it would be a copy of the unchanged file) and the records without the restore.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from glob import escape as glob_escape
from pathlib import Path

import apsw

from sqlgate.engine.commands import db_option, shell_word
from sqlgate.engine.connect import hold_exclusively
from sqlgate.engine.snapshots.holders import holders_of
from sqlgate.engine.snapshots.restore_plan import (
    KEPT_FOLDER,
    SNAPSHOT_SUFFIX,
    RestorePlan,
    check_folder,
    open_read_only,
    plan_on,
    server_objects,
    snapshot_path,
)
from sqlgate.engine.snapshots.restore_records import (
    STAMP,
    RecordsWork,
    RestoreFacts,
    RestoreRecorder,
    calls_after,
)
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import NotFound, SnapshotError, SqlgateError
from sqlgate.home import record_files

__all__ = [
    "PARTIAL_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "RestoreFacts",
    "RestoreRecorder",
    "RestoreResult",
    "SnapshotInfo",
    "list_kept",
    "list_snapshots",
    "plan_restore",
    "restore_snapshot",
    "rotate_snapshots",
    "strip_server_objects",
    "take_snapshot",
]

BACKUP_PAGES_PER_STEP = 1024
PARTIAL_SUFFIX = ".partial"  # a snapshot being written: `<name>.partial`, never listed

Progress = Callable[[int, int], None]  # (pages done, pages in all)
WallClock = Callable[[], datetime]


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    path: Path
    size: int
    created: str  # ISO-8601 UTC, read from the name


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(name: str) -> datetime | None:
    """The moment a snapshot name records, or None for a name that is not a snapshot's."""
    try:
        return datetime.strptime(name.split("-", 1)[0], STAMP).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _next_moment(folder: Path, now: datetime) -> datetime:
    """`now`, or one microsecond after the newest name in `folder` when that is not earlier."""
    stamps = [_stamp(p.name) for p in folder.iterdir() if p.name.endswith(SNAPSHOT_SUFFIX)]
    newest = max((s for s in stamps if s is not None), default=None)
    if newest is not None and now <= newest:
        return newest + timedelta(microseconds=1)
    return now


def _new_name(moment: datetime) -> str:
    return f"{moment.strftime(STAMP)}-{secrets.token_hex(3)}{SNAPSHOT_SUFFIX}"


def private_folder(folder: Path) -> None:
    """Create `folder` (and its missing parents) readable by its owner only (0700)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for made in missing:
        os.chmod(made, 0o700)  # mkdir's mode passes through the umask; parents get 0777-umask


def _new_file(path: Path) -> None:
    """Create `path` empty, 0600; FileExistsError when it is there already."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def _claim_path(folder: Path, clock: WallClock = _utc_now) -> Path:
    """Create an empty file with a fresh name; O_EXCL makes two claims never share one."""
    try:
        private_folder(folder)
        for _ in range(20):
            path = folder / _new_name(_next_moment(folder, clock().astimezone(timezone.utc)))
            try:
                _new_file(path)
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise SnapshotError(f"cannot create a snapshot in {folder}: {exc.strerror}") from None
    raise SnapshotError(f"could not find a free snapshot name in {folder}")


def _copy(source: apsw.Connection, dest_path: Path, progress: Progress | None) -> None:
    dest = apsw.Connection(str(dest_path))
    try:
        with dest.backup("main", source, "main") as backup:
            while not backup.done:
                backup.step(BACKUP_PAGES_PER_STEP)
                if progress is not None:
                    progress(backup.page_count - backup.remaining, backup.page_count)
        # a snapshot is a plain file: no -wal beside it to lose
        dest.pragma("journal_mode", "delete")
    finally:
        dest.close()


def _sync(path: Path, folder: bool = False) -> None:
    """fsync `path` (a folder: where the platform lets one be opened)."""
    if folder and sys.platform == "win32":
        return
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _partial(path: Path) -> Path:
    return path.with_name(path.name + PARTIAL_SUFFIX)


def _remove(path: Path) -> None:
    """`path` and the journal files SQLite may have left beside it."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _write_whole(source: apsw.Connection, path: Path, progress: Progress | None) -> None:
    """Fill the claimed `path` with a copy of `source`, all or nothing: the copy is written
    to `<path>.partial` and renamed over the claim once complete and synced."""
    partial = _partial(path)
    _new_file(partial)
    try:
        _copy(source, partial, progress)
        _sync(partial)
        os.replace(partial, path)
    except BaseException:
        _remove(partial)
        raise
    _sync(path.parent, folder=True)


def take_snapshot(
    source: apsw.Connection,
    folder: Path,
    keep: int,
    progress: Progress | None = None,
    *,
    clock: WallClock = _utc_now,
) -> Path:
    """Copy the live database into a new snapshot file and rotate old ones out."""
    path = _claim_path(folder, clock)
    try:
        _write_whole(source, path, progress)
    except (apsw.Error, OSError) as exc:
        path.unlink(missing_ok=True)
        raise SnapshotError(f"snapshot into {folder} failed, so nothing was run: {exc}") from None
    rotate_snapshots(folder, keep)
    return path


def _created(name: str) -> str:
    moment = _stamp(name)
    if moment is None:
        return ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def list_snapshots(folder: Path) -> list[SnapshotInfo]:
    """Snapshots in `folder`, newest first: complete files only (an empty file is a claim
    still being written; `NAME.partial` never ends with the snapshot suffix)."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        if not path.name.endswith(SNAPSHOT_SUFFIX):
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue  # rotated away by another process meanwhile
        if stat.st_size > 0 and path.is_file():
            found.append(SnapshotInfo(path.name, path, stat.st_size, _created(path.name)))
    return sorted(found, key=lambda info: info.name, reverse=True)


def list_kept(folder: Path) -> list[SnapshotInfo]:
    """Copies of before kept by restores (`restored/NAME`), newest first; never rotated."""
    return [
        SnapshotInfo(f"{KEPT_FOLDER}/{info.name}", info.path, info.size, info.created)
        for info in list_snapshots(folder / KEPT_FOLDER)
    ]


def rotate_snapshots(folder: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest snapshots (and their companion files, named
    `<snapshot>.<something>`, such as a partial copy left by a killed snapshot); returns
    what was removed."""
    removed = [info.path for info in list_snapshots(folder)[keep:]]
    for path in removed:
        path.unlink(missing_ok=True)
        for companion in folder.glob(glob_escape(path.name) + ".*"):
            companion.unlink(missing_ok=True)
    return removed


def _lock_exclusively(db: Path, name: str) -> apsw.Connection:
    """A connection holding SQLite's exclusive lock on `db`, kept until it is closed
    (`hold_exclusively`): refused, naming who holds it, while another connection has the
    database open; held to the end, it keeps anyone from opening it while the restore runs."""
    try:
        return hold_exclusively(db)
    except apsw.BusyError:
        raise _in_use(db, name) from None
    except apsw.Error as exc:
        raise SnapshotError(f"cannot open {db} for the restore: {exc}") from None


def _in_use(db: Path, name: str) -> SnapshotError:
    """The refusal while another connection has `db` open: who holds it, and the command
    to run once it has stopped."""
    holders = holders_of(db)
    if holders:
        named = "; ".join(f"pid {h.pid}: {h.command}" for h in holders[:3])
        more = f" and {len(holders) - 3} more" if len(holders) > 3 else ""
        who = f"open in another process ({named}{more})"
    else:
        who = "open in another process or connection (a running sqlgate server or a client)"
    command = f"sqlgate snapshots restore {shell_word(name)} {db_option(db)} --yes"
    return SnapshotError(
        f"{db} is {who}; nothing was restored. Stop it, then run: {command}",
    )


def _copy_into(live: apsw.Connection, source_path: Path) -> None:
    """Overwrite `live` (holding the exclusive lock) with the database at `source_path`,
    keeping `live`'s journal mode.

    A WAL database cannot take pages of another size through the backup API, so the copy
    runs in rollback-journal mode and WAL is switched back on afterwards.
    """
    mode = str(live.pragma("journal_mode")).lower()
    if mode == "wal":
        live.pragma("journal_mode", "delete")
    try:
        source = apsw.Connection(str(source_path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            with live.backup("main", source, "main") as backup:
                while not backup.done:
                    backup.step(BACKUP_PAGES_PER_STEP)
        finally:
            source.close()
    finally:
        if mode == "wal":
            live.pragma("journal_mode", "wal")


_DROP_ORDER = ("trigger", "view", "table", "index")


def strip_server_objects(path: Path) -> tuple[str, ...]:
    """Drop sqlgate 0.1.0's objects (`restore_plan.server_objects`: its tables, FTS5 tables
    and their shadows, indexes, triggers, views) from the file at `path` and set its
    application_id and user_version to 0, in one transaction; returns what was dropped.

    No VACUUM: the user's tables keep their root pages (as `sqlgate migrate` leaves them),
    so the undo data of calls before the snapshot still finds them."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        names = server_objects(conn)
        with conn:
            for kind in _DROP_ORDER:
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_schema WHERE type = ? ORDER BY name", (kind,)
                ).fetchall():
                    if name in names and _still_there(conn, str(name)):
                        conn.execute(f"DROP {kind.upper()} {quote_identifier(str(name))}")
            conn.pragma("application_id", 0)
            conn.pragma("user_version", 0)
        return names
    finally:
        conn.close()


def _still_there(conn: apsw.Connection, name: str) -> bool:
    """Whether `name` is still in the schema (an FTS5 table's drop takes its shadows)."""
    row = conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (name,)).fetchone()
    return row is not None


@dataclass(frozen=True)
class RestoreResult:
    db: Path
    source: Path
    before: Path
    before_name: str  # as `snapshots restore` takes it: restored/NAME.sqlite
    plan: RestorePlan
    undone: int  # calls made after the snapshot whose undo data was marked undone
    event_id: int | None  # the memory event recording the restore


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _staged(folder: Path, source: Path) -> Path:
    """A copy of the 0.1.0 snapshot `source` without sqlgate's objects, 0600, in `folder`
    (not a snapshot name, so never listed)."""
    staging = folder / f".restoring-{secrets.token_hex(6)}.db"
    _new_file(staging)
    try:
        with_source = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            _copy(with_source, staging, None)
        finally:
            with_source.close()
        strip_server_objects(staging)
    except BaseException:
        _remove(staging)
        raise
    return staging


def plan_restore(db: Path, folder: Path, name: str) -> RestorePlan:
    """What restoring `name` onto `db` changes, with the calls made after the snapshot whose
    undo it marks done (read from the records); SnapshotError when the snapshot is not one
    of `db`'s, NotFound when either is missing. Reads only."""
    if not db.is_file():
        raise NotFound(f"database {db} does not exist")
    check_folder(db, folder)
    source = snapshot_path(folder, name, db)
    with open_read_only(db) as live:
        plan = plan_on(live, db.absolute(), source, name)
    records = record_files(db).records
    if not records.is_file():
        return plan
    try:
        with open_read_only(records) as conn:
            return replace(plan, undone=calls_after(conn, name))
    except apsw.Error:
        return plan  # records of an older schema, or unreadable: the restore counts them


def restore_snapshot(
    db: Path,
    folder: Path,
    name: str,
    keep: int,
    *,
    clock: WallClock = _utc_now,
    recorder: RestoreRecorder | None = None,
    session: str = "cli",
    wall_clock: Callable[[], float] | None = None,
) -> RestoreResult:
    """Make `db` the snapshot `name` again and record the restore in the records; see the
    module's docstring. `keep` is unused since the copy of before is kept outside the
    rotation (kept for the callers' signature)."""
    del keep
    if not db.is_file():
        raise NotFound(f"database {db} does not exist")
    check_folder(db, folder)
    source = snapshot_path(folder, name, db)
    db = db.absolute()
    live = _lock_exclusively(db, name)
    staging: Path | None = None
    try:
        plan = plan_on(live, db, source, name)  # a refusal changes nothing: it passes as it is
        work = RecordsWork(record_files(db).records, session,
                           wall_clock or (lambda: clock().timestamp()), recorder)  # fmt: skip
        before = _claim_path(folder / KEPT_FOLDER, clock)
        before_name = f"{KEPT_FOLDER}/{before.name}"
        try:
            _write_whole(live, before, None)
            if plan.left_out:
                staging = _staged(folder, source)
            work.begin(RestoreFacts(plan, before_name, _iso(clock().astimezone(timezone.utc))))
            _copy_into(live, staging or source)
        except (apsw.Error, SqlgateError, OSError) as exc:
            work.close()
            before.unlink(missing_ok=True)  # the database is unchanged: a redundant copy
            raise SnapshotError(
                f"restore of {name} failed; the database is unchanged: {exc}"
            ) from None
    finally:
        live.close()
        if staging is not None:
            _remove(staging)
    _commit(work, db, name, before_name)
    return RestoreResult(db, source, before, before_name, plan, work.undone, work.event_id)


def _commit(work: RecordsWork, db: Path, name: str, before_name: str) -> None:
    """Keep the restore's records, then move the witness on; the database is restored
    whatever happens here."""
    try:
        work.commit()
    except (apsw.Error, SqlgateError, OSError) as exc:
        raise SnapshotError(
            f"{db} was restored from {name}, but the restore is not in sqlgate's records "
            f"({exc}): the calls it rolled back are still listed by `sqlgate undo --list` "
            f"(their undo is refused: their rows changed); the previous content is {before_name}"
        ) from None
    try:
        work.publish()
    except (SqlgateError, OSError) as exc:
        raise SnapshotError(
            f"{db} was restored from {name} and the restore recorded, but the memory's witness "
            f"was not moved on to its event ({exc}): `sqlgate verify {db_option(db)}` reports "
            "it; the previous content is " + before_name
        ) from None
