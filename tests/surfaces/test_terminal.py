"""surfaces/terminal.py: how text read from the database is shown to a person."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from sqlgate.surfaces.terminal import (
    UNSAFE_CATEGORIES,
    cell,
    is_unsafe,
    json_dumps,
    json_text,
    one_line,
    visible,
    visible_lines,
)

# text that leans on the characters that matter: C0, DEL, C1, bidi and invisible format
# characters, line and paragraph separators, lone surrogates, and ordinary text around them
_SPECIAL = st.sampled_from(
    [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
    + list("\u061c\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
           "\u2060\u2066\u2067\u2068\u2069\ufeff\U000e0041\ud800\udfff\\")
)  # fmt: skip
TEXT = st.lists(st.one_of(_SPECIAL, st.characters()), max_size=40).map("".join) | st.text()
# JSON spells a character past the BMP as a surrogate pair, so a lone high surrogate followed
# by a lone low one is the same JSON text as that character: no escape can tell them apart.
# sqlgate never stores such text (arguments with unpaired surrogates are refused).
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
JSON_TEXT = TEXT.filter(lambda text: _SURROGATE_PAIR.search(text) is None)


def unsafe_in(text: str, allowed: str = "") -> list[str]:
    return [c for c in text if c not in allowed and unicodedata.category(c) in UNSAFE_CATEGORIES]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("\x1b[2K\x1b[1A", "\\x1b[2K\\x1b[1A", id="esc"),
        pytest.param("\x9b2J", "\\x9b2J", id="c1-csi"),
        pytest.param("a\x07\x08\x7fb", "a\\x07\\x08\\x7fb", id="bel-bs-del"),
        pytest.param("\u202eabc\u202c", "\\u202eabc\\u202c", id="bidi-override"),
        pytest.param("\u2066x\u2069", "\\u2066x\\u2069", id="bidi-isolate"),
        pytest.param("a\u200bb\ufeff", "a\\u200bb\\ufeff", id="zero-width"),
        pytest.param("tag\U000e0041", "tag\\U000e0041", id="tag-character"),
        pytest.param("a\nb\tc\rd", "a\\nb\\tc\\rd", id="line-breaks"),
        pytest.param("\u2028\u2029", "\\u2028\\u2029", id="separators"),
        pytest.param("\ud800", "\\ud800", id="lone-surrogate"),
        pytest.param("héllo, 世界 🙂 C:\\x", "héllo, 世界 🙂 C:\\x", id="plain-kept"),
    ],
)
def test_visible_escapes_every_control_and_format_character(text: str, shown: str) -> None:
    assert visible(text) == shown


@given(TEXT)
def test_visible_leaves_nothing_unsafe_and_shows_every_character(text: str) -> None:
    shown = visible(text)
    assert unsafe_in(shown) == []
    # character by character: a safe one is itself, an unsafe one its printable escape
    assert shown == "".join(visible(c) for c in text)
    for char in text:
        if is_unsafe(char):
            assert visible(char).startswith("\\")
            assert visible(char).isascii()
            assert char in "\n\t\r" or int(visible(char)[2:], 16) == ord(char)
        else:
            assert visible(char) == char


@given(TEXT)
def test_is_unsafe_is_exactly_the_unicode_categories(text: str) -> None:
    for char in text:
        assert is_unsafe(char) == (unicodedata.category(char) in UNSAFE_CATEGORIES)


@given(TEXT, st.integers(min_value=2, max_value=50))
def test_one_line_folds_whitespace_and_is_cut_between_whole_characters(
    text: str, width: int
) -> None:
    line = one_line(text, width)
    assert unsafe_in(line) == []
    assert len(line) <= width
    folded = re.sub(r"[ \t\r\n]+", " ", text).strip(" ")
    assert one_line(text) == visible(folded)
    if line != visible(folded):
        kept = line.removesuffix("…")
        assert line.endswith("…")
        assert kept in {visible(folded[:n]) for n in range(len(folded) + 1)}


def test_one_line_folds_line_breaks_and_tabs_to_one_space() -> None:
    assert one_line("  SELECT a,\n\t b\r\n  FROM t  ") == "SELECT a, b FROM t"
    assert one_line("x\x1b[2Ky", 4) == "x…"  # never half an escape
    assert one_line("x\x1b[2Ky", 6) == "x\\x1b…"


@given(TEXT)
def test_visible_lines_keeps_line_breaks_and_nothing_else(text: str) -> None:
    shown = visible_lines(text)
    assert unsafe_in(shown, allowed="\n") == []
    assert shown.count("\n") == text.count("\n")
    assert "\t" not in shown


def test_visible_lines_expands_tabs_and_escapes_carriage_returns() -> None:
    assert visible_lines("a\tb\nc\rd") == "a   b\nc\\rd"


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT, inner, max_size=4),
    max_leaves=12,
))  # fmt: skip
def test_json_dumps_is_equal_in_value_and_has_nothing_unsafe(value: object) -> None:
    text = json_dumps(value)
    assert unsafe_in(text) == []
    assert json.loads(text) == value
    indented = json_dumps(value, indent=2)
    assert unsafe_in(indented, allowed="\n") == []
    assert json.loads(indented) == value


def test_json_text_escapes_what_json_dumps_leaves_raw() -> None:
    raw = json.dumps({"k\u202e": "\x9b2J\x7f\U000e0041"}, ensure_ascii=False)
    assert json_text(raw) == '{"k\\u202e": "\\u009b2J\\u007f\\udb40\\udc41"}'


def test_a_rich_cell_shows_markup_and_escapes_as_typed() -> None:
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=80).print(cell("[bold]x[/bold]\x1b[2K"))
    printed = out.getvalue()
    assert "[bold]x[/bold]\\x1b[2K" in printed
    assert "\x1b[2K" not in printed


@pytest.mark.skipif(sys.maxunicode < 0x10FFFF, reason="narrow build")
def test_every_code_point_of_the_unsafe_categories_is_escaped() -> None:
    missed = [
        hex(code) for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in UNSAFE_CATEGORIES and visible(chr(code)) == chr(code)
    ]  # fmt: skip
    assert missed == []
