"""Codex's two scopes for one MCP server name: the entry of each scope, the one Codex runs in
a project, and the warning `install codex` gives when that is not the entry it wrote.

What Codex 0.171.0 does (openai/codex config loader: the project layers come after the user
layer and are merged into it table by table, `merge_toml_values`; checked with `codex mcp
list` in a fake HOME): in a trusted project (codex_trust.py) the project's
`[mcp_servers.NAME]` table is merged over the user's, so the project's command and
arguments run, and the keys it does not set (`env`, `enabled`, ...) still come from the
user's table: the project entry shadows the user one. In a project Codex does not trust,
the project's file is not read at all, and the user-scope entry of that name runs, on its
own database. Entries with the same command and arguments (scopes.signature) are no
conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where
from sqlgate.surfaces.integrations.codex_trust import CodexTrust, codex_trust, trust_fix
from sqlgate.surfaces.integrations.config_files import Change, read_config
from sqlgate.surfaces.integrations.scope_shadows import (
    Verdict,
    shadow_verdict,
    shadow_warning,
    shown_entry,
    winning_entry,
)
from sqlgate.surfaces.integrations.scopes import ScopedEntry, signature
from sqlgate.surfaces.integrations.toml_config import toml_servers

__all__ = [
    "codex_connected",
    "codex_entries",
    "codex_warning",
    "judge_codex_scopes",
    "judge_codex_trust",
    "planned_codex_warning",
]

OK, FAIL = "ok", "fail"


def codex_entries(name: str, where: Where) -> list[ScopedEntry]:
    """Each scope's entry called `name`: the project's, then the user's (none of the project
    where its file is the user's own). A file that does not parse raises ConfigMalformed."""
    codex = CLIENTS["codex"]
    found = []
    user, project = codex.path("user", where), codex.path("project", where)
    paths = [("project", project), ("user", user)] if project != user else [("user", user)]
    for scope, path in paths:
        servers = toml_servers(path, read_config(path))
        if name in servers:
            found.append(ScopedEntry(scope, path, servers[name]))
    return found


def codex_connected(entries: Sequence[ScopedEntry], trust: CodexTrust) -> ScopedEntry | None:
    """The entry Codex runs in the project: the project's when it trusts the project."""
    return winning_entry(entries, ("project", "user"), () if trust.trusted else ("project",))


def _ignored_because(name: str, trust: CodexTrust, entries: Sequence[ScopedEntry]) -> str:
    """Why Codex ignores the project's entry, and what it runs instead."""
    if trust.level == "untrusted":
        why = f"{trust.key} is marked untrusted in {trust.user_file}"
    else:
        why = (f"the project is not trusted: no trust_level for {trust.suggested} in "
               f"{trust.user_file}")  # fmt: skip
    user = next((e for e in entries if e.scope == "user"), None)
    instead = (f"; Codex runs the user-scope {name!r} here instead "
               f"({shown_entry(user.entry)})" if user else "")  # fmt: skip
    return why + instead


def _merged_keys(project: Any, user: Any) -> str:
    extra = sorted(set(user) - set(project)) if isinstance(user, dict) else []
    extra = [key for key in extra if key not in ("command", "args", "url")]
    return f"; the user table's other keys ({', '.join(extra)}) still apply" if extra else ""


def codex_warning(name: str, installed: ScopedEntry, where: Where) -> str | None:
    """One line for `install codex` when Codex will not run the entry just installed (or
    planned) in this project, or when it shadows the other scope's; else None."""
    try:
        trust = codex_trust(where)
        entries = [e for e in codex_entries(name, where) if e.scope != installed.scope]
    except InvalidArgument as exc:
        return f"warning: cannot tell whether Codex runs this entry: {exc}"
    if installed.scope == "project" and not trust.trusted:
        return (f"warning: Codex ignores {installed.path}: {_ignored_because(name, trust, entries)}"
                f"; to use this entry: {trust_fix(trust)}")  # fmt: skip
    other = next((e for e in entries if signature(e.entry) != signature(installed.entry)), None)
    winner = codex_connected([installed, *entries], trust)
    if other is None or winner is None or not trust.trusted:
        return None
    return shadow_warning("codex", name, installed, other, winner, where,
                          f"when Codex runs in {where.cwd}",
                          _merge_note(installed, other))  # fmt: skip


def _merge_note(mine: ScopedEntry, other: ScopedEntry) -> str:
    """How Codex runs a project table over the user's: merged, key by key."""
    project, user = (mine, other) if mine.scope == "project" else (other, mine)
    return (f" (Codex merges the two tables: the project's command and args win"
            f"{_merged_keys(project.entry, user.entry)})")  # fmt: skip


def planned_codex_warning(name: str, scope: str | None, change: Change, where: Where) -> str | None:
    """`codex_warning` for the entry an install plan writes (or, already there, keeps)."""
    if scope not in ("user", "project"):
        return None
    text = change.after if change.after is not None else change.before
    try:
        entry = toml_servers(change.path, text).get(name)
    except InvalidArgument:
        return None
    if entry is None:
        return None
    return codex_warning(name, ScopedEntry(scope, change.path, entry), where)


# ---------------------------------------------------------------------------------------------
# `sqlgate doctor` (health.py): the trust and scopes checks of a Codex entry


def judge_codex_trust(name: str, where: Where) -> Verdict:
    """(status, detail, fix) of a project-scope entry's `trust` check."""
    try:
        trust = codex_trust(where)
        entries = [e for e in codex_entries(name, where) if e.scope != "project"]
    except InvalidArgument as exc:
        return FAIL, str(exc), "fix that file by hand"
    if not trust.applies:
        return OK, f"this is the user's own file ({trust.user_file}), read in every folder", None
    if trust.trusted:
        said = f'Codex trusts this project ([projects."{trust.key}"] in {trust.user_file})'
        return OK, said, None
    said = f"Codex ignores this entry: {_ignored_because(name, trust, entries)}"
    return FAIL, said, trust_fix(trust)


def judge_codex_scopes(name: str, scope: str | None, where: Where) -> Verdict | None:
    """(status, detail, fix) of a Codex entry's `scopes` check; None for a project entry
    Codex ignores (its `trust` check says so)."""
    try:
        trust = codex_trust(where)
        entries = codex_entries(name, where)
    except InvalidArgument as exc:
        return FAIL, str(exc), "fix that file by hand"
    mine = next((e for e in entries if e.scope == scope), None)
    others = [e for e in entries if e.scope != scope
              and (mine is None or signature(e.entry) != signature(mine.entry))]  # fmt: skip
    if mine is None or not others:
        return OK, "no other scope has an entry of this name", None
    other = others[0]
    if not trust.trusted:
        if scope == "project":
            return None
        said = f"the project-scope one in {other.path} is ignored: the project is not trusted"
        return OK, said, None
    winner = codex_connected(entries, trust) or mine
    return shadow_verdict("codex", name, mine, other, winner, where, _merge_note(mine, other))
