"""Whole-file snapshots in `<db>.snapshots/`, taken with SQLite's online backup.

Names sort by time and never collide: `<UTC time to the microsecond>-<random>.sqlite`,
created with O_EXCL. Only the newest `keep` are kept. Restore copies the snapshot back into
the database through the backup API, after saving the current file as a snapshot too, and
only when no other process has the database open.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
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


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    path: Path
    size: int
    created: str  # ISO-8601 UTC, read from the name


def _new_name(now: datetime) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%S%fZ')}-{secrets.token_hex(3)}{SNAPSHOT_SUFFIX}"


def _claim_path(folder: Path) -> Path:
    """Create an empty file with a fresh name; O_EXCL makes two claims never share one."""
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(20):
        path = folder / _new_name(datetime.now(timezone.utc))
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return path
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
) -> Path:
    """Copy the live database into a new snapshot file and rotate old ones out."""
    path = _claim_path(folder)
    try:
        _copy(source, path, progress)
    except (apsw.Error, OSError) as exc:
        path.unlink(missing_ok=True)
        raise SnapshotError(f"snapshot into {folder} failed, so nothing was run: {exc}") from None
    rotate_snapshots(folder, keep)
    return path


def _created(name: str) -> str:
    stamp = name.split("-", 1)[0]
    try:
        moment = datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ")
    except ValueError:
        return ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def list_snapshots(folder: Path) -> list[SnapshotInfo]:
    """Snapshots in `folder`, newest first."""
    if not folder.is_dir():
        return []
    found = [
        SnapshotInfo(p.name, p, p.stat().st_size, _created(p.name))
        for p in folder.iterdir()
        if p.is_file() and p.name.endswith(SNAPSHOT_SUFFIX) and p.stat().st_size > 0
    ]
    return sorted(found, key=lambda info: info.name, reverse=True)


def rotate_snapshots(folder: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest snapshots; returns what was removed."""
    removed = [info.path for info in list_snapshots(folder)[keep:]]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def _is_held_elsewhere(db: Path) -> bool:
    """True when another connection (any process) has the database open.

    An exclusive-locking-mode connection must take SQLite's exclusive lock on the file
    (and, in WAL mode, on the shared-memory index), which fails while anyone else has it open.
    """
    probe = apsw.Connection(str(db))
    try:
        probe.set_busy_timeout(0)
        probe.pragma("locking_mode", "exclusive")
        probe.execute("BEGIN EXCLUSIVE; COMMIT")
    except apsw.BusyError:
        return True
    finally:
        probe.close()
    return False


def restore_snapshot(db: Path, folder: Path, name: str, keep: int) -> tuple[Path, Path]:
    """Make `db` hold the snapshot `name` again. Returns (restored from, copy of before).

    Refuses while any other process has the database open, and saves the current content
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
    if not db.exists():
        raise NotFound(f"database {db} does not exist")
    if _is_held_elsewhere(db):
        raise SnapshotError(
            f"{db} is open in another process (a running sqlgate server or another client); "
            "stop it and run the restore again"
        )
    live = apsw.Connection(str(db))
    try:
        before = _claim_path(folder)
        _copy(live, before, None)
        source = apsw.Connection(str(source_path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            with live.backup("main", source, "main") as backup:
                while not backup.done:
                    backup.step(BACKUP_PAGES_PER_STEP)
        finally:
            source.close()
        live.pragma("wal_checkpoint(TRUNCATE)")
    except apsw.Error as exc:
        raise SnapshotError(f"restore of {name} failed; the database is unchanged: {exc}") from None
    finally:
        live.close()
    rotate_snapshots(folder, max(keep, 1) + 1)
    return source_path, before
