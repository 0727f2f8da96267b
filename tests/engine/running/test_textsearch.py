"""search_text: SQL narrows rows under the read policy, RE2 finds matches, CSV reports them."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.limits import CallControl, Deadline
from sqlgate.engine.running import textsearch
from sqlgate.engine.running.textsearch import MAX_PATTERN_CHARS, SearchRequest
from sqlgate.errors import (
    InvalidArgument,
    NotFound,
    QueryTimeout,
    SqlgateError,
)
from sqlgate.service import Service
from tests.conftest import FakeClock

ROWS = [
    (1, "The quick brown fox", "jumps over the lazy dog"),
    (2, "A slow turtle", "never saw a fox at all, nor another fox"),
    (3, "Nothing here", None),
    (4, "UPPER FOX", "plain"),
]


@pytest.fixture
def docs(service: Service) -> Service:
    service.write_query("CREATE TABLE docs(id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    for row in ROWS:
        service.write_query("INSERT INTO docs VALUES (?, ?, ?)", list(row))
    return service


def search(service: Service, pattern: str, table: str = "docs", **kwargs: Any) -> str:
    return service.search_text(SearchRequest(pattern, table, **kwargs))


def body_lines(result: str) -> list[str]:
    lines = result.splitlines()
    assert lines[0] == "key,column,snippet"
    assert lines[-1].startswith("# ")
    return lines[1:-1]


def test_matches_come_back_with_key_column_and_snippet(docs: Service) -> None:
    result = search(docs, "fox")
    assert body_lines(result) == [
        "1,title,The quick brown fox",
        '2,body,"never saw a fox at all, nor another fox"',
        '2,body,"never saw a fox at all, nor another fox"',
    ]
    assert result.splitlines()[-1] == "# 3 matches shown; 3 matches in 2 rows of 4 scanned"


def test_snippets_show_context_around_the_match(docs: Service) -> None:
    result = search(docs, "lazy", context_chars=5)
    assert body_lines(result) == ["1,body,…the lazy dog"]
    result = search(docs, "over", context_chars=3)
    assert body_lines(result) == ["1,body,…ps over th…"]


def test_zero_context_shows_only_the_match(docs: Service) -> None:
    assert body_lines(search(docs, "tur.le", context_chars=0)) == ["2,title,…turtle"]


def test_ignore_case(docs: Service) -> None:
    assert [line.split(",")[0] for line in body_lines(search(docs, "FOX"))] == ["4"]
    keys = [line.split(",")[0] for line in body_lines(search(docs, "FOX", ignore_case=True))]
    assert keys == ["1", "2", "2", "4"]


def test_fixed_strings_treat_regex_metacharacters_literally(service: Service) -> None:
    service.write_query("CREATE TABLE code(src TEXT)")
    service.write_query("INSERT INTO code VALUES ('call a.b(x)'), ('axb(y)'), ('a.b')")
    literal = search(service, "a.b(", "code", fixed_strings=True)
    assert body_lines(literal) == ["1,src,call a.b(x)"]


def test_a_regex_finds_what_a_fixed_string_would_not(service: Service) -> None:
    service.write_query("CREATE TABLE code(src TEXT)")
    service.write_query("INSERT INTO code VALUES ('a.b'), ('axb')")
    assert len(body_lines(search(service, "a.b", "code"))) == 2
    assert len(body_lines(search(service, "a.b", "code", fixed_strings=True))) == 1


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("(", id="open-paren"),
        pytest.param("[a-", id="open-class"),
        pytest.param("(a)\\1", id="backreference"),
        pytest.param("(?=x)", id="lookahead"),
    ],
)
def test_an_invalid_re2_pattern_suggests_fixed_strings(docs: Service, pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="fixed_strings"):
        search(docs, pattern)
    assert body_lines(search(docs, pattern, fixed_strings=True)) == []


@pytest.mark.parametrize(
    ("pattern", "phrase"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("x" * (MAX_PATTERN_CHARS + 1), str(MAX_PATTERN_CHARS), id="too-long"),
    ],
)
def test_patterns_out_of_bounds_are_refused(docs: Service, pattern: str, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        search(docs, pattern)


def test_columns_narrow_the_search(docs: Service) -> None:
    keys = list(body_lines(search(docs, "fox", columns=["TITLE"])))
    assert keys == ["1,title,The quick brown fox"]


def test_an_unknown_column_lists_the_real_ones(docs: Service) -> None:
    with pytest.raises(InvalidArgument) as caught:
        search(docs, "fox", columns=["title", "nope"])
    message = str(caught.value)
    assert "'nope'" in message
    assert "id, title, body" in message


@pytest.mark.parametrize(
    "columns",
    [
        pytest.param("title", id="a-string"),
        pytest.param([1], id="not-names"),
        pytest.param([], id="empty"),
    ],
)
def test_columns_must_be_a_list_of_names(docs: Service, columns: Any) -> None:
    with pytest.raises(InvalidArgument):
        search(docs, "fox", columns=columns)


def test_key_column_defaults_to_rowid_and_can_be_chosen(docs: Service) -> None:
    assert body_lines(search(docs, "turtle"))[0].startswith("2,")
    by_title = body_lines(search(docs, "turtle", key_column="title", columns=["title"]))
    assert by_title == ["A slow turtle,title,A slow turtle"]
    assert body_lines(search(docs, "turtle", key_column="ROWID"))[0].startswith("2,")


def test_an_unknown_key_column_lists_the_real_ones(docs: Service) -> None:
    with pytest.raises(InvalidArgument, match="id, title, body"):
        search(docs, "fox", key_column="nope")


def test_a_without_rowid_table_is_keyed_by_its_primary_key(service: Service) -> None:
    service.write_query("CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
    service.write_query("INSERT INTO kv VALUES ('alpha', 'hello world')")
    assert body_lines(search(service, "world", "kv")) == ["alpha,v,hello world"]
    with pytest.raises(InvalidArgument, match="key_column"):
        search(service, "world", "kv", key_column="rowid")


def test_a_view_is_keyed_by_its_first_column(docs: Service) -> None:
    docs.create_view("titles", "SELECT title, id FROM docs")
    assert body_lines(search(docs, "turtle", "titles", columns=["title"])) == [
        "A slow turtle,title,A slow turtle"
    ]


def test_an_fts5_table_is_keyed_by_rowid(service: Service) -> None:
    service.write_query("CREATE VIRTUAL TABLE notes USING fts5(body)")
    service.destructive_query("INSERT INTO notes(rowid, body) VALUES (7, 'hello world')", "r")
    assert body_lines(search(service, "world", "notes")) == ["7,body,hello world"]


def test_an_unknown_table_is_not_found(docs: Service) -> None:
    with pytest.raises(NotFound, match="list_tables"):
        search(docs, "fox", "nope")


def test_where_narrows_the_rows_with_bound_params(docs: Service) -> None:
    request = SearchRequest("fox", "docs", where="id > ?")
    result = docs.search_text(request, params=[1])
    assert [line.split(",")[0] for line in body_lines(result)] == ["2", "2"]
    assert result.splitlines()[-1].endswith("of 3 scanned")


@pytest.mark.parametrize(
    ("where", "error", "phrase"),
    [
        pytest.param(
            "1 = 1); DELETE FROM docs; SELECT (1", InvalidArgument, "bracket", id="delete"
        ),
        pytest.param(
            "1 = 1); ATTACH 'x.db' AS x; SELECT (1", InvalidArgument, "bracket", id="attach"
        ),
        pytest.param("load_extension('x') IS NULL", SqlgateError, "load_extension", id="ext"),
        pytest.param("writefile('x', 'y') IS NULL", SqlgateError, "writefile", id="writefile"),
        pytest.param(
            "1 = 1; DROP TABLE docs", InvalidArgument, "';'", id="semicolon-inside-parens"
        ),
    ],
)
def test_a_where_that_tries_more_than_reading_is_refused(
    docs: Service, where: str, error: type[SqlgateError], phrase: str
) -> None:
    with pytest.raises(error, match=phrase):
        search(docs, "fox", where=where)
    assert docs.read_query("SELECT count(*) AS n FROM docs") == "n\n4\n# 1 row"
    assert not (docs.settings.db.parent / "x.db").exists()


@pytest.mark.parametrize("where", ["", "   "])
def test_a_blank_where_is_refused(docs: Service, where: str) -> None:
    with pytest.raises(InvalidArgument, match="where"):
        search(docs, "fox", where=where)


@pytest.mark.parametrize(
    ("limit", "trailer"),
    [
        pytest.param(
            1, "# 1 match shown (stopped at limit 1 after 1 row scanned; more may match)",
            id="first-row",
        ),
        pytest.param(
            2, "# 2 matches shown (stopped at limit 2 after 2 rows scanned; more may match)",
            id="inside-a-row-with-two-matches",
        ),
        pytest.param(
            3, "# 3 matches shown (stopped at limit 3 after 2 rows scanned; more may match)",
            id="last-match-of-a-row",
        ),
        pytest.param(
            4, "# 4 matches shown (stopped at limit 4 after 4 rows scanned; more may match)",
            id="last-row",
        ),
        pytest.param(5, "# 4 matches shown; 4 matches in 3 rows of 4 scanned", id="room-left"),
    ],
)  # fmt: skip
def test_the_scan_stops_once_limit_matches_are_shown(
    docs: Service, limit: int, trailer: str
) -> None:
    result = search(docs, "fox", limit=limit, ignore_case=True)
    assert len(body_lines(result)) == min(limit, 4)
    assert result.splitlines()[-1] == trailer


def test_a_stopped_scan_reads_no_row_after_the_limit(service: Service) -> None:
    service.write_query("CREATE TABLE t(body TEXT)")
    service.write_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
        "INSERT INTO t SELECT 'needle ' || i FROM n"
    )
    result = search(service, "needle", "t", limit=10)
    assert result.splitlines()[-1] == (
        "# 10 matches shown (stopped at limit 10 after 10 rows scanned; more may match)"
    )


def test_byte_budget_stops_the_scan_with_a_trailer(make_service: Callable[..., Service]) -> None:
    service = make_service(max_result_bytes=120)
    service.write_query("CREATE TABLE t(body TEXT)")
    for i in range(10):
        service.write_query("INSERT INTO t VALUES (?)", [f"needle number {i} in a long line"])
    result = search(service, "needle", "t")
    shown = result.splitlines()[:-1]
    assert len("\n".join(shown).encode()) + 1 <= 120
    assert result.splitlines()[-1] == (
        f"# {len(shown) - 1} matches shown (stopped at the 120-byte result cap after "
        f"{len(shown)} rows scanned; the next match did not fit)"
    )


_tables = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cells=st.lists(st.text(alphabet="ab x", max_size=12), min_size=1, max_size=12),
    limit=st.integers(min_value=1, max_value=15),
)
def test_a_limited_search_shows_the_first_matches_of_the_full_one(
    service: Service, cells: list[str], limit: int
) -> None:
    table = f"p{next(_tables)}"  # a new table per example: the fixture outlives them
    service.write_query(f"CREATE TABLE {table}(body TEXT)")
    for cell in cells:
        service.write_query(f"INSERT INTO {table} VALUES (?)", [cell])
    full = search(service, "ab", table, limit=1000, context_chars=0)
    limited = search(service, "ab", table, limit=limit, context_chars=0)
    everything = body_lines(full)
    assert full.splitlines()[-1].endswith(f"of {len(cells)} scanned")
    assert body_lines(limited) == everything[:limit]
    if len(everything) < limit:
        assert limited.splitlines()[-1] == full.splitlines()[-1]
    else:
        assert f"(stopped at limit {limit} after " in limited.splitlines()[-1]


@pytest.mark.parametrize(
    ("limit", "context"),
    [
        pytest.param(0, 80, id="limit-zero"),
        pytest.param(True, 80, id="limit-bool"),
        pytest.param(10, -1, id="negative-context"),
        pytest.param(10, 1001, id="context-too-big"),
        pytest.param(10, "80", id="context-text"),
    ],
)
def test_limit_and_context_are_checked(docs: Service, limit: Any, context: Any) -> None:
    with pytest.raises(InvalidArgument):
        search(docs, "fox", limit=limit, context_chars=context)


@pytest.mark.parametrize("limit", [None, 100, 1001], ids=["default", "default-value", "over"])
def test_a_limit_over_max_rows_is_lowered_to_it_as_in_read_query(
    make_service: Callable[..., Service], limit: int | None
) -> None:
    """One rule for every limit (issue 21): above --max-rows it is lowered to it. The default
    of 100 had failed every call under `--max-rows 50`."""
    service = make_service(max_rows=3)
    service.write_query("CREATE TABLE n(body TEXT)")
    service.write_query("INSERT INTO n VALUES ('fox'), ('fox'), ('fox'), ('fox'), ('fox')")
    given = {} if limit is None else {"limit": limit}
    result = search(service, "fox", "n", **given)
    assert len(body_lines(result)) == 3
    assert "(stopped at limit 3 after " in result.splitlines()[-1]


def test_unicode_snippets_cut_on_characters_not_bytes(service: Service) -> None:
    service.write_query("CREATE TABLE u(body TEXT)")
    text = "ünïcödé 😀😀 wörld ☃ and more ünïcödé"
    service.write_query("INSERT INTO u VALUES (?)", [text])
    assert body_lines(search(service, "wörld", "u", context_chars=3)) == ["1,body,…😀😀 wörld ☃…"]
    assert body_lines(search(service, "WÖRLD", "u", context_chars=0, ignore_case=True)) == [
        "1,body,…wörld…"
    ]


def test_null_and_blob_cells_are_skipped_and_numbers_searched(service: Service) -> None:
    service.write_query("CREATE TABLE mixed(a, b)")
    service.write_query("INSERT INTO mixed VALUES (NULL, x'6e6565646c65'), (12345, 'needle')")
    result = search(service, "needle|234", "mixed")
    assert body_lines(result) == ["2,a,12345", "2,b,needle"]
    assert result.splitlines()[-1] == "# 2 matches shown; 2 matches in 1 row of 2 scanned"


def test_whitespace_in_snippets_is_folded(service: Service) -> None:
    service.write_query("CREATE TABLE w(body TEXT)")
    service.write_query("INSERT INTO w VALUES (?)", ["line one\n\tline  two"])
    assert body_lines(search(service, "two", "w")) == ["1,body,line one line two"]


def test_search_requests_are_values() -> None:
    request = SearchRequest("x", "t")
    assert replace(request, limit=5).limit == 5
    assert request.key_column is None


# -- the deadline while matching, windows, and patterns too complex to run -------------------


def _reference_snippet(text: str, start: int, end: int, context: int) -> str:
    """How a snippet is cut, on characters: the contract `_snippet` keeps on UTF-8 bytes."""
    left = max(0, start - context)
    right = min(len(text), end + context)
    shown = " ".join(text[left:right].split())
    return ("…" if left else "") + shown + ("…" if right < len(text) else "")


@given(
    text=st.text(alphabet=st.sampled_from("ab é😀\n\t"), max_size=40),
    data=st.data(),
    context=st.integers(min_value=0, max_value=12),
)
def test_snippets_cut_from_utf8_bytes_equal_snippets_cut_from_characters(
    text: str, data: st.DataObject, context: int
) -> None:
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    encoded = text.encode()
    byte_start, byte_end = len(text[:start].encode()), len(text[:end].encode())
    assert textsearch._snippet(encoded, byte_start, byte_end, context) == _reference_snippet(
        text, start, end, context
    )


WINDOW_PATTERNS = ["ab", "a{1,3}", "é", "b$", "^a", r"\ba", "ab|ba", "x*", "(?i)A", "[^a]"]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("aab é"), max_size=60),
    pattern=st.sampled_from(WINDOW_PATTERNS),
    window=st.integers(min_value=8, max_value=24),
)
def test_matching_in_windows_finds_what_one_pass_finds(
    text: str, pattern: str, window: int
) -> None:
    # every pattern here matches at most 3 characters (6 bytes), well inside half a window;
    # one pass is `finditer` over the text as characters, its spans counted in UTF-8 bytes
    regex = textsearch._compile(SearchRequest(pattern, "t"))
    data = text.encode()
    offsets = [len(text[:i].encode()) for i in range(len(text) + 1)]
    whole = [(offsets[m.start()], offsets[m.end()]) for m in re2.finditer(pattern, text)]
    never = Deadline(60.0, FakeClock())
    windowed = textsearch.Matcher(regex, never, window=window)
    assert list(windowed.spans(data)) == whole


def test_windows_are_smaller_for_bigger_programs() -> None:
    never = Deadline(60.0, FakeClock())
    small = textsearch.Matcher(textsearch._compile(SearchRequest("fox", "t")), never)
    big = textsearch.Matcher(textsearch._compile(SearchRequest("(a|aa){1,300}b", "t")), never)
    assert small.window == textsearch.MAX_WINDOW_BYTES
    assert textsearch.MIN_WINDOW_BYTES <= big.window < small.window


def test_matching_stops_at_the_deadline_inside_one_long_cell_and_says_so(
    make_service: Callable[..., Service],
) -> None:
    clock = FakeClock()
    service = make_service(clock_=clock, query_timeout=5.0)
    service.write_query("CREATE TABLE big(body TEXT)")
    service.write_query("INSERT INTO big VALUES (?)", ["ab" + "a" * 400_000])
    clock.step = 1.0  # every reading of the clock now costs a second
    result = search(service, "(a|aa){1,100}b", "big", context_chars=0)
    assert body_lines(result) == ["1,body,ab…"]  # found before the time ran out, and kept
    assert result.splitlines()[-1] == (
        "# 1 match shown (stopped at the 5 s time limit (--query-timeout) partway through "
        "row 1; more may match)"
    )


def test_a_search_whose_sql_reaches_the_deadline_answers_with_what_it_scanned(
    make_service: Callable[..., Service],
) -> None:
    clock = FakeClock()
    service = make_service(clock_=clock, query_timeout=5.0)
    service.write_query("CREATE TABLE big(body TEXT)")
    service.write_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
        "INSERT INTO big SELECT 'row ' || i FROM n"
    )
    clock.step = 1.0  # every reading of the clock now costs a second
    # the first row passes the condition; no other does, so the time runs out inside SQLite
    result = search(service, "row", "big", where="body IN ('row 1', 'never there')")
    assert body_lines(result) == ["1,body,row 1"]
    assert result.splitlines()[-1] == (
        "# 1 match shown (stopped at the 5 s time limit (--query-timeout) after 1 row "
        "scanned; more may match)"
    )
    logged = service.read_query(
        "SELECT json_extract(detail, '$.complete') AS complete FROM query_log "
        "WHERE tool = 'search_text'"
    )
    assert logged == "complete\n0\n# 1 row"


def test_a_search_whose_sql_returns_no_row_before_the_deadline_fails(
    make_service: Callable[..., Service],
) -> None:
    clock = FakeClock()
    service = make_service(clock_=clock, query_timeout=5.0)
    service.write_query("CREATE TABLE big(body TEXT)")
    service.write_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
        "INSERT INTO big SELECT 'row ' || i FROM n"
    )
    clock.step = 1.0
    with pytest.raises(QueryTimeout, match="--query-timeout"):
        search(service, "row", "big", where="body = 'never there'")


def test_a_cancelled_search_fails_instead_of_answering(docs: Service) -> None:
    control = CallControl()
    control.cancel()
    with pytest.raises(QueryTimeout, match="cancelled"):
        docs.search_text(SearchRequest("fox", "docs"), control=control)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("(a|aa){1,1000}b", id="repeated-alternation"),
        pytest.param("[^x]{0,1000}y", id="long-counted-class"),
    ],
)
def test_a_pattern_too_complex_for_re2_is_refused_with_advice(docs: Service, pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="fewer repetitions") as caught:
        search(docs, pattern)
    assert "RE2 instructions" in str(caught.value)


def test_a_pattern_with_a_lone_surrogate_is_refused(docs: Service) -> None:
    with pytest.raises(InvalidArgument, match="surrogate"):
        search(docs, "fo\ud800x")
