"""Claude Code's settings file (`~/.claude/settings.json`, or the project's
`.claude/settings.json`: client_paths.settings_path), as `sqlgate install claude-code` edits
it: the capture hooks (capture_hooks.py) and the permission rules (permissions.py), in one
planned edit, so `--dry-run` shows both and one write makes both.

What to do with the hooks:

    register   put ours in, running the given command (`install --capture`)
    follow     only when ours are there: point them at the given command (a reinstall with
               another --db moves the hooks with the server, and says so)
    remove     take ours out (`install --no-capture`, `uninstall`)
    keep       leave them as they are

and with the permission rules: `add` (install), `remove` (uninstall: only the rules the
record says install added), or `keep`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.service import counted
from sqlgate.surfaces.integrations.capture_hooks import (
    CAPTURE_EVENTS,
    SYNC_EVENTS,
    hook_database,
    our_commands,
    with_capture,
    without_capture,
)
from sqlgate.surfaces.integrations.client_paths import Where, settings_path
from sqlgate.surfaces.integrations.config_files import (
    Change,
    KeyPath,
    edit_json,
    link_target,
    load_json,
    read_config,
    section,
)
from sqlgate.surfaces.integrations.install_records import (
    FileRecord,
    InstallRecords,
    goes_when_empty,
)
from sqlgate.surfaces.integrations.permissions import (
    RULE_LISTS,
    Rule,
    add_rules,
    remove_rules,
    wanted_rules,
)

__all__ = ["HOOK_ACTIONS", "SettingsEdit", "plan_capture", "plan_settings", "plan_uncapture"]

HOOK_ACTIONS = ("register", "follow", "remove", "keep")
_ASYNC_NOTE = f"async but {', '.join(SYNC_EVENTS)}"


@dataclass(frozen=True)
class SettingsEdit:
    """What one install or uninstall does to the settings file."""

    hooks: str = "keep"  # one of HOOK_ACTIONS
    command: str = ""  # the capture command, for register and follow
    permissions: str = "keep"  # add, remove or keep
    server: str = "sqlgate"  # the server's name, in the rules (mcp__<server>__<tool>)

    def __post_init__(self) -> None:
        assert self.hooks in HOOK_ACTIONS, self.hooks
        assert self.permissions in ("add", "remove", "keep"), self.permissions


@dataclass
class _Draft:
    """The settings being edited, and what the edit did to them."""

    data: dict[str, Any]
    record: FileRecord | None
    said: list[str]
    added_keys: list[KeyPath]
    removed_keys: list[KeyPath]
    added_rules: tuple[Rule, ...] = ()
    removed_rules: tuple[Rule, ...] = ()


def plan_settings(
    edit: SettingsEdit, scope: str | None, where: Where, *, records: InstallRecords | None = None
) -> Change:
    """The one planned edit of Claude Code's settings file for `edit`."""
    path = settings_path(scope, where)
    text = read_config(path)
    data = load_json(path, text)
    record = (records or InstallRecords.here()).of(link_target(path) or path)
    draft = _Draft(dict(data), record, [], [], [])
    if edit.hooks in ("register", "follow"):
        _hooks_to(draft, edit, path, original=data)
    elif edit.hooks == "remove":
        _hooks_out(draft, path)
    if edit.permissions == "add":
        _rules_in(draft, edit.server, path, original=data)
    elif edit.permissions == "remove":
        _rules_out(draft, edit.server, path)
    if draft.data == data:
        hooked = bool(our_commands(section(data, "hooks", path), path))
        return Change(path, text, None, _nothing(edit, hooked), "claude-code")
    after = edit_json(path, text, data, draft.data)
    delete = (record is not None and record.created and not draft.data
              and re.sub(r"\s", "", after) == "{}")  # fmt: skip
    summary = "; ".join(draft.said) + (" and the file sqlgate had created" if delete else "")
    action = "add" if draft.added_keys or draft.added_rules else "update"
    if edit.hooks == "remove" or edit.permissions == "remove":
        action = "remove"
    return Change(path, text, after, summary, "claude-code", action=action,
                  added_keys=tuple(draft.added_keys), removed_keys=tuple(draft.removed_keys),
                  added_rules=draft.added_rules, removed_rules=draft.removed_rules,
                  delete=delete)  # fmt: skip


