"""A failed foreign key names the tables involved, read from the schema: the tables whose rows
reference a deleted or re-keyed row, or the parent an inserted row points at."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sqlgate.errors import SqlError, UndoConflict
from sqlgate.service import Service


@pytest.fixture
def linked(service: Service) -> Service:
    for sql in (
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)",
        "CREATE TABLE tasks(id INTEGER PRIMARY KEY, note_id INTEGER REFERENCES notes(id))",
        'CREATE TABLE "zz ""odd"""(ref INTEGER REFERENCES notes(id))',
        "CREATE TABLE loose(id INTEGER)",
        "INSERT INTO notes(body) VALUES ('a'), ('b')",
        "INSERT INTO tasks(note_id) VALUES (1)",
        'INSERT INTO "zz ""odd"""(ref) VALUES (1)',
    ):
        service.write_query(sql)
    return service


def failure(call: object) -> str:
    assert callable(call)
    with pytest.raises(SqlError) as caught:
        call()
    return str(caught.value)


def test_a_refused_delete_names_the_referencing_tables_and_columns(linked: Service) -> None:
    message = failure(lambda: linked.destructive_query("DELETE FROM notes WHERE id = 1", "x"))
    assert message.startswith("SQLite error: FOREIGN KEY constraint failed: rows of ")
    assert "tasks (tasks.note_id)" in message
    assert '"zz ""odd""" ("zz ""odd""".ref)' in message
    assert "reference notes" in message
    assert "describe_table tasks" in message
    assert "loose" not in message


def test_an_update_of_a_referenced_key_names_the_referencing_tables(linked: Service) -> None:
    message = failure(lambda: linked.write_query("UPDATE notes SET id = 9 WHERE id = 1"))
    assert "rows of tasks (tasks.note_id), " in message
    assert "reference notes" in message


def test_an_insert_whose_parent_is_missing_names_the_parent(linked: Service) -> None:
    message = failure(lambda: linked.write_query("INSERT INTO tasks(note_id) VALUES (77)"))
    assert "tasks.note_id REFERENCES notes" in message
    assert "describe_table notes" in message
    assert "rows of" not in message


def test_an_update_of_a_child_key_names_the_parent(linked: Service) -> None:
    message = failure(lambda: linked.write_query("UPDATE tasks SET note_id = 77 WHERE id = 1"))
    assert "tasks.note_id REFERENCES notes" in message


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("PRAGMA foreign_keys", id="pragma"),
        pytest.param("PRAGMA main.foreign_keys", id="pragma-schema"),
        pytest.param("SELECT foreign_keys FROM pragma_foreign_keys", id="table-function"),
        pytest.param("SELECT * FROM pragma_foreign_keys()", id="table-function-call"),
    ],
)
def test_read_query_says_foreign_keys_are_on_as_writes_enforce_them(
    service: Service, sql: str
) -> None:
    assert service.read_query(sql).splitlines()[1] == "1"
    service.write_query("CREATE TABLE p(id INTEGER PRIMARY KEY)")
    service.write_query("CREATE TABLE c(pid INTEGER REFERENCES p(id))")
    failure(lambda: service.write_query("INSERT INTO c(pid) VALUES (1)"))  # enforced


# -- deferred foreign keys: checked when the call commits --------------------------------

DEFERRED = "DEFERRABLE INITIALLY DEFERRED"
DEFERRED_SCHEMA = (
    'CREATE TABLE "order"(id INTEGER PRIMARY KEY, note TEXT)',
    f'CREATE TABLE "line item"(id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES "order"(id) '
    f"{DEFERRED}, qty INT)",
    "CREATE TABLE tag(name TEXT NOT NULL PRIMARY KEY)",
    f'CREATE TABLE tagged(item INTEGER, tag TEXT, FOREIGN KEY(item) REFERENCES "line item"(id) '
    f"{DEFERRED}, FOREIGN KEY(tag) REFERENCES tag(name) {DEFERRED})",
    "CREATE TABLE pair(a INT, b INT, PRIMARY KEY(a, b)) WITHOUT ROWID",
    f"CREATE TABLE pair_ref(x INT, y INT, FOREIGN KEY(x, y) REFERENCES pair(a, b) {DEFERRED})",
    "CREATE TABLE intake(id INTEGER PRIMARY KEY, order_id INT)",
    "INSERT INTO \"order\"(id, note) VALUES (1, 'first')",
    'INSERT INTO "line item"(id, order_id, qty) VALUES (1, 1, 3)',
    "INSERT INTO tag(name) VALUES ('red')",
    "INSERT INTO tagged(item, tag) VALUES (1, 'red')",
    "INSERT INTO pair(a, b) VALUES (1, 1)",
    "INSERT INTO pair_ref(x, y) VALUES (1, 1)",
)
TRIGGER = (
    'CREATE TRIGGER intake_line AFTER INSERT ON intake BEGIN INSERT INTO "line item"(order_id) '
    "VALUES (new.order_id); END"
)
CHILD_LINE = (
    '"line item".order_id REFERENCES order, and the row it names must exist there',
    "insert the order row first",
)
PARENT_ORDER = (
    'rows of "line item" ("line item".order_id) reference order',
    "delete or update those rows first",
)


def deferred_schema(service: Service) -> Service:
    for sql in DEFERRED_SCHEMA:
        service.write_query(sql)
    service.destructive_query(TRIGGER, "fan intake rows out to line items")
    return service


