"""Put sqlgate into an MCP client's own config file, and take it out again.

Where each client keeps its servers, and the client table, are in install_paths.py;
Codex's TOML editing is in install_toml.py.

Planning (which file, what its new text is) is pure apart from reading the file, so tests drive
every OS's scheme on one machine and `--dry-run` shows the exact plan. `apply` is the only
writer: temp file beside the target, backup of the old file, then an atomic rename. A file that
does not parse is reported and never rewritten; a rewrite that would change anything but our
own entry is refused before it is written.

A config that is a symlink (dotfiles) is written through: the chain of links is followed to
the file (`link_target`), that file is backed up and replaced (temp file in its folder), and
the links stay. A dangling link gets its file created when the file's folder exists; a link
to a folder, into a missing folder, or a loop is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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

__all__ = [
    "CAPTURE_EVENTS",
    "CLIENTS",
    "Change",
    "Client",
    "ConfigMalformed",
    "ConfigUnwritable",
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
    "resolve_scope",
    "settings_path",
]

CAPTURE_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
# Claude Code hooks docs (code.claude.com/docs/en/hooks): the matcher applies to tool events;
# "*" (or none) matches every tool, other events take no matcher.
_CAPTURE_MATCHER = {"PostToolUse": "*"}

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_LINKS = 40  # hops followed before a chain of links counts as a loop (Linux's MAXSYMLINKS)


class ConfigMalformed(InvalidArgument):
    """The client's config file does not parse or is not shaped as documented; left untouched."""


class ConfigUnwritable(InvalidArgument):
    """The client's config file or its folder cannot be read or written."""


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


# ---------------------------------------------------------------------------------------------
# plans


@dataclass(frozen=True)
class Change:
    """One file's planned edit. `after` is None when the file already says what we want."""

    path: Path
    before: str | None  # None: the file does not exist
    after: str | None
    summary: str

    @property
    def needed(self) -> bool:
        return self.after is not None and self.after != self.before


def plan_install(
    client: Client, name: str, launcher: Launcher, db: Path, scope: str | None, where: Where
) -> Change:
    """Add (or update) our server entry in the client's config."""
    _check_name(name)
    path = client.path(scope, where)
    entry = client.entry(launcher.command, launcher.argv("serve", "--db", str(db)))
    text = _read(path)
    if client.toml:
        from sqlgate.surfaces.integrations.toml_config import (
            toml_set,  # it builds on Change and the errors
        )

        return toml_set(path, text, name, entry)
    data = _load_json(path, text)
    servers = _section(data, client.servers_key, path)
    if servers.get(name) == entry:
        return Change(path, text, None, f"{name} is already installed")
    verb = "update" if name in servers else "add"
    updated = {**data, client.servers_key: {**servers, name: entry}}
    return Change(path, text, _dump_json(updated), f"{verb} server {name!r}")


def plan_uninstall(client: Client, name: str, scope: str | None, where: Where) -> Change:
    """Remove our server entry; everything else in the file stays."""
    _check_name(name)
    path = client.path(scope, where)
    text = _read(path)
    if client.toml:
        from sqlgate.surfaces.integrations.toml_config import (
            toml_remove,  # it builds on Change and the errors
        )

        return toml_remove(path, text, name)
    data = _load_json(path, text)
    servers = _section(data, client.servers_key, path)
    if name not in servers:
        return Change(path, text, None, f"no server {name!r} to remove")
    kept = {key: value for key, value in servers.items() if key != name}
    return Change(path, text, _dump_json({**data, client.servers_key: kept}),
                  f"remove server {name!r}")  # fmt: skip


def plan_capture(command: str, scope: str | None, where: Where) -> Change:
    """Register `command` for each capture event; drop older sqlgate capture hooks."""
    path = settings_path(scope, where)
    text = _read(path)
    data = _load_json(path, text)
    hooks = _section(data, "hooks", path)
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        updated[event] = _with_capture(_groups(hooks, event, path), event, command)
    if updated == hooks:
        return Change(path, text, None, "capture hooks are already registered")
    return Change(path, text, _dump_json({**data, "hooks": updated}),
                  f"register capture hooks for {', '.join(CAPTURE_EVENTS)}")  # fmt: skip


