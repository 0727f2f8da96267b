"""Which undo changesets were applied back, for the console's page of destructive calls."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import apsw

__all__ = ["changeset_states"]


def changeset_states(conn: apsw.Connection, ids: Iterable[int]) -> dict[int, tuple[Any, Any]]:
    """id -> (undone_at, undone_by) of the changesets `ids` still kept (None, None: not
    undone); a changeset rotated out is not in it."""
    return {
        int(cid): (at, by)
        for cid, at, by in conn.execute(
            "SELECT id, undone_at, undone_by FROM undo_changesets WHERE id IN "
            "(SELECT value FROM json_each(?))", (json.dumps(sorted(set(ids))),),
        )
    }  # fmt: skip
