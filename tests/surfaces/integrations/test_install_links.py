"""Client configs that are symlinks (dotfiles): written through, the link kept, the target
backed up and replaced atomically; dangling links, links to folders and loops are decided
before anything is written."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations import install
from sqlgate.surfaces.integrations.install import (
    CLIENTS,
    ConfigUnwritable,
    Launcher,
    Where,
    apply,
    link_target,
    plan_capture,
    plan_install,
    plan_uninstall,
)
from tests.surfaces.integrations.fake_home import fake_home

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")

LAUNCHER = Launcher("/opt/tools/bin/sqlgate")
NOW = datetime(2026, 5, 4, 3, 2, 1, tzinfo=timezone.utc)
OTHER = {"mcpServers": {"other": {"command": "other", "args": ["x"]}}}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME with a dotfiles folder beside it; the project folder is the cwd."""
    return fake_home(tmp_path, monkeypatch, extra=("dotfiles",))


@pytest.fixture
def where(home: Path) -> Where:
    return Where("linux", home / "home", home / "project", os.environ)


def dotfile(home: Path, relative: str, text: str, mode: int = 0o600) -> Path:
    target = home / "dotfiles" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    target.chmod(mode)
    return target


def link(path: Path, to: str | Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(to)
    return path


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


# -- writing through -----------------------------------------------------------------------
def test_install_writes_through_a_relative_link_and_backs_up_the_target(
    home: Path, where: Where
) -> None:
    before = json.dumps(OTHER, indent=2) + "\n"
    target = dotfile(home, "cursor/mcp.json", before)
    config = link(home / "home" / ".cursor" / "mcp.json", "../../dotfiles/cursor/mcp.json")

    change = plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, home / "a.db", "user", where)
    backup = apply(change, NOW)

    assert config.is_symlink()
    assert os.readlink(config) == "../../dotfiles/cursor/mcp.json"
    assert set(json.loads(target.read_text())["mcpServers"]) == {"other", "sqlgate"}
    assert backup is not None
    assert backup.parent == home / "sqlgate-data" / "backups" / "cursor"
    assert backup.read_text() == before
    assert target.stat().st_mode & 0o777 == 0o600
    assert names_in(config.parent) == ["mcp.json"]  # no temp file, no backup beside the link
    assert names_in(target.parent) == ["mcp.json"]


def test_a_chain_of_links_is_followed_to_the_last_file(home: Path, where: Where) -> None:
    target = dotfile(home, "real/claude.json", json.dumps(OTHER))
    middle = link(home / "dotfiles" / "claude.json", "real/claude.json")  # relative to its folder
    config = link(home / "home" / ".claude.json", middle)  # absolute

    assert link_target(config) == target.resolve()
    apply(plan_install(CLIENTS["claude-code"], "sqlgate", LAUNCHER, home / "a.db", "user",
                       where), NOW)  # fmt: skip
    assert config.is_symlink()
    assert middle.is_symlink()
    assert "sqlgate" in json.loads(target.read_text())["mcpServers"]


def test_a_plain_file_has_no_link_target(home: Path, where: Where) -> None:
    assert link_target(home / "home" / ".claude.json") is None
    (home / "home" / ".claude.json").write_text("{}")
    assert link_target(home / "home" / ".claude.json") is None


def test_uninstall_writes_through_the_link(home: Path, where: Where) -> None:
    target = dotfile(home, "codex.toml", '[mcp_servers.sqlgate]\ncommand = "x"\nargs = []\n')
    config = link(home / "home" / ".codex" / "config.toml", target)

    backup = apply(plan_uninstall(CLIENTS["codex"], "sqlgate", "user", where), NOW)

    assert config.is_symlink()
    assert "sqlgate" not in target.read_text()
    assert backup is not None
    assert backup.parent == home / "sqlgate-data" / "backups" / "codex"


def test_capture_hooks_are_written_through_a_linked_settings_file(home: Path, where: Where) -> None:
    target = dotfile(home, "claude/settings.json", '{"theme": "dark"}\n')
    config = link(
        home / "home" / ".claude" / "settings.json", "../../dotfiles/claude/settings.json"
    )

    apply(plan_capture("/opt/tools/bin/sqlgate capture --db /a.db", "user", where), NOW)

    assert config.is_symlink()
    written = json.loads(target.read_text())
    assert written["theme"] == "dark"
    assert set(written["hooks"]) == set(install.CAPTURE_EVENTS)


