"""Whole-file snapshots and restoring a database file from one.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    files            Whole-file snapshots in `<db>.snapshots/`, taken with SQLite's online backup.
    restore_carry    Carrying sqlgate's own records into a restored file: a snapshot restore rolls
                     back the user's tables and schema, never the audit log, the memory or the
                     claims.
    restore_members  Members and their tokens through a snapshot restore: who may connect is never
                     rolled back.
    restore_plan     What a snapshot restore would take away, and whether the snapshot may be
                     restored at all.
    holders          Which processes hold a database file open: what a refused restore names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.snapshots.files import (
        Progress,
        RestoreFacts,
        RestoreResult,
        list_kept,
        list_snapshots,
        restore_snapshot,
        rotate_snapshots,
        take_snapshot,
    )
    from sqlgate.engine.snapshots.restore_plan import RestorePlan, plan_restore

__all__ = [
    "Progress",
    "RestoreFacts",
    "RestorePlan",
    "RestoreResult",
    "list_kept",
    "list_snapshots",
    "plan_restore",
    "restore_snapshot",
    "rotate_snapshots",
    "take_snapshot",
]

BEHIND_THE_DOOR = {
    "files": (
        "Progress",
        "RestoreFacts",
        "RestoreResult",
        "list_kept",
        "list_snapshots",
        "restore_snapshot",
        "rotate_snapshots",
        "take_snapshot",
    ),
    "restore_plan": ("RestorePlan", "plan_restore"),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
