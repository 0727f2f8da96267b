"""`sqlgate install gemini` / `uninstall gemini` (issue 31 §2) through click's CliRunner in a
fake HOME: Gemini CLI's own settings shape, one database per project at user scope, comments
and other servers kept, the folder-trust warning, and an uninstall that leaves nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from sqlgate.surfaces.integrations import install as setup
from tests.surfaces.cli.helpers import invoke
from tests.surfaces.integrations.fake_home import fake_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_home(tmp_path, monkeypatch)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return tmp_path


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


def settings_file(home: Path, scope: str) -> Path:
    base = home / "project" if scope == "project" else home / "home"
    return base / ".gemini" / "settings.json"


def entry(home: Path, scope: str, name: str = "sqlgate") -> Any:
    return json.loads(settings_file(home, scope).read_text())["mcpServers"][name]


def trust(home: Path, level: str = "TRUST_FOLDER") -> Path:
    path = home / "home" / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({str(home / "project"): level}))
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def folders(root: Path) -> list[str]:
    """The folders under `root`, but sqlgate's own data folder (backups, its record)."""
    found = (str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())
    return sorted(f for f in found if not f.startswith("sqlgate-data"))


def launcher() -> setup.Launcher:
    return setup.find_launcher(platform=setup.current_platform())


# -- the entry --------------------------------------------------------------------------------
def test_user_scope_gives_each_project_its_own_database_with_an_absolute_launcher(
    home: Path,
) -> None:
    """Gemini starts a stdio server in its own working folder (no `cwd` in the entry), the
    project, so `serve --project-db` is each project's database, as for Claude Code."""
    output = ok(invoke("install", "gemini")).output
    found = entry(home, "user")
    assert found == {
        "command": launcher().command,
        "args": launcher().argv("serve", "--project-db"),
    }
    assert Path(found["command"]).is_absolute()
    assert "each project gets its own database" in output
    assert "the folder Gemini CLI runs in" in output
    assert "restart Gemini CLI" in output


def test_user_scope_with_db_names_that_file(home: Path) -> None:
    ok(invoke("install", "gemini", "--db", str(home / "one.db")))
    assert entry(home, "user")["args"] == launcher().argv("serve", "--db", str(home / "one.db"))


def test_project_scope_names_nothing_of_this_machine(home: Path) -> None:
    ok(invoke("install", "gemini", "--scope", "project"))
    assert entry(home, "project") == {
        "command": "sqlgate",
        "args": ["serve", "--db", ".sqlgate/agent.db"],
    }
    assert str(home) not in settings_file(home, "project").read_text()


def test_comments_and_other_servers_are_kept(home: Path) -> None:
    path = settings_file(home, "user")
    path.parent.mkdir(parents=True)
    seed = (
        '// my Gemini settings\n{\n  "theme": "Dracula", /* keep */\n  "mcpServers": {\n'
        '    "other": {"command": "node", "args": ["x.js"], "trust": false}\n  }\n}'
    )
    path.write_text(seed)
    ok(invoke("install", "gemini"))
    text = path.read_text()
    assert text.startswith("// my Gemini settings\n")
    assert "/* keep */" in text
    assert not text.endswith("\n")  # Gemini writes none; the file's shape stays
    servers = setup.load_json(path, text)["mcpServers"]
    assert list(servers) == ["other", "sqlgate"]
    assert servers["other"] == {"command": "node", "args": ["x.js"], "trust": False}


@pytest.mark.parametrize("scope", ["user", "project"])
def test_dry_run_writes_nothing(home: Path, scope: str) -> None:
    result = ok(invoke("install", "gemini", "--scope", scope, "--dry-run"))
    assert f"would write {settings_file(home, scope)}" in result.output
    assert '+    "sqlgate": {' in result.output
    assert snapshot(home) == {}
    assert folders(home) == ["home", "project", "xdg"]


# -- folder trust ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scope", "level", "warned"),
    [
        pytest.param("project", None, "this project's servers", id="project-no-rule"),
        pytest.param("project", "DO_NOT_TRUST", '"DO_NOT_TRUST"', id="project-distrusted"),
        pytest.param("user", None, "user-scope ones too", id="user-no-rule"),
        pytest.param("project", "TRUST_FOLDER", None, id="project-trusted"),
        pytest.param("user", "TRUST_PARENT", None, id="user-trusted-parent"),
    ],
)  # fmt: skip
def test_install_says_when_the_folder_is_not_trusted_and_how_to_trust_it(
    home: Path, scope: str, level: str | None, warned: str | None
) -> None:
    rules = trust(home, level) if level else home / "home/.gemini/trustedFolders.json"
    before = rules.read_bytes() if level else None
    result = ok(invoke("install", "gemini", "--scope", scope))
    if warned is None:
        assert "trust" not in result.stderr
    else:
        assert warned in result.stderr
        assert str(home / "project") in result.stderr
        assert "TRUST_FOLDER" in result.stderr
        assert str(rules) in result.stderr
    # sqlgate never writes Gemini's trust file
    assert (rules.read_bytes() if level else None) == before
    assert rules.exists() is bool(level)


def test_dry_run_warns_about_trust_too(home: Path) -> None:
    result = ok(invoke("install", "gemini", "--scope", "project", "--dry-run"))
    assert "not trusted" in result.stderr


