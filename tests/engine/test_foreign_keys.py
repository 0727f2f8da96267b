"""A failed foreign key names the tables involved, read from the schema: the tables whose rows
reference a deleted or re-keyed row, or the parent an inserted row points at."""

from __future__ import annotations

import pytest

from sqlgate.errors import SqlError
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
