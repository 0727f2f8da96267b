"""Regular expressions GLOB can say, and those it cannot."""

from __future__ import annotations

import re

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.engine.dialects.globs import glob_of
from sqlgate.engine.dialects.trees import NoRewrite

SAID = [
    ("^A", "A*"),
    ("son$", "*son"),
    ("^[A-C]", "[A-C]*"),
    ("EXAMPLE\\.ORG$", "*EXAMPLE[.]ORG"),
    ("^a.c$", "a?c"),
    ("a.*b", "*a*b*"),
    ("\\d\\d$", "*[0-9][0-9]"),
    ("^[^x]", "[^x]*"),
    ("00[1-3]$", "*00[1-3]"),
]


@pytest.mark.parametrize(("regex", "glob"), SAID)
def test_a_pattern_glob_can_say(regex: str, glob: str) -> None:
    assert glob_of(regex) == glob


@pytest.mark.parametrize("regex", ["a+", "colou?r", "a{2}", "(a|b)", "\\w+", "[[:alpha:]]", "[a"])
def test_a_pattern_glob_cannot_say_is_no_rewrite(regex: str) -> None:
    with pytest.raises(NoRewrite):
        glob_of(regex)


WORDS = st.text(alphabet=st.sampled_from(list("abcAB.-_ 01")), max_size=8)
PATTERNS = st.lists(
    st.sampled_from(["a", "b", "A", ".", ".*", "[ab]", "[^a]", "0", "\\.", "-", " "]),
    max_size=5,
).map("".join)


@given(st.booleans(), PATTERNS, st.booleans(), WORDS)
def test_glob_finds_what_the_regular_expression_finds(
    start: bool, body: str, end: bool, text: str
) -> None:
    regex = ("^" if start else "") + body + ("$" if end else "")
    conn = apsw.Connection(":memory:")
    found = conn.execute("SELECT ? GLOB ?", (text, glob_of(regex))).fetchone()[0]
    assert bool(found) == (re.search(regex, text, re.DOTALL) is not None)
