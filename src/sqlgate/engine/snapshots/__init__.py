"""Whole-file snapshots and restoring a database file from one.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    files            Whole-file snapshots of the user's file, in `snapshots/` of its records folder
                     (`sqlgate.home`), taken with SQLite's online backup; and restoring the file
                     from one.
    restore_records  What a snapshot restore writes in sqlgate's records: the user's file holds
                     none of them, so a restore never rolls them back.
    restore_plan     What a snapshot restore would change, and whether the snapshot may be
                     restored at all.
    holders          Which processes hold a database file open: what a refused restore names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.snapshots.files import (
        Progress,
        RestoreResult,
        list_kept,
        list_snapshots,
        plan_restore,
        restore_snapshot,
        rotate_snapshots,
        take_snapshot,
    )
    from sqlgate.engine.snapshots.restore_plan import RestorePlan
    from sqlgate.engine.snapshots.restore_records import RestoreFacts

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
        "RestoreResult",
        "list_kept",
        "list_snapshots",
        "plan_restore",
        "restore_snapshot",
        "rotate_snapshots",
        "take_snapshot",
    ),
    "restore_plan": ("RestorePlan",),
    "restore_records": ("RestoreFacts",),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
