"""CSV output: RFC 4180 quoting, NULL vs empty, blobs, caps and the trailer line."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine import framing
from sqlgate.engine.csvout import (
    BATCH_VALUE_BYTES,
    csv_cell,
    csv_line,
    csv_reply,
    render_csv,
    take_rows,
)
from sqlgate.engine.framing import counted, fence, fence_token, needs_fence
from sqlgate.engine.limits import ResultCaps
from sqlgate.engine.raw_text import RawText
from tests.security.framing import csv_rows, read_reply

CELL = 2000
CAPS = ResultCaps(rows=1000, bytes=32768, cell_chars=CELL)


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        pytest.param(None, "", id="null-is-empty"),
        pytest.param("", '""', id="empty-string-is-quoted"),
        pytest.param("plain", "plain", id="plain"),
        pytest.param("a,b", '"a,b"', id="comma"),
        pytest.param('say "hi"', '"say ""hi"""', id="quotes-doubled"),
        pytest.param('"', '""""', id="only-a-quote"),
        pytest.param("two\nlines", '"two\nlines"', id="newline"),
        pytest.param("carriage\rreturn", '"carriage\rreturn"', id="carriage-return"),
        pytest.param("crlf\r\n", '"crlf\r\n"', id="crlf"),
        pytest.param(" lead", '" lead"', id="leading-space"),
        pytest.param("trail ", '"trail "', id="trailing-space"),
        pytest.param(" ", '" "', id="only-space"),
        pytest.param("in side", "in side", id="inner-space-unquoted"),
        pytest.param("tab\there", "tab\there", id="tab-unquoted"),
        pytest.param("héllo wörld ✓ 🙂", "héllo wörld ✓ 🙂", id="unicode"),
        pytest.param(0, "0", id="zero"),
        pytest.param(-42, "-42", id="negative-int"),
        pytest.param(2**63 - 1, "9223372036854775807", id="big-int"),
        pytest.param(1.5, "1.5", id="float"),
        pytest.param(0.1, "0.1", id="float-repr-shortest"),
        pytest.param(1e20, "1e+20", id="float-exponent"),
        pytest.param(2.0, "2.0", id="float-whole"),
        pytest.param(-0.0, "-0.0", id="negative-zero"),
        pytest.param(b"", "x''", id="empty-blob"),
        pytest.param(b"\x00\xff\x10", "x'00ff10'", id="blob-hex"),
        pytest.param("x'00'", "x'00'", id="text-that-looks-like-a-blob"),
        pytest.param(RawText(b"\xffa"), "CAST(x'ff61' AS TEXT)", id="text-not-utf8"),
        pytest.param(RawText(b"a,\xff"), "CAST(x'612cff' AS TEXT)", id="not-utf8-never-quoted"),
    ],
)
def test_csv_cell(value: object, cell: str) -> None:
    assert csv_cell(value, CELL) == cell


@pytest.mark.parametrize(
    ("value", "cell_chars", "cell"),
    [
        pytest.param("abcdef", 6, "abcdef", id="at-the-cap-untouched"),
        pytest.param("abcdefg", 6, "abcdef…[+1 char]", id="one-over"),
        pytest.param("x" * 2500, 2000, "x" * 2000 + "…[+500 chars]", id="default-cap"),
        pytest.param("éééé", 2, "éé…[+2 chars]", id="counted-in-characters"),
        pytest.param("a,bcdef", 3, '"a,b…[+4 chars]"', id="cut-then-quoted"),
        pytest.param("abc,def", 3, "abc…[+4 chars]", id="cut-away-comma-not-quoted"),
        pytest.param(123456789, 4, "1234…[+5 chars]", id="long-number"),
        pytest.param(bytes(range(10)), 9, "x'000102'…[+7 bytes]", id="blob-truncated"),
        pytest.param(bytes(3), 9, "x'000000'", id="blob-fits"),
        pytest.param(b"\xff" * 5, 1, "x''…[+5 bytes]", id="blob-tiny-cap"),
        pytest.param(RawText(b"\xff" * 5), 21, "CAST(x'ffff' AS TEXT)…[+3 bytes]", id="raw-cut"),
        pytest.param(RawText(b"\xff" * 2), 21, "CAST(x'ffff' AS TEXT)", id="raw-fits"),
    ],
)
def test_long_cells_are_cut_with_a_marker(value: object, cell_chars: int, cell: str) -> None:
    assert csv_cell(value, cell_chars) == cell


