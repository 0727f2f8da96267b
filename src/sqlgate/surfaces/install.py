"""Put sqlgate into an MCP client's own config file, and take it out again.

Where each client keeps its servers (the key that holds them, then the file per scope):

    claude-code     mcpServers  user: ~/.claude.json   project: ./.mcp.json
    claude-desktop  mcpServers  Linux: $XDG_CONFIG_HOME/Claude/ (default ~/.config/Claude/)
                                macOS: ~/Library/Application Support/Claude/
                                Windows: %APPDATA%\\Claude\\   (file: claude_desktop_config.json)
    cursor          mcpServers  user: ~/.cursor/mcp.json   project: ./.cursor/mcp.json
    vscode          servers     user: <the same app-data folder as Claude>/Code/User/mcp.json
                                project: ./.vscode/mcp.json
    codex           [mcp_servers.NAME] tables
                                user: $CODEX_HOME/config.toml (default ~/.codex/config.toml)
                                project: ./.codex/config.toml (read in trusted projects)

Claude Code hooks (`--capture`) go to ~/.claude/settings.json (user) or ./.claude/settings.json
(project), under "hooks".

Planning (which file, what its new text is) is pure apart from reading the file, so tests drive
every OS's scheme on one machine and `--dry-run` shows the exact plan. `apply` is the only
writer: temp file beside the target, backup of the old file, then an atomic rename. A file that
does not parse is reported and never rewritten; a rewrite that would change anything but our
own entry is refused before it is written.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlgate.errors import InvalidArgument

__all__ = [
    "CAPTURE_EVENTS",
    "CLIENTS",
    "Change",
    "Client",
    "ConfigMalformed",
    "ConfigUnwritable",
    "Launcher",
    "Where",
    "apply",
    "capture_command",
    "client_named",
    "current_platform",
    "find_launcher",
    "is_capture_command",
    "plan_capture",
    "plan_install",
    "plan_uncapture",
    "plan_uninstall",
    "resolve_scope",
    "settings_path",
    "toml_table",
]

CAPTURE_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
# Claude Code hooks docs (code.claude.com/docs/en/hooks): the matcher applies to tool events;
# "*" (or none) matches every tool, other events take no matcher.
_CAPTURE_MATCHER = {"PostToolUse": "*"}

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SCOPE_ALIASES = {"global": "user", "workspace": "project"}


class ConfigMalformed(InvalidArgument):
    """The client's config file does not parse or is not shaped as documented; left untouched."""


class ConfigUnwritable(InvalidArgument):
    """The client's config file or its folder cannot be read or written."""


@dataclass(frozen=True)
class Where:
    """What decides the config locations: the OS scheme, home, working folder, environment."""

    platform: str  # "linux", "darwin" or "win32"
    home: Path
    cwd: Path
    env: Mapping[str, str]

    @classmethod
    def here(cls) -> Where:
        return cls(current_platform(), Path.home(), Path.cwd(), os.environ)


def current_platform() -> str:
    if sys.platform.startswith(("win", "cygwin")):
        return "win32"
    return "darwin" if sys.platform == "darwin" else "linux"


def _config_home(where: Where) -> Path:
    """Per-user config folder of desktop apps (Electron's appData: Claude Desktop, VS Code)."""
    if where.platform == "win32":
        appdata = where.env.get("APPDATA")
        return Path(appdata) if appdata else where.home / "AppData" / "Roaming"
    if where.platform == "darwin":
        return where.home / "Library" / "Application Support"
    # XDG base directory spec: unset, empty or relative means the default
    xdg = where.env.get("XDG_CONFIG_HOME", "")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else where.home / ".config"


# Locations, by source:
# - Claude Code: code.claude.com/docs/en/mcp (user scope: ~/.claude.json "mcpServers";
#   project scope: .mcp.json at the project root).
# - Claude Desktop: modelcontextprotocol.io "connect local servers" (macOS, Windows) and the
#   MCP python-sdk's own `mcp install` (src/mcp/cli/claude.py get_claude_config_path), which
#   uses $XDG_CONFIG_HOME/Claude, default ~/.config/Claude, on Linux.
# - Cursor: cursor.com/docs/mcp (~/.cursor/mcp.json global, .cursor/mcp.json project).
# - VS Code: code.visualstudio.com/docs/copilot/reference/mcp-configuration ("servers" in
#   .vscode/mcp.json or the user profile's mcp.json, i.e. <appData>/Code/User/mcp.json).
# - Codex: developers.openai.com/codex/mcp and openai/codex docs/config.md
#   ([mcp_servers.NAME] with command/args in $CODEX_HOME/config.toml, default ~/.codex).
def _claude_code(scope: str | None, where: Where) -> Path:
    return where.cwd / ".mcp.json" if scope == "project" else where.home / ".claude.json"


