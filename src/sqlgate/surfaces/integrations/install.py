"""Put sqlgate into an MCP client's own config file, and take it out again.

Where each client keeps its servers, and the client table, are in client_paths.py; reading
and editing JSON with comments in config_files.py and jsonc.py; Codex's TOML in
toml_config.py; the one writer (atomic, backed up, recorded) in config_writer.py.

Planning (which file, what its new text is) is pure apart from reading files, so tests drive
every OS's scheme on one machine and `--dry-run` shows the exact plan. A file that does not
parse is reported and never rewritten; a rewrite that would change anything but our own
entry is refused before it is written.

User scope writes this installation's absolute `sqlgate` and database. Project scope writes a
file meant to be committed, so it names nothing of this machine: `sqlgate` from PATH and a
database inside the project (`.sqlgate/agent.db` unless --db names another one there).
Uninstall takes out what install added: the entry, the keys it created once they are empty,
and a file it created that holds nothing else (install_records.py keeps that record).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from sqlgate.config import PROJECT_DB
from sqlgate.errors import InvalidArgument
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
from sqlgate.surfaces.integrations.install_records import InstallRecords
from sqlgate.surfaces.integrations.toml_config import toml_remove, toml_servers, toml_set

__all__ = [
    "CAPTURE_EVENTS",
    "CLIENTS",
    "PORTABLE",
    "Change",
    "Client",
    "ConfigMalformed",
    "ConfigUnwritable",
    "InstallRecords",
    "Launcher",
    "Where",
    "apply",
    "capture_command",
    "client_named",
    "current_platform",
    "find_launcher",
    "is_capture_command",
    "link_target",
    "plan_capture",
    "plan_install",
    "plan_uncapture",
    "plan_uninstall",
    "project_capture_command",
    "project_db",
    "resolve_scope",
    "settings_path",
]

CAPTURE_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
# Claude Code hooks docs (code.claude.com/docs/en/hooks): the matcher applies to tool events;
# "*" (or none) matches every tool, other events take no matcher.
_CAPTURE_MATCHER = {"PostToolUse": "*"}
# Claude Code sets it for hook commands (code.claude.com/docs/en/hooks); "." if it is not set
_HOOK_PROJECT_DIR = "${CLAUDE_PROJECT_DIR:-.}"

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


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


PORTABLE = Launcher("sqlgate")  # a committed config runs the `sqlgate` on each machine's PATH


def project_db(db: Path, where: Where) -> PurePosixPath:
    """`db` relative to the project folder (the working folder), in `/` form.

    A committed config cannot name a database outside the project: every clone would point
    at a path that exists on this machine only."""
    full = db if db.is_absolute() else where.cwd / db
    try:
        relative = Path(os.path.normpath(full)).relative_to(os.path.normpath(where.cwd))
    except ValueError:
        relative = None
    if relative is None or not relative.parts:
        raise InvalidArgument(
            f"--db {db} is not inside this project ({where.cwd}); --scope project writes a "
            f"file meant to be committed: give a path inside the project (the default is "
            f"{PROJECT_DB.as_posix()}), or use --scope user for a database of this machine"
        )
    return PurePosixPath(*relative.parts)


def project_capture_command(db: Path, where: Where) -> str:
    """The hook line of a committed `.claude/settings.json`: `sqlgate` from PATH and the
    project's database under Claude Code's project folder variable."""
    inner = re.sub(r'(["\\$`])', r"\\\1", project_db(db, where).as_posix())
    return f'sqlgate capture --db "{_HOOK_PROJECT_DIR}/{inner}"'


def _server_argv(
    client: Client, launcher: Launcher, db: Path, scope: str | None, where: Where
) -> tuple[str, list[str]]:
    if scope != "project":
        return launcher.command, launcher.argv("serve", "--db", str(db))
    relative = project_db(db, where).as_posix()
    shown = f"{client.project_root}/{relative}" if client.project_root else relative
    return PORTABLE.command, PORTABLE.argv("serve", "--db", shown)


# ---------------------------------------------------------------------------------------------
# plans


def _db_of(entry: Any) -> str | None:
    args = entry.get("args") if isinstance(entry, dict) else None
    if isinstance(args, list) and "--db" in args[:-1]:
        value = args[args.index("--db") + 1]
        return value if isinstance(value, str) else None
    return None


def _differences(old: Any, new: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """What an update changes, field by field: (field, old, new); `db` is --db's value."""
    if not isinstance(old, dict):
        return (("entry", _shown(old), _shown(new)),)
    found = []
    old_db, new_db = _db_of(old), _db_of(new)
    if old_db != new_db:
        found.append(("db", _shown(old_db), _shown(new_db)))
    for key in [*new, *(key for key in old if key not in new)]:
        was, now = old.get(key), new.get(key)
        if key == "args" and isinstance(was, list) and isinstance(now, list):
            was = [arg for arg in was if arg != old_db]
            now = [arg for arg in now if arg != new_db]
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
    db: Path,
    scope: str | None,
    where: Where,
    *,
    records: InstallRecords | None = None,
) -> Change:
    """Add (or update) our server entry in the client's config."""
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
    if not kept and _goes_when_empty((client.servers_key,), record):
        new = {key: value for key, value in data.items() if key != client.servers_key}
        removed = ((client.servers_key,),)
    change = Change(path, text, edit_json(path, text, data, new), "")
    nothing_else = not new and re.sub(r"\s", "", change.after or "") == "{}"
    return _removal(change, label, client.name, removed,
                    record is not None and record.created and nothing_else)  # fmt: skip


