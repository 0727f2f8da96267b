"""Gemini CLI's two scopes for one MCP server name: the entry of each scope, the one Gemini CLI
starts in a folder, and what `install gemini` and doctor's `scopes` check say when one
shadows the other.

What Gemini CLI 0.61 does, read from its code (google-gemini/gemini-cli
packages/cli/src/config/settings.ts `mergeSettings` and `_doLoadSettings`,
settingsSchema.ts `mcpServers: {mergeStrategy: SHALLOW_MERGE}`, utils/deepMerge.ts; the
same in the 0.61.0 bundle pinned in tests/e2e/gemini), it merges its settings files in this
order, each over the ones before it:

    system defaults   /etc/gemini-cli/system-defaults.json ($GEMINI_CLI_SYSTEM_DEFAULTS_PATH)
    user              ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini)
    workspace         <folder>/.gemini/settings.json: only in a trusted folder, and not when
                      the folder is Gemini's home (Storage.isWorkspaceHomeDir: one file)
    system            /etc/gemini-cli/settings.json ($GEMINI_CLI_SYSTEM_SETTINGS_PATH), the
                      administrator's overrides (read only when it and its folders are
                      root's and not writable by others)

`mcpServers` is merged shallowly: `{...lower, ...higher}`, name by name, so an entry replaces
the lower file's entry of its name whole (its command, args, env, cwd: nothing is merged
within an entry, unlike Codex's tables). A project entry therefore shadows a user entry of the
same name, and `gemini mcp list` shows one. In a folder Gemini CLI does not trust
(gemini_trust.py) it reads no workspace settings and starts no stdio server at all, user-scope
ones included: nothing is shadowed there until the folder is trusted, then the project's entry
wins. sqlgate writes user and project entries and compares those two; an administrator's
system files are not its to change and are not read here. Entries with the same command and
arguments (scopes.signature) are no conflict.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where, gemini_home
from sqlgate.surfaces.integrations.config_files import Change, load_json, read_config, section
from sqlgate.surfaces.integrations.gemini_trust import folder_trust
from sqlgate.surfaces.integrations.scope_shadows import (
    Verdict,
    shadow_verdict,
    shadow_warning,
    winning_entry,
)
from sqlgate.surfaces.integrations.scopes import ScopedEntry, signature

__all__ = ["gemini_connected", "gemini_entries", "gemini_warning", "judge_gemini_scopes",
           "planned_gemini_warning"]  # fmt: skip

_PRECEDENCE = ("project", "user")
_HOW = " (Gemini CLI takes the project's entry whole, in place of the user's)"


def _is_home(where: Where) -> bool:
    return os.path.realpath(where.cwd) == os.path.realpath(gemini_home(where))


def gemini_entries(name: str, where: Where) -> list[ScopedEntry]:
    """Each scope's entry called `name`: the project's, then the user's (no project one in
    Gemini's home folder, where both are one file). A file that does not parse, or whose
    `mcpServers` is not an object, raises ConfigMalformed."""
    gemini = CLIENTS["gemini"]
    scopes = ("user",) if _is_home(where) else _PRECEDENCE
    found = []
    for scope in scopes:
        path = gemini.path(scope, where)
        servers = section(load_json(path, read_config(path)), "mcpServers", path)
        if name in servers:
            found.append(ScopedEntry(scope, path, servers[name]))
    return found


def gemini_connected(entries: Sequence[ScopedEntry], trusted: bool | None) -> ScopedEntry | None:
    """The entry Gemini CLI starts in the folder: none unless it trusts the folder, then the
    project's over the user's."""
    return winning_entry(entries, _PRECEDENCE, () if trusted else _PRECEDENCE)


def _competitor(name: str, mine: ScopedEntry, where: Where) -> ScopedEntry | None:
    """The other scope's entry of `name` with another command, if any."""
    return next((e for e in gemini_entries(name, where) if e.scope != mine.scope
                 and signature(e.entry) != signature(mine.entry)), None)  # fmt: skip


def gemini_warning(name: str, installed: ScopedEntry, where: Where) -> str | None:
    """One line for `install gemini` when the entry just installed (or planned) and the
    other scope's entry of its name compete; None when they do not."""
    try:
        other = _competitor(name, installed, where)
    except InvalidArgument as exc:
        return f"warning: cannot tell which {name!r} entry Gemini CLI starts: {exc}"
    if other is None:
        return None
    winner = gemini_connected([installed, other], trusted=True)
    assert winner is not None
    trusted = folder_trust(where).trusted
    when = (f"when Gemini CLI runs in {where.cwd}" if trusted else
            f"in {where.cwd} once Gemini CLI trusts it (until then it starts neither)")  # fmt: skip
    return shadow_warning("gemini", name, installed, other, winner, where, when, _HOW)


def planned_gemini_warning(
    name: str, scope: str | None, change: Change, where: Where
) -> str | None:
    """`gemini_warning` for the entry an install plan writes (or, already there, keeps)."""
    if scope not in _PRECEDENCE:
        return None
    text = change.after if change.after is not None else change.before
    try:
        entry = section(load_json(change.path, text), "mcpServers", change.path).get(name)
    except InvalidArgument:
        return None
    if entry is None:
        return None
    return gemini_warning(name, ScopedEntry(scope, change.path, entry), where)


def judge_gemini_scopes(name: str, scope: str | None, where: Where) -> Verdict | None:
    """(status, detail, fix) of a Gemini entry's `scopes` check; None for a project entry in
    a folder Gemini CLI does not trust (its `trust` check says so)."""
    try:
        mine = next((e for e in gemini_entries(name, where) if e.scope == scope), None)
        other = _competitor(name, mine, where) if mine else None
    except InvalidArgument as exc:
        return "fail", str(exc), "fix that file by hand"
    if mine is None or other is None:
        return "ok", "no other scope has an entry of this name", None
    if not folder_trust(where).trusted:
        if scope == "project":
            return None
        said = (f"Gemini CLI starts no server here while the folder is not trusted (see the "
                f"trust check); once it is, the project-scope entry in {other.path} runs here "
                f"in place of this one")  # fmt: skip
        return "ok", said, None
    winner = gemini_connected([mine, other], trusted=True)
    assert winner is not None
    return shadow_verdict("gemini", name, mine, other, winner, where, _HOW)
