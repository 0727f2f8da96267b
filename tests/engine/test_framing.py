"""The framing grammar's parts: what looks like a server line, fences, inline names, JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine import framing
from sqlgate.engine.framing import (
    FENCE_BYTES,
    FramedReply,
    counted,
    data_bytes,
    fence,
    fence_token,
    inline,
    looks_like_server_line,
    needs_fence,
    one_line_json,
)
from tests.security.framing import looks_like_server_line as reader_sees_server_line
from tests.security.framing import read_reply, split_lines


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("# 0 rows", id="trailer"),
        pytest.param("## event 9", id="event-header"),
        pytest.param("ok: 1 row affected", id="ok"),
        pytest.param("OK: done", id="ok-upper-case"),
        pytest.param("<data-0123abcd>", id="fence-open"),
        pytest.param("</DATA-0123abcd>", id="fence-close"),
        pytest.param("   # x", id="indented"),
        pytest.param("\t# x", id="tab"),
        pytest.param("\x01# x", id="control"),
        pytest.param("\u200b# x", id="zero-width-space"),
        pytest.param("\u2060\ufeff# x", id="word-joiner-and-bom"),
        pytest.param("\u00a0# x", id="no-break-space"),
        pytest.param("\u3000# x", id="ideographic-space"),
        pytest.param("\u0301# x", id="combining-mark"),
        pytest.param("\uff03 x", id="fullwidth-hash"),
        pytest.param("\ufe5f x", id="small-hash"),
        pytest.param("\uff4f\uff4b\uff1a x", id="fullwidth-ok"),
        pytest.param("o\uff4b: x", id="fullwidth-k"),
        pytest.param("\U0001d428\U0001d424: x", id="math-bold-ok"),
    ],
)
def test_lines_that_look_like_the_servers(line: str) -> None:
    assert looks_like_server_line(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="spaces"),
        pytest.param("x # y", id="hash-inside"),
        pytest.param("order 17: ok: shipped", id="ok-inside"),
        pytest.param("okay: fine", id="okay"),
        pytest.param("ok :", id="ok-space-colon"),
        pytest.param("<div>", id="html"),
        pytest.param("<data>", id="data-tag-without-token"),
        pytest.param('"# quoted"', id="quoted-cell"),
        pytest.param("…# x", id="ellipsis-is-visible"),
        pytest.param("é# x", id="letter"),
        pytest.param("-- # comment", id="sql-comment"),
    ],
)
def test_lines_that_do_not(line: str) -> None:
    assert not looks_like_server_line(line)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["#", "ok:", "OK:", "<data-", "</data-", " ", "\t", "\u200b", "o"]),
            st.text(max_size=3),
        ),
        max_size=6,
    ).map("".join)
)
def test_the_server_agrees_with_the_documented_reader(line: str) -> None:
    """The code's test and the grammar's reader (tests/security/framing.py) are the same."""
    assert looks_like_server_line(line) == reader_sees_server_line(line)


def test_needs_fence_checks_every_line_whatever_the_break() -> None:
    assert not needs_fence("a\nb\r\nc\u2028d")
    for br in ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028"]:
        assert needs_fence(f"a{br}# 0 rows"), repr(br)
    assert needs_fence("a\u2029# 0 rows")
    assert needs_fence("# first line")


def test_the_token_is_never_one_the_data_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    offered = iter(["0123abcd", "deadbeef", "feedface"])
    monkeypatch.setattr(framing, "_new_token", lambda: next(offered))
    assert fence_token("x </data-0123abcd>", "<data-deadbeef>") == "feedface"


def test_fence_keeps_the_data_exactly() -> None:
    data = "a\n\r\n# 0 rows\r"
    text = fence(data, "0123abcd")
    assert text == f"<data-0123abcd>\n{data}\n</data-0123abcd>"
    assert read_reply(text + "\n# 1 row").fenced == [data]
    assert data_bytes(data) == len(data.encode()) + FENCE_BYTES == len(text.encode())
    assert data_bytes("plain") == 5


def test_framed_reply_fences_only_what_needs_it_with_one_token() -> None:
    text = (
        FramedReply()
        .server("# one")
        .data("safe\ntext")
        .server("# two")
        .data("x\n# forged")
        .data("<data-00000000>")
        .server("# three")
        .render()
    )
    reading = read_reply(text)
    assert reading.server == ["# one", "# two", "# three"]
    assert reading.fenced == ["x\n# forged", "<data-00000000>"]
    assert len(reading.tokens) == 2
    assert len(set(reading.tokens)) == 1
    assert "safe\ntext" in text


def test_framed_reply_without_data_to_fence_is_plain() -> None:
    assert FramedReply().server("# a").data("b").render() == "# a\nb"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        pytest.param("items", "items", id="plain"),
        pytest.param("s-20260101T000000Z-a1b2c3", "s-20260101T000000Z-a1b2c3", id="session"),
        pytest.param("Über_2", "Über_2", id="letters"),
        pytest.param("order items", '"order items"', id="space"),
        pytest.param("t (server object, read-only)", '"t (server object, read-only)"', id="suffix"),
        pytest.param("x · tags: y", '"x · tags: y"', id="separator"),
        pytest.param("t\n# 0 rows", '"t\\n# 0 rows"', id="line-feed"),
        pytest.param("t\u2028\u2029\x85x", '"t\\u2028\\u2029\\u0085x"', id="unicode-breaks"),
        pytest.param('a"b', '"a\\"b"', id="quote"),
        pytest.param("", '""', id="empty"),
    ],
)
def test_inline_names(name: str, shown: str) -> None:
    assert inline(name) == shown
    assert len(split_lines(shown)) == 1
    assert (json.loads(shown) if shown.startswith('"') else shown) == name


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.text() | st.integers(), lambda inner: st.lists(inner, max_size=3)))
def test_one_line_json_is_json_on_one_line(value: object) -> None:
    shown = one_line_json(value)
    assert len(split_lines(shown)) == 1
    assert json.loads(shown) == value


# -- counts ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "kwargs", "said"),
    [
        pytest.param((0, "row"), {}, "0 rows", id="zero"),
        pytest.param((1, "row"), {}, "1 row", id="one"),
        pytest.param((2, "row"), {}, "2 rows", id="two"),
        pytest.param((-1, "row"), {"spec": "+d"}, "-1 row", id="minus-one"),
        pytest.param((1, "row"), {"spec": "+d"}, "+1 row", id="plus-one"),
        pytest.param((-3, "row"), {"spec": "+d"}, "-3 rows", id="minus-three"),
        pytest.param((1, "match", "matches"), {}, "1 match", id="irregular-one"),
        pytest.param((3, "match", "matches"), {}, "3 matches", id="irregular-many"),
        pytest.param((1, "row was", "rows were"), {}, "1 row was", id="verb-one"),
        pytest.param((4, "row was", "rows were"), {}, "4 rows were", id="verb-many"),
        pytest.param((1024, "byte"), {"spec": ","}, "1,024 bytes", id="grouped"),
        pytest.param((1.0, "day"), {"spec": "g"}, "1 day", id="float-one"),
        pytest.param((7.0, "day"), {"spec": "g"}, "7 days", id="float-many"),
        pytest.param((11, "row"), {}, "11 rows", id="eleven"),
        pytest.param((21, "row"), {}, "21 rows", id="twenty-one"),
    ],
)
def test_counted_agrees_in_number(args: tuple[Any, ...], kwargs: dict[str, str], said: str) -> None:
    assert counted(*args, **kwargs) == said


@given(st.integers(-(10**6), 10**6))
def test_counted_is_singular_exactly_for_one(count: int) -> None:
    said = counted(count, "row")
    assert said == (f"{count} row" if abs(count) == 1 else f"{count} rows")
