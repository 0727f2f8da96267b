"""Text that is not valid UTF-8 (issue 30), read through every surface that shows user values.

Another program stores it (`CAST(x'ff61' AS TEXT)`); sqlgate shows it as that very SQL
(exact, pasteable, never a blob's `x'..'`), returns every row under the usual limits, and never
answers with an internal error."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

from sqlgate.config import FLAGS, Settings
from sqlgate.engine.framing import counted
from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import SqlError, UndoConflict
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.tables import rows_page, tables_page

UNDO = re.compile(r"; undo: sqlgate undo (?P<id>\d+)@[0-9a-f]{8} --db \S+$", re.MULTILINE)
TABLES = [
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT)", id="text"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v, n)", id="no-type"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB, n INT)", id="blob-declared"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT) STRICT", id="strict-text"),
    pytest.param("CREATE TABLE t (v TEXT PRIMARY KEY, id INT, n INT)", id="text-key"),
    pytest.param(
        "CREATE TABLE t (v TEXT PRIMARY KEY, id INT, n INT) WITHOUT ROWID", id="without-rowid"
    ),
]
ROWS = [(1, "ff61"), (2, "706c61696e"), (3, "c3a9"), (4, "80")]  # only 2 and 3 are UTF-8
SHOWN = {1: "CAST(x'ff61' AS TEXT)", 2: "plain", 3: "é", 4: "CAST(x'80' AS TEXT)"}
READS = [
    pytest.param(
        "SELECT id, v FROM t ORDER BY id",
        ["id,v", *(f"{i},{SHOWN[i]}" for i in SHOWN)],
        id="select",
    ),
    pytest.param(
        "SELECT hex(v), v FROM t WHERE id = 1",
        ["hex(v),v", "FF61,CAST(x'ff61' AS TEXT)"],
        id="hex-beside",
    ),
    pytest.param(
        "SELECT a.id, b.v FROM t AS a JOIN t AS b ON b.id = a.id + 3",
        ["id,v", "1,CAST(x'80' AS TEXT)"],
        id="join",
    ),
    pytest.param(
        "SELECT max(v) AS m, count(*) FROM t", ["m,count(*)", "CAST(x'ff61' AS TEXT),4"], id="max"
    ),
    pytest.param(
        "SELECT group_concat(v, '|') AS g FROM (SELECT v FROM t WHERE id IN (1, 4) ORDER BY id)",
        ["g", "CAST(x'ff617c80' AS TEXT)"],
        id="aggregate-concat",
    ),
    pytest.param(
        "WITH w AS (SELECT v FROM t WHERE id = 4) SELECT v, 'x' FROM w",
        ["v,'x'", "CAST(x'80' AS TEXT),x"],
        id="with",
    ),
    pytest.param(
        "VALUES (CAST(x'fe' AS TEXT), x'fe', 'fe', NULL, 1.5)",
        ["column1,column2,column3,column4,column5", "CAST(x'fe' AS TEXT),x'fe',fe,,1.5"],
        id="values",
    ),
    pytest.param(
        "SELECT v FROM t WHERE id = 1 UNION ALL SELECT 'b' ORDER BY 1 DESC;  -- done",
        ["v", "CAST(x'ff61' AS TEXT)", "b"],
        id="compound-with-a-trailing-comment",
    ),
    pytest.param(
        'SELECT v AS "v", v AS "v" FROM t WHERE id = 4 /* open',
        ["v,v", "CAST(x'80' AS TEXT),CAST(x'80' AS TEXT)"],
        id="same-names-and-an-open-comment",
    ),
    pytest.param(
        "SELECT * FROM tv ORDER BY id",
        ["id,v,n", *(f"{i},{SHOWN[i]},{i * 10}" for i in SHOWN)],
        id="view",
    ),
]


@contextmanager
def direct(db: Path) -> Iterator[apsw.Connection]:
    conn = apsw.Connection(str(db))
    try:
        yield conn
    finally:
        conn.close()


def fill(db: Path, create: str) -> None:
    """Another program's rows: invalid UTF-8 text, a blob of the same bytes, valid text."""
    with direct(db) as conn:
        conn.execute(create)
        for at, raw in ROWS:
            conn.execute(
                "INSERT INTO t (id, v, n) VALUES (?, CAST(? AS TEXT), ?)",
                (at, bytes.fromhex(raw), at * 10),
            )
        conn.execute("CREATE VIEW tv AS SELECT id, v, n FROM t")


@pytest.fixture(params=TABLES)
def world(
    request: pytest.FixtureRequest, make_service: Callable[..., Service], db_path: Path
) -> Service:
    service = make_service()
    fill(db_path, request.param)
    return service


@pytest.mark.parametrize(("sql", "lines"), READS)
def test_read_query_shows_every_row_with_bad_text_as_sql(
    world: Service, sql: str, lines: list[str]
) -> None:
    answer = world.read_query(sql)
    assert answer.splitlines() == [*lines, f"# {counted(len(lines) - 1, 'row')}"]


