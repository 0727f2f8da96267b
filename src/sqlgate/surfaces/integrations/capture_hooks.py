"""Claude Code hooks that run `sqlgate capture` (`install claude-code --capture`): the hook
command, and the hook lists of Claude Code's settings with ours put in or taken out without
touching anyone else's hooks (the settings file itself is planned in claude_settings.py).

Every capture hook but SessionStart runs in the background (`"async": true`: Claude Code's
hooks reference, "Run hooks in the background"; its settings schema: "If true, hook runs in
background without blocking"), so a tool call never waits for it. SessionStart stays
synchronous: its output, the resume context, is what the new session is handed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.config_files import ConfigMalformed, KeyPath
from sqlgate.surfaces.integrations.install_records import FileRecord, goes_when_empty
from sqlgate.surfaces.integrations.launcher import Launcher, project_db

__all__ = [
    "CAPTURE_EVENTS",
    "PER_PROJECT",
    "SYNC_EVENTS",
    "capture_command",
    "hook_database",
    "hook_for",
    "is_capture_command",
    "named_database",
    "our_commands",
    "project_capture_command",
    "with_capture",
    "without_capture",
]

CAPTURE_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
SYNC_EVENTS = ("SessionStart",)  # prints the resume context: Claude Code must wait for it
# how a database chosen per project is shown (server entries and hooks alike)
PER_PROJECT = "per project (--project-db)"
# Claude Code hooks docs (code.claude.com/docs/en/hooks): the matcher applies to tool events;
# "*" (or none) matches every tool, other events take no matcher.
_CAPTURE_MATCHER = {"PostToolUse": "*"}
# Claude Code sets it for hook commands (code.claude.com/docs/en/hooks); "." if it is not set
_HOOK_PROJECT_DIR = "${CLAUDE_PROJECT_DIR:-.}"


def capture_command(launcher: Launcher, db: Path | None, platform: str) -> str:
    """The shell line a Claude Code hook runs (Claude Code runs hooks with bash, Git Bash on
    Windows): POSIX quoting, and forward slashes in Windows paths so bash keeps them.
    `db` None: the project's own database (`--project-db`)."""
    chosen = ["--project-db"] if db is None else ["--db", str(db)]
    words = [launcher.command, *launcher.argv("capture", *chosen)]
    if platform == "win32":
        words = [word.replace("\\", "/") for word in words]
        return " ".join(f'"{word}"' if re.search(r'[\s"$`!]', word) else word for word in words)
    return shlex.join(words)


def project_capture_command(db: Path, where: Where) -> str:
    """The hook line of a committed `.claude/settings.json`: `sqlgate` from PATH and the
    project's database under Claude Code's project folder variable."""
    inner = re.sub(r'(["\\$`])', r"\\\1", project_db(db, where).as_posix())
    return f'sqlgate capture --db "{_HOOK_PROJECT_DIR}/{inner}"'


def hook_for(event: str, command: str) -> dict[str, Any]:
    """Our hook of `event`: async unless Claude Code has to wait for its output."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if event not in SYNC_EVENTS:
        hook["async"] = True
    return hook


def is_capture_command(command: str) -> bool:
    """Whether a hook command runs `sqlgate capture` (ours, whichever db or install it names)."""
    words = _words(command)
    if len(words) >= 2 and _program(words[0]) == "sqlgate":
        return words[1] == "capture"
    return len(words) >= 4 and words[1:3] == ["-m", "sqlgate"] and words[3] == "capture"


def named_database(words: Sequence[Any]) -> str | None:
    """The database a server's or a hook's words name, as a person reads it: PER_PROJECT,
    the `--db` path, or None (the default, or a value that is not text)."""
    if "--project-db" in words:
        return PER_PROJECT
    if "--db" in words[:-1]:
        value = words[list(words).index("--db") + 1]
        return value if isinstance(value, str) else None
    return None


def hook_database(command: str) -> str:
    """The database a capture command names, as a person reads it: the `--db` path,
    PER_PROJECT, or "(the default)"."""
    return named_database(_words(command)) or "(the default)"


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def _program(word: str) -> str:
    name = re.split(r"[\\/]", word)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


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


def our_commands(hooks: dict[str, Any], path: Path) -> list[str]:
    """The commands of the capture hooks registered in `hooks`, each once, in order."""
    found: list[str] = []
    for event in CAPTURE_EVENTS:
        for group in _groups(hooks, event, path):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if _ours(hook) and hook["command"] not in found:
                    found.append(hook["command"])
    return found


def with_capture(hooks: dict[str, Any], command: str, path: Path) -> dict[str, Any]:
    """`hooks` with one hook of ours per capture event running `command`, in its current form
    (async but SessionStart); an older hook of ours (another database, another install, no
    async) is replaced, a hook of ours that says the same is kept with its other fields."""
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        updated[event] = _with_capture(_groups(hooks, event, path), event, command)
    return updated


def _with_capture(groups: list[Any], event: str, command: str) -> list[Any]:
    wanted = hook_for(event, command)
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
                kept.append(_in_form(hook, wanted))
        if kept == inner:
            result.append(group)
        elif kept:
            result.append({**group, "hooks": kept})
    if not present:
        group = {"matcher": matcher} if matcher is not None else {}
        result.append({**group, "hooks": [wanted]})
    return result


def _in_form(hook: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """Our hook as it is now written; fields a person added (a timeout) stay."""
    if hook.get("async") == wanted.get("async"):
        return hook
    kept = {key: value for key, value in hook.items() if key != "async"}
    return {**kept, "async": True} if "async" in wanted else kept


def without_capture(
    hooks: dict[str, Any], record: FileRecord | None, path: Path
) -> tuple[dict[str, Any], tuple[KeyPath, ...]]:
    """`hooks` without any capture hook of ours; an event's list that capture added goes
    once empty (its key path is returned), any other list stays, empty or not."""
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
    return updated, tuple(removed)


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
