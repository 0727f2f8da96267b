"""Where each MCP client keeps its servers: the OS scheme, the config file per client and
scope, and the table of clients (`CLIENTS`) with the shape of the entry each one expects.

The key that holds the servers, then the file per scope:

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
    gemini          mcpServers  user: $GEMINI_CLI_HOME/.gemini/settings.json (default
                                ~/.gemini/settings.json)
                                project: ./.gemini/settings.json (read in trusted folders:
                                gemini_trust.py)

Project scope writes a file meant to be committed, so its entry names no path of this machine:
the `sqlgate` command on PATH and a database inside the project. Claude Code, Codex and Gemini
CLI start a project's servers in the project folder, so the path is relative (`.sqlgate/
agent.db`); VS
Code and Cursor expand `${workspaceFolder}` (code.visualstudio.com/docs/reference/
variables-reference, cursor.com/docs/context/mcp), so theirs is `${workspaceFolder}/...`.

Claude Code hooks (`--capture`) go to ~/.claude/settings.json (user) or ./.claude/settings.json
(project), under "hooks".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument

__all__ = [
    "CLIENTS",
    "Client",
    "Where",
    "client_named",
    "current_platform",
    "gemini_home",
    "resolve_scope",
    "settings_path",
]

_SCOPE_ALIASES = {"global": "user", "workspace": "project"}


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
# - Gemini CLI: geminicli.com/docs/tools/mcp-server ("mcpServers" with command/args in
#   ~/.gemini/settings.json or .gemini/settings.json, comments allowed); Gemini CLI 0.61's
#   own code (packages/core/src/utils/paths.ts homedir(): $GEMINI_CLI_HOME, else the home;
#   config/storage.ts) and what `gemini mcp add` writes: {"command", "args"}.
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


def _gemini(scope: str | None, where: Where) -> Path:
    if scope == "project":
        return where.cwd / ".gemini" / "settings.json"
    return gemini_home(where) / ".gemini" / "settings.json"


def gemini_home(where: Where) -> Path:
    """The folder Gemini CLI keeps .gemini/ in: $GEMINI_CLI_HOME when set, else the home."""
    moved = where.env.get("GEMINI_CLI_HOME", "")
    return Path(moved) if moved else where.home


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
    # how a committed project config names the project folder: a variable the client
    # expands, or None where the server starts in the project folder (a relative path works)
    project_root: str | None = None
    # whether it starts a user-scope server in the project folder it runs in, so that
    # `serve --project-db` is each project's own database (the default at user scope)
    starts_in_project: bool = False

    def path(self, scope: str | None, where: Where) -> Path:
        return self.locate(scope, where)


CLIENTS: dict[str, Client] = {
    client.name: client
    for client in (
        Client("claude-code", "Claude Code", ("user", "project"), "mcpServers",
               _claude_code, _stdio_entry, starts_in_project=True),
        Client("claude-desktop", "Claude Desktop", (), "mcpServers",
               _claude_desktop, _plain_entry),
        Client("cursor", "Cursor", ("user", "project"), "mcpServers", _cursor, _plain_entry,
               project_root="${workspaceFolder}"),
        Client("vscode", "VS Code", ("user", "project"), "servers", _vscode, _stdio_entry,
               project_root="${workspaceFolder}"),
        Client("codex", "Codex", ("user", "project"), "mcp_servers", _codex, _plain_entry,
               toml=True),
        Client("gemini", "Gemini CLI", ("user", "project"), "mcpServers", _gemini,
               _plain_entry, starts_in_project=True),
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


def settings_path(scope: str | None, where: Where) -> Path:
    """Claude Code's settings file, where hooks live (code.claude.com/docs/en/settings)."""
    base = where.cwd if scope == "project" else where.home
    return base / ".claude" / "settings.json"
