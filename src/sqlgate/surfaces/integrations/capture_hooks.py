"""Claude Code hooks that run `sqlgate capture` (`install claude-code --capture`): the hook
command, and registering or removing it in Claude Code's settings.json without touching
anyone else's hooks. A hook list that capture added goes again once it is empty."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from sqlgate.surfaces.integrations.client_paths import Where, settings_path
from sqlgate.surfaces.integrations.config_files import (
    Change,
    ConfigMalformed,
    KeyPath,
    edit_json,
    link_target,
    load_json,
    read_config,
    section,
)
from sqlgate.surfaces.integrations.install_records import InstallRecords, goes_when_empty
from sqlgate.surfaces.integrations.launcher import Launcher, project_db

__all__ = [
    "CAPTURE_EVENTS",
    "capture_command",
    "is_capture_command",
    "plan_capture",
    "plan_uncapture",
    "project_capture_command",
]

CAPTURE_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
# Claude Code hooks docs (code.claude.com/docs/en/hooks): the matcher applies to tool events;
# "*" (or none) matches every tool, other events take no matcher.
_CAPTURE_MATCHER = {"PostToolUse": "*"}
# Claude Code sets it for hook commands (code.claude.com/docs/en/hooks); "." if it is not set
_HOOK_PROJECT_DIR = "${CLAUDE_PROJECT_DIR:-.}"


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


def project_capture_command(db: Path, where: Where) -> str:
    """The hook line of a committed `.claude/settings.json`: `sqlgate` from PATH and the
    project's database under Claude Code's project folder variable."""
    inner = re.sub(r'(["\\$`])', r"\\\1", project_db(db, where).as_posix())
    return f'sqlgate capture --db "{_HOOK_PROJECT_DIR}/{inner}"'


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
    record = (records or InstallRecords.here()).of(link_target(path) or path)
    updated = dict(hooks)
    removed: list[KeyPath] = []
    for event in CAPTURE_EVENTS:
        if event not in hooks:
            continue
        groups = _without_capture(_groups(hooks, event, path))
        if groups == hooks[event]:
            continue
        if groups or not goes_when_empty(("hooks", event), record):
            updated[event] = groups
        else:
            del updated[event]
            removed.append(("hooks", event))
    if updated == hooks:
        return Change(path, text, None, "no capture hooks to remove, nothing changed",
                      "claude-code")  # fmt: skip
    new = {**data, "hooks": updated}
    if not updated and goes_when_empty(("hooks",), record):
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
