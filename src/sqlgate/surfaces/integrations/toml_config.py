"""Codex's config.toml: reading it, and editing only the lines of our `[mcp_servers.NAME]`
table while the rest of the file stays as text; a rewrite that would parse to anything but
the expected document is refused before it is written.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlgate.service import toml_reader
from sqlgate.surfaces.integrations.config_files import (
    Change,
    ConfigMalformed,
    ConfigUnwritable,
    section,
)

__all__ = ["toml_document", "toml_remove", "toml_servers", "toml_set", "toml_table"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                 "\f": "\\f", "\r": "\\r"}  # fmt: skip


def _toml_string(value: str) -> str:
    out = []
    for char in value:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")  # pragma: no cover


def toml_table(path: tuple[str, ...], values: dict[str, Any]) -> str:
    """A `[a.b]` table of string and string-list values, as lines ending in a newline."""
    lines = ["[" + ".".join(_toml_key(part) for part in path) + "]"]
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _tomllib() -> ModuleType:
    toml = toml_reader()
    if toml is None:
        raise ConfigUnwritable(
            "reading Codex's config.toml needs Python 3.11 or later, or the 'tomli' package"
        )
    return toml


_LEFT = "it was left untouched: fix it, or add the entry by hand"


def toml_document(path: Path, text: str | None, then: str = _LEFT) -> dict[str, Any]:
    """The whole TOML file, parsed; one that does not parse raises ConfigMalformed, whose
    message ends in `then` (what happened, what to do)."""
    toml = _tomllib()
    try:
        data: dict[str, Any] = toml.loads(text or "")
    except toml.TOMLDecodeError as exc:
        raise ConfigMalformed(f"{path} is not valid TOML ({exc}); {then}") from None
    return data


def _table_path(line: str, toml: ModuleType) -> tuple[str, ...] | None:
    """The key path of a `[table]` or `[[array]]` header line, else None."""
    if not line.lstrip().startswith("["):
        return None
    try:
        node: Any = toml.loads(line)
    except toml.TOMLDecodeError:
        return None
    parts: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        parts.append(key)
        if isinstance(node, list) and node:
            node = node[-1]
    return tuple(parts) if parts and node in ({}, []) else None


def _our_spans(lines: list[str], name: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the tables under mcp_servers.NAME, without the blank and
    comment lines that end them (those belong to what follows)."""
    toml = _tomllib()
    headers = [(i, p) for i, line in enumerate(lines) if (p := _table_path(line, toml))]
    spans = []
    for n, (start, path) in enumerate(headers):
        if path[:2] != ("mcp_servers", name):
            continue
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or _is_comment(lines[end - 1])):
            end -= 1
        spans.append((start, end))
    return spans


def _cut(lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """`lines` without the spans; where a cut leaves two blank lines together, one goes."""
    lines = list(lines)
    for start, end in reversed(spans):
        del lines[start:end]
        if start < len(lines) and not lines[start].strip():
            if start == 0 or not lines[start - 1].strip():
                del lines[start]
        elif start == len(lines) and start > 0 and not lines[start - 1].strip():
            del lines[start - 1]
    return lines


def _newline(text: str) -> str:
    """The file's line break: CRLF when it has one, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def _final_newline_as(text: str | None, edited: str) -> str:
    """`edited` ending in a line break exactly when `text` (a file that has one) does: an
    edit keeps a file that ends without one that way."""
    if text and not text.endswith("\n"):
        return edited.rstrip("\r\n")
    return edited


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _servers_of(data: dict[str, Any], path: Path) -> dict[str, Any]:
    return section(data, "mcp_servers", path)


def toml_servers(path: Path, text: str | None) -> dict[str, Any]:
    """The `[mcp_servers]` tables of a Codex config, parsed."""
    return _servers_of(toml_document(path, text), path)


def _without_empty_servers(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k == "mcp_servers" and v == {})}


def _checked(path: Path, new_text: str, expected: dict[str, Any], name: str) -> str:
    """Refuse a rewrite that parses to anything but the expected document."""
    try:
        parsed: dict[str, Any] | None = toml_document(path, new_text)
    except ConfigMalformed:
        parsed = None
    if parsed is None or _without_empty_servers(parsed) != _without_empty_servers(expected):
        raise ConfigMalformed(
            f"{path}: mcp_servers.{name} is written in a form sqlgate does not edit "
            "(an inline table or dotted keys); the file was left untouched: edit it by hand"
        )
    return new_text


def toml_set(path: Path, text: str | None, name: str, entry: dict[str, Any]) -> Change:
    data = toml_document(path, text)
    servers = _servers_of(data, path)
    if servers.get(name) == entry:
        return Change(path, text, None, f"{name} is already installed")
    lines = (text or "").splitlines(keepends=True)
    spans = _our_spans(lines, name)
    newline = _newline(text or "")
    table = toml_table(("mcp_servers", name), entry).replace("\n", newline)
    if spans:
        new_lines = _cut(lines, spans)
        at = spans[0][0]
        follows = at < len(new_lines) and new_lines[at].strip()
        new_lines[at:at] = [table, newline] if follows else [table]
    else:
        new_lines = list(lines)
        if new_lines and not new_lines[-1].endswith("\n"):
            new_lines[-1] += newline
        if new_lines and new_lines[-1].strip():
            new_lines.append(newline)
        new_lines.append(table)
    expected = {**data, "mcp_servers": {**servers, name: entry}}
    after = _checked(path, _final_newline_as(text, "".join(new_lines)), expected, name)
    verb = "update" if name in servers else "add"
    return Change(path, text, after, f"{verb} server {name!r}")


def toml_remove(path: Path, text: str | None, name: str) -> Change:
    data = toml_document(path, text)
    servers = _servers_of(data, path)
    if name not in servers:
        return Change(path, text, None, f"no server {name!r} to remove")
    lines = (text or "").splitlines(keepends=True)
    new_text = _final_newline_as(text, "".join(_cut(lines, _our_spans(lines, name))))
    rest = {key: value for key, value in servers.items() if key != name}
    after = _checked(path, new_text, {**data, "mcp_servers": rest}, name)
    return Change(path, text, after, f"remove server {name!r}")
