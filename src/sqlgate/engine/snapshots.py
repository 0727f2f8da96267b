"""Whole-file snapshots in `<db>.snapshots/`, taken with SQLite's online backup.

Names sort by time and never collide: `<UTC time to the microsecond>-<random>.sqlite`,
created with O_EXCL. A new name is always later than every name already in the folder, so
the order holds even when the clock is coarse (Windows) or steps back. Only the newest
`keep` are kept. Restore copies the snapshot back into the database through the backup API,
after saving the current file as a snapshot too, and only when no other connection (in any
process) has the database open: it holds SQLite's exclusive lock from that check to the end.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from glob import escape as glob_escape
from pathlib import Path

import apsw

from sqlgate.engine.connect import SQLITE_HEADER
from sqlgate.errors import NotFound, SnapshotError

__all__ = [
    "SNAPSHOT_SUFFIX",
    "SnapshotInfo",
    "list_snapshots",
    "restore_snapshot",
    "rotate_snapshots",
    "take_snapshot",
]

SNAPSHOT_SUFFIX = ".sqlite"
BACKUP_PAGES_PER_STEP = 1024

Progress = Callable[[int, int], None]  # (pages done, pages in all)
WallClock = Callable[[], datetime]
_STAMP = "%Y%m%dT%H%M%S%fZ"


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
        return datetime.strptime(name.split("-", 1)[0], _STAMP).replace(tzinfo=timezone.utc)
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
    return f"{moment.strftime(_STAMP)}-{secrets.token_hex(3)}{SNAPSHOT_SUFFIX}"


def _claim_path(folder: Path, clock: WallClock = _utc_now) -> Path:
    """Create an empty file with a fresh name; O_EXCL makes two claims never share one."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            path = folder / _new_name(_next_moment(folder, clock().astimezone(timezone.utc)))
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                continue
            os.close(fd)
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
        _copy(source, path, progress)
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
    """Snapshots in `folder`, newest first (empty files are claims still being written)."""
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


def rotate_snapshots(folder: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest snapshots (and their companion files, named
    `<snapshot>.<something>`, such as a saved memory witness); returns what was removed."""
    removed = [info.path for info in list_snapshots(folder)[keep:]]
    for path in removed:
        path.unlink(missing_ok=True)
        for companion in folder.glob(glob_escape(path.name) + ".*"):
            companion.unlink(missing_ok=True)
    return removed


def _lock_exclusively(db: Path) -> apsw.Connection:
    """A connection holding SQLite's exclusive lock on `db`, kept until it is closed.

    In WAL mode every other connection that has read the database keeps a shared lock on
    the file while it stays open, idle or not, so taking the exclusive lock fails exactly
    while another connection (this process or another) has the database open. Holding the
    lock to the end also keeps anyone from opening it while the restore runs.
    """
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        conn.set_busy_timeout(0)
        conn.pragma("locking_mode", "exclusive")
        conn.execute("BEGIN EXCLUSIVE; COMMIT")
    except apsw.BusyError:
        conn.close()
        raise SnapshotError(
            f"{db} is open in another process (a running sqlgate server or another client); "
            "stop it and run the restore again"
        ) from None
    except apsw.Error as exc:
        conn.close()
        raise SnapshotError(f"cannot open {db} for the restore: {exc}") from None
    return conn


def _copy_into(live: apsw.Connection, source_path: Path) -> None:
    """Overwrite `live` (holding the exclusive lock) with the database at `source_path`.

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


def restore_snapshot(
    db: Path, folder: Path, name: str, keep: int, *, clock: WallClock = _utc_now
) -> tuple[Path, Path]:
    """Make `db` hold the snapshot `name` again. Returns (restored from, copy of before).

    Refuses while any other connection has the database open, and saves the current content
    as a new snapshot first, so a restore can itself be undone.
    """
    if Path(name).name != name or not name.endswith(SNAPSHOT_SUFFIX):
        raise NotFound(f"{name!r} is not a snapshot name; `sqlgate snapshots list` shows them")
    source_path = folder / name
    if not source_path.is_file():
        raise NotFound(f"no snapshot {name} in {folder}; `sqlgate snapshots list` shows them")
    with source_path.open("rb") as handle:
        if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise SnapshotError(f"{source_path} is not a SQLite database; nothing was restored")
    if not db.is_file():
        raise NotFound(f"database {db} does not exist")
    live = _lock_exclusively(db)
    before: Path | None = None
    try:
        before = _claim_path(folder, clock)
        _copy(live, before, None)
        _copy_into(live, source_path)
    except (apsw.Error, SnapshotError) as exc:
        if before is not None:
            before.unlink(missing_ok=True)  # the database is unchanged: the copy is redundant
        raise SnapshotError(f"restore of {name} failed; the database is unchanged: {exc}") from None
    finally:
        live.close()
    rotate_snapshots(folder, max(keep, 1) + 1)
    return source_path, before
