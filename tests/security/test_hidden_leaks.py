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
from functools import partial
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.errors import SqlgateError, UndoConflict
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both
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
    row: str  # a WHERE that names that row
    visible: str  # a visible column


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
        "id = 1",
        "name",
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
        "email = 'a@x'",
        "plan",
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
        "a = 1",
        "note",
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
        "owner = 'ann'",
        "owner",
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
        "body = 'first'",
        "body",
    ),
]


def _seed(path: Path, schema: Schema, setup: str = "") -> None:
    conn = connect_both(path)
    conn.execute(schema.ddl)
    marks = ", ".join("?" * len(schema.rows[0]))
    conn.executemany(f"INSERT INTO {schema.table} VALUES ({marks})", schema.rows)
    if setup:
        conn.execute(_filled(setup, schema))
    conn.close()


def _filled(template: str, schema: Schema) -> str:
    return template.format(t=schema.table, h=schema.hidden, row=schema.row, v=schema.visible)


@pytest.fixture
def open_hidden(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Service]]:
    opened: list[Service] = []

    def open_(schema: Schema, setup: str = "") -> Service:
        path = tmp_path / f"{schema.id}.db"
        _seed(path, schema, setup)
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
    conn = connect_both(path)
    try:
        return sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    finally:
        conn.close()


