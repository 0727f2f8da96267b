"""Put sqlgate into an MCP client's own config file, and take it out again.

Where each client keeps its servers, and the client table, are in client_paths.py; the
command a client runs in launcher.py; Claude Code's settings file (capture hooks and
permission rules) in claude_settings.py, capture_hooks.py and permissions.py; reading and
editing JSON with comments in config_files.py and jsonc.py; Codex's TOML in toml_config.py;
the one writer (atomic, backed up, recorded) in config_writer.py. This module plans the
server entry and re-exports what the CLI uses.

Planning (which file, what its new text is) is pure apart from reading files, so tests drive
every OS's scheme on one machine and `--dry-run` shows the exact plan. A file that does not
parse is reported and never rewritten; a rewrite that would change anything but our own
entry is refused before it is written.

User scope writes this installation's absolute `sqlgate` and database; for Claude Code, which
starts its servers and hooks in the project (CLAUDE_PROJECT_DIR), the database is each
project's own (`serve --project-db`) unless --db or SQLGATE_DB names one file
(`database_for`). Project scope writes a file meant to be committed, so it names nothing of
this machine: `sqlgate` from PATH and a database inside the project (`.sqlgate/agent.db`
unless --db names another one there).
Uninstall takes out what install added: the entry, the keys it created once they are empty,
and a file it created that holds nothing else (install_records.py keeps that record).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlgate.config import PROJECT_DB, default_db_path
from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.capture_hooks import (
    CAPTURE_EVENTS,
    PER_PROJECT,
    capture_command,
    hook_for,
    is_capture_command,
    named_database,
    project_capture_command,
)
from sqlgate.surfaces.integrations.claude_settings import (
    SettingsEdit,
    plan_capture,
    plan_settings,
    plan_uncapture,
)
from sqlgate.surfaces.integrations.client_paths import (
    CLIENTS,
    Client,
    Where,
    client_named,
    current_platform,
    resolve_scope,
    settings_path,
)
from sqlgate.surfaces.integrations.config_files import (
    Change,
    ConfigMalformed,
    ConfigUnwritable,
    KeyPath,
    edit_json,
    link_target,
    load_json,
    read_config,
    section,
)
from sqlgate.surfaces.integrations.config_writer import apply
from sqlgate.surfaces.integrations.install_records import InstallRecords, goes_when_empty
from sqlgate.surfaces.integrations.installed import without_option
from sqlgate.surfaces.integrations.launcher import PORTABLE, Launcher, find_launcher, project_db
from sqlgate.surfaces.integrations.toml_config import toml_remove, toml_servers, toml_set

__all__ = [
    "CAPTURE_EVENTS",
    "CLIENTS",
    "PER_PROJECT",
    "PORTABLE",
    "Change",
    "Client",
    "ConfigMalformed",
    "ConfigUnwritable",
    "InstallRecords",
    "Launcher",
    "SettingsEdit",
    "Where",
    "apply",
    "capture_command",
    "client_named",
    "current_platform",
    "database_for",
    "describe",
    "find_launcher",
    "hook_for",
    "is_capture_command",
    "link_target",
    "plan_capture",
    "plan_install",
    "plan_settings",
    "plan_uncapture",
    "plan_uninstall",
    "project_capture_command",
    "project_db",
    "resolve_scope",
    "settings_path",
]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"--name {name!r}: use 1 to 64 letters, digits, '-' or '_' (MCP clients' rule)"
        )


def database_for(
    client: Client, scope: str | None, db: Path | None, *, per_project: bool
) -> Path | None:
    """The database an install names; None: each project's own (`--project-db`).

    `db` is the one the person chose (--db or SQLGATE_DB), `per_project` whether they chose
    --project-db (or SQLGATE_PROJECT_DB). Project scope: the project's database (.sqlgate/
    agent.db unless --db names another). User scope: Claude Code and Gemini CLI default to
    each project's own, since they start servers in the project folder they run in (Claude
    Code with CLAUDE_PROJECT_DIR set; one database for every project fed project A's memory
    into project B's sessions); the other clients to the per-user database (none of them is
    known to start a server in the project), and --project-db is refused for them."""
    if scope == "project":
        return db if db is not None and not per_project else PROJECT_DB
    if per_project and not client.starts_in_project:
        chosen = " and ".join(c.name for c in CLIENTS.values() if c.starts_in_project)
        raise InvalidArgument(
            f"--project-db (or SQLGATE_PROJECT_DB) is for {chosen}, which start their servers "
            f"in the project folder; {client.name} gets one database: give --db PATH, or "
            "neither for the per-user one"
        )
    if per_project or (db is None and client.starts_in_project):
        return None
    return db if db is not None else default_db_path()


def _server_argv(
    client: Client, launcher: Launcher, db: Path | None, scope: str | None, where: Where
) -> tuple[str, list[str]]:
    if db is None:
        return launcher.command, launcher.argv("serve", "--project-db")
    if scope != "project":
        return launcher.command, launcher.argv("serve", "--db", str(db))
    relative = project_db(db, where).as_posix()
    shown = f"{client.project_root}/{relative}" if client.project_root else relative
    return PORTABLE.command, PORTABLE.argv("serve", "--db", shown)


# ---------------------------------------------------------------------------------------------
# plans


def _db_of(entry: Any) -> str | None:
    """The database an entry names: --db's value, PER_PROJECT, or None."""
    args = entry.get("args") if isinstance(entry, dict) else None
    return named_database(args) if isinstance(args, list) else None


