"""Undo shapes that follow a moved b-tree (engine.undo.relocate): every recorded shape of a
moved table gets its new root page, in undo_table_shapes and in a changeset's own shapes,
nothing else changes, and a second run changes nothing."""

from __future__ import annotations

import json

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.schema import migrate
from sqlgate.engine.undo import relocate_shapes

# (catalog rowid, root page) of a few tables; each changeset records some of them
TABLES = st.dictionaries(st.integers(2, 30), st.integers(2, 60), min_size=1, max_size=6)


def _records(tables: dict[int, int], recorded: list[list[int]]) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    migrate(conn)
    for changeset_id, rowids in enumerate(recorded, start=1):
        rows = [[f"t{r}", r, tables[r], '{"columns": []}'] for r in rowids]
        inline = changeset_id % 2 == 0  # format 2 keeps small shapes in the row itself
        conn.execute(
            "INSERT INTO undo_changesets (id, ts, session, kind, changes, bytes, format, "
            "shapes) VALUES (?, '', '', 'UPDATE', 1, 1, 2, ?)",
            (changeset_id, json.dumps(rows) if inline else None),
        )
        if not inline:
            for name, rowid, root, shape in rows:
                conn.execute(
                    "INSERT INTO undo_table_shapes VALUES (?, ?, ?, ?, ?)",
                    (changeset_id, name, rowid, root, shape),
                )
    return conn


def _shapes(conn: apsw.Connection) -> list[tuple[int, str, int, int]]:
    found = [
        (int(c), str(n), int(r), int(p))
        for c, n, r, p in conn.execute(
            "SELECT changeset_id, name, schema_rowid, rootpage FROM undo_table_shapes"
        )
    ]
    for changeset_id, text in conn.execute(
        "SELECT id, shapes FROM undo_changesets WHERE shapes IS NOT NULL"
    ):
        found += [(int(changeset_id), n, int(r), int(p)) for n, r, p, _ in json.loads(text)]
    return sorted(found)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), tables=TABLES)
def test_every_shape_of_a_moved_table_follows_it_and_a_second_run_changes_nothing(
    data: st.DataObject, tables: dict[int, int]
) -> None:
    rowids = sorted(tables)
    recorded = data.draw(st.lists(st.lists(st.sampled_from(rowids), min_size=1, unique=True),
                                  max_size=5))  # fmt: skip
    new_roots = data.draw(st.dictionaries(st.sampled_from(rowids), st.integers(61, 90)))
    moved = {(rowid, tables[rowid]): root for rowid, root in new_roots.items()}
    conn = _records(tables, recorded)
    before = _shapes(conn)
    changed = relocate_shapes(conn, moved)
    after = _shapes(conn)
    expected = sorted((c, n, r, new_roots.get(r, p)) for c, n, r, p in before)
    assert after == expected
    assert changed == sum(1 for _, _, r, _ in before if r in new_roots)
    assert relocate_shapes(conn, moved) == 0
    assert _shapes(conn) == after