def _goes_when_empty(key: KeyPath, record: Any) -> bool:
    """Whether an emptied key goes: sqlgate added it, or sqlgate has no record of the file
    (written before records were kept), where an empty servers object or hook list means
    nothing. A key of a recorded file that sqlgate did not add was there before: it stays."""
    return record is None or key in record.keys


def _removal(
    change: Change, label: str, group: str, removed: tuple[KeyPath, ...], delete: bool
) -> Change:
    summary = f"removed {label}" + (" and the file sqlgate had created" if delete else "")
    return replace(change, summary=summary, group=group, action="remove",
                   removed_keys=removed, delete=delete)  # fmt: skip


def plan_capture(
    command: str, scope: str | None, where: Where, *, records: InstallRecords | None = None
) -> Change:
    """Register `command` for each capture event; drop older sqlgate capture hooks."""
    path = settings_path(scope, where)
    text = read_config(path)
    data = load_json(path, text)
    hooks = section(data, "hooks", path)
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        updated[event] = _with_capture(_groups(hooks, event, path), event, command)
    if updated == hooks:
        summary = "capture hooks are already registered, nothing changed"
        return Change(path, text, None, summary, "claude-code")
    added: list[KeyPath] = [] if "hooks" in data else [("hooks",)]
    added += [("hooks", event) for event in CAPTURE_EVENTS if event not in hooks]
    after = edit_json(path, text, data, {**data, "hooks": updated})
    return Change(path, text, after,
                  f"registered capture hooks for {', '.join(CAPTURE_EVENTS)}", "claude-code",
                  action="add", added_keys=tuple(added))  # fmt: skip


def plan_uncapture(
    scope: str | None, where: Where, *, records: InstallRecords | None = None
) -> Change:
    """Remove every sqlgate capture hook; other hooks stay, and so do lists and files that
    were not emptied by this."""
    path = settings_path(scope, where)
    text = read_config(path)
    data = load_json(path, text)
    hooks = section(data, "hooks", path)
    record = _records(records).of(link_target(path) or path)
    updated = dict(hooks)
    removed: list[KeyPath] = []
    for event in CAPTURE_EVENTS:
        if event not in hooks:
            continue
        groups = _without_capture(_groups(hooks, event, path))
        if groups == hooks[event]:
            continue
        if groups or not _goes_when_empty(("hooks", event), record):
            updated[event] = groups
        else:
            del updated[event]
            removed.append(("hooks", event))
    if updated == hooks:
        return Change(path, text, None, "no capture hooks to remove, nothing changed",
                      "claude-code")  # fmt: skip
    new = {**data, "hooks": updated}
    if not updated and _goes_when_empty(("hooks",), record):
        new = {key: value for key, value in data.items() if key != "hooks"}
        removed.append(("hooks",))
    after = edit_json(path, text, data, new)
    delete = (record is not None and record.created and not new
              and re.sub(r"\s", "", after) == "{}")  # fmt: skip
    summary = "removed capture hooks" + (" and the file sqlgate had created" if delete else "")
    return Change(path, text, after, summary, "claude-code", action="remove",
                  removed_keys=tuple(removed), delete=delete)  # fmt: skip


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
