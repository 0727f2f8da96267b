"""Counts in answers read as English: `# 1 row`, `# 0 rows`, `ok: 1 row affected` (issue 30 §6).

The main answers an agent reads, each for zero, one and two: read_query's trailer,
write_query's rows affected, memory_search's results, search_text's matches. The wording of
every other count goes through the same helper (`framing.counted`), which
tests/test_counted_source.py holds the source to.
"""

from __future__ import annotations

import pytest

from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.service import Service


@pytest.fixture
def ready(service: Service) -> Service:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha'), ('beta'), ('gamma')")
    return service


def last_line(text: str) -> str:
    return text.splitlines()[-1]


@pytest.mark.parametrize(
    ("rows", "trailer"),
    [
        pytest.param(0, "# 0 rows", id="none"),
        pytest.param(1, "# 1 row", id="one"),
        pytest.param(2, "# 2 rows", id="two"),
    ],
)
def test_read_query_trailer(ready: Service, rows: int, trailer: str) -> None:
    answer = ready.read_query("SELECT id FROM t ORDER BY id LIMIT ?", params=[rows])
    assert last_line(answer) == trailer


def test_a_truncated_trailer_keeps_the_singular(ready: Service) -> None:
    answer = ready.read_query("SELECT id FROM t ORDER BY id", limit=1)
    assert last_line(answer) == "# 1 row (truncated: row limit 1)"


@pytest.mark.parametrize(
    ("where", "line"),
    [
        pytest.param("id > 3", "ok: 0 rows affected", id="none"),
        pytest.param("id = 1", "ok: 1 row affected", id="one"),
        pytest.param("id > 1", "ok: 2 rows affected", id="two"),
    ],
)
def test_write_query_rows_affected(ready: Service, where: str, line: str) -> None:
    answer = ready.write_query(f"UPDATE t SET body = 'x' WHERE {where}")
    assert answer.splitlines()[0].startswith(line)
    assert answer.splitlines()[0].removeprefix(line)[:1] in ("", " ", ";")


def test_an_insert_of_one_row_says_row(ready: Service) -> None:
    answer = ready.write_query("INSERT INTO t(body) VALUES ('delta')")
    assert answer.splitlines()[0].startswith("ok: 1 row affected (last_insert_rowid=4)")


def test_returning_rows_count_both_lines(ready: Service) -> None:
    answer = ready.write_query("UPDATE t SET body = 'y' WHERE id = 2 RETURNING id")
    lines = answer.splitlines()
    assert lines[0].startswith("ok: 1 row affected")
    assert "# 1 row" in lines


@pytest.mark.parametrize(
    ("events", "trailer"),
    [
        pytest.param(1, "# 1 result; next: ", id="one"),
        pytest.param(2, "# 2 results; next: ", id="two"),
    ],
)
def test_memory_search_results(service: Service, events: int, trailer: str) -> None:
    for number in range(events):
        service.append_event(f"deploy step {number} went well")
    answer = service.memory_search("deploy")
    assert last_line(answer).startswith(trailer)


def test_memory_search_no_results(service: Service) -> None:
    service.append_event("nothing to see")
    assert last_line(service.memory_search("deploy")).startswith("# 0 results; ")


@pytest.mark.parametrize(
    ("pattern", "trailer"),
    [
        pytest.param("zzz", "# 0 matches shown; 0 matches in 0 rows of 3 scanned", id="none"),
        pytest.param("bet", "# 1 match shown; 1 match in 1 row of 3 scanned", id="one"),
        pytest.param("ph|mm", "# 2 matches shown; 2 matches in 2 rows of 3 scanned", id="two"),
        pytest.param("m", "# 2 matches shown; 2 matches in 1 row of 3 scanned", id="one-row"),
    ],
)
def test_search_text_matches(ready: Service, pattern: str, trailer: str) -> None:
    answer = ready.search_text(SearchRequest(pattern, "t", key_column="id"))
    assert last_line(answer) == trailer


def test_search_text_stopped_at_its_limit(ready: Service) -> None:
    answer = ready.search_text(SearchRequest("alpha", "t", key_column="id", limit=1))
    assert last_line(answer) == (
        "# 1 match shown (stopped at limit 1 after 1 row scanned; more may match)"
    )
