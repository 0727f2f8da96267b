"""The HTML builder escapes every value unless it is Markup the server built."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.surfaces.ui.html import Markup, bounded, el, escape, href, text_block


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(
            "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;", id="script"
        ),
        pytest.param('" onmouseover="x', "&quot; onmouseover=&quot;x", id="attribute-breaker"),
        pytest.param("a\u202eb", "a\\u202eb", id="bidi-override"),
        pytest.param("bell\x07", "bell\\x07", id="control"),
        pytest.param(None, "", id="none"),
        pytest.param(3, "3", id="number"),
    ],
)
def test_escape_shows_values_as_inert_text(value: object, shown: str) -> None:
    assert escape(value) == shown


@given(st.text())
def test_no_value_can_open_a_tag_or_leave_an_attribute(value: str) -> None:
    inside = el("span", {"title": value}, value)
    body = inside[len('<span title="') : -len("</span>")]
    assert "<" not in body
    assert body.count('"') == 1  # only the one closing the attribute


def test_markup_is_passed_through_and_plain_strings_are_not() -> None:
    assert el("p", None, Markup("<b>x</b>")) == "<p><b>x</b></p>"
    assert el("p", None, "<b>x</b>") == "<p>&lt;b&gt;x&lt;/b&gt;</p>"


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "//evil.example/x", "https://evil.example", "data:text/html,x"]
)
def test_links_outside_the_console_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="path inside the console"):
        el("a", {"href": url}, "x")


@pytest.mark.parametrize("name", ["onclick", "style", "x onload", 'a"b'])
def test_event_handlers_styles_and_odd_attribute_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not"):
        el("a", {name: "x"}, "x")


def test_href_encodes_the_query() -> None:
    assert href("/", {"session": "<a>&b", "tool": None}) == "/?session=%3Ca%3E%26b"
    with pytest.raises(ValueError, match="start with one"):
        href("javascript:alert(1)")


def test_bounded_cuts_and_counts() -> None:
    assert bounded("x" * 10, 4) == ("xxxx", 6)
    assert bounded("abc", 4) == ("abc", 0)
    assert bounded(b"\x01\x02", 100) == ("x'0102'", 0)


def test_text_block_keeps_lines_and_escapes_the_rest() -> None:
    assert text_block("a\n<b>\x1b") == "a\n&lt;b&gt;\\x1b"
