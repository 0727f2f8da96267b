"""A fake HOME for install tests: the clients' config folders under tmp_path, no SQLGATE_*
setting from the developer's shell, a project folder as the cwd, and sqlgate's own data
folder (backups, the install record) never the real one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlgate.config import FLAGS
from sqlgate.surfaces.integrations import install_records

# what moves Gemini CLI's files or decides its folder trust (gemini_trust.py)
GEMINI_VARIABLES = (
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_RESTRICTED_MODE",
)


def fake_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, extra: tuple[str, ...] = ()
) -> Path:
    """`tmp_path` holding home/, xdg/, project/ (the cwd) and the `extra` folders."""
    for name in ("home", "xdg", "project", *extra):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for name in GEMINI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "no-system-settings"))
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.setattr(install_records, "data_dir", lambda: tmp_path / "sqlgate-data")
    return tmp_path
