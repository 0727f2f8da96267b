"""Claude Code's scopes for one MCP server name: the entry of each scope, the one Claude Code
connects, and the "Conflicting scopes" it reports when they differ. Pure functions over files.

Claude Code keeps a server in three files (code.claude.com/docs/en/mcp):

    user     ~/.claude.json, top-level "mcpServers"
    local    ~/.claude.json, "projects" -> <the project's absolute path> -> "mcpServers"
             (the git root when the folder is inside a repository, else the folder)
    project  <project>/.mcp.json, "mcpServers"; used once approved (`enabledMcpjsonServers`
             or `enableAllProjectMcpServers` in a settings file or the project's entry)

What Claude Code 2.1.197 does with one name in several of them, read from its own code
(`strings .../claude-code/bin/claude.exe`): its merge is `{...user, ...approvedProject,
...local}` (function LJ; V4 looks a name up as local, then approved project, then user), so
local wins, then an approved project entry, then user. A project entry that is still
pending approval is skipped whenever another scope has its name, so it is never even
offered for approval: the user-scope one is connected. When the entries differ in command
and arguments (env is not compared), `claude mcp list` and `/doctor` show

    [Conflicting scopes]
    Server "NAME" is defined in multiple scopes with different endpoints: user (...),
    project (...). ...
    Keep the correct endpoint and remove the others: `claude mcp remove NAME -s user` or ...

(function Nfo). Entries that are the same command are not a conflict.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument
from sqlgate.service import in_folder, shell_word
from sqlgate.surfaces.integrations.client_paths import Where, settings_path
from sqlgate.surfaces.integrations.config_files import Change, load_json, read_config, section

__all__ = [
    "ScopeConflict",
    "ScopedEntry",
    "connected_entry",
    "entries_named",
    "install_warning",
    "planned_warning",
    "project_keys",
    "removal_command",
    "scope_conflict",
    "signature",
]

_SHOWN = {"user": "user-scope", "local": "local-scope", "project": "project-scope"}


@dataclass(frozen=True)
class ScopedEntry:
    """One scope's entry of a name: the scope, the file that holds it, the entry."""

    scope: str  # user, local or project
    path: Path
    entry: Any


@dataclass(frozen=True)
class ScopeConflict:
    """Entries of one name that differ in command: Claude Code's "Conflicting scopes"."""

    name: str
    entries: tuple[ScopedEntry, ...]
    connected: ScopedEntry | None  # the one Claude Code uses in this project


def project_keys(where: Where) -> list[str]:
    """The keys `projects` may hold for the working folder: the git root (Claude Code's
    choice inside a repository), then the folder itself, each as written and resolved."""
    found: list[str] = []
    folder = Path(os.path.realpath(where.cwd))
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            found.append(str(candidate))
            break
    for path in (folder, where.cwd):
        if str(path) not in found:
            found.append(str(path))
    return found


def _project_of(data: dict[str, Any], where: Where) -> dict[str, Any]:
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return {}
    for key in project_keys(where):
        found = projects.get(key)
        if isinstance(found, dict):
            return found
    return {}


def entries_named(name: str, where: Where) -> list[ScopedEntry]:
    """Each scope's entry called `name`, in Claude Code's order of precedence (local,
    project, user). A file that does not parse raises ConfigMalformed."""
    claude_json = where.home / ".claude.json"
    data = load_json(claude_json, read_config(claude_json))
    mcp_json = where.cwd / ".mcp.json"
    project = load_json(mcp_json, read_config(mcp_json))
    found = []
    local = _project_of(data, where).get("mcpServers")
    if isinstance(local, dict) and name in local:
        found.append(ScopedEntry("local", claude_json, local[name]))
    project_servers = section(project, "mcpServers", mcp_json)
    if name in project_servers:
        found.append(ScopedEntry("project", mcp_json, project_servers[name]))
    user = section(data, "mcpServers", claude_json)
    if name in user:
        found.append(ScopedEntry("user", claude_json, user[name]))
    return found


def signature(entry: Any) -> tuple[str, ...] | None:
    """What Claude Code compares: the command and its arguments, or the URL (not env)."""
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("url"), str):
        return ("url", entry["url"])
    command = entry.get("command")
    if not isinstance(command, str):
        return None
    args = entry.get("args")
    words = [str(arg) for arg in args] if isinstance(args, list) else []
    return ("stdio", command, *words)


