"""Whole-file snapshots in `<db>.snapshots/`, taken with SQLite's online backup.

Names sort by time and never collide: `<UTC time to the microsecond>-<random>.sqlite`,
created with O_EXCL. A new name is always later than every name already in the folder, so
the order holds even when the clock is coarse (Windows) or steps back. Only the newest
`keep` are kept.

A restore runs only when no other connection (in any process) has the database open: it
holds SQLite's exclusive lock from that check to the end. Under it, it

1. plans (restore_plan.py): a snapshot of another database is refused here;
2. copies the current file to `<db>.snapshots/restored/` (kept outside the rotation);
3. copies the snapshot to a staging file beside it, migrates that to the current schema and
   carries into it, in one transaction, every row of sqlgate's own tables the snapshot lacks
   (restore_carry.py) and the live file's members and tokens in their newest state
   (restore_members.py: who may connect is never rolled back), plus the restore's audit row
   and what the recorder adds (the memory event that records the rollback);
4. copies the staging file into the database through the backup API.

Anything failing before step 4 leaves the database as it was (the copy of before is then
removed: it would be a copy of the unchanged file).
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

from sqlgate.engine.commands import db_option, shell_word
from sqlgate.engine.snapshots.holders import holders_of
from sqlgate.engine.snapshots.restore_carry import RestoreFacts, RestoreRecorder, stage_restore
from sqlgate.engine.snapshots.restore_plan import (
    KEPT_FOLDER,
    SNAPSHOT_SUFFIX,
    RestorePlan,
    plan_on,
    snapshot_path,
)
from sqlgate.errors import NotFound, SnapshotError, SqlgateError

__all__ = [
    "SNAPSHOT_SUFFIX",
    "RestoreFacts",
    "RestoreRecorder",
    "RestoreResult",
    "SnapshotInfo",
    "list_kept",
    "list_snapshots",
    "restore_snapshot",
    "rotate_snapshots",
    "take_snapshot",
]

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


def list_kept(folder: Path) -> list[SnapshotInfo]:
    """Copies of before kept by restores (`restored/NAME`), newest first; never rotated."""
    return [
        SnapshotInfo(f"{KEPT_FOLDER}/{info.name}", info.path, info.size, info.created)
        for info in list_snapshots(folder / KEPT_FOLDER)
    ]


def rotate_snapshots(folder: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest snapshots (and their companion files, named
    `<snapshot>.<something>`, such as a saved memory witness); returns what was removed."""
    removed = [info.path for info in list_snapshots(folder)[keep:]]
    for path in removed:
        path.unlink(missing_ok=True)
        for companion in folder.glob(glob_escape(path.name) + ".*"):
            companion.unlink(missing_ok=True)
    return removed


def _lock_exclusively(db: Path, name: str) -> apsw.Connection:
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
        raise _in_use(db, name) from None
    except apsw.Error as exc:
        conn.close()
        raise SnapshotError(f"cannot open {db} for the restore: {exc}") from None
    return conn


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


@dataclass(frozen=True)
class RestoreResult:
    db: Path
    source: Path
    before: Path
    before_name: str  # as `snapshots restore` takes it: restored/NAME.sqlite
    plan: RestorePlan
    carried: dict[str, int]
    event_id: int | None  # the memory event recording the restore


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _copy_file(source_path: Path, dest_path: Path) -> None:
    source = apsw.Connection(str(source_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        _copy(source, dest_path, None)
    finally:
        source.close()


def restore_snapshot(
    db: Path,
    folder: Path,
    name: str,
    keep: int,
    *,
    clock: WallClock = _utc_now,
    recorder: RestoreRecorder | None = None,
) -> RestoreResult:
    """Make `db` hold the user's tables and schema of snapshot `name` again, keeping every
    row of sqlgate's own tables; see the module's docstring. `keep` is unused since the
    copy of before is kept outside the rotation (kept for the callers' signature)."""
    del keep
    source = snapshot_path(folder, name, db)
    if not db.is_file():
        raise NotFound(f"database {db} does not exist")
    db = db.absolute()
    live = _lock_exclusively(db, name)
    before: Path | None = None
    staging: Path | None = None
    published = False
    try:
        plan = plan_on(live, db, source, name)  # a refusal changes nothing: it passes as it is
        moment = clock().astimezone(timezone.utc)
        before_name = ""
        carried: dict[str, int] = {}
        event_id = None
        try:
            before = _claim_path(folder / KEPT_FOLDER, clock)
            before_name = f"{KEPT_FOLDER}/{before.name}"
            _copy(live, before, None)
            if plan.carried:  # a sqlgate database: stage, migrate and carry
                staging = _staging_path(folder)
                _copy_file(source, staging)
                facts = RestoreFacts(plan, before_name, _iso(moment))
                carried, event_id = stage_restore(staging, before, facts, recorder)
                if recorder is not None:
                    recorder.publish()
                    published = True
            _copy_into(live, staging or source)
        except (apsw.Error, SqlgateError, OSError) as exc:
            if published and recorder is not None:
                recorder.revert()
            if before is not None:
                before.unlink(missing_ok=True)  # the database is unchanged: a redundant copy
            raise SnapshotError(
                f"restore of {name} failed; the database is unchanged: {exc}"
            ) from None
    finally:
        live.close()
        if staging is not None:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(f"{staging}{suffix}").unlink(missing_ok=True)
    assert before is not None
    return RestoreResult(db, source, before, before_name, plan, carried, event_id)


def _staging_path(folder: Path) -> Path:
    """A fresh file for the staged restore; not a `.sqlite` name, so never listed."""
    path = folder / f".restoring-{secrets.token_hex(6)}.db"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    return path
