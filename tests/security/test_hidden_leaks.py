"""Red team (issue 30 §3): hidden values through sqlgate's own tables, error texts, and the
refusals of reads that walk an index over a hidden column.

Each schema below hides one column of one table, with another key kind and column type:
a rowid table with a UNIQUE hidden text, a WITHOUT ROWID table keyed by text with a hidden
blob, a composite key with a hidden integer, a table whose hidden column is its primary
key, a table with no declared key. After the agent's calls (each tool, failing calls and
undone ones too), nothing the agent can read (`hidden_leaks.agent_dump`: every table and
view, each column as text and as hex) holds a hidden value, a cut of one, or its hex.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.security.hidden_leaks import agent_dump, leaks


@dataclass(frozen=True)
class Schema:
    id: str
    table: str
    hidden: str
    ddl: str
    rows: tuple[tuple[object, ...], ...]
    delete: str  # a destructive_query DELETE of one row
    update: str  # a write_query UPDATE of a visible column of that row
    secrets: tuple[str | int | bytes, ...]


SCHEMAS = [
    Schema(
        "rowid-unique-text",
        "users",
        "password",
        "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, password TEXT UNIQUE)",
        ((1, "ann", "QZXW-KRMP-HUNTR"), (2, "bo", "QZXW-VYLT-GNRSH")),
        "DELETE FROM users WHERE id = 1",
        "UPDATE users SET name = 'ann2' WHERE id = 2",
        ("QZXW-KRMP-HUNTR", "QZXW-VYLT-GNRSH"),
    ),
    Schema(
        "without-rowid-blob",
        "accounts",
        "api_key",
        "CREATE TABLE accounts(email TEXT PRIMARY KEY, plan TEXT, api_key BLOB) WITHOUT ROWID",
        (("a@x", "free", b"ZKWQ-\x01\xfe-PXRT"), ("b@x", "pro", b"ZKWQ-\x02\xfd-MNVS")),
        "DELETE FROM accounts WHERE email = 'a@x'",
        "UPDATE accounts SET plan = 'max' WHERE email = 'b@x'",
        (b"ZKWQ-\x01\xfe-PXRT", b"ZKWQ-\x02\xfd-MNVS"),
    ),
    Schema(
        "composite-key-integer",
        "people",
        "ssn",
        "CREATE TABLE people(a INTEGER, b TEXT, ssn INTEGER, note TEXT, PRIMARY KEY (a, b))",
        ((1, "x", 7319426815, "n1"), (2, "y", 8426537926, "n2")),
        "DELETE FROM people WHERE a = 1",
        "UPDATE people SET note = 'changed' WHERE a = 2",
        (7319426815, 8426537926),
    ),
    Schema(
        "hidden-primary-key",
        "tokens",
        "token",
        "CREATE TABLE tokens(token TEXT PRIMARY KEY, owner TEXT, uses INTEGER)",
        (("TKNZ-QWRT-YUPL", "ann", 1), ("TKNZ-MNBV-XZLK", "bo", 2)),
        "DELETE FROM tokens WHERE owner = 'ann'",
        "UPDATE tokens SET uses = 3 WHERE owner = 'bo'",
        ("TKNZ-QWRT-YUPL", "TKNZ-MNBV-XZLK"),
    ),
    Schema(
        "no-declared-key",
        "notes",
        "secret",
        "CREATE TABLE notes(body TEXT, secret TEXT)",
        (("first", "SKRT-PLWZ-HGQM"), ("second", "SKRT-VWXY-JKLR")),
        "DELETE FROM notes WHERE body = 'first'",
        "UPDATE notes SET body = 'changed' WHERE body = 'second'",
        ("SKRT-PLWZ-HGQM", "SKRT-VWXY-JKLR"),
    ),
]


def _seed(path: Path, schema: Schema) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(schema.ddl)
    marks = ", ".join("?" * len(schema.rows[0]))
    conn.executemany(f"INSERT INTO {schema.table} VALUES ({marks})", schema.rows)
    conn.close()


@pytest.fixture
def open_hidden(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[[Schema], Service]]:
    opened: list[Service] = []

    def open_(schema: Schema) -> Service:
        path = tmp_path / f"{schema.id}.db"
        _seed(path, schema)
        settings = Settings(
            db=path,
            hide_column=(f"{schema.table}.{schema.hidden}",),
            adopt_db=True,
            max_result_bytes=10_000_000,
            max_cell_chars=1_000_000,
        )
        service = Service.open(settings, clock=clock, session="s-leaks")
        opened.append(service)
        return service

    yield open_
    for service in opened:
        service.close()


def _call_ref(answer: str) -> str:
    return answer.split("sqlgate undo ", 1)[1].split(" ", 1)[0]


def _rows(path: Path, table: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(path))
    try:
        return sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    finally:
        conn.close()


# -- 1. undo data ----------------------------------------------------------------------
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
def test_undo_data_of_every_kind_of_call_holds_no_hidden_value_the_agent_can_read(
    schema: Schema, open_hidden: Callable[[Schema], Service]
) -> None:
    service = open_hidden(schema)
    before = _rows(service.db.path, schema.table)
    deleted = service.destructive_query(schema.delete, reason="red team")
    updated = service.write_query(schema.update)
    dump = agent_dump(service)
    assert leaks(dump, schema.secrets) == []
    # the server itself still reads them: both calls come back, hidden values and all
    assert service.undo_call(_call_ref(updated), reason="back").startswith("undone")
    assert service.undo_call(_call_ref(deleted), reason="back").startswith("undone")
    assert _rows(service.db.path, schema.table) == before
    assert leaks(agent_dump(service), schema.secrets) == []


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
def test_no_guess_of_a_hidden_value_is_answered_by_the_undo_data(
    schema: Schema, open_hidden: Callable[[Schema], Service]
) -> None:
    service = open_hidden(schema)
    service.destructive_query(schema.delete, reason="red team")
    secret = schema.secrets[0]
    guess = secret if isinstance(secret, bytes) else str(secret).encode()
    answers = []
    for tried in (guess, b"WRONG-GUESS-VALUE"):
        answers.append(
            service.read_query(
                "SELECT instr(data, unhex(?1)), instr(digests, unhex(?1)), length(data) "
                "FROM undo_changesets",
                params=[tried.hex()],
            ).replace(tried.hex(), "X")
        )
    assert answers[0] == answers[1]
    for table, column in (
        ("undo_changesets", "data"),
        ("undo_changesets", "digests"),
        ("undo_changesets", "created"),
        ("undo_chunks", "data"),
        ("undo_row_states", "digests"),
    ):
        answer = service.read_query(f"SELECT count({column}) FROM {table}")
        assert answer.splitlines()[1] == "0", (table, column, answer)


def _no_leak(service: Service, schema: Schema, answer: str) -> None:
    assert leaks(answer, schema.secrets) == []
    assert leaks(agent_dump(service), schema.secrets) == []


def _try(call: Callable[[], str]) -> str:
    try:
        return call()
    except SqlgateError as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
def test_failing_and_refused_calls_leave_no_hidden_value_in_the_audit_log(
    schema: Schema, open_hidden: Callable[[Schema], Service]
) -> None:
    service = open_hidden(schema)
    t, h = schema.table, schema.hidden
    for call in (
        lambda: service.read_query(f"SELECT {h} FROM {t}"),
        lambda: service.write_query(f"UPDATE {t} SET {h} = 'x'"),
        lambda: service.destructive_query(f"DELETE FROM {t} RETURNING {h}", reason="r"),
        lambda: service.read_query(f"SELECT json_extract('{{}}', {h}) FROM {t}"),
        lambda: service.read_query(f"SELECT count(*) FROM {t} WHERE {h} > 'A'"),
    ):
        _no_leak(service, schema, _try(call))