def test_csv_line_joins_cells_and_ends_with_newline() -> None:
    assert csv_line([1, None, "", "a,b", b"\x01"], CELL) == '1,,"","a,b",x\'01\'\n'


def tallied(rows: Sequence[Sequence[Any]], taken: list[int]) -> Iterator[Sequence[Any]]:
    """Yield `rows`, recording in `taken` how many were pulled."""
    for row in rows:
        taken[0] += 1
        yield row


def test_render_csv_has_header_rows_and_trailer() -> None:
    result = render_csv(["id", "name"], iter([(1, "a"), (2, None)]), CAPS, limit=100)
    assert result.text == "id,name\n1,a\n2,\n# 2 rows"
    assert result.rows == 2
    assert result.truncated is None


def test_render_csv_empty_result_keeps_the_header() -> None:
    result = render_csv(["id", "name"], iter([]), CAPS, limit=100)
    assert result.text == "id,name\n# 0 rows"


def test_render_csv_one_column_null_is_a_blank_line() -> None:
    result = render_csv(["n"], iter([(None,), ("",)]), CAPS, limit=100)
    assert result.text == 'n\n\n""\n# 2 rows'


def test_render_csv_quotes_header_names_too() -> None:
    result = render_csv(["a,b", 'say "x"', ""], iter([]), CAPS, limit=10)
    assert result.text.splitlines()[0] == '"a,b","say ""x""",""'


def test_render_csv_cut_at_row_limit_says_so() -> None:
    rows = [(n,) for n in range(10)]
    result = render_csv(["n"], iter(rows), CAPS, limit=3)
    assert result.text == "n\n0\n1\n2\n# 3 rows (truncated: row limit 3)"
    assert result.truncated == "row limit 3"


def test_render_csv_exactly_limit_rows_is_not_truncated() -> None:
    result = render_csv(["n"], iter([(1,), (2,), (3,)]), CAPS, limit=3)
    assert result.text.endswith("\n# 3 rows")
    assert result.truncated is None


def test_render_csv_limit_is_capped_at_max_rows() -> None:
    caps = ResultCaps(rows=2, bytes=32768, cell_chars=CELL)
    result = render_csv(["n"], iter([(n,) for n in range(5)]), caps, limit=100)
    assert result.text.endswith("# 2 rows (truncated: row limit 2)")


@pytest.mark.parametrize(
    ("limit", "available", "pulled"),
    [
        pytest.param(3, 100, 4, id="limit-plus-one"),
        pytest.param(3, 3, 3, id="exactly-limit"),
        pytest.param(1, 10_000, 2, id="limit-one"),
        pytest.param(5, 2, 2, id="fewer-than-limit"),
    ],
)
def test_render_csv_reads_at_most_limit_plus_one_rows(
    limit: int, available: int, pulled: int
) -> None:
    taken = [0]
    render_csv(["n"], tallied([(n,) for n in range(available)], taken), CAPS, limit)
    assert taken[0] == pulled


def test_render_csv_stops_reading_at_the_byte_cap() -> None:
    caps = ResultCaps(rows=1000, bytes=20, cell_chars=CELL)
    taken = [0]
    result = render_csv(["n"], tallied([("abcdefghi",)] * 100, taken), caps, limit=1000)
    # header "n\n" (2 bytes) + one row of 10 bytes fits; the second would reach 22
    assert result.text == "n\nabcdefghi\n# 1 row (truncated: 20 bytes)"
    assert result.truncated == "20 bytes"
    assert taken[0] == 2


def test_render_csv_rows_filling_the_byte_cap_exactly_fit() -> None:
    caps = ResultCaps(rows=1000, bytes=12, cell_chars=CELL)
    result = render_csv(["n"], iter([("abcdefghi",)]), caps, limit=10)
    assert result.text == "n\nabcdefghi\n# 1 row"


def test_render_csv_byte_cap_counts_utf8_bytes_not_characters() -> None:
    # "é" is 2 bytes: header "c\n" (2) + "éééé\n" (9) = 11 bytes > 10, although 7 characters
    caps = ResultCaps(rows=1000, bytes=10, cell_chars=CELL)
    result = render_csv(["c"], iter([("éééé",)]), caps, limit=10)
    assert result.text == "c\n# 0 rows (truncated: 10 bytes)"
    roomy = ResultCaps(rows=1000, bytes=11, cell_chars=CELL)
    assert render_csv(["c"], iter([("éééé",)]), roomy, limit=10).rows == 1