def user_rows(service: Service) -> dict[str, list[tuple[object, ...]]]:
    conn = service.db.server
    names = [
        str(name)
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN "
            "('order', 'line item', 'tag', 'tagged', 'pair', 'pair_ref', 'intake')"
        )
    ]
    quoted = {name: '"' + name.replace('"', '""') + '"' for name in names}
    return {name: sorted(conn.execute(f"SELECT * FROM {quoted[name]}")) for name in names}


DEFERRED_CASES = [
    pytest.param("w", 'INSERT INTO "line item"(order_id) VALUES (99)', CHILD_LINE, id="insert"),
    pytest.param(
        "w", 'INSERT INTO "line item"(order_id) VALUES (1), (98)', CHILD_LINE, id="insert-many"
    ),
    pytest.param(
        "w", 'UPDATE "line item" SET order_id = 42 WHERE id = 1', CHILD_LINE, id="update-child"
    ),
    pytest.param(
        "w",
        'INSERT INTO "line item"(id, order_id) VALUES (1, 7) '
        "ON CONFLICT(id) DO UPDATE SET order_id = excluded.order_id",
        CHILD_LINE,
        id="upsert",
    ),
    pytest.param(
        "w", 'REPLACE INTO "line item"(id, order_id) VALUES (2, 8)', CHILD_LINE, id="replace"
    ),
    pytest.param(
        "w",
        "INSERT INTO tagged(item, tag) VALUES (1, 'blue')",
        ("tagged.tag REFERENCES tag, and the row", "insert the tag row first"),
        id="second-key-of-two",
    ),
    pytest.param(
        "w",
        "INSERT INTO pair_ref(x, y) VALUES (1, 2)",
        ("pair_ref.x, pair_ref.y REFERENCES pair", "insert the pair row first"),
        id="composite-key",
    ),
    pytest.param("w", "INSERT INTO intake(order_id) VALUES (77)", CHILD_LINE, id="by-trigger"),
    pytest.param("d", 'DELETE FROM "order" WHERE id = 1', PARENT_ORDER, id="delete-parent"),
    pytest.param(
        "d",
        "DELETE FROM tag",
        ("rows of tagged (tagged.tag) reference tag", "delete or update those rows first"),
        id="delete-all-parents",
    ),
    pytest.param("d", 'UPDATE "order" SET id = 5 WHERE id = 1', PARENT_ORDER, id="rekey-parent"),
    pytest.param("d", 'DROP TABLE "order"', PARENT_ORDER, id="drop-parent"),
    pytest.param(
        "d", 'INSERT INTO "line item"(order_id) VALUES (66)', CHILD_LINE, id="destructive-insert"
    ),
]
UNDO_SETTINGS = [
    pytest.param({}, id="undo-kept"),
    pytest.param({"write_undo_keep": 0, "undo": "file"}, id="undo-off"),
]


@pytest.mark.parametrize("overrides", UNDO_SETTINGS)
@pytest.mark.parametrize(("tool", "sql", "expected"), DEFERRED_CASES)
def test_a_deferred_key_broken_at_commit_is_answered_like_an_immediate_one(
    make_service: Callable[..., Service],
    overrides: dict[str, object],
    tool: str,
    sql: str,
    expected: tuple[str, str],
) -> None:
    service = deferred_schema(make_service(**overrides))
    before = user_rows(service)
    kept = sorted(service.settings.snapshot_dir.glob("*"))
    if tool == "w":
        message = failure(lambda: service.write_query(sql))
    else:
        message = failure(lambda: service.destructive_query(sql, "clean up"))
    fact, step = expected
    assert message.startswith("SQLite error: FOREIGN KEY constraint failed"), message
    assert "deferred" in message
    assert f": {fact}" in message
    assert f"Next: {step}" in message
    assert "nothing was changed" in message
    assert user_rows(service) == before
    assert sorted(service.settings.snapshot_dir.glob("*")) == kept  # a failed call keeps none


def test_only_the_broken_key_of_a_table_is_named(service: Service) -> None:
    deferred_schema(service)
    sql = "INSERT INTO tagged(item, tag) VALUES (5, 'red')"
    message = failure(lambda: service.write_query(sql))
    assert 'tagged.item REFERENCES "line item"' in message
    assert "tagged.tag" not in message


def test_the_next_call_works_after_a_deferred_refusal(service: Service) -> None:
    deferred_schema(service)
    failure(lambda: service.write_query('INSERT INTO "line item"(order_id) VALUES (2)'))
    service.write_query('INSERT INTO "order"(id) VALUES (2)')
    assert service.write_query('INSERT INTO "line item"(order_id) VALUES (2)').startswith("ok: 1")


def test_an_undo_that_would_break_a_deferred_key_is_refused_as_a_conflict(
    service: Service,
) -> None:
    deferred_schema(service)
    answer = service.write_query('INSERT INTO "order"(id) VALUES (3)')
    call = answer.rsplit("sqlgate undo ", 1)[1].split()[0]
    service.write_query('INSERT INTO "line item"(order_id) VALUES (3)')
    before = user_rows(service)
    with pytest.raises(UndoConflict, match="FOREIGN_KEY"):
        service.undo_call(call, "take the order back")
    assert user_rows(service) == before
    with pytest.raises(UndoConflict, match="FOREIGN_KEY"):  # `sqlgate undo`, the person's
        service.undo(call)
    assert user_rows(service) == before
