"""Which user database a records file belongs to (issue 33, "bad input").

A records file is found by the database's path (`sqlgate.home`), so a copied `.sqlgate/`
(`cp -r project copy`), a project moved elsewhere, or a database file replaced by another
(`rm db.sqlite3 && manage.py migrate`) would otherwise pass unnoticed. Each time the server
opens a database it compares the file it finds with the newest binding its records hold: the
file's real path and its identity on disk (device and inode). Bindings are appended to
`server_info` (append-only) as `binding.N` = JSON; the newest N wins.

    no binding yet (new records)            bind ("first open")
    same path, same device and inode        open
    same device and inode, another path     open, bind anew ("moved from OLD"): the
                                            project was moved or renamed
    same path, another inode                open, bind anew ("file replaced": re-created,
                                            restored, copied over); undo's own checks
                                            refuse rows that changed
    another path and another inode          refused, one line: these records are a copy
                                            (a copied `.sqlgate/`) and belong to the other

`decide_binding` is the pure judgement; `check_binding` reads, decides and appends.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.errors import StartupError

__all__ = [
    "Binding",
    "BindingVerdict",
    "check_binding",
    "decide_binding",
    "history_lost",
    "newest_binding",
    "note_history_lost",
    "rebind",
    "refuse_foreign_records",
]

_PREFIX = "binding."


@dataclass(frozen=True)
class Binding:
    """A user database's file as the records last saw it."""

    path: str  # its real path (symbolic links followed)
    device: int
    inode: int

    @classmethod
    def of(cls, db: Path) -> Binding:
        real = db.resolve()
        info = os.stat(real)
        return cls(str(real), int(info.st_dev), int(info.st_ino))


@dataclass(frozen=True)
class BindingVerdict:
    """What `decide_binding` concluded: `reason` for a new binding (None: keep the newest),
    `refusal` when the records are not this file's."""

    reason: str | None = None
    refusal: str | None = None


def decide_binding(newest: Binding | None, now: Binding, records: str) -> BindingVerdict:
    """Pure: the verdict of the module's table for the file `now` against `newest`."""
    if newest is None:
        return BindingVerdict(reason="first open")
    same_file = (newest.device, newest.inode) == (now.device, now.inode)
    if newest.path == now.path:
        return BindingVerdict() if same_file else BindingVerdict(reason="file replaced")
    if same_file:
        return BindingVerdict(reason=f"moved from {newest.path}")
    return BindingVerdict(
        refusal=(
            f"the records at {records} belong to {newest.path}, not to {now.path} (a copy of "
            "a project's .sqlgate/ folder?); nothing was opened. Move that records folder "
            "away to start a new history for this file, or open the database it belongs to"
        )
    )


def newest_binding(conn: apsw.Connection) -> tuple[int, Binding | None]:
    """The number of the newest binding and the binding (0, None when there is none)."""
    rows = conn.execute("SELECT key, value FROM server_info WHERE key LIKE 'binding.%'").fetchall()
    best: tuple[int, Binding | None] = (0, None)
    for key, value in rows:
        number = str(key).removeprefix(_PREFIX)
        if not number.isdigit() or int(number) <= best[0]:
            continue
        try:
            data = json.loads(str(value))
            found = Binding(str(data["path"]), int(data["device"]), int(data["inode"]))
        except (ValueError, KeyError, TypeError):
            continue  # a damaged row binds nothing; the next open binds anew
        best = (int(number), found)
    return best


def check_binding(conn: apsw.Connection, db: Path, records: Path, seen: str) -> str | None:
    """Compare the user's file `db` with the records' newest binding on the records
    connection `conn`; append a new binding when the table says so (returns its reason),
    raise StartupError when these records are another file's."""
    now = Binding.of(db)
    _, newest = newest_binding(conn)  # the common case, nothing to append: no write lock
    verdict = decide_binding(newest, now, str(records))
    if verdict.refusal is not None:
        raise StartupError(verdict.refusal)
    if verdict.reason is None:
        return None
    with immediate_transaction(conn):  # two servers starting together append once
        number, newest = newest_binding(conn)
        verdict = decide_binding(newest, now, str(records))
        if verdict.refusal is not None:
            raise StartupError(verdict.refusal)
        if verdict.reason is None:
            return None
        value = {**now.__dict__, "seen": seen, "reason": verdict.reason}
        conn.execute(
            "INSERT INTO server_info (key, value) VALUES (?, ?)",
            (f"{_PREFIX}{number + 1}", json.dumps(value, sort_keys=True)),
        )
    return verdict.reason


def refuse_foreign_records(conn: apsw.Connection, db: Path, records: Path) -> None:
    """For a read-only open: raise StartupError when these records are another file's
    (nothing is appended; a move or a replaced file is noted at the next server start)."""
    _, newest = newest_binding(conn)
    verdict = decide_binding(newest, Binding.of(db), str(records))
    if verdict.refusal is not None:
        raise StartupError(verdict.refusal)


HISTORY_LOST = "history_lost"


def note_history_lost(conn: apsw.Connection, before: dict[str, str], noticed: str) -> None:
    """New records for a file whose records were kept before (`before`: where, since when):
    the history before them is gone, and `verify` says so (`history_lost`)."""
    value = json.dumps({**before, "noticed": noticed}, sort_keys=True)
    with immediate_transaction(conn):
        if conn.execute("SELECT 1 FROM server_info WHERE key = ?", (HISTORY_LOST,)).fetchone():
            return
        conn.execute("INSERT INTO server_info (key, value) VALUES (?, ?)", (HISTORY_LOST, value))


def history_lost(conn: apsw.Connection) -> str | None:
    """What these records know of a history that is gone, as one sentence; None."""
    row = conn.execute("SELECT value FROM server_info WHERE key = ?", (HISTORY_LOST,)).fetchone()
    if row is None:
        return None
    try:
        data = json.loads(str(row[0]))
        return (
            f"the history before {data['noticed']} is gone: the records kept since "
            f"{data['since']} were at {data['records']}, which was deleted or moved"
        )
    except (ValueError, KeyError, TypeError):
        return "an earlier history of this database is gone (its records were deleted)"


def rebind(conn: apsw.Connection, db: Path, reason: str, seen: str) -> None:
    """Bind these records to the file `db` whatever they were bound to (a replica's records
    restored beside a new copy of its database: `reason` says so)."""
    now = Binding.of(db)
    with immediate_transaction(conn):
        number, _ = newest_binding(conn)
        value = {**now.__dict__, "seen": seen, "reason": reason}
        conn.execute(
            "INSERT INTO server_info (key, value) VALUES (?, ?)",
            (f"{_PREFIX}{number + 1}", json.dumps(value, sort_keys=True)),
        )