def test_render_csv_body_never_exceeds_the_byte_cap() -> None:
    caps = ResultCaps(rows=1000, bytes=100, cell_chars=CELL)
    rows = [('ünïcødé, quoted "text"', n, None) for n in range(50)]
    result = render_csv(["text", "n", "nothing"], iter(rows), caps, limit=1000)
    body, _, trailer = result.text.rpartition("\n")
    assert len((body + "\n").encode()) <= 100
    assert trailer == f"# {result.rows} rows (truncated: 100 bytes)"


def test_render_csv_applies_the_cell_cap() -> None:
    caps = ResultCaps(rows=10, bytes=32768, cell_chars=5)
    result = render_csv(["v"], iter([("abcdefgh",)]), caps, limit=10)
    assert result.text == "v\nabcde…[+3 chars]\n# 1 row"


def parse(text: str) -> list[list[str]]:
    """Rows of the CSV minus its trailer (and fence); a blank line is one empty cell (a
    one-column NULL)."""
    body = unframed(text)
    return [record or [""] for record in csv.reader(io.StringIO(body, newline=""))]


# cells short enough never to be cut; NUL is left out (Python 3.10's csv reader refuses it)
cell_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)
cells = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1), cell_text)


@settings(max_examples=200, deadline=None)
@given(
    columns=st.lists(cell_text.filter(bool), min_size=1, max_size=4),
    data=st.data(),
)
def test_csv_round_trips_through_pythons_csv_reader(
    columns: list[str], data: st.DataObject
) -> None:
    rows = data.draw(
        st.lists(st.lists(cells, min_size=len(columns), max_size=len(columns)), max_size=8)
    )
    result = render_csv(columns, iter(rows), CAPS, limit=100)
    expected = [columns] + [["" if v is None else str(v) for v in row] for row in rows]
    assert parse(result.text) == expected
    assert result.text.endswith(f"\n# {counted(len(rows), 'row')}")


# texts built from the characters that change a cell's form: separators, quotes, line
# breaks, edge spaces, starts of server lines (`#`, `ok:`, `<data-`, unseen and look-alike
# characters); cut by small cell caps
tricky_text = st.text(
    st.sampled_from(list("ab ,\"\r\n\té…x'#ok:<\u2028\x85\x0b\u200b\uff03")), max_size=12
)
any_value = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    tricky_text,
    st.binary(max_size=8),
    st.binary(min_size=1, max_size=8).map(RawText),
)


@settings(max_examples=300, deadline=None)
@given(
    row=st.lists(any_value, min_size=1, max_size=6),
    cell_chars=st.integers(min_value=1, max_value=16),
)
def test_render_csv_rows_match_csv_line_cell_by_cell(row: list[Any], cell_chars: int) -> None:
    caps = ResultCaps(rows=10, bytes=1_000_000, cell_chars=cell_chars)
    result = render_csv(["c"] * len(row), iter([tuple(row)]), caps, limit=10)
    header = csv_line(["c"] * len(row), cell_chars)
    assert unframed(result.text) == header + csv_line(row, cell_chars)
    assert read_reply(result.text).server == ["# 1 row"]


def unframed(text: str) -> str:
    """The CSV lines of a result, out of their fence if they have one, without the trailer."""
    fenced = read_reply(text).fenced
    return fenced[0] + "\n" if fenced else text.rpartition("\n")[0] + "\n"


@pytest.mark.parametrize(
    "row",
    [
        pytest.param((1, " x"), id="leading-space-in-a-later-cell"),
        pytest.param(("x ", 1), id="trailing-space-before-a-comma"),
        pytest.param((None, "a,b"), id="comma-inside-with-a-null"),
        pytest.param(("", None), id="empty-string-beside-null"),
        pytest.param((1.5, b"\x01"), id="blob-beside-float"),
        pytest.param(("abcdefghijk", 2), id="long-cell-cut"),
        pytest.param(("plain", 7, 2.5, None), id="plain-row"),
    ],
)
def test_render_csv_row_forms(row: tuple[Any, ...]) -> None:
    caps = ResultCaps(rows=10, bytes=1_000_000, cell_chars=8)
    result = render_csv(["c"] * len(row), iter([row]), caps, limit=10)
    assert result.text.splitlines(keepends=True)[1] == csv_line(row, 8)