def _differences(old: Any, new: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """What an update changes, field by field: (field, old, new); `db` is the database."""
    if not isinstance(old, dict):
        return (("entry", _shown(old), _shown(new)),)
    found = []
    old_db, new_db = _db_of(old), _db_of(new)
    if old_db != new_db:
        found.append(("db", _shown(old_db), _shown(new_db)))
    for key in [*new, *(key for key in old if key not in new)]:
        was, now = old.get(key), new.get(key)
        if key == "args" and isinstance(was, list) and isinstance(now, list):
            was, now = (without_option(x, "--db", flags=("--project-db",)) for x in (was, now))
        if was != now:
            found.append((key, _shown(was), _shown(now)))
    return tuple(found)


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def describe(changed: tuple[tuple[str, str, str], ...]) -> str:
    """`--db OLD → NEW; command OLD → NEW`."""
    return "; ".join(f"{'--db' if f == 'db' else f} {old} → {new}" for f, old, new in changed)


def _records(records: InstallRecords | None) -> InstallRecords:
    return records or InstallRecords.here()


def plan_install(
    client: Client,
    name: str,
    launcher: Launcher,
    db: Path | None,
    scope: str | None,
    where: Where,
) -> Change:
    """Add (or update) our server entry in the client's config; `db` None: per project."""
    _check_name(name)
    path = client.path(scope, where)
    entry = client.entry(*_server_argv(client, launcher, db, scope, where))
    text = read_config(path)
    label = f'{client.name} entry "{name}"'
    if client.toml:
        old = toml_servers(path, text).get(name)
        change = toml_set(path, text, name, entry)
        added: tuple[KeyPath, ...] = ()
    else:
        data = load_json(path, text)
        servers = section(data, client.servers_key, path)
        old = servers.get(name)
        updated = {**data, client.servers_key: {**servers, name: entry}}
        after = None if old == entry else edit_json(path, text, data, updated)
        change = Change(path, text, after, "")
        added = () if client.servers_key in data else ((client.servers_key,),)
    if not change.needed:
        return replace(change, group=client.name,
                       summary=f"{label} is already installed, nothing changed")  # fmt: skip
    if old is None:
        return replace(change, group=client.name, action="add", summary=f"added {label}",
                       added_keys=added)  # fmt: skip
    changed = _differences(old, entry)
    return replace(change, group=client.name, action="update", changed=changed,
                   summary=f"updated {label}: {describe(changed)}")  # fmt: skip


def plan_uninstall(
    client: Client,
    name: str,
    scope: str | None,
    where: Where,
    *,
    records: InstallRecords | None = None,
) -> Change:
    """Remove our server entry; the keys and the file install created go once empty."""
    _check_name(name)
    path = client.path(scope, where)
    text = read_config(path)
    label = f'{client.name} entry "{name}"'
    record = _records(records).of(link_target(path) or path)
    if client.toml:
        change = toml_remove(path, text, name)
        if not change.needed:
            return replace(change, group=client.name,
                           summary=f"no {label} to remove, nothing changed")  # fmt: skip
        empty = not (change.after or "").strip()
        return _removal(change, label, client.name, (), record is not None and record.created
                        and empty)  # fmt: skip
    data = load_json(path, text)
    servers = section(data, client.servers_key, path)
    if name not in servers:
        return Change(path, text, None, f"no {label} to remove, nothing changed", client.name)
    kept = {key: value for key, value in servers.items() if key != name}
    new = {**data, client.servers_key: kept}
    removed: tuple[KeyPath, ...] = ()
    if not kept and goes_when_empty((client.servers_key,), record):
        new = {key: value for key, value in data.items() if key != client.servers_key}
        removed = ((client.servers_key,),)
    change = Change(path, text, edit_json(path, text, data, new), "")
    nothing_else = not new and re.sub(r"\s", "", change.after or "") == "{}"
    return _removal(change, label, client.name, removed,
                    record is not None and record.created and nothing_else)  # fmt: skip


def _removal(
    change: Change, label: str, group: str, removed: tuple[KeyPath, ...], delete: bool
) -> Change:
    summary = f"removed {label}" + (" and the file sqlgate had created" if delete else "")
    return replace(change, summary=summary, group=group, action="remove",
                   removed_keys=removed, delete=delete)  # fmt: skip