# -- 1. undo data ----------------------------------------------------------------------
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
def test_undo_data_of_every_kind_of_call_holds_no_hidden_value_the_agent_can_read(
    schema: Schema, open_hidden: Callable[..., Service]
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
    schema: Schema, open_hidden: Callable[..., Service]
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
    schema: Schema, open_hidden: Callable[..., Service]
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


# -- 2. error texts ----------------------------------------------------------------------
READ, WRITE, DESTRUCTIVE = "read", "write", "destructive"
VEILED, SHOWN = "veiled", "shown"


@dataclass(frozen=True)
class Failing:
    id: str
    setup: str  # the owner's schema (a plain connection): {t} table, {h} hidden, {v} visible
    tool: str
    sql: str
    expect: str  # VEILED: a value-free message replaces SQLite's; SHOWN: SQLite's words, or:
    shown: str = ""  # the words that must be in the answer


FAILING = [
    Failing(
        "raise-old-hidden",
        "CREATE TRIGGER leak BEFORE DELETE ON {t} BEGIN SELECT RAISE(ABORT, old.{h}); END",
        DESTRUCTIVE,
        "DELETE FROM {t} WHERE {row}",
        VEILED,
    ),
    Failing(
        "raise-fail-concatenated",
        "CREATE TRIGGER leak BEFORE UPDATE ON {t} BEGIN "
        "SELECT RAISE(FAIL, 'it was: ' || old.{h}); END",
        WRITE,
        "UPDATE {t} SET {v} = 'x' WHERE {row}",
        VEILED,
    ),
    Failing(
        "raise-rollback-after",
        "CREATE TRIGGER leak AFTER UPDATE ON {t} BEGIN "
        "SELECT RAISE(ROLLBACK, printf('%s!', new.{h})); END",
        WRITE,
        "UPDATE {t} SET {v} = 'x' WHERE {row}",
        VEILED,
    ),
    Failing(
        "function-quotes-its-argument",
        "CREATE TRIGGER leak AFTER UPDATE ON {t} BEGIN SELECT json_extract('{{}}', old.{h}); END",
        WRITE,
        "UPDATE {t} SET {v} = 'x' WHERE {row}",
        VEILED,
    ),
    Failing(
        "index-expression",
        "CREATE INDEX leak ON {t}(CASE WHEN {v} = 'boom' THEN json_extract('{{}}', {h}) END)",
        WRITE,
        "UPDATE {t} SET {v} = 'boom' WHERE {row}",
        VEILED,
    ),
    Failing(
        "index-expression-on-delete",
        "CREATE INDEX leak ON {t}(CASE WHEN {v} = 'boom' THEN json_extract('{{}}', {h}) END)",
        DESTRUCTIVE,
        "DELETE FROM {t} WHERE {row}",
        SHOWN,  # the row's key never failed: the DELETE runs
    ),
    Failing(
        "view-instead-of",
        "CREATE VIEW lv AS SELECT {v} FROM {t};"
        "CREATE TRIGGER leak INSTEAD OF INSERT ON lv BEGIN "
        "SELECT RAISE(ABORT, (SELECT {h} FROM {t} WHERE {row})); END",
        WRITE,
        "INSERT INTO lv VALUES ('x')",
        VEILED,
    ),
    Failing(
        "trigger-of-another-table",
        "CREATE TABLE other(x);"
        "CREATE TRIGGER leak AFTER INSERT ON other BEGIN "
        "SELECT json_extract('{{}}', (SELECT {h} FROM {t} WHERE {row})); END",
        WRITE,
        "INSERT INTO other VALUES (1)",
        VEILED,
    ),
    # what carries no hidden value keeps SQLite's words
    Failing(
        "raise-literal",
        "CREATE TRIGGER keep BEFORE DELETE ON {t} BEGIN "
        "SELECT RAISE(ABORT, 'rows of this table are kept'); END",
        DESTRUCTIVE,
        "DELETE FROM {t} WHERE {row}",
        SHOWN,
        "rows of this table are kept",
    ),
    Failing(
        "not-null-of-a-visible-column",
        "CREATE TRIGGER keep BEFORE UPDATE ON {t} WHEN new.{v} IS NULL BEGIN "
        "SELECT RAISE(ABORT, 'a null here? no'); END",
        WRITE,
        "UPDATE {t} SET {v} = NULL WHERE {row}",
        SHOWN,
        "a null here? no",
    ),
    Failing(
        "read-of-visible-values",
        "",
        READ,
        "SELECT json_extract('{{}}', 'shown-path') FROM {t} NOT INDEXED WHERE {row}",
        SHOWN,
        "bad JSON path: 'shown-path'",
    ),
]
VEILED_WORDS = "its message is not shown"


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
@pytest.mark.parametrize("case", FAILING, ids=lambda c: c.id)
def test_no_error_text_of_the_owners_triggers_and_constraints_carries_a_hidden_value(
    schema: Schema, case: Failing, open_hidden: Callable[..., Service]
) -> None:
    service = open_hidden(schema, case.setup)
    sql = _filled(case.sql, schema)
    run = {
        READ: lambda: service.read_query(sql),
        WRITE: lambda: service.write_query(sql),
        DESTRUCTIVE: lambda: service.destructive_query(sql, reason="red team"),
    }[case.tool]
    answer = _try(run)
    _no_leak(service, schema, answer)
    if case.expect == VEILED:
        assert answer.startswith("SqlError: "), answer
        assert VEILED_WORDS in answer, answer
        assert f"ran on {schema.table}," in answer, answer
        assert "Next:" in answer, answer
    else:
        assert VEILED_WORDS not in answer, answer
        assert case.shown in answer, answer


# -- undo conflicts name rows by their keys ---------------------------------------------
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.id)
def test_an_undo_refused_on_a_conflict_names_no_hidden_key(
    schema: Schema, open_hidden: Callable[..., Service]
) -> None:
    service = open_hidden(schema)
    updated = service.write_query(schema.update)
    other = connect_both(service.db.path)  # another program changes the row again
    other.execute(_filled("UPDATE {t} SET {v} = 'again' WHERE {v} IS NOT NULL", schema))
    other.close()
    for undo in (
        lambda: service.undo_call(_call_ref(updated), reason="back"),
        lambda: service.undo(_call_ref(updated)),  # a person's `sqlgate undo`
    ):
        with pytest.raises(UndoConflict) as refused:
            undo()
        assert "conflict" in str(refused.value)
        _no_leak(service, schema, str(refused.value))
    # the person at the terminal is told which row; the audit log, which the agent reads,
    # is not (the person's command may run without the rules)
    assert "(hidden)" not in refused.value.for_cli()
    if schema.id == "hidden-primary-key":
        assert leaks(refused.value.for_cli(), schema.secrets)