def test_the_row_limit_and_its_trailer_are_unchanged(world: Service) -> None:
    answer = world.read_query("SELECT id, v FROM t ORDER BY id", limit=2)
    assert answer.splitlines() == [
        "id,v",
        "1,CAST(x'ff61' AS TEXT)",
        "2,plain",
        "# 2 rows (truncated: row limit 2)",
    ]


def test_a_long_bad_text_is_cut_like_a_blob(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(max_cell_chars=21, max_result_bytes=200)
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO t (v) VALUES (CAST(? AS TEXT))", (b"\xff" * 40,))
        conn.execute("INSERT INTO t (v) SELECT v FROM t")
        conn.execute("INSERT INTO t (v) SELECT v FROM t")
        conn.execute("INSERT INTO t (v) SELECT v FROM t")
    lines = service.read_query("SELECT v FROM t").splitlines()
    assert lines[1] == "CAST(x'ffff' AS TEXT)…[+38 bytes]"
    assert lines[-1] == f"# {len(lines) - 2} rows (truncated: 200 bytes)"
    assert len("\n".join(lines[:-1]).encode()) <= 200


def test_a_hidden_column_holding_bad_text_still_reads_as_null(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(hide_column=("t.secret",))
    fill(db_path, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT, secret TEXT)")
    with direct(db_path) as conn:
        conn.execute("UPDATE t SET secret = CAST(x'ff73' AS TEXT)")
    answer = service.read_query("SELECT id, v, secret FROM t WHERE id = 1")
    assert answer.splitlines() == [
        "id,v,secret",
        "1,CAST(x'ff61' AS TEXT),",
        "# 1 row",
        "# hidden by policy: t.secret",
    ]


def test_a_value_that_changes_per_evaluation_is_read_once(service: Service) -> None:
    answer = service.read_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) "
        "SELECT iif(random() % 2, CAST(x'ff' AS TEXT), x'fe') AS r FROM n",
        limit=200,
    )
    cells = answer.splitlines()[1:-1]
    assert len(cells) == 200
    assert set(cells) <= {"CAST(x'ff' AS TEXT)", "x'fe'"}


@pytest.mark.parametrize(
    ("sql", "step"),
    [
        pytest.param("EXPLAIN SELECT CAST(x'ff61' AS TEXT)", "without EXPLAIN", id="explain"),
    ],
)
def test_a_statement_that_cannot_be_read_again_says_what_to_do(
    service: Service, sql: str, step: str
) -> None:
    with pytest.raises(SqlError, match="not valid UTF-8") as caught:
        service.read_query(sql)
    assert step in str(caught.value)


def test_search_text_finds_and_keys_rows_holding_bad_text(world: Service) -> None:
    request = SearchRequest("a$", "t", columns=["v"], key_column="v")
    found = world.search_text(request).splitlines()
    assert found[:2] == ["key,column,snippet", "CAST(x'ff61' AS TEXT),v,\ufffda"]
    assert found[-1] == "# 1 match shown; 1 match in 1 row of 4 scanned"
    assert world.search_text(SearchRequest("é", "t")).splitlines()[1].endswith(",v,é")


def test_describe_and_list_tables_work_beside_bad_text(world: Service) -> None:
    assert "t,table,0,4" in world.list_tables(include_row_counts=True)
    assert world.describe_table("t").count("\n") > 2


def test_the_console_shows_bad_text_as_sql(settings: Settings, world: Service) -> None:
    console = Console.open(settings)
    try:
        page = rows_page(console, {"name": "t"})
        listing = tables_page(console, {})
    finally:
        console.close()
    assert page is not None
    shown = html.unescape(str(page.body))
    assert "CAST(x'ff61' AS TEXT)" in shown
    assert "4 rows shown" in shown
    assert ">t<" in str(listing.body)


def test_the_cli_undoes_a_write_over_bad_text(
    world: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    answer = world.write_query("UPDATE t SET n = 0 WHERE id = 1")
    call = UNDO.search(answer)
    assert call is not None
    assert world.undoable()[0]["tables"] == ["t"]
    assert world.describe_undo(int(call["id"])).startswith("write_query (1 row): UPDATE")
    world.close()
    result = CliRunner().invoke(
        main, ["undo", "--db", str(db_path), call["id"]], prog_name="sqlgate"
    )
    assert result.exit_code == 0, result.output
    with direct(db_path) as conn:
        assert conn.execute("SELECT n FROM t WHERE id = 1").fetchall() == [(10,)]


def test_an_undo_conflict_on_a_bad_key_names_it_as_sql(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    fill(db_path, "CREATE TABLE t (v TEXT PRIMARY KEY, id INT, n INT) WITHOUT ROWID")
    answer = service.write_query("UPDATE t SET n = 0 WHERE id = 4")
    with direct(db_path) as conn:
        conn.execute("UPDATE t SET n = 1 WHERE id = 4")
    found = UNDO.search(answer)
    assert found is not None
    with pytest.raises(UndoConflict) as caught:
        service.undo(int(found["id"]))
    assert "t row (CAST(x'80' AS TEXT)): changed" in caught.value.for_cli()
    with pytest.raises(UndoConflict, match=re.escape("t row (CAST(x'80' AS TEXT)): changed")):
        service.undo_call(int(found["id"]), "take it back")
