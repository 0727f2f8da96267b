"""Undo data that follows a table whose b-tree moved: a 0.1.0 file loses sqlgate's tables
(engine.database.legacy), and in an auto_vacuum file each DROP moves the table with the
highest root page into the freed one. The table is the same (its catalog row, name and
columns are), so the shapes an undo checks (`engine.undo.checks.shape_conflict`) are given
its new root page, in undo_table_shapes and in a format-2 changeset's own `shapes`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import apsw

__all__ = ["relocate_shapes"]


def relocate_shapes(conn: apsw.Connection, moved: Mapping[tuple[int, int], int]) -> int:
    """In `conn`'s transaction, give every recorded shape of the table at (catalog rowid,
    old root page) its new root page; returns how many shapes changed. Run again, it
    changes nothing (a catalog rowid names one table: its new root is never its old one)."""
    changed = 0
    for (rowid, old), new in moved.items():
        conn.execute(
            "UPDATE undo_table_shapes SET rootpage = ? WHERE schema_rowid = ? AND rootpage = ?",
            (new, rowid, old),
        )
        changed += conn.changes()
    kept = conn.execute("SELECT id, shapes FROM undo_changesets WHERE shapes IS NOT NULL")
    for changeset_id, text in kept.fetchall():
        rows = json.loads(str(text))
        turned = [
            [name, rowid, moved.get((int(rowid), int(root)), root), shape]
            for name, rowid, root, shape in rows
        ]
        if turned != rows:
            changed += sum(1 for a, b in zip(rows, turned, strict=True) if a != b)
            conn.execute(
                "UPDATE undo_changesets SET shapes = ? WHERE id = ?",
                (json.dumps(turned, ensure_ascii=False), changeset_id),
            )
    return changed
