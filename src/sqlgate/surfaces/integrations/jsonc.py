"""JSON with comments (JSONC), read and edited as text so every comment and blank line stays.

VS Code's `mcp.json` is JSONC: `//` and `/* */` comments and trailing commas are allowed
(code.visualstudio.com/docs/copilot/reference/mcp-configuration). sqlgate reads every
client's JSON file this way and never adds a comment or a trailing comma of its own.

`parse` gives the value and where each piece of it is in the text. `rewrite` turns the text
of one value into the text of another by the smallest edits: a member added at the end of
its object (indented like its neighbours), a member or element cut out with its own line, a
changed scalar replaced in place. Everything between the edits is kept byte for byte, so
adding our entry and removing it again gives back the original text. The caller checks that
the result parses to the intended value (`config_files.edit_json`).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsoncError", "Node", "load", "parse", "rewrite"]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 200
_BLANKS = re.compile(r"[ \t]*")
_SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
Key = str | int


class JsoncError(ValueError):
    """Not JSONC: the message says what, `line` and `column` (from 1) say where."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        self.msg = message
        super().__init__(f"{message} at line {self.line}, column {self.column}")


@dataclass
class Item:
    """A member of an object (`key` set) or an element of an array: where it is."""

    start: int  # the key's quote, or the element's first character
    node: Node
    comma: int | None = None  # the comma after it, if any
    key: str | None = None


@dataclass
class Node:
    start: int
    end: int
    value: Any
    items: list[Item] = field(default_factory=list)  # objects and arrays only

    def child(self, key: Key) -> Item:
        if isinstance(key, int):
            return self.items[key]
        return [item for item in self.items if item.key == key][-1]  # JSON: the last wins


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        return JsoncError(message, self.text, self.pos if pos is None else pos)

    def skip(self) -> None:
        """Whitespace and comments."""
        self.pos = _SKIP.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.text.startswith("/*", self.pos):
            raise self.fail("unterminated /* comment")

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nested too deeply")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("expected a value, found the end of the file")
        char = self.text[self.pos]
        if char == "{":
            return self.container(depth, "}")
        if char == "[":
            return self.container(depth, "]")
        if char == '"':
            start = self.pos
            decoded = self.string()
            return Node(start, self.pos, decoded)
        start = self.pos
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, literal)
        number = _NUMBER.match(self.text, start)
        if number:
            self.pos = number.end()
            return Node(start, self.pos, json.loads(number.group()))
        raise self.fail(f"unexpected {char!r}")

    def string(self) -> str:
        start = self.pos
        text = self.text
        quick = _STRING.match(text, start)
        if quick:  # the common case, in one regex step
            self.pos = quick.end()
            body = quick.group()[1:-1]
            if "\\" not in body:
                return body
            return json.loads(quick.group())  # type: ignore[no-any-return]
        pos = start + 1
        while True:
            if pos >= len(text):
                raise self.fail("unterminated string", start)
            char = text[pos]
            if char == '"':
                break
            pos += 2 if char == "\\" else 1
        self.pos = pos + 1
        try:
            decoded = json.loads(text[start : self.pos])
        except json.JSONDecodeError as exc:
            raise self.fail(f"bad string ({exc.msg})", start + exc.pos) from None
        assert isinstance(decoded, str)
        return decoded

    def container(self, depth: int, close: str) -> Node:
        start = self.pos
        self.pos += 1
        items: list[Item] = []
        while True:
            self.skip()
            if self.pos < len(self.text) and self.text[self.pos] == close:
                break
            if items and items[-1].comma is None:
                raise self.fail(f"expected ',' or '{close}'")
            item_start = self.pos
            key = None
            if close == "}":
                if self.pos >= len(self.text) or self.text[self.pos] != '"':
                    raise self.fail("expected a quoted member name")
                key = self.string()
                self.skip()
                if self.pos >= len(self.text) or self.text[self.pos] != ":":
                    raise self.fail("expected ':'")
                self.pos += 1
            node = self.value(depth + 1)
            self.skip()
            comma = None
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                comma = self.pos
                self.pos += 1
            items.append(Item(item_start, node, comma, key))
        self.pos += 1
        if close == "}":
            value: Any = {item.key: item.node.value for item in items}
        else:
            value = [item.node.value for item in items]
        return Node(start, self.pos, value, items)


def parse(text: str) -> Node:
    """The value of a JSONC text and where its parts are. Raises JsoncError."""
    parser = _Parser(text)
    node = parser.value(0)
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("unexpected text after the value")
    return node


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load(text: str) -> Any:
    """The value of a JSONC text (`parse(text).value`); plain JSON takes the C parser."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return parse(text).value


# ---------------------------------------------------------------------------------------------
# editing


def rewrite(text: str, old: Any, new: Any) -> str:
    """`text` (whose value is `old`) edited so that its value is `new`."""
    return _edit(text, (), old, new)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _edit(text: str, path: tuple[Key, ...], old: Any, new: Any) -> str:
    if _same(old, new):
        return text
    if isinstance(old, dict) and isinstance(new, dict):
        for key in reversed([key for key in old if key not in new]):
            text = _delete(text, path, key)
        for key in [key for key in old if key in new]:
            text = _edit(text, (*path, key), old[key], new[key])
        for key in [key for key in new if key not in old]:
            text = _insert(text, path, key, new[key])
        return text
    if isinstance(old, list) and isinstance(new, list):
        signature = [json.dumps(v, sort_keys=True) for v in old]
        wanted = [json.dumps(v, sort_keys=True) for v in new]
        opcodes = difflib.SequenceMatcher(None, signature, wanted, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in reversed(opcodes):
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for k in reversed(range(i2 - i1)):
                    text = _edit(text, (*path, i1 + k), old[i1 + k], new[j1 + k])
                continue
            for index in reversed(range(i1, i2)):
                text = _delete(text, path, index)
            for offset, value in enumerate(new[j1:j2]):
                text = _insert(text, path, i1 + offset, value)
        return text
    node = _locate(text, path)
    return _splice(text, node.start, node.end, _render(new, text, node.start))


def _locate(text: str, path: tuple[Key, ...]) -> Node:
    node = parse(text)
    for key in path:
        node = node.child(key).node
    return node


def _splice(text: str, start: int, end: int, replacement: str) -> str:
    return text[:start] + replacement + text[end:]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _unit(text: str) -> str:
    """The document's indent step: the first indented line's indentation, else two spaces."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _indent_of(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    return re.match(r"[ \t]*", text[start:pos]).group()  # type: ignore[union-attr]


