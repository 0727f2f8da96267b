"""Codex and Gemini CLI config files laid out in a fake HOME (fake_home.py) for the scope,
trust and doctor tests: an entry at user scope, at project scope, and the project's trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.toml_config import toml_table


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def gemini_settings(where: Where, scope: str) -> Path:
    return (where.cwd if scope == "project" else where.home) / ".gemini" / "settings.json"


def gemini_layout(
    where: Where, user: Any = None, project: Any = None, trusted: bool = False,
    user_name: str = "sqlgate", project_name: str = "sqlgate",
) -> None:  # fmt: skip
    """Gemini's settings at each scope holding one entry, and the project folder trusted."""
    for scope, name, entry in (("user", user_name, user), ("project", project_name, project)):
        if entry is not None:
            write(gemini_settings(where, scope), json.dumps({"mcpServers": {name: entry}}))
    if trusted:
        rules = {str(where.cwd): "TRUST_FOLDER"}
        write(where.home / ".gemini" / "trustedFolders.json", json.dumps(rules))


def codex_layout(
    where: Where, user: Any = None, project: Any = None, trust: str | None = None, extra: str = ""
) -> None:
    """Codex's config at each scope holding an entry `sqlgate`, the project's trust_level in the
    user's config, and `extra` lines at the top of it."""
    text = extra
    if user is not None:
        text += toml_table(("mcp_servers", "sqlgate"), user)
    if trust is not None:
        text += f'\n[projects."{where.cwd}"]\ntrust_level = "{trust}"\n'
    if text:
        write(where.home / ".codex" / "config.toml", text)
    if project is not None:
        write(where.cwd / ".codex" / "config.toml", toml_table(("mcp_servers", "sqlgate"), project))
