"""Which scope's entry of one server name a client runs, and what sqlgate says when that entry
shadows another scope's entry of the name (Codex: codex_scopes.py; Gemini CLI:
gemini_scopes.py): the `install` warning and doctor's `scopes` verdict, each naming both
entries' commands and databases, and the exact fix. Each client module decides which scopes
it reads and in which order; the wording is here, once.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence
from typing import Any

from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where
from sqlgate.surfaces.integrations.installed import db_of_words, serve_args
from sqlgate.surfaces.integrations.scopes import ScopedEntry, removal_command

__all__ = ["Verdict", "described", "shadow_verdict", "shadow_warning", "shown_entry",
           "winning_entry"]  # fmt: skip

Verdict = tuple[str, str, "str | None"]  # (ok|warn|fail, detail, fix)


def winning_entry(
    entries: Sequence[ScopedEntry], precedence: Sequence[str], skipped: Collection[str] = ()
) -> ScopedEntry | None:
    """The entry a client runs: of `entries`, the one of the first scope in `precedence`
    (strongest first) that the client reads here (not in `skipped`); None when none."""
    by_scope = {entry.scope: entry for entry in entries}
    for scope in precedence:
        if scope in by_scope and scope not in skipped:
            return by_scope[scope]
    return None


def shown_entry(entry: Any) -> str:
    """An entry's command line, as a person would type it (or its URL)."""
    if isinstance(entry, dict) and isinstance(entry.get("url"), str):
        return str(entry["url"])
    command = entry.get("command") if isinstance(entry, dict) else None
    args = entry.get("args") if isinstance(entry, dict) else None
    words = [str(w) for w in args] if isinstance(args, list) else []
    return shlex.join([str(command), *words])


def described(entry: Any, where: Where) -> str:
    """`COMMAND`, and the database it opens in this folder when it is `sqlgate serve`."""
    shown = f"`{shown_entry(entry)}`"
    args = entry.get("args") if isinstance(entry, dict) else None
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or not isinstance(args, list):
        return shown
    serve = serve_args(command, [str(arg) for arg in args])
    if serve is None:
        return shown
    env = entry.get("env")
    extra = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    db = db_of_words(serve, {**dict(where.env), **extra}, where)
    return f"{shown}, database {db.path}"


def _scope(entry: ScopedEntry) -> str:
    return f"{entry.scope}-scope"


def shadow_warning(
    client: str, name: str, installed: ScopedEntry, other: ScopedEntry, winner: ScopedEntry,
    where: Where, when: str, how: str = "",
) -> str:  # fmt: skip
    """`install`'s line when `installed` and `other` (another scope's entry of `name`, with
    another command) compete and `winner` is the one the client runs; `when` says where
    ("when Codex runs in FOLDER"), `how` what the client does with the two."""
    remove = removal_command(name, other.scope, where.cwd, client)
    rename = f"`--name {name}-{installed.scope}`"
    mine, theirs = described(installed.entry, where), described(other.entry, where)
    if winner.scope == installed.scope:
        return (f"warning: this {_scope(installed)} {name!r} entry ({mine}) shadows the "
                f"{_scope(other)} one in {other.path} ({theirs}) {when}{how}; remove the "
                f"{_scope(other)} one with `{remove}`, or install this one under another "
                f"name ({rename})")  # fmt: skip
    return (f"warning: {other.path} has a {_scope(other)} {name!r} entry ({theirs}) that "
            f"shadows this {_scope(installed)} one ({mine}) {when}{how}; remove it with "
            f"`{remove}`, or install this one under another name ({rename})")  # fmt: skip


def shadow_verdict(
    client: str, name: str, mine: ScopedEntry, other: ScopedEntry, winner: ScopedEntry,
    where: Where, how: str = "",
) -> Verdict:  # fmt: skip
    """doctor's `scopes` verdict of `mine` when `other` competes with it and `winner` runs:
    a warning either way (the client itself reports nothing, and a project's own entry over
    the user's default may be what was meant; but the hidden one's database is not used)."""
    title = CLIENTS[client].title
    remove = removal_command(name, other.scope, where.cwd, client)
    rename = f"reinstall this one under another name (`--name {name}-{mine.scope}`)"
    if winner.scope == mine.scope:
        said = (f"shadows the {_scope(other)} {name!r} ({other.path}: "
                f"{described(other.entry, where)}) when {title} runs here{how}")  # fmt: skip
        return "warn", said, f"remove the {_scope(other)} one: `{remove}`, or {rename}"
    said = (f"hidden: {title} runs the {_scope(winner)} entry ({winner.path}: "
            f"{described(winner.entry, where)}) for {name!r} here{how}")  # fmt: skip
    return "warn", said, f"`{remove}`, or {rename}"
