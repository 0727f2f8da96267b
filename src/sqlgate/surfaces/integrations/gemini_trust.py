"""Gemini CLI's folder trust: whether Gemini CLI starts MCP servers in a folder, and the
exact step that makes it. Reading only: sqlgate never writes Gemini's trust file (trusting
a folder is the person's decision, made in Gemini's own dialog or by the edit printed).

What Gemini CLI 0.61 does, read from its code (packages/core/src/utils/trust.ts
checkPathTrust, packages/cli/src/config/trustedFolders.ts, settings.ts, and `gemini mcp
list`), in this order:

    GEMINI_RESTRICTED_MODE=true or GEMINI_CLI_TRUST_WORKSPACE=false   untrusted
    GEMINI_CLI_TRUST_WORKSPACE=true                                   trusted
    security.folderTrust.enabled false (system, then user settings)   trusted: the feature
                                        is off; it is ON by default (`?? true`), though older
                                        docs (docs/cli/trusted-folders.md) say off
    an IDE's workspace trust (IDE integration)                        that answer
    ~/.gemini/trustedFolders.json ($GEMINI_CLI_TRUSTED_FOLDERS_PATH; the home is
    $GEMINI_CLI_HOME when set): {"<folder>": "TRUST_FOLDER" | "TRUST_PARENT" |
    "DO_NOT_TRUST"}, comments allowed. A rule covers its folder and everything under it
    (TRUST_PARENT: its parent folder's); both paths are compared real (symlinks resolved),
    case-insensitively on macOS and Windows; of the rules that cover the folder the longest
    path wins. No rule: untrusted. A file that does not parse, is not an object or holds
    another value: Gemini CLI stops with "Please fix the configuration file".

In an untrusted folder Gemini CLI ignores the project's .gemini/settings.json and starts no
stdio MCP server at all, user-scope ones included: `gemini mcp list` shows each as
"Disabled" after "MCP servers are configured but disabled because this folder is
untrusted". Gemini asks when it starts in a folder with no rule ("Do you trust the files in
this folder?": Trust folder / Trust parent folder / Don't trust), and `/permissions` in a
session changes the answer; `--skip-trust` trusts for one session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Any

from sqlgate.surfaces.integrations.client_paths import Where, gemini_home
from sqlgate.surfaces.integrations.jsonc import JsoncError, load

__all__ = ["FolderTrust", "folder_trust", "trust_verdict", "trust_warning", "trusted_folders_path"]

_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")
_SYSTEM_SETTINGS = {
    "linux": "/etc/gemini-cli/settings.json",
    "darwin": "/Library/Application Support/GeminiCli/settings.json",
    "win32": "C:\\ProgramData\\gemini-cli\\settings.json",
}
_ASK = (
    'run `gemini` in {folder} and choose "Trust folder" when it asks (in a session: /permissions)'
)


@dataclass(frozen=True)
class FolderTrust:
    """Gemini CLI's answer for a folder: trusted, untrusted, or None when its trust file is
    one Gemini refuses; `detail` says why, `fix` what makes it trusted (None when it is)."""

    trusted: bool | None
    detail: str
    fix: str | None = None


def trusted_folders_path(where: Where) -> Path:
    moved = where.env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH", "")
    return Path(moved) if moved else gemini_home(where) / ".gemini" / "trustedFolders.json"


def _system_settings(where: Where) -> Path:
    moved = where.env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "")
    return Path(moved) if moved else Path(_SYSTEM_SETTINGS[where.platform])


def _trust_turned_off(where: Where) -> Path | None:
    """The settings file that turns folder trust off (system settings override the user's);
    None when it is on. A file that cannot be read counts as saying nothing."""
    for path in (_system_settings(where), gemini_home(where) / ".gemini" / "settings.json"):
        try:
            data = load(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, JsoncError):
            continue
        security = data.get("security") if isinstance(data, dict) else None
        trust = security.get("folderTrust") if isinstance(security, dict) else None
        enabled = trust.get("enabled") if isinstance(trust, dict) else None
        if isinstance(enabled, bool):
            return None if enabled else path
    return None


def _variables(where: Where) -> FolderTrust | None:
    env = where.env
    for name, value in (
        ("GEMINI_RESTRICTED_MODE", "true"),
        ("GEMINI_CLI_TRUST_WORKSPACE", "false"),
    ):
        if env.get(name) == value:
            return FolderTrust(False, f"{name}={value} in this environment",
                               f"unset {name} where Gemini CLI runs")  # fmt: skip
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return FolderTrust(True, "GEMINI_CLI_TRUST_WORKSPACE=true in this environment")
    return None


def _rules(path: Path) -> dict[str, str] | str:
    """The trust file's rules ({} when it does not exist), or what is wrong with it."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    try:
        data: Any = load(text) if text.strip() else {}
    except JsoncError as exc:
        return f"is not valid JSON ({exc.msg} at line {exc.line}, column {exc.column})"
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object"
    for rule, level in data.items():
        if level not in _LEVELS:
            return (f"has an invalid trust level {json.dumps(level)} for {json.dumps(rule)}; "
                    f"Gemini takes {', '.join(_LEVELS)}")  # fmt: skip
    return data


def _pure(where: Where, text: str) -> PurePath:
    """`text` as Gemini compares it: absolute (from the working folder), real, and lower
    case where the file system ignores case."""
    kind: type[PurePath] = PureWindowsPath if where.platform == "win32" else PurePosixPath
    path = Path(text) if Path(text).is_absolute() else where.cwd / text
    try:
        real = str(path.resolve()) if path.exists() else str(path)
    except OSError:
        real = str(path)
    shown = real.lower() if where.platform in ("win32", "darwin") else real
    return kind(shown)


def _covering(where: Where, folder: Path, rules: dict[str, str]) -> tuple[str, str] | None:
    """The rule Gemini applies to `folder`: of those covering it, the longest path."""
    here = _pure(where, str(folder))
    best: tuple[str, str] | None = None
    longest = -1
    for rule, level in rules.items():
        base = _pure(where, rule)
        covers = base.parent if level == "TRUST_PARENT" else base
        written = len(str(where.cwd / rule))  # Gemini compares the rule as written, made absolute
        if (here == covers or covers in here.parents) and written > longest:
            best, longest = (rule, level), written
    return best


def folder_trust(where: Where, folder: Path | None = None) -> FolderTrust:
    """Whether Gemini CLI trusts `folder` (the working folder by default), and why."""
    folder = folder or where.cwd
    said = _variables(where)
    if said is not None:
        return said
    off = _trust_turned_off(where)
    if off is not None:
        return FolderTrust(True, f"folder trust is off (security.folderTrust.enabled is false "
                                 f"in {off})")  # fmt: skip
    path = trusted_folders_path(where)
    rules = _rules(path)
    if isinstance(rules, str):
        return FolderTrust(None, f"{path} {rules}; Gemini CLI refuses to start until it is "
                           "fixed", f"fix {path} by hand (or move it away: Gemini CLI asks "
                           "again in each folder)")  # fmt: skip
    rule = _covering(where, folder, rules)
    shown = json.dumps(str(folder))
    if rule is None:
        detail = f"no rule in {path} covers it" if path.exists() else f"there is no {path}"
        edit = (f"add {shown}: \"TRUST_FOLDER\" to {path}" if path.exists()
                else f"create {path} holding {{{shown}: \"TRUST_FOLDER\"}}")  # fmt: skip
        return FolderTrust(False, detail, f"{_ASK.format(folder=folder)}, or {edit}")
    named = f'{json.dumps(rule[0])}: "{rule[1]}"'
    if rule[1] == "DO_NOT_TRUST":
        own = _pure(where, rule[0]) == _pure(where, str(folder))
        edit = (
            f'change {named} in {path} to "TRUST_FOLDER"'
            if own
            else f'add {shown}: "TRUST_FOLDER" to {path} (the longer rule wins over {named})'
        )
        return FolderTrust(False, f"the rule {named} in {path} distrusts it",
                           f"{edit}, or choose \"Trust folder\" in Gemini CLI's /permissions, "
                           f"run in {folder}")  # fmt: skip
    return FolderTrust(True, f"trusted by the rule {named} in {path}")


def trust_warning(scope: str | None, where: Where) -> str | None:
    """The line `install gemini` prints when Gemini CLI will not start the entry in this
    folder; None when it will."""
    found = folder_trust(where)
    if found.trusted:
        return None
    if found.trusted is None:
        return f"warning: {found.detail}; fix: {found.fix}"
    if scope == "project":
        return (f"warning: Gemini CLI starts none of this project's servers until it trusts "
                f"the folder, and {where.cwd} is not trusted ({found.detail}); to trust it: "
                f"{found.fix}")  # fmt: skip
    return (f"note: Gemini CLI starts MCP servers (user-scope ones too) only in folders it "
            f"trusts, and {where.cwd} is not trusted ({found.detail}); trust each project you "
            f"use it in: {found.fix}")  # fmt: skip


def trust_verdict(scope: str | None, where: Where) -> tuple[str, str, str | None]:
    """doctor's `trust` check of a Gemini entry here: (ok|warn|fail, detail, fix). A
    project's entry runs only here, so an untrusted folder fails it; a user-scope entry
    still runs in the folders Gemini trusts, so here it is a warning."""
    found = folder_trust(where)
    if found.trusted:
        return "ok", f"Gemini CLI trusts {where.cwd}: {found.detail}", None
    if found.trusted is None:
        return "fail", found.detail, found.fix
    status = "fail" if scope == "project" else "warn"
    return (status, f"Gemini CLI starts no MCP server in {where.cwd}: it is not trusted "
            f"({found.detail})", found.fix)  # fmt: skip
