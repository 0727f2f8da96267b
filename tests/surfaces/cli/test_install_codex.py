"""`sqlgate install codex` says, on stderr, when Codex will not run the entry it wrote: a
project-scope entry in a project Codex does not trust, or an entry of the same name at the
other scope that wins (surfaces/integrations/codex_scopes.py has the cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.surfaces.cli.helpers import invoke
from tests.surfaces.integrations.fake_home import fake_home

USER_ENTRY = '[mcp_servers.sqlgate]\ncommand = "/opt/sqlgate"\nargs = ["serve", "--db", "/u.db"]\n'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_home(tmp_path, monkeypatch)


def user_config(home: Path, text: str) -> None:
    (home / "home" / ".codex").mkdir(exist_ok=True)
    (home / "home" / ".codex" / "config.toml").write_text(text, encoding="utf-8")


def trusted(home: Path) -> str:
    return f'\n[projects."{home / "project"}"]\ntrust_level = "trusted"\n'


@pytest.mark.parametrize(
    ("user", "says"),
    [
        pytest.param(None, ["is not trusted", "printf '%s\\n' "], id="no-user-config"),
        pytest.param(USER_ENTRY, ["runs the user-scope 'sqlgate'", "/u.db"], id="user-entry"),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
def test_a_project_install_in_an_untrusted_project_says_codex_ignores_it(
    home: Path, user: str | None, says: list[str], dry_run: bool
) -> None:
    if user is not None:
        user_config(home, user)
    result = invoke("install", "codex", "--scope", "project", *(["--dry-run"] * dry_run))
    assert result.exit_code == 0, (result.output, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: ")
    for words in says:
        assert words in line
    assert "restart Codex (or reload its MCP servers) to use" not in result.stdout


def test_a_project_install_in_a_trusted_project_says_nothing_more(home: Path) -> None:
    user_config(home, trusted(home))
    result = invoke("install", "codex", "--scope", "project")
    assert result.exit_code == 0, (result.output, result.stderr)
    assert result.stderr == ""
    assert "restart Codex (or reload its MCP servers) to use 'sqlgate'" in result.stdout


def test_a_project_install_over_a_user_entry_says_it_shadows_it(home: Path) -> None:
    user_config(home, USER_ENTRY + trusted(home))
    result = invoke("install", "codex", "--scope", "project")
    assert result.exit_code == 0, (result.output, result.stderr)
    (line,) = result.stderr.splitlines()
    assert "shadows the user-scope" in line
    assert "`sqlgate uninstall codex --scope user`" in line


def test_a_user_install_under_a_trusted_project_entry_says_it_is_shadowed(home: Path) -> None:
    user_config(home, trusted(home))
    assert invoke("install", "codex", "--scope", "project").exit_code == 0
    result = invoke("install", "codex", "--db", str(home / "u.db"))
    assert result.exit_code == 0, (result.output, result.stderr)
    (line,) = result.stderr.splitlines()
    assert "shadows this user-scope" in line
    assert f"`cd {home / 'project'} && sqlgate uninstall codex --scope project`" in line


def test_a_malformed_user_config_is_named_in_a_warning(home: Path) -> None:
    user_config(home, "[broken\n")
    result = invoke("install", "codex", "--scope", "project")
    assert result.exit_code == 0, (result.output, result.stderr)
    (line,) = result.stderr.splitlines()
    assert "not valid TOML" in line
    assert str(home / "home" / ".codex" / "config.toml") in line