def _nothing(edit: SettingsEdit, hooked: bool) -> str:
    if edit.hooks == "register" or (edit.hooks == "follow" and hooked):
        return "capture hooks and permissions are already in place, nothing changed"
    if edit.hooks == "remove" and edit.permissions != "remove":
        return "no capture hooks to remove, nothing changed"
    if edit.permissions == "remove":
        return "no capture hooks or permissions of sqlgate's to remove, nothing changed"
    return "permissions are already in place, nothing changed"


def _hooks_to(draft: _Draft, edit: SettingsEdit, path: Path, *, original: dict[str, Any]) -> None:
    hooks = section(original, "hooks", path)
    before = our_commands(hooks, path)
    if edit.hooks == "follow" and not before:
        return
    updated = with_capture(hooks, edit.command, path)
    if updated == hooks:
        return
    draft.data["hooks"] = updated
    if "hooks" not in original:
        draft.added_keys.append(("hooks",))
    draft.added_keys += [("hooks", event) for event in CAPTURE_EVENTS if event not in hooks]
    moved = [db for db in dict.fromkeys(hook_database(c) for c in before)
             if db != hook_database(edit.command)]  # fmt: skip
    if not before:
        draft.said.append(
            f"registered capture hooks for {', '.join(CAPTURE_EVENTS)} ({_ASYNC_NOTE})"
        )
    elif moved:
        draft.said.append(
            f"moved the capture hooks with the server: {', '.join(moved)} → "
            f"{hook_database(edit.command)}"
        )
    else:
        draft.said.append(f"brought the capture hooks up to date ({_ASYNC_NOTE})")


def _hooks_out(draft: _Draft, path: Path) -> None:
    hooks = section(draft.data, "hooks", path)
    updated, removed = without_capture(hooks, draft.record, path)
    if updated == hooks:
        return
    draft.removed_keys += removed
    if not updated and goes_when_empty(("hooks",), draft.record):
        del draft.data["hooks"]
        draft.removed_keys.append(("hooks",))
    else:
        draft.data["hooks"] = updated
    draft.said.append("removed capture hooks")


def _rules_in(draft: _Draft, server: str, path: Path, *, original: dict[str, Any]) -> None:
    permissions = section(original, "permissions", path)
    merged, added = add_rules(permissions, wanted_rules(server), path)
    if not added:
        return
    draft.data["permissions"] = merged
    if "permissions" not in original:
        draft.added_keys.append(("permissions",))
    draft.added_keys += [("permissions", name) for name in RULE_LISTS
                         if name in merged and name not in permissions]  # fmt: skip
    draft.added_rules = added
    allowed = sum(1 for where, _ in added if where == "allow")
    asked = [rule.rsplit("__", 1)[-1] for where, rule in added if where == "ask"]
    parts = [f"allow {allowed} of {server}'s tools"] if allowed else []
    parts += [f"ask before {', '.join(asked)}"] if asked else []
    draft.said.append(f"added Claude Code permissions: {'; '.join(parts)}")


def _rules_out(draft: _Draft, server: str, path: Path) -> None:
    permissions = section(draft.data, "permissions", path)
    recorded = draft.record.rules if draft.record else ()
    left, mine = remove_rules(permissions, recorded, server)
    draft.removed_rules = mine
    if left == permissions:
        return
    emptied = [name for name in RULE_LISTS if permissions.get(name) and left.get(name) == []]
    for name in emptied:
        if goes_when_empty(("permissions", name), draft.record):
            del left[name]
            draft.removed_keys.append(("permissions", name))
    if not left and goes_when_empty(("permissions",), draft.record):
        del draft.data["permissions"]
        draft.removed_keys.append(("permissions",))
    else:
        draft.data["permissions"] = left
    gone = sum(len(permissions.get(name) or []) - len(left.get(name) or []) for name in RULE_LISTS)
    draft.said.append(f"removed the {counted(gone, 'permission rule')} install had added")


def plan_capture(
    command: str, scope: str | None, where: Where, *, records: InstallRecords | None = None
) -> Change:
    """Register `command` for each capture event; older sqlgate capture hooks go."""
    return plan_settings(SettingsEdit("register", command), scope, where, records=records)


def plan_uncapture(
    scope: str | None, where: Where, *, records: InstallRecords | None = None
) -> Change:
    """Remove every sqlgate capture hook; other hooks stay, and so do lists and files that
    were not emptied by this."""
    return plan_settings(SettingsEdit("remove"), scope, where, records=records)