# -- framing: no row starts like a server line; rows with such a line inside are fenced -------
@pytest.mark.parametrize(
    "first",
    [
        pytest.param("# 0 rows", id="trailer"),
        pytest.param("ok: 0 rows affected", id="ok"),
        pytest.param("Ok: x", id="ok-mixed-case"),
        pytest.param("<data-0123abcd>", id="fence-open"),
        pytest.param("</data-0123abcd>", id="fence-close"),
        pytest.param("\t# 0 rows", id="tab"),
        pytest.param("\u200b# 0 rows", id="zero-width"),
        pytest.param("\uff03 0 rows", id="fullwidth-hash"),
        pytest.param("o\uff4b: 0 rows", id="fullwidth-k"),
    ],
)
def test_a_first_cell_that_starts_like_a_server_line_is_quoted(first: str) -> None:
    assert csv_line([first, 1], CELL) == '"' + first + '",1\n'
    assert csv_line([1, first], CELL) == f"1,{first}\n"  # mid-line: no line starts there
    result = render_csv(["v"], iter([(first,)]), CAPS, limit=10)
    assert result.text == f'v\n"{first}"\n# 1 row'
    assert render_csv([first], iter([]), CAPS, limit=10).text == f'"{first}"\n# 0 rows'


@pytest.mark.parametrize(
    "first", ["order 1", "Oslo", "okay", "<div>", "x#", "-1", ".5", "é#", "…# x"]
)
def test_ordinary_first_cells_stay_bare(first: str) -> None:
    assert csv_line([first], CELL) == f"{first}\n"


@pytest.mark.parametrize(
    "cell",
    [
        pytest.param("x\n# 0 rows", id="line-feed"),
        pytest.param("x\r# 0 rows", id="carriage-return"),
        pytest.param("x\u2028# 0 rows", id="line-separator"),
        pytest.param("x\x85ok: 1 row affected", id="next-line"),
        pytest.param("x\x0b# 0 rows", id="vertical-tab"),
        pytest.param("x\n</data-00000000>", id="fence-close"),
    ],
)
def test_rows_with_a_server_like_line_inside_a_cell_are_fenced(cell: str) -> None:
    result = render_csv(["n", "v"], iter([(1, cell), (2, "plain")]), CAPS, limit=10)
    reading = read_reply(result.text)
    assert reading.server == ["# 2 rows"]
    (body,) = reading.fenced
    assert csv_rows(body) == [["n", "v"], ["1", cell], ["2", "plain"]]
    assert result.text.endswith("\n# 2 rows")


def test_multi_line_cells_without_such_lines_are_not_fenced() -> None:
    result = render_csv(["v"], iter([("two\nlines",), ("a\u2028b",)]), CAPS, limit=10)
    assert result.text == 'v\n"two\nlines"\na\u2028b\n# 2 rows'


def test_csv_reply_frames_lines_built_elsewhere() -> None:
    assert csv_reply(["id,name\n", "1,a\n"], "# 1 claim") == "id,name\n1,a\n# 1 claim"
    reading = read_reply(csv_reply(["v\n", '"x\n# 0 rows"\n'], "# 1 row", "# next: more"))
    assert reading.server == ["# 1 row", "# next: more"]
    assert csv_rows(reading.fenced[0]) == [["v"], ["x\n# 0 rows"]]


# any text, and pieces of server lines: whatever a cell holds, the trailer is the only
# server line a reader finds, and the csv module reads the values back
framing_text = st.lists(
    st.one_of(
        st.sampled_from(["# 0 rows", "ok:", "<data-", "\n", "\r", "\u2028", "\x85", "\u200b", ","]),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(framing_text, min_size=2, max_size=2), max_size=4))
def test_no_cell_reads_as_a_server_line(rows: list[list[str]]) -> None:
    result = render_csv(["a", "b"], iter(rows), CAPS, limit=100)
    reading = read_reply(result.text)
    assert reading.server == [f"# {counted(len(rows), 'row')}"]
    assert csv_rows(unframed(result.text)) == [["a", "b"], *rows]