def _claude_desktop(scope: str | None, where: Where) -> Path:
    return _config_home(where) / "Claude" / "claude_desktop_config.json"


def _cursor(scope: str | None, where: Where) -> Path:
    base = where.cwd if scope == "project" else where.home
    return base / ".cursor" / "mcp.json"


def _vscode(scope: str | None, where: Where) -> Path:
    if scope == "project":
        return where.cwd / ".vscode" / "mcp.json"
    return _config_home(where) / "Code" / "User" / "mcp.json"


def _codex(scope: str | None, where: Where) -> Path:
    if scope == "project":
        return where.cwd / ".codex" / "config.toml"
    codex_home = where.env.get("CODEX_HOME", "")
    return (Path(codex_home) if codex_home else where.home / ".codex") / "config.toml"


def _stdio_entry(command: str, args: list[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": args}


def _plain_entry(command: str, args: list[str]) -> dict[str, Any]:
    return {"command": command, "args": args}


@dataclass(frozen=True)
class Client:
    """One MCP client: its config file(s), where servers live in it, the entry's shape."""

    name: str
    title: str
    scopes: tuple[str, ...]  # the first is the default; () means one file, no scopes
    servers_key: str
    locate: Callable[[str | None, Where], Path]
    entry: Callable[[str, list[str]], dict[str, Any]]
    toml: bool = False

    def path(self, scope: str | None, where: Where) -> Path:
        return self.locate(scope, where)


CLIENTS: dict[str, Client] = {
    client.name: client
    for client in (
        Client("claude-code", "Claude Code", ("user", "project"), "mcpServers",
               _claude_code, _stdio_entry),
        Client("claude-desktop", "Claude Desktop", (), "mcpServers",
               _claude_desktop, _plain_entry),
        Client("cursor", "Cursor", ("user", "project"), "mcpServers", _cursor, _plain_entry),
        Client("vscode", "VS Code", ("user", "project"), "servers", _vscode, _stdio_entry),
        Client("codex", "Codex", ("user", "project"), "mcp_servers", _codex, _plain_entry,
               toml=True),
    )
}  # fmt: skip


def client_named(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise InvalidArgument(
            f"unknown client {name!r}; choose one of: {', '.join(CLIENTS)}"
        ) from None


def resolve_scope(client: Client, scope: str | None) -> str | None:
    """The scope to use: the client's default when none is given; aliases global/workspace."""
    if not client.scopes:
        if scope is not None:
            raise InvalidArgument(f"{client.name} has no scopes; leave out --scope")
        return None
    if scope is None:
        return client.scopes[0]
    chosen = _SCOPE_ALIASES.get(scope, scope)
    if chosen not in client.scopes:
        raise InvalidArgument(
            f"--scope {scope!r} is not one of {client.name}'s scopes: {', '.join(client.scopes)}"
        )
    return chosen


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"--name {name!r}: use 1 to 64 letters, digits, '-' or '_' (MCP clients' rule)"
        )


# ---------------------------------------------------------------------------------------------
# the command clients run


@dataclass(frozen=True)
class Launcher:
    """How a client starts sqlgate: an absolute program and the arguments before ours."""

    command: str
    prefix: tuple[str, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return [*self.prefix, *args]


def find_launcher(
    python: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
    platform: str | None = None,
) -> Launcher:
    """The `sqlgate` script beside the running Python, else the one on PATH, else `python -m`.

    Never resolves symlinks: a virtual environment's python is a link to the base one.
    """
    python = os.path.abspath(python or sys.executable)
    script = "sqlgate.exe" if (platform or current_platform()) == "win32" else "sqlgate"
    beside = Path(python).parent / script
    if beside.is_file():
        return Launcher(str(beside))
    found = which("sqlgate")
    if found:
        return Launcher(os.path.abspath(found))
    return Launcher(python, ("-m", "sqlgate"))


def capture_command(launcher: Launcher, db: Path, platform: str) -> str:
    """The shell line a Claude Code hook runs (Claude Code runs hooks with bash, Git Bash on
    Windows): POSIX quoting, and forward slashes in Windows paths so bash keeps them."""
    words = [launcher.command, *launcher.argv("capture", "--db", str(db))]
    if platform == "win32":
        words = [word.replace("\\", "/") for word in words]
        return " ".join(f'"{word}"' if re.search(r'[\s"$`!]', word) else word for word in words)
    return shlex.join(words)


def is_capture_command(command: str) -> bool:
    """Whether a hook command runs `sqlgate capture` (ours, whichever db or install it names)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 2 and _program(words[0]) == "sqlgate":
        return words[1] == "capture"
    return len(words) >= 4 and words[1:3] == ["-m", "sqlgate"] and words[3] == "capture"


def _program(word: str) -> str:
    name = re.split(r"[\\/]", word)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


# ---------------------------------------------------------------------------------------------
# plans


@dataclass(frozen=True)
class Change:
    """One file's planned edit. `after` is None when the file already says what we want."""

    path: Path
    before: str | None  # None: the file does not exist
    after: str | None
    summary: str

    @property
    def needed(self) -> bool:
        return self.after is not None and self.after != self.before


def plan_install(
    client: Client, name: str, launcher: Launcher, db: Path, scope: str | None, where: Where
) -> Change:
    """Add (or update) our server entry in the client's config."""
    _check_name(name)
    path = client.path(scope, where)
    entry = client.entry(launcher.command, launcher.argv("serve", "--db", str(db)))
    text = _read(path)
    if client.toml:
        return _toml_set(path, text, name, entry)
    data = _load_json(path, text)
    servers = _section(data, client.servers_key, path)
    if servers.get(name) == entry:
        return Change(path, text, None, f"{name} is already installed")
    verb = "update" if name in servers else "add"
    updated = {**data, client.servers_key: {**servers, name: entry}}
    return Change(path, text, _dump_json(updated), f"{verb} server {name!r}")


def plan_uninstall(client: Client, name: str, scope: str | None, where: Where) -> Change:
    """Remove our server entry; everything else in the file stays."""
    _check_name(name)
    path = client.path(scope, where)
    text = _read(path)
    if client.toml:
        return _toml_remove(path, text, name)
    data = _load_json(path, text)
    servers = _section(data, client.servers_key, path)
    if name not in servers:
        return Change(path, text, None, f"no server {name!r} to remove")
    kept = {key: value for key, value in servers.items() if key != name}
    return Change(path, text, _dump_json({**data, client.servers_key: kept}),
                  f"remove server {name!r}")  # fmt: skip


def settings_path(scope: str | None, where: Where) -> Path:
    """Claude Code's settings file, where hooks live (code.claude.com/docs/en/settings)."""
    base = where.cwd if scope == "project" else where.home
    return base / ".claude" / "settings.json"


def plan_capture(command: str, scope: str | None, where: Where) -> Change:
    """Register `command` for each capture event; drop older sqlgate capture hooks."""
    path = settings_path(scope, where)
    text = _read(path)
    data = _load_json(path, text)
    hooks = _section(data, "hooks", path)
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        updated[event] = _with_capture(_groups(hooks, event, path), event, command)
    if updated == hooks:
        return Change(path, text, None, "capture hooks are already registered")
    return Change(path, text, _dump_json({**data, "hooks": updated}),
                  f"register capture hooks for {', '.join(CAPTURE_EVENTS)}")  # fmt: skip


def plan_uncapture(scope: str | None, where: Where) -> Change:
    """Remove every sqlgate capture hook; other hooks stay."""
    path = settings_path(scope, where)
    text = _read(path)
    data = _load_json(path, text)
    hooks = _section(data, "hooks", path)
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        if event in hooks:
            updated[event] = _without_capture(_groups(hooks, event, path))
    if updated == hooks:
        return Change(path, text, None, "no capture hooks to remove")
    return Change(path, text, _dump_json({**data, "hooks": updated}), "remove capture hooks")


def _groups(hooks: dict[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise ConfigMalformed(f"{path}: hooks.{event} is not a list; the file was left untouched")
    return groups


def _ours(hook: Any) -> bool:
    return (
        isinstance(hook, dict)
        and hook.get("type") == "command"
        and isinstance(hook.get("command"), str)
        and is_capture_command(hook["command"])
    )


def _with_capture(groups: list[Any], event: str, command: str) -> list[Any]:
    matcher = _CAPTURE_MATCHER.get(event)
    present = False
    result: list[Any] = []
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            result.append(group)  # not ours to judge
            continue
        matches_all = group.get("matcher") in (None, "", "*")
        kept = []
        for hook in inner:
            if not _ours(hook):
                kept.append(hook)
            elif not present and matches_all and hook["command"] == command:
                present = True
                kept.append(hook)
        if kept == inner:
            result.append(group)
        elif kept:
            result.append({**group, "hooks": kept})
    if not present:
        group = {"matcher": matcher} if matcher is not None else {}
        result.append({**group, "hooks": [{"type": "command", "command": command}]})
    return result


def _without_capture(groups: list[Any]) -> list[Any]:
    result: list[Any] = []
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            result.append(group)
            continue
        kept = [hook for hook in inner if not _ours(hook)]
        if kept == inner:
            result.append(group)
        elif kept:
            result.append({**group, "hooks": kept})
    return result


# ---------------------------------------------------------------------------------------------
# JSON


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigUnwritable(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig") if data.startswith(b"\xef\xbb\xbf") else data.decode()
    except UnicodeDecodeError:
        raise ConfigMalformed(
            f"{path} is not UTF-8 text; it was left untouched: fix it, or add the entry by hand"
        ) from None


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigMalformed(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "it was left untouched: fix it (comments are not allowed), or add the entry by hand"
        ) from None
    if not isinstance(data, dict):
        raise ConfigMalformed(
            f"{path} holds a JSON {type(data).__name__}, not an object; it was left untouched"
        )
    return data


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    section = data.get(key, {})
    if not isinstance(section, dict):
        raise ConfigMalformed(f"{path}: {key!r} is not an object; the file was left untouched")
    return section


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# TOML (Codex): edit only the lines of our [mcp_servers.NAME] table, keep the rest as text

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
    for module in ("tomllib", "tomli"):  # tomllib is 3.11+; tomli is its 3.10 backport
        with contextlib.suppress(ModuleNotFoundError):
            return importlib.import_module(module)
    raise ConfigUnwritable(
        "reading Codex's config.toml needs Python 3.11 or later, or the 'tomli' package"
    )


def _load_toml(path: Path, text: str | None) -> dict[str, Any]:
    toml = _tomllib()
    try:
        data: dict[str, Any] = toml.loads(text or "")
    except toml.TOMLDecodeError as exc:
        raise ConfigMalformed(
            f"{path} is not valid TOML ({exc}); it was left untouched: fix it, "
            "or add the entry by hand"
        ) from None
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


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _servers_of(data: dict[str, Any], path: Path) -> dict[str, Any]:
    return _section(data, "mcp_servers", path)


def _without_empty_servers(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k == "mcp_servers" and v == {})}


def _checked(path: Path, new_text: str, expected: dict[str, Any], name: str) -> str:
    """Refuse a rewrite that parses to anything but the expected document."""
    try:
        parsed: dict[str, Any] | None = _load_toml(path, new_text)
    except ConfigMalformed:
        parsed = None
    if parsed is None or _without_empty_servers(parsed) != _without_empty_servers(expected):
        raise ConfigMalformed(
            f"{path}: mcp_servers.{name} is written in a form sqlgate does not edit "
            "(an inline table or dotted keys); the file was left untouched: edit it by hand"
        )
    return new_text


def _toml_set(path: Path, text: str | None, name: str, entry: dict[str, Any]) -> Change:
    data = _load_toml(path, text)
    servers = _servers_of(data, path)
    if servers.get(name) == entry:
        return Change(path, text, None, f"{name} is already installed")
    lines = (text or "").splitlines(keepends=True)
    spans = _our_spans(lines, name)
    table = toml_table(("mcp_servers", name), entry)
    if spans:
        new_lines = _cut(lines, spans)
        at = spans[0][0]
        follows = at < len(new_lines) and new_lines[at].strip()
        new_lines[at:at] = [table, "\n"] if follows else [table]
    else:
        new_lines = list(lines)
        if new_lines and not new_lines[-1].endswith("\n"):
            new_lines[-1] += "\n"
        if new_lines and new_lines[-1].strip():
            new_lines.append("\n")
        new_lines.append(table)
    expected = {**data, "mcp_servers": {**servers, name: entry}}
    after = _checked(path, "".join(new_lines), expected, name)
    verb = "update" if name in servers else "add"
    return Change(path, text, after, f"{verb} server {name!r}")


def _toml_remove(path: Path, text: str | None, name: str) -> Change:
    data = _load_toml(path, text)
    servers = _servers_of(data, path)
    if name not in servers:
        return Change(path, text, None, f"no server {name!r} to remove")
    lines = (text or "").splitlines(keepends=True)
    new_text = "".join(_cut(lines, _our_spans(lines, name)))
    rest = {key: value for key, value in servers.items() if key != name}
    after = _checked(path, new_text, {**data, "mcp_servers": rest}, name)
    return Change(path, text, after, f"remove server {name!r}")


# ---------------------------------------------------------------------------------------------
# the one writer


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def apply(change: Change, now: datetime | None = None) -> Path | None:
    """Write `change` atomically; back the old file up first. Returns the backup's path."""
    if not change.needed or change.after is None:
        return None
    path = change.path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigUnwritable(f"cannot write {path}: {exc.strerror or exc}") from None
    tmp = Path(tmp_name)
    backup = None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(change.after)
            out.flush()
            os.fsync(out.fileno())
        if change.before is not None and path.exists():
            shutil.copymode(path, tmp)
            backup = _backup_name(path, now or datetime.now(timezone.utc))
            shutil.copy2(path, backup)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        raise ConfigUnwritable(f"cannot write {path}: {exc.strerror or exc}") from None
    return backup


def _backup_name(path: Path, now: datetime) -> Path:
    stamp = now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.sqlgate-backup-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.sqlgate-backup-{stamp}-{n}")
    return candidate