# -- 3. reads through an index over a hidden column --------------------------------------
@dataclass(frozen=True)
class Indexed:
    id: str
    ddl: str  # the table, its index over the hidden column, and `vis`, a view of the owner's
    table: str
    key: str  # a visible column telling the rows apart
    visible: str
    hidden: str
    rows: tuple[tuple[object, ...], ...]  # in column order; the hidden values ascending
    at: int  # the hidden column's place in a row


INDEXED = [
    Indexed(
        "unique-text",
        "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, password TEXT UNIQUE)",
        "users", "id", "name", "password",
        ((1, "ann", "QZXW-GGGG"), (2, "bo", "QZXW-MMMM"), (3, "cy", "QZXW-TTTT")), 2,
    ),
    Indexed(
        "without-rowid-blob-index",
        "CREATE TABLE accounts(email TEXT PRIMARY KEY, plan TEXT, api_key BLOB) WITHOUT ROWID;"
        "CREATE INDEX accounts_by_key ON accounts(api_key)",
        "accounts", "email", "plan", "api_key",
        (("a@x", "free", b"KEY-G"), ("b@x", "pro", b"KEY-M"), ("c@x", "max", b"KEY-T")), 2,
    ),
    Indexed(
        "hidden-primary-key",
        "CREATE TABLE tokens(token TEXT PRIMARY KEY, owner TEXT, uses INTEGER)",
        "tokens", "owner", "uses", "token",
        (("TKNZ-GGGG", "ann", 1), ("TKNZ-MMMM", "bo", 2), ("TKNZ-TTTT", "cy", 3)), 0,
    ),
    Indexed(
        "visible-then-hidden-index",
        "CREATE TABLE notes(body TEXT, secret TEXT);"
        "CREATE INDEX notes_by_body ON notes(body, secret)",
        "notes", "rowid", "body", "secret",
        (("same", "SKRT-GGGG"), ("same", "SKRT-MMMM"), ("same", "SKRT-TTTT")), 1,
    ),
    Indexed(
        "integer-index",
        "CREATE TABLE people(a INTEGER PRIMARY KEY, note TEXT, ssn INTEGER);"
        "CREATE INDEX people_by_ssn ON people(ssn, a)",
        "people", "a", "note", "ssn",
        ((1, "n", 7319426815), (2, "n", 7419426815), (3, "n", 7519426815)), 2,
    ),
]  # fmt: skip

# reads that name only visible columns and whose result cannot depend on the rows' order:
# they run, whatever index the planner walks
RUN = [
    "SELECT count(*) FROM {t}",
    "SELECT count(*) AS n, count({v}) FROM {t} WHERE {v} IS NOT NULL",
    "SELECT count(DISTINCT {v}) FROM {t}",
    "SELECT count(*) FROM vis",
    "SELECT count(*) FROM {t} AS a JOIN {t} AS b ON a.{k} = b.{k}",
    "SELECT count(*) + 1 AS more FROM {t} LIMIT 3",
    "WITH c AS (SELECT {k} FROM {t}) SELECT count(*) FROM c",
    "SELECT count(*) FROM (SELECT {k} FROM {t} UNION ALL SELECT {k} FROM {t})",
    "SELECT count(*) FROM {t} WHERE {h} = '{guess}' OR {v} LIKE '{guess}%'",
    "SELECT {k} FROM {t} NOT INDEXED WHERE '{guess}' <> 'x' ORDER BY {k}",
]
# reads whose result could show the rows' order: refused when the planner walks the
# hidden index, else run; either way the answer is the same whatever the hidden order
ORDERED = [
    "SELECT {k} FROM {t}",
    "SELECT {k} FROM {t} WHERE {v} IS NOT NULL AND '{guess}' = '{guess}'",
    "SELECT {k} FROM {t} LIMIT 1",
    "SELECT group_concat({k}) FROM {t}",
    "SELECT json_group_array({k}) FROM {t}",
    "SELECT {k}, count(*) FROM {t}",
    "SELECT DISTINCT {k} FROM {t}",
    "SELECT row_number() OVER (), {k} FROM {t}",
    "SELECT (SELECT {k} FROM {t})",
    "SELECT max({k}) FROM (SELECT {k} FROM {t} LIMIT 1)",
    "SELECT {k} FROM {t} UNION ALL SELECT NULL",
    "SELECT min({v}), max({k}) FROM {t}",
    "SELECT count(*) FROM {t} WHERE EXISTS (SELECT 1 FROM {t} AS u WHERE u.{k} = {t}.{k})",
    "SELECT count(*) FROM {t} GROUP BY {v}",
    "SELECT {k} FROM vis",
    # runs (a count), and fails on the first row visited: which one must not show
    "SELECT count(*) FROM {t} WHERE json_extract('{{}}', {k} || '!') IS NULL",
]


