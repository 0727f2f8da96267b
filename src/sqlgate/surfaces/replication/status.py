"""`replication/` in the database's records folder (`sqlgate.home`): what the process
replicating a database leaves there, so that other processes (`sqlgate stats`, a second
server) can learn how replication stands. Nothing is written beside the user's file.

    HOME/dbs/<key>/replication/
      lock            held (flock) by the one process replicating the database, while it runs
      status.json     its state, replaced whole on every change (below)
      litestream.json the configuration Litestream runs with (no secrets)
      litestream.log  Litestream's output
      witness-log     the witness log (witness_log.py) and its -wal/-shm files
      db-meta/, records-meta/, witness-meta/   Litestream's own bookkeeping for each file

status.json's `state`: `starting`, `running`, `restarting` (Litestream exited; the process
starts it again after a pause), `stopped` (the server stopped it, after a final sync).
A reader also checks the lock: a state other than `stopped` with nobody holding the lock
means the process ended without stopping it (it was killed), and is reported as `gone`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlgate.errors import StartupError
from sqlgate.home import record_files
from sqlgate.service import counted

__all__ = [
    "ReplicationLock",
    "describe",
    "read_status",
    "records_file",
    "replication_dir",
    "replication_report",
    "write_status",
]

FORMAT = 1
_LOCK_WAIT = 2.0  # seconds a starting process retries while a reader tests the lock


def replication_dir(db: Path) -> Path:
    """The replication folder of the database at `db`, in its records folder."""
    return record_files(db).folder / "replication"


def records_file(db: Path) -> Path:
    """sqlgate's records file of the database at `db` (its tables and memory chain)."""
    return record_files(db).records


def write_status(folder: Path, status: dict[str, Any]) -> None:
    """Replace status.json atomically (a reader sees the old or the new one, whole)."""
    payload = json.dumps({"format": FORMAT, **status}, indent=1) + "\n"
    fd, temp = tempfile.mkstemp(prefix="status.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload)
        os.replace(temp, folder / "status.json")
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_status(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class ReplicationLock:
    """An exclusive lock on `<db>.replication/lock`: one replicating process per database.

    The operating system drops it when its process ends, however it ends, so a killed server
    never leaves a stale lock behind. On Windows (no flock) it is not enforced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, *, wait: float = _LOCK_WAIT) -> None:
        """Take the lock, or raise StartupError when another process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while not _try_lock(fd, exclusive=True):
            if time.monotonic() >= deadline:
                os.close(fd)
                status = read_status(self.path.parent) or {}
                raise StartupError(
                    f"the database is already replicated by another process (pid "
                    f"{status.get('pid', '?')}, to {status.get('url', '?')}): two Litestreams "
                    "on one database would corrupt the replica; serve this one without "
                    "--replicate (that process replicates every server's writes)"
                )
            time.sleep(0.05)  # a reader (`sqlgate stats`) tests the lock for a moment
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops the lock
            self._fd = None

    @staticmethod
    def is_held(path: Path) -> bool | None:
        """Whether a process holds the lock now; None when that cannot be told."""
        if sys.platform == "win32" or not path.exists():
            return None if sys.platform == "win32" else False
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            free = _try_lock(fd, exclusive=False)
            return not free
        finally:
            os.close(fd)  # also drops the shared lock, if it was taken


def _try_lock(fd: int, *, exclusive: bool) -> bool:
    if sys.platform == "win32":
        return True
    import fcntl

    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        raise StartupError(f"cannot lock {fd}: {exc.strerror}") from None
    return True


def replication_report(db: Path) -> dict[str, Any]:
    """How replication of `db` stands, as `sqlgate stats` reports it."""
    folder = replication_dir(db)
    status = read_status(folder)
    if status is None:
        return {"state": "not configured"}
    report = {key: value for key, value in status.items() if key != "format"}
    held = ReplicationLock.is_held(folder / "lock")
    if held is False and report.get("state") != "stopped":
        report["recorded_state"] = report.get("state")
        report["state"] = "gone"
    return report


def describe(report: dict[str, Any]) -> str:
    """The report in one line."""
    state = report.get("state")
    url = report.get("url", "?")
    error = report.get("last_error") or {}
    last = f"; last error {error.get('at')}: {error.get('message')}" if error else ""
    problem = (report.get("witness_log") or {}).get("problem")
    if problem:
        last += f"; WITNESS LOG STUCK: {problem}"
    if state == "not configured":
        return "not configured (serve --replicate URL)"
    if state == "running":
        restarts = report.get("restarts", 0)
        again = f", restarted {counted(restarts, 'time')}" if restarts else ""
        return (
            f"running to {url} (Litestream pid {report.get('litestream_pid')}, since "
            f"{report.get('started_at')}{again}; witness log at event "
            f"{(report.get('witness_log') or {}).get('last_id', 0)}){last}"
        )
    if state == "restarting":
        died = report.get("last_exit") or {}
        return (
            f"DIED: Litestream exited with code {died.get('code')} at {died.get('at')}; "
            f"restarting (attempt {report.get('restarts', 0) + 1}){last}"
        )
    if state == "gone":
        return (
            f"NOT RUNNING: the process that replicated to {url} (pid {report.get('pid')}) ended "
            f"without stopping it (killed?); last recorded state "
            f"{report.get('recorded_state')} at {report.get('updated_at')}{last}"
        )
    if state == "stopped":
        return f"stopped at {report.get('updated_at')} (was replicating to {url}){last}"
    return f"{state} ({url}){last}"
