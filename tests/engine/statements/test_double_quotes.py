"""A double-quoted string refused as a column (double-quoted strings are off) is answered with
the statement rewritten with single quotes, ready to send; the server never runs it."""

from __future__ import annotations

import re

import pytest

from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import SqlError
from sqlgate.service import Service

SEND = re.compile(r"Send instead: (.*)\Z", re.S)


@pytest.fixture
def flights(service: Service) -> Service:
    service.write_query("CREATE TABLE flights(Airline TEXT, Abbreviation TEXT, n INT)")
    service.write_query("INSERT INTO flights VALUES ('JetBlue Airways', 'JB', 1)")
    return service


def refused(service: Service, tool: str, sql: str) -> str:
    run = service.read_query if tool == "read" else service.write_query
    with pytest.raises(SqlError) as caught:
        run(sql)
    return str(caught.value)


def rewrite_of(message: str) -> str:
    found = SEND.search(message)
    assert found is not None, message
    return found[1]


@pytest.mark.parametrize(
    ("tool", "sql", "rewritten"),
    [
        pytest.param(
            "read",
            'SELECT * FROM flights WHERE Airline = "JetBlue Airways"',
            "SELECT * FROM flights WHERE Airline = 'JetBlue Airways'",
            id="where-equals",
        ),
        pytest.param(
            "read",
            'SELECT n FROM flights WHERE Abbreviation IN ("JB", "UA")',
            "SELECT n FROM flights WHERE Abbreviation IN ('JB', 'UA')",
            id="in-list",
        ),
        pytest.param(
            "read",
            'SELECT * FROM flights WHERE "Airline" = "JetBlue Airways"',
            "SELECT * FROM flights WHERE \"Airline\" = 'JetBlue Airways'",
            id="quoted-column-kept",
        ),
        pytest.param(
            "read",
            'SELECT f."Airline" AS "name" FROM flights AS f WHERE "name" <> "Bob\'s ""Air"""',
            'SELECT f."Airline" AS "name" FROM flights AS f WHERE "name" <> \'Bob\'\'s "Air"\'',
            id="alias-kept-quotes-escaped",
        ),
        pytest.param(
            "write",
            'INSERT INTO flights("Airline", n) VALUES ("Delta", 2)',
            "INSERT INTO flights(\"Airline\", n) VALUES ('Delta', 2)",
            id="insert-values",
        ),
        pytest.param(
            "write",
            'UPDATE flights SET Airline = "United" WHERE n = 1',
            "UPDATE flights SET Airline = 'United' WHERE n = 1",
            id="update-set",
        ),
    ],
)
def test_the_answer_is_the_statement_with_single_quotes(
    flights: Service, tool: str, sql: str, rewritten: str
) -> None:
    message = refused(flights, tool, sql)
    assert "double quotes name a column; text goes in 'single quotes'" in message
    assert rewrite_of(message) == rewritten


def test_the_rewrite_is_not_run_by_the_server(flights: Service) -> None:
    refused(flights, "write", 'UPDATE flights SET Airline = "United" WHERE n = 1')
    assert flights.read_query("SELECT Airline FROM flights") == (
        "Airline\nJetBlue Airways\n# 1 row"
    )


def test_the_rewrite_returns_the_rows_plain_sqlite_would(flights: Service) -> None:
    message = refused(flights, "read", 'SELECT n FROM flights WHERE Airline = "JetBlue Airways"')
    assert flights.read_query(rewrite_of(message)) == "n\n1\n# 1 row"


def test_a_mistyped_column_gets_no_rewrite(flights: Service) -> None:
    message = refused(flights, "read", "SELECT Airlin FROM flights")
    assert "Send instead" not in message
    assert "describe_table" in message


def test_a_statement_with_a_line_comment_gets_no_rewrite(flights: Service) -> None:
    message = refused(flights, "read", 'SELECT n FROM flights -- all\nWHERE Airline = "x"')
    assert "Send instead" not in message
    assert "'single quotes'" in message


def test_a_view_sqlite_cannot_expand_leaves_the_plain_advice(flights: Service) -> None:
    flights.write_query("CREATE TABLE gone(x)")
    flights.create_view("broken", "SELECT x FROM gone")
    flights.destructive_query("DROP TABLE gone", "break the view")
    message = refused(flights, "read", 'SELECT n FROM flights WHERE Airline = "JetBlue Airways"')
    assert "text goes in 'single quotes'" in message
    assert "Send instead" not in message


def test_search_texts_where_gets_its_own_rewrite(flights: Service) -> None:
    with pytest.raises(SqlError) as caught:
        flights.search_text(SearchRequest("Jet", "flights", where='Airline = "JetBlue Airways"'))
    message = str(caught.value)
    assert message.endswith("Send instead, as where: Airline = 'JetBlue Airways'")


def test_create_views_select_gets_its_own_rewrite(flights: Service) -> None:
    with pytest.raises(SqlError) as caught:
        flights.create_view("jb", 'SELECT n FROM flights WHERE Airline = "JetBlue Airways"')
    message = str(caught.value)
    assert message.endswith(
        "Send instead, as select_sql: SELECT n FROM flights WHERE Airline = 'JetBlue Airways'"
    )


def test_a_huge_statement_is_not_echoed_back(flights: Service) -> None:
    # the agent has its statement: a rewrite of a long one, or a long string quoted back,
    # would cost it its own text again in tokens
    long_text = "x" * 100_000
    with pytest.raises(SqlError) as caught:
        flights.read_query(f'SELECT * FROM flights WHERE Airline = "{long_text}"')
    message = str(caught.value)
    assert len(message) < 500, message[:600]
    assert "(100000 characters)" in message
    assert "text goes in 'single quotes'" in message
    assert "Send instead" not in message
    many = ", ".join(f'"airline {i}"' for i in range(2000))
    with pytest.raises(SqlError) as caught:
        flights.read_query(f"SELECT * FROM flights WHERE Airline IN ({many})")
    assert len(str(caught.value)) < 500
    assert "Send instead" not in str(caught.value)
