"""What the client-config editors share: the planned edit (`Change`), its two errors, reading
a config file (through symlinks), and JSON/JSONC loading and editing.

Both `install.py` (JSON clients, capture hooks) and `toml_config.py` (Codex) build on this
module; neither imports the other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.jsonc import JsoncError, load, rewrite

__all__ = [
    "Change",
    "ConfigMalformed",
    "ConfigUnwritable",
    "KeyPath",
    "dump_json",
    "edit_json",
    "link_target",
    "load_json",
    "read_config",
    "section",
]

_MAX_LINKS = 40  # hops followed before a chain of links counts as a loop (Linux's MAXSYMLINKS)
KeyPath = tuple[str, ...]


class ConfigMalformed(InvalidArgument):
    """The client's config file does not parse or is not shaped as documented; left untouched."""


class ConfigUnwritable(InvalidArgument):
    """The client's config file or its folder cannot be read or written."""


@dataclass(frozen=True)
class Change:
    """One file's planned edit.

    `after` is None when the file already says what we want. `delete` removes the file
    instead (sqlgate created it and it holds nothing else now). `changed` lists the fields of
    an updated entry as (field, old, new). `added_keys` are key paths this edit creates in the
    file (recorded, so that uninstall removes them again once empty); `removed_keys` are
    recorded ones it takes out; `added_rules` and `removed_rules` the same for Claude Code
    permission rules (list, rule). `group` names the backup folder (the client).
    """

    path: Path
    before: str | None  # None: the file does not exist
    after: str | None
    summary: str
    group: str = "other"
    action: str = "none"  # add, update, remove or none
    changed: tuple[tuple[str, str, str], ...] = ()
    added_keys: tuple[KeyPath, ...] = ()
    removed_keys: tuple[KeyPath, ...] = ()
    added_rules: tuple[tuple[str, str], ...] = ()
    removed_rules: tuple[tuple[str, str], ...] = ()
    delete: bool = False

    @property
    def needed(self) -> bool:
        if self.delete:
            return self.before is not None
        return self.after is not None and self.after != self.before


# ---------------------------------------------------------------------------------------------
# reading


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


def read_config(path: Path) -> str | None:
    """The file's text (through a symlink); None when it does not exist."""
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


# ---------------------------------------------------------------------------------------------
# JSON with comments


def load_json(path: Path, text: str | None) -> dict[str, Any]:
    """The file's object; comments and trailing commas (JSONC) are accepted."""
    if text is None or not text.strip():
        return {}
    try:
        data = load(text)
    except JsoncError as exc:
        raise ConfigMalformed(
            f"{path} is not valid JSON ({exc.msg} at line {exc.line}, column {exc.column}); "
            "it was left untouched: fix it there, or add the entry by hand"
        ) from None
    if not isinstance(data, dict):
        raise ConfigMalformed(
            f"{path} holds a JSON {type(data).__name__}, not an object; it was left untouched"
        )
    return data


def section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """`data[key]` when it is an object, {} when absent; anything else is refused."""
    found = data.get(key, {})
    if not isinstance(found, dict):
        raise ConfigMalformed(f"{path}: {key!r} is not an object; the file was left untouched")
    return found


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def edit_json(path: Path, text: str | None, old: dict[str, Any], new: dict[str, Any]) -> str:
    """`text` edited in place so that it holds `new`; a new or blank file is written whole.

    The edit keeps every comment and every byte outside the changed parts; one that would
    parse to anything but `new` is refused before it is written.
    """
    if text is None or not text.strip():
        return dump_json(new)
    after = rewrite(text, old, new)
    try:
        parsed = load(after)
    except JsoncError:
        parsed = None
    if parsed != new:
        raise ConfigMalformed(
            f"{path}: sqlgate could not edit this file without changing something else; "
            "it was left untouched: add the entry by hand"
        )
    return after
