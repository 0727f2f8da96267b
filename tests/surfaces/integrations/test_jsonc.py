"""JSON with comments (surfaces/integrations/jsonc.py, config_files.edit_json): read like
json.loads, edited as text so comments survive, and our entry's round trip is exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.surfaces.integrations.config_files import ConfigMalformed, edit_json, load_json
from sqlgate.surfaces.integrations.jsonc import JsoncError, parse, rewrite

PATH = Path("mcp.json")
ENTRY = {"type": "stdio", "command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# what may stand between tokens: blanks, line breaks, and both kinds of comment
GAPS = ["", " ", "\n", "\n  ", "\n\n    ", " // a note\n", "\t/* inline */ ", "\n  // own line\n  "]


def render(value: Any, gap: Any, trailing: Any) -> str:
    """`value` as JSONC with random gaps and trailing commas (empty containers as `{}`)."""
    if isinstance(value, dict) and value:
        parts = [
            f"{gap()}{json.dumps(k)}{gap()}:{gap()}{render(v, gap, trailing)}{gap()}"
            for k, v in value.items()
        ]
        return "{" + ",".join(parts) + ("," + gap() if trailing() else "") + "}"
    if isinstance(value, list) and value:
        parts = [f"{gap()}{render(v, gap, trailing)}{gap()}" for v in value]
        return "[" + ",".join(parts) + ("," + gap() if trailing() else "") + "]"
    return json.dumps(value)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    keys = st.text(max_size=8).filter(lambda k: k not in ("mcpServers", "sqlgate"))
    base = draw(st.dictionaries(keys, values, max_size=4))
    if draw(st.booleans()):
        base["mcpServers"] = draw(st.dictionaries(keys, values, max_size=3))
    text = render(base, lambda: draw(st.sampled_from(GAPS)), lambda: draw(st.booleans()))
    return draw(st.sampled_from(["", "// head\n", "/* top */\n"])) + text + "\n", base


@settings(max_examples=300, deadline=None)
@given(documents())
def test_our_entry_round_trips_exactly_and_every_comment_stays(doc: Any) -> None:
    text, value = doc
    assert load_json(PATH, text) == value

    servers = value.get("mcpServers", {})
    installed = {**value, "mcpServers": {**servers, "sqlgate": ENTRY}}
    after = edit_json(PATH, text, value, installed)

    assert load_json(PATH, after) == installed
    for comment in ("// a note", "/* inline */", "// own line", "// head", "/* top */"):
        assert after.count(comment) == text.count(comment)
    assert edit_json(PATH, after, installed, value) == text


@settings(max_examples=200, deadline=None)
@given(values)
def test_plain_json_reads_as_json_loads_does(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2), json.dumps(value, indent="\t")):
        assert parse(text).value == json.loads(text)


def test_vscode_style_file_keeps_its_comments_and_trailing_commas() -> None:
    text = (
        "{\n"
        "  // servers for this workspace\n"
        '  "servers": {\n'
        '    "github": { "type": "http", "url": "https://api.example.com/mcp/" }, // remote\n'
        "  },\n"
        '  "inputs": [],\n'
        "}\n"
    )
    old = load_json(PATH, text)
    new = {**old, "servers": {**old["servers"], "sqlgate": ENTRY}}

    after = edit_json(PATH, text, old, new)

    assert after == (
        "{\n"
        "  // servers for this workspace\n"
        '  "servers": {\n'
        '    "github": { "type": "http", "url": "https://api.example.com/mcp/" }, // remote\n'
        '    "sqlgate": {\n'
        '      "type": "stdio",\n'
        '      "command": "sqlgate",\n'
        '      "args": [\n'
        '        "serve",\n'
        '        "--db",\n'
        '        ".sqlgate/agent.db"\n'
        "      ]\n"
        "    },\n"
        "  },\n"
        '  "inputs": [],\n'
        "}\n"
    )


def test_a_changed_db_is_replaced_in_place_and_nothing_else_moves() -> None:
    text = (
        '{\r\n  "mcpServers": {\r\n    "sqlgate": {\r\n      "command": "/x/sqlgate",\r\n'
        '      "args": ["serve", "--db", "/old.db"] /* mine */\r\n    }\r\n  }\r\n}\r\n'
    )
    old = load_json(PATH, text)
    new = {"mcpServers": {"sqlgate": {"command": "/x/sqlgate",
                                      "args": ["serve", "--db", "/new.db"]}}}  # fmt: skip
    assert rewrite(text, old, new) == text.replace("/old.db", "/new.db")


def test_removing_the_only_member_leaves_an_empty_object() -> None:
    text = '{\n  "servers": {\n    "sqlgate": {"command": "x"}\n  }\n}\n'
    assert rewrite(text, load_json(PATH, text), {"servers": {}}) == '{\n  "servers": {}\n}\n'


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        pytest.param('{\n  "a": 1\n  "b": 2\n}', "expected ',' or '}'", 3, 3, id="no-comma"),
        pytest.param('{\n  /* open\n  "a": 1\n}', "unterminated /* comment", 2, 3, id="comment"),
        pytest.param('{"a": "x\n"}', "bad string", 1, 9, id="raw-line-break"),
        pytest.param('{"a": "x}', "unterminated string", 1, 7, id="open-string"),
        pytest.param("{'a': 1}", "expected a quoted member name", 1, 2, id="single-quote"),
        pytest.param('{"a": 1} x', "unexpected text after the value", 1, 10, id="after"),
        pytest.param('{"a": NaN}', "unexpected 'N'", 1, 7, id="nan"),
        pytest.param('{"a": [1,,]}', "unexpected ','", 1, 10, id="two-commas"),
        pytest.param("[" * 300, "nested too deeply", 1, 202, id="deep"),
    ],
)
def test_malformed_text_names_what_and_where(
    text: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(JsoncError) as caught:
        parse(text)
    assert caught.value.msg.startswith(message)
    assert (caught.value.line, caught.value.column) == (line, column)
    with pytest.raises(ConfigMalformed, match=rf"line {line}, column {column}\); it was left"):
        load_json(PATH, text)


def test_the_last_of_two_equal_keys_counts_as_in_json() -> None:
    text = '{"a": 1, "a": 2}'
    assert parse(text).value == json.loads(text) == {"a": 2}
    assert json.loads(rewrite(text, {"a": 2}, {"a": 3})) == {"a": 3}


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, Any, Any]:
    """A JSONC text, its value, and another value of the same top-level shape."""
    old = draw(st.dictionaries(st.text(max_size=4), values, max_size=4))
    new = draw(st.dictionaries(st.text(max_size=4), values, max_size=4))
    if draw(st.booleans()):  # share keys, so that nested edits happen too
        new = {**old, **new}
    text = render(old, lambda: draw(st.sampled_from(GAPS)), lambda: draw(st.booleans()))
    return text, old, new


@settings(max_examples=300, deadline=None)
@given(edits())
def test_any_rewrite_reads_back_as_the_new_value(case: Any) -> None:
    text, old, new = case
    after = rewrite(text, old, new)
    assert parse(after).value == new
    assert after.count("// own line") <= text.count("// own line")  # cut only with a member