def _approval(name: str, where: Where) -> str:
    """`approved`, `rejected` or `pending`: a project entry's state, from the settings files
    Claude Code reads it from (user, project and local settings, the project's entry)."""
    claude_json = where.home / ".claude.json"
    sources = [_project_of(load_json(claude_json, read_config(claude_json)), where)]
    for path in (
        settings_path("user", where),
        settings_path("project", where),
        where.cwd / ".claude" / "settings.local.json",
    ):
        sources.append(load_json(path, read_config(path)))
    for source in sources:
        rejected = source.get("disabledMcpjsonServers")
        if isinstance(rejected, list) and name in rejected:
            return "rejected"
    for source in sources:
        enabled = source.get("enabledMcpjsonServers")
        if source.get("enableAllProjectMcpServers") is True or (
            isinstance(enabled, list) and name in enabled
        ):
            return "approved"
    return "pending"


def connected_entry(name: str, entries: Sequence[ScopedEntry], where: Where) -> ScopedEntry | None:
    """The entry of `name` Claude Code connects in this project, if any."""
    by_scope = {entry.scope: entry for entry in entries}
    if "local" in by_scope:
        return by_scope["local"]
    if "project" in by_scope and _approval(name, where) == "approved":
        return by_scope["project"]
    return by_scope.get("user")


def scope_conflict(name: str, where: Where) -> ScopeConflict | None:
    """The conflict Claude Code reports for `name`, or None when its entries agree."""
    entries = entries_named(name, where)
    if len({signature(entry.entry) for entry in entries}) < 2:
        return None
    return ScopeConflict(name, tuple(entries), connected_entry(name, entries, where))


def removal_command(name: str, scope: str, folder: Path, client: str = "claude-code") -> str:
    """The command that takes `name` out of `client`'s `scope` (sqlgate writes no local
    scope); the project's and local scopes are those of `folder`, the one it runs in,
    whatever folder the person pastes it in."""
    if scope == "local":
        return in_folder(folder, f"claude mcp remove {shell_word(name)} -s local")
    named = "" if name == "sqlgate" else f" --name {shell_word(name)}"
    command = f"sqlgate uninstall {client} --scope {scope}{named}"
    return in_folder(folder, command) if scope == "project" else command


def install_warning(name: str, installed: ScopedEntry, where: Where) -> str | None:
    """One line for `install claude-code` when another scope holds `name` with another
    command; None when nothing disagrees with the entry just installed (or planned)."""
    others = [
        entry
        for entry in entries_named(name, where)
        if entry.scope != installed.scope and signature(entry.entry) != signature(installed.entry)
    ]
    if not others:
        return None
    every = [installed, *others]
    winner = connected_entry(name, every, where)
    other = others[0]
    where_it_is = f"{other.path}" + (" for this project" if other.scope == "local" else "")
    said = (
        f"warning: {where_it_is} also has a {_SHOWN[other.scope]} {name!r} entry with "
        f'another command, so Claude Code reports "Conflicting scopes"'
    )
    if winner is None or winner.scope == installed.scope:
        outcome = f" and this {_SHOWN[installed.scope]} entry hides it here"
    elif installed.scope == "project" and other.scope == "user":
        outcome = (
            f" and connects the {_SHOWN[winner.scope]} one: the project's entry is not even "
            "offered for approval"
        )
    else:
        outcome = f" and connects the {_SHOWN[winner.scope]} one here"
    fix = (
        f"; remove the {_SHOWN[other.scope]} one with "
        f"`{removal_command(name, other.scope, where.cwd)}`, or install this one "
        f"under another name (`--name {name}-{installed.scope}`)"
    )
    return said + outcome + fix


def planned_warning(
    client: str, name: str, scope: str | None, change: Change, where: Where
) -> str | None:
    """`install_warning` for the entry an install plan writes (or, already there, keeps);
    None for other clients, and when another scope's file cannot be read (the install
    itself does not depend on it)."""
    if client != "claude-code" or scope not in ("user", "project"):
        return None
    text = change.after if change.after is not None else change.before
    try:
        entry = section(load_json(change.path, text), "mcpServers", change.path).get(name)
        if entry is None:
            return None
        return install_warning(name, ScopedEntry(scope, change.path, entry), where)
    except InvalidArgument:
        return None