def _first_on_line(text: str, pos: int) -> bool:
    return not text[_line_start(text, pos) : pos].strip()


def _render(value: Any, text: str, at: int) -> str:
    """`value` as JSON, its inner lines indented to sit at `at` in `text`."""
    dumped = json.dumps(value, indent=_unit(text), ensure_ascii=False)
    return dumped.replace("\n", _newline(text) + _indent_of(text, at))


def _line_end(text: str, pos: int) -> int:
    """`pos` moved past the comments that follow it on its own line (not past the line break)."""
    while True:
        after = _BLANKS.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("//", after):
            end = text.find("\n", after)
            end = len(text) if end < 0 else end
            return end - 1 if text[end - 1] == "\r" else end
        close = text.find("*/", after + 2) if text.startswith("/*", after) else -1
        if close < 0 or "\n" in text[after:close]:
            return pos
        pos = close + 2


def _line_end_raw(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _ends_in_line_comment(text: str, start: int, newline: int) -> bool:
    """Whether the blanks, commas and comments from `start` end in a `//` comment at the
    line break `newline` (joining the next line to it would comment that line out)."""
    pos = start
    while pos < newline:
        if text.startswith("//", pos):
            return _line_end_raw(text, pos) == newline
        if text.startswith("/*", pos):
            pos = text.find("*/", pos + 2) + 2
        else:
            pos += 1
    return False


def _delete(text: str, path: tuple[Key, ...], key: Key) -> str:
    """Remove one member or element: its own line(s) when it starts a line, else just it."""
    container = _locate(text, path)
    items = container.items
    index = key if isinstance(key, int) else items.index(container.child(key))
    item = items[index]
    prev = items[index - 1] if index > 0 else None
    own_line = _first_on_line(text, item.start)
    if own_line:
        end = _line_end(text, item.node.end if item.comma is None else item.comma + 1)
        start = _line_start(text, item.start)
        if prev is None:
            gap = container.start + 1
        else:
            gap = prev.node.end if prev.comma is None else prev.comma + 1
        rest_blank = not text[end : _line_end_raw(text, end)].strip()
        if rest_blank or not _ends_in_line_comment(text, gap, start - 1):
            start -= 1  # the line break before it goes too: the lines join
            if start > 0 and text[start - 1] == "\r":
                start -= 1
    elif item.comma is not None:
        start, end = item.start, item.comma + 1
        while end < len(text) and text[end] in " \t":
            end += 1
    elif prev is not None and prev.comma is not None:
        start, end = prev.comma, item.node.end
    else:
        start, end = item.start, item.node.end
    edited = _splice(text, start, end, "")
    if item.comma is None and prev is not None and prev.comma is not None and own_line:
        edited = _splice(edited, prev.comma, prev.comma + 1, "")  # it was a separator
    emptied = _locate(edited, path)
    if not emptied.items and not edited[emptied.start + 1 : emptied.end - 1].strip():
        # nothing left but blanks: written as a fresh empty object or array is, `{}`
        edited = _splice(edited, emptied.start + 1, emptied.end - 1, "")
    return edited


def _insert(text: str, path: tuple[Key, ...], key: Key, value: Any) -> str:
    """Add a member at the end of an object, or an element before `key` (an index)."""
    container = _locate(text, path)
    items = container.items
    newline = _newline(text)
    outer = _indent_of(text, container.start)
    if items and _first_on_line(text, items[-1].start):
        indent = _indent_of(text, items[-1].start)
    else:
        indent = outer + _unit(text)
    head = f"{json.dumps(key, ensure_ascii=False)}: " if isinstance(key, str) else ""
    # the value is rendered as if it began right after the head on an indented line
    body = json.dumps(value, indent=_unit(text), ensure_ascii=False)
    entry = head + body.replace("\n", newline + indent)
    if isinstance(key, int) and key < len(items):
        after = items[key]
        if _first_on_line(text, after.start):
            at = _line_start(text, after.start) - 1  # the line break before it
            at = at - 1 if at > 0 and text[at - 1] == "\r" else at
            return _splice(text, at, at, f"{newline}{indent}{entry},")
        return _splice(text, after.start, after.start, f"{entry}, ")
    if not items:
        inner = text[container.start + 1 : container.end - 1]
        if not inner.strip():
            new_inner = f"{newline}{indent}{entry}{newline}{outer}"
            return _splice(text, container.start + 1, container.end - 1, new_inner)
        at = container.end - 1 - (len(inner) - len(inner.rstrip()))
        return _splice(text, at, at, f"{newline}{indent}{entry}")
    last = items[-1]
    if last.comma is not None:
        at = _line_end(text, last.comma + 1)
        return _splice(text, at, at, f"{newline}{indent}{entry},")
    at = _line_end(text, last.node.end)
    edited = _splice(text, at, at, f"{newline}{indent}{entry}")
    return _splice(edited, last.node.end, last.node.end, ",")