def test_a_broken_trust_file_is_named_and_the_install_still_happens(home: Path) -> None:
    path = home / "home" / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True)
    path.write_text("{oops")
    result = ok(invoke("install", "gemini", "--scope", "project"))
    assert str(path) in result.stderr
    assert "is not valid JSON" in result.stderr
    assert settings_file(home, "project").is_file()


# -- uninstall ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scope", ["user", "project"])
def test_uninstall_removes_the_file_and_the_gemini_folder_install_made(
    home: Path, scope: str
) -> None:
    before = folders(home)
    ok(invoke("install", "gemini", "--scope", scope))
    assert settings_file(home, scope).is_file()
    ok(invoke("uninstall", "gemini", "--scope", scope))
    assert folders(home) == before
    assert [p for p in snapshot(home) if "sqlgate-data" not in p] == []


def test_uninstall_keeps_a_gemini_folder_that_gemini_filled_meanwhile(home: Path) -> None:
    ok(invoke("install", "gemini"))
    history = home / "home" / ".gemini" / "projects.json"
    history.write_text("{}")  # Gemini CLI writes its own files there when it runs
    ok(invoke("uninstall", "gemini"))
    assert not settings_file(home, "user").exists()
    assert history.read_text() == "{}"


def test_uninstall_leaves_the_trust_file_alone(home: Path) -> None:
    rules = trust(home)
    ok(invoke("install", "gemini", "--scope", "project"))
    ok(invoke("uninstall", "gemini", "--scope", "project"))
    assert json.loads(rules.read_text()) == {str(home / "project"): "TRUST_FOLDER"}


def test_home_as_the_project_is_one_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini ignores workspace settings when the folder is home: both scopes are one file."""
    monkeypatch.chdir(home / "home")
    ok(invoke("install", "gemini", "--db", str(home / "a.db")))
    result = invoke("doctor", "--client", "gemini", "--json")
    targets = {json.loads(line)["target"] for line in result.stdout.splitlines()}
    assert targets == {'gemini user "sqlgate"'}


# -- scope shadowing ---------------------------------------------------------------------------
USER_ENTRY = {"command": "/opt/sqlgate", "args": ["serve", "--db", "/u.db"]}


def user_settings(home: Path, servers: dict[str, Any]) -> None:
    path = settings_file(home, "user")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))


@pytest.mark.parametrize("mode", [[], ["--dry-run"], ["--json"]], ids=["write", "dry-run", "json"])
def test_a_project_install_over_a_user_entry_says_it_shadows_it(
    home: Path, mode: list[str]
) -> None:
    trust(home)
    user_settings(home, {"sqlgate": USER_ENTRY})
    result = ok(invoke("install", "gemini", "--scope", "project", *mode))
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: this project-scope 'sqlgate' entry")
    for words in ("`sqlgate serve --db .sqlgate/agent.db`", "`/opt/sqlgate serve --db /u.db`",
                  str(settings_file(home, "user")), "`sqlgate uninstall gemini --scope user`",
                  "`--name sqlgate-project`"):  # fmt: skip
        assert words in line, line
    if mode == ["--json"]:
        assert json.loads(result.stdout)["file"] == str(settings_file(home, "project"))


def test_a_user_install_under_a_project_entry_says_it_is_shadowed(home: Path) -> None:
    trust(home)
    ok(invoke("install", "gemini", "--scope", "project"))
    result = ok(invoke("install", "gemini", "--db", str(home / "u.db")))
    (line,) = result.stderr.splitlines()
    assert "shadows this user-scope one" in line
    assert f"`cd {home / 'project'} && sqlgate uninstall gemini --scope project`" in line
    assert "`--name sqlgate-user`" in line


@pytest.mark.parametrize(
    ("servers", "scope"),
    [
        pytest.param({}, "project", id="project-only"),
        pytest.param({"other": USER_ENTRY}, "project", id="another-name"),
        pytest.param({"sqlgate": {"command": "sqlgate",
                                  "args": ["serve", "--db", ".sqlgate/agent.db"]}},
                     "project", id="same-command"),
        pytest.param({}, "user", id="user-only"),
    ],
)  # fmt: skip
def test_nothing_is_said_when_no_other_scope_competes(
    home: Path, servers: dict[str, Any], scope: str
) -> None:
    trust(home)
    if servers:
        user_settings(home, servers)
    assert ok(invoke("install", "gemini", "--scope", scope)).stderr == ""


def test_in_an_untrusted_folder_the_shadow_is_said_with_the_trust_step(home: Path) -> None:
    user_settings(home, {"sqlgate": USER_ENTRY})
    result = ok(invoke("install", "gemini", "--scope", "project"))
    shadow, untrusted = result.stderr.splitlines()
    assert "shadows the user-scope one" in shadow
    assert "once Gemini CLI trusts" in shadow
    assert "not trusted" in untrusted


def test_malformed_user_settings_are_named_and_the_install_still_happens(home: Path) -> None:
    trust(home)
    path = settings_file(home, "user")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{oops")
    result = ok(invoke("install", "gemini", "--scope", "project"))
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: cannot tell which 'sqlgate' entry Gemini CLI starts: ")
    assert str(path) in line
    assert settings_file(home, "project").is_file()