def plan_uncapture(scope: str | None, where: Where) -> Change:
    """Remove every sqlgate capture hook; other hooks stay."""
    path = settings_path(scope, where)
    text = _read(path)
    data = _load_json(path, text)
    hooks = _section(data, "hooks", path)
    updated = dict(hooks)
    for event in CAPTURE_EVENTS:
        if event in hooks:
            updated[event] = _without_capture(_groups(hooks, event, path))
    if updated == hooks:
        return Change(path, text, None, "no capture hooks to remove")
    return Change(path, text, _dump_json({**data, "hooks": updated}), "remove capture hooks")


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


# ---------------------------------------------------------------------------------------------
# JSON


def _read(path: Path) -> str | None:
    path = link_target(path) or path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigUnwritable(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig") if data.startswith(b"\xef\xbb\xbf") else data.decode()
    except UnicodeDecodeError:
        raise ConfigMalformed(
            f"{path} is not UTF-8 text; it was left untouched: fix it, or add the entry by hand"
        ) from None


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigMalformed(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "it was left untouched: fix it (comments are not allowed), or add the entry by hand"
        ) from None
    if not isinstance(data, dict):
        raise ConfigMalformed(
            f"{path} holds a JSON {type(data).__name__}, not an object; it was left untouched"
        )
    return data


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    section = data.get(key, {})
    if not isinstance(section, dict):
        raise ConfigMalformed(f"{path}: {key!r} is not an object; the file was left untouched")
    return section


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# the one writer


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def link_target(path: Path) -> Path | None:
    """The file a symlinked config really is; None when `path` is not a symlink.

    A chain of links is followed (a relative link from its own folder). Refused, with what to
    do: a loop, a link to a folder or to something that is not a file, and a dangling link
    whose folder does not exist (a dangling link into an existing folder is fine: the file
    is created there).
    """
    if not path.is_symlink():
        return None
    chain = [path]
    try:
        while chain[-1].is_symlink():
            if len(chain) > _MAX_LINKS:
                raise _loop(chain)
            raw = Path(os.readlink(chain[-1]))
            hop = raw if raw.is_absolute() else chain[-1].parent / raw
            hop = Path(os.path.realpath(hop.parent)) / hop.name  # one spelling per file
            if hop in chain:
                raise _loop([*chain, hop])
            chain.append(hop)
        target = chain[-1]
        if target.is_dir():
            raise ConfigUnwritable(
                f"{path} is a link to a folder ({target}), not to a config file; nothing was "
                "written: point the link at the file, or replace the link with the file"
            )
        if target.exists() and not target.is_file():
            raise ConfigUnwritable(
                f"{path} is a link to {target}, which is not a regular file; nothing was written"
            )
        if not target.exists() and not target.parent.is_dir():
            raise ConfigUnwritable(
                f"{path} is a link to {target}, which does not exist, in a folder that does not "
                "exist either; nothing was written: create the folder (or fix the link) and "
                "run this again"
            )
    except OSError as exc:
        raise ConfigUnwritable(
            f"cannot follow the link {path}: {exc.strerror or exc}; nothing was written"
        ) from None
    return target


def _loop(chain: list[Path]) -> ConfigUnwritable:
    shown = " -> ".join(str(hop) for hop in chain[:6]) + (" -> ..." if len(chain) > 6 else "")
    return ConfigUnwritable(
        f"{chain[0]} is a symlink loop ({shown}); nothing was written: fix the link, or "
        "replace it with the config file"
    )


def apply(change: Change, now: datetime | None = None) -> Path | None:
    """Write `change` atomically; back the old file up first. Returns the backup's path.

    Through a symlinked config, the file at the end of the links is the one backed up and
    replaced (the temp file and the backup are in its folder); the links stay as they are.
    """
    if not change.needed or change.after is None:
        return None
    link = link_target(change.path)
    path = link or change.path
    through = f" (through the link {change.path})" if link else ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigUnwritable(
            f"cannot write {path}{through}: {exc.strerror or exc}; nothing was changed"
        ) from None
    tmp = Path(tmp_name)
    backup = None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(change.after)
            out.flush()
            os.fsync(out.fileno())
        if change.before is not None and path.exists():
            shutil.copymode(path, tmp)
            backup = _backup_name(path, now or datetime.now(timezone.utc))
            shutil.copy2(path, backup)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        raise ConfigUnwritable(
            f"cannot write {path}{through}: {exc.strerror or exc}; nothing was changed"
        ) from None
    return backup


def _backup_name(path: Path, now: datetime) -> Path:
    stamp = now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.sqlgate-backup-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.sqlgate-backup-{stamp}-{n}")
    return candidate