# -- what a link can point at -----------------------------------------------------------------
def test_a_dangling_link_creates_its_target_in_an_existing_folder(home: Path, where: Where) -> None:
    (home / "dotfiles" / "cursor").mkdir()
    config = link(home / "home" / ".cursor" / "mcp.json", home / "dotfiles/cursor/mcp.json")

    change = plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, home / "a.db", "user", where)
    assert change.before is None
    assert apply(change, NOW) is None  # nothing to back up

    assert config.is_symlink()
    assert "sqlgate" in json.loads((home / "dotfiles/cursor/mcp.json").read_text())["mcpServers"]


def test_a_dangling_link_into_a_missing_folder_is_refused(home: Path, where: Where) -> None:
    config = link(home / "home" / ".cursor" / "mcp.json", home / "gone" / "mcp.json")
    with pytest.raises(ConfigUnwritable, match=r"link to .*gone/mcp\.json.*does not exist"):
        plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, home / "a.db", "user", where)
    assert config.is_symlink()
    assert not (home / "gone").exists()


def test_a_link_to_a_folder_is_refused(home: Path, where: Where) -> None:
    link(home / "home" / ".claude.json", home / "dotfiles")
    with pytest.raises(ConfigUnwritable, match=r"link to a folder"):
        plan_install(CLIENTS["claude-code"], "sqlgate", LAUNCHER, home / "a.db", "user", where)


def test_a_link_loop_is_refused(home: Path, where: Where) -> None:
    link(home / "home" / ".claude.json", home / "home" / "loop-b")
    link(home / "home" / "loop-b", home / "home" / ".claude.json")
    with pytest.raises(ConfigUnwritable, match=r"is a symlink loop"):
        plan_install(CLIENTS["claude-code"], "sqlgate", LAUNCHER, home / "a.db", "user", where)


def test_an_unwritable_target_folder_is_refused_with_both_files_unchanged(
    home: Path, where: Where, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = dotfile(home, "cursor/mcp.json", json.dumps(OTHER))
    config = link(home / "home" / ".cursor" / "mcp.json", target)
    change = plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, home / "a.db", "user", where)
    real_mkstemp = tempfile.mkstemp

    def refuse_in_dotfiles(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs["dir"]) == target.parent:
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refuse_in_dotfiles)
    with pytest.raises(ConfigUnwritable, match=r"cannot write .*cursor/mcp\.json.*link"):
        apply(change, NOW)
    assert config.is_symlink()
    assert json.loads(target.read_text()) == OTHER
    assert names_in(target.parent) == ["mcp.json"]


# -- what the command says ---------------------------------------------------------------------
def test_install_and_uninstall_say_they_wrote_through_the_link(home: Path) -> None:
    target = dotfile(home, "cursor/mcp.json", json.dumps(OTHER)).resolve()
    config = link(home / "home" / ".cursor" / "mcp.json", "../../dotfiles/cursor/mcp.json")

    added = invoke("install", "cursor", "--db", str(home / "a.db"))
    assert added.exit_code == 0, added.output
    assert f"wrote through the link {config} -> {target}" in added.stdout
    assert config.is_symlink()

    dry = invoke("uninstall", "cursor", "--dry-run")
    assert f"(through the link {config} -> {target})" in dry.stdout

    removed = invoke("uninstall", "cursor")
    assert removed.exit_code == 0, removed.output
    assert f"wrote through the link {config} -> {target}" in removed.stdout
    assert config.is_symlink()
    assert json.loads(target.read_text())["mcpServers"] == OTHER["mcpServers"]


def test_install_with_capture_writes_both_linked_files(home: Path) -> None:
    config = dotfile(home, "claude.json", json.dumps(OTHER))
    settings = dotfile(home, "settings.json", "{}")
    link(home / "home" / ".claude.json", config)
    link(home / "home" / ".claude" / "settings.json", settings)

    result = invoke("install", "claude-code", "--capture", "--db", str(home / "a.db"))

    assert result.exit_code == 0, result.output
    assert result.stdout.count("wrote through the link") == 2
    assert (home / "home" / ".claude.json").is_symlink()
    assert (home / "home" / ".claude" / "settings.json").is_symlink()
    assert "hooks" in json.loads(settings.read_text())


def test_a_refused_link_is_one_error_line_with_exit_2(home: Path) -> None:
    link(home / "home" / ".claude.json", home / "dotfiles")
    result = invoke("install", "claude-code", "--db", str(home / "a.db"))
    assert result.exit_code == 2
    assert result.stderr.startswith("sqlgate: error: ")
    assert "link to a folder" in result.stderr