# -- rows rendered a batch at a time: the same text, the same reads ---------------------------
def render_row_by_row(
    columns: Sequence[str], rows: Iterator[Sequence[Any]], caps: ResultCaps, limit: int
) -> tuple[str, int, str | None]:
    """render_csv as it was before rows were rendered in batches: one csv_line per row, the
    row limit checked before a row is rendered and the byte cap after. The reference."""
    limit = min(limit, caps.rows)
    lines = [csv_line(columns, caps.cell_chars)]
    used = len(lines[0].encode())
    count, truncated = 0, None
    for row in rows:
        if count >= limit:
            truncated = f"row limit {limit}"
            break
        line = csv_line(row, caps.cell_chars)
        if used + len(line.encode()) > caps.bytes:
            truncated = counted(caps.bytes, "byte")
            break
        lines.append(line)
        used += len(line.encode())
        count += 1
    body = "".join(lines)
    trailer = f"# {counted(count, 'row')}" + (f" (truncated: {truncated})" if truncated else "")
    if needs_fence(body):
        return f"{fence(body[:-1], fence_token(body))}\n{trailer}", count, truncated
    return body + trailer, count, truncated


# values that change a cell's form, and plain ones that do not, in columns of one kind or mixed
plain_text = st.text(st.sampled_from(list("abcxyz019 -.é")), min_size=1, max_size=10)
column_kind = st.sampled_from(["int", "float", "text", "tricky", "nullable", "any"])
KIND_VALUES = {
    "int": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "float": st.floats(allow_nan=True, allow_infinity=True),
    "text": plain_text,
    "tricky": tricky_text,
    "nullable": st.one_of(st.none(), plain_text, st.integers()),
    "any": any_value,
}


@settings(max_examples=300, deadline=None)
@given(
    kinds=st.lists(column_kind, min_size=1, max_size=5),
    data=st.data(),
    limit=st.integers(min_value=1, max_value=80),
    max_rows=st.integers(min_value=1, max_value=80),
    max_bytes=st.integers(min_value=1, max_value=3000),
    cell_chars=st.integers(min_value=1, max_value=24),
)
def test_render_csv_matches_rendering_row_by_row(
    kinds: list[str],
    data: st.DataObject,
    limit: int,
    max_rows: int,
    max_bytes: int,
    cell_chars: int,
) -> None:
    rows = data.draw(
        st.lists(st.tuples(*(KIND_VALUES[kind] for kind in kinds)), max_size=70), label="rows"
    )
    columns = [f"c{i}" for i in range(len(kinds))]
    caps = ResultCaps(rows=max_rows, bytes=max_bytes, cell_chars=cell_chars)
    token = "0badf00d"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(framing, "_new_token", lambda: token)
        expected = render_row_by_row(columns, iter(rows), caps, limit)
        taken = [0]
        result = render_csv(columns, tallied(rows, taken), caps, limit)
    assert (result.text, result.rows, result.truncated) == expected
    assert taken[0] <= min(limit, max_rows) + 1


@pytest.mark.parametrize(
    ("rows", "max_bytes", "pulled"),
    [
        pytest.param(5000, 50_002, 5001, id="all-fit-to-the-byte"),
        pytest.param(5000, 30_000, 3000, id="cut-mid-way"),
        pytest.param(5000, 12, 2, id="cut-at-the-first"),
    ],
)
def test_render_csv_reads_one_row_past_the_byte_cap_when_rows_are_alike(
    rows: int, max_bytes: int, pulled: int
) -> None:
    # header "n\n" (2 bytes), then rows of 10 bytes: how many fit is known from the first
    caps = ResultCaps(rows=10_000, bytes=max_bytes, cell_chars=CELL)
    taken = [0]
    result = render_csv(["n"], tallied([("abcdefghi",)] * rows, taken), caps, limit=10_000)
    assert result.rows == min(rows, (max_bytes - 2) // 10)
    assert taken[0] == min(pulled, rows)


def test_a_batch_of_rows_holds_at_most_its_budget_of_values_plus_one_row() -> None:
    assert [len(b) for b, _ in [take_rows(iter([("small",)] * 2000), 1000)]] == [1000]
    assert take_rows(iter([("a",), ("b",)]), 1000) == ([("a",), ("b",)], True)
    big = ("x" * 300_000,)
    batch, ended = take_rows(iter([("small",)] * 5 + [big] * 50), 1000)
    assert not ended
    assert len(batch) == 5 + BATCH_VALUE_BYTES // len(big[0]) + 1  # the row that reached it
    assert sum(len(row[0]) for row in batch) <= BATCH_VALUE_BYTES + len(big[0])