def _indexed_service(folder: Path, case: Indexed, order: tuple[int, ...]) -> Service:
    """`case`'s table with its hidden values given to the rows in `order`."""
    path = folder / f"{case.id}-{len(list(folder.iterdir()))}.db"
    conn = connect_both(path)
    conn.execute(case.ddl)
    conn.execute(f"CREATE VIEW vis AS SELECT {case.key}, {case.visible} FROM {case.table}")
    columns = [
        str(c) for (c,) in conn.execute(f"SELECT name FROM pragma_table_info('{case.table}')")
    ]
    for row, source in zip(case.rows, order, strict=True):
        values = list(row)
        values[case.at] = case.rows[source][case.at]
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO {case.table}({', '.join(columns)}) VALUES ({marks})", values)
    conn.close()
    settings = Settings(db=path, hide_column=(f"{case.table}.{case.hidden}",), adopt_db=True)
    return Service.open(settings, clock=FakeClock(), session="s-order")


def _answers(case: Indexed, sql: str, folder: Path) -> list[str]:
    """The answers to `sql` with the hidden values in order and reversed, and with a right
    and a wrong guess; the guess written back the same, so equal answers tell nothing."""
    secret = case.rows[0][case.at]
    right = secret.decode() if isinstance(secret, bytes) else str(secret)
    answers = []
    for order, guess in (((0, 1, 2), right), ((2, 1, 0), right), ((0, 1, 2), "WRONG")):
        service = _indexed_service(folder, case, order)
        try:
            text = _try(partial(service.read_query, _order_filled(sql, case, guess)))
        finally:
            service.close()
        answers.append(text.replace(guess, "GUESS"))
    return answers


def _order_filled(sql: str, case: Indexed, guess: str) -> str:
    return sql.format(t=case.table, k=case.key, v=case.visible, h=case.hidden, guess=guess)


@pytest.mark.parametrize("case", INDEXED, ids=lambda c: c.id)
@pytest.mark.parametrize("sql", RUN)
def test_a_read_whose_result_cannot_show_the_rows_order_runs(
    case: Indexed, sql: str, tmp_path: Path
) -> None:
    answers = _answers(case, sql, tmp_path)
    assert not answers[0].startswith(("PolicyDenied", "SqlError")), answers[0]
    assert answers[1] == answers[0]
    assert answers[2] == answers[0]


@pytest.mark.parametrize("case", INDEXED, ids=lambda c: c.id)
@pytest.mark.parametrize("sql", ORDERED)
def test_a_read_that_could_show_the_rows_order_answers_alike_whatever_it(
    case: Indexed, sql: str, tmp_path: Path
) -> None:
    answers = _answers(case, sql, tmp_path)
    assert answers[1] == answers[0], sql
    assert answers[2] == answers[0], sql
    for answer in answers:
        assert leaks(answer, [row[case.at] for row in case.rows]) == [], answer  # type: ignore[misc]
