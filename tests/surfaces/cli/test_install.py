"""`sqlgate install` / `sqlgate uninstall` through click's CliRunner, with a fake HOME."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result

from sqlgate.home import Home, guarded
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations import client_paths as install_paths
from sqlgate.surfaces.integrations import install as setup
from tests.surfaces.integrations.fake_home import fake_home

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ALL_CLIENTS = list(setup.CLIENTS)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME (with XDG_CONFIG_HOME and APPDATA) and a project folder as the cwd."""
    fake_home(tmp_path, monkeypatch, extra=("appdata",))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
    return tmp_path


def on(platform: str, monkeypatch: pytest.MonkeyPatch) -> setup.Where:
    """Make the CLI see `platform`'s path scheme."""
    monkeypatch.setattr(install_paths, "current_platform", lambda: platform)
    return setup.Where.here()


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


def error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sqlgate: error: ")
    return lines[0]


def entry_in(client: str, path: Path, name: str = "sqlgate") -> Any:
    spec = setup.CLIENTS[client]
    text = path.read_text()
    data = tomllib.loads(text) if spec.toml else json.loads(text)
    return data.get(spec.servers_key, {}).get(name)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_install_then_uninstall_each_client(
    home: Path, monkeypatch: pytest.MonkeyPatch, client: str, platform: str
) -> None:
    where = on(platform, monkeypatch)
    path = setup.CLIENTS[client].path(setup.resolve_scope(setup.CLIENTS[client], None), where)

    installed = invoke("install", client, "--db", "agent.db")

    assert installed.exit_code == 0, installed.output
    launcher = setup.find_launcher(platform=platform)
    entry = entry_in(client, path)
    assert entry["command"] == launcher.command
    assert entry["args"] == launcher.argv("serve", "--db", str(home / "project" / "agent.db"))
    assert f'added {client} entry "sqlgate" ({path}; new file)' in installed.output

    removed = invoke("uninstall", client)

    assert removed.exit_code == 0, removed.output
    assert not path.exists()  # sqlgate created it, and it held nothing else
    assert (
        f'removed {client} entry "sqlgate" and the file sqlgate had created ({path} removed; '
        "backup: "
    ) in removed.output


def test_second_install_says_nothing_to_change_and_writes_nothing(home: Path) -> None:
    assert invoke("install", "cursor").exit_code == 0
    before = snapshot(home)

    again = invoke("install", "cursor")

    assert again.exit_code == 0
    assert 'cursor entry "sqlgate" is already installed, nothing changed' in again.output
    assert snapshot(home) == before


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_dry_run_prints_the_change_and_writes_nothing(home: Path, client: str) -> None:
    result = invoke("install", client, "--dry-run", "--db", "/data/agent.db")

    assert result.exit_code == 0, result.output
    assert "would write " in result.output
    assert f'added {client} entry "sqlgate"' in result.output
    assert any(
        line.startswith("+") and "/data/agent.db" in line for line in result.output.splitlines()
    )
    assert snapshot(home) == {}


def test_dry_run_uninstall_writes_nothing(home: Path) -> None:
    assert invoke("install", "vscode", "--scope", "workspace").exit_code == 0
    before = snapshot(home)
    result = invoke("uninstall", "vscode", "--scope", "workspace", "--dry-run")
    assert result.exit_code == 0
    assert '-    "sqlgate": {' in result.output
    assert snapshot(home) == before


def test_db_comes_from_sqlgate_db_when_not_given(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLGATE_DB", "~/team.db")
    assert invoke("install", "claude-desktop").exit_code == 0
    path = setup.CLIENTS["claude-desktop"].path(None, setup.Where.here())
    assert entry_in("claude-desktop", path)["args"][-1] == str(home / "home" / "team.db")


def test_name_option_sets_the_entry_name(home: Path) -> None:
    assert invoke("install", "codex", "--name", "memory").exit_code == 0
    path = home / "home" / ".codex" / "config.toml"
    assert entry_in("codex", path, "memory") is not None
    assert entry_in("codex", path, "sqlgate") is None


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        pytest.param(["install", "windsurf"], "unknown client 'windsurf'", id="unknown-client"),
        pytest.param(["uninstall", "nope"], "unknown client 'nope'", id="unknown-client-uninstall"),
        pytest.param(["install", "claude-desktop", "--scope", "user"], "has no scopes",
                     id="desktop-scope"),
        pytest.param(["install", "cursor", "--scope", "team"], "not one of", id="bad-scope"),
        pytest.param(["install", "cursor", "--capture"], "only for claude-code", id="capture"),
        pytest.param(["install", "cursor", "--name", "a b"], "--name", id="bad-name"),
    ],
)  # fmt: skip
def test_bad_usage_is_one_line_and_exit_2_and_writes_nothing(
    home: Path, args: list[str], phrase: str
) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert phrase in error_line(result)
    assert snapshot(home) == {}


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_malformed_config_exits_2_and_is_left_byte_identical(home: Path, command: str) -> None:
    path = home / "home" / ".claude.json"
    path.write_bytes(b'{"mcpServers": {"other": {}},,}')
    before = snapshot(home)

    result = invoke(command, "claude-code")

    assert result.exit_code == 2
    assert "is not valid JSON" in error_line(result)
    assert snapshot(home) == before


def test_unwritable_location_exits_2_with_one_line(home: Path) -> None:
    (home / "home" / ".cursor").write_text("not a folder")
    before = snapshot(home)
    result = invoke("install", "cursor")
    assert result.exit_code == 2
    assert "cannot read" in error_line(result)
    assert snapshot(home) == before


def test_capture_registers_hooks_beside_the_server(home: Path) -> None:
    result = invoke("install", "claude-code", "--capture", "--scope", "project", "--db", "a.db")

    assert result.exit_code == 0, result.output
    hooks = json.loads((home / "project" / ".claude" / "settings.json").read_text())["hooks"]
    command = 'sqlgate capture --db "${CLAUDE_PROJECT_DIR:-.}/a.db"'
    assert sorted(hooks) == sorted(setup.CAPTURE_EVENTS)
    assert all(group[-1]["hooks"] == [setup.hook_for(event, command)]
               for event, group in hooks.items())  # fmt: skip
    assert entry_in("claude-code", home / "project" / ".mcp.json") is not None


def test_uninstall_claude_code_also_removes_the_capture_hooks(home: Path) -> None:
    settings = home / "home" / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "say done"}]}]}}))  # fmt: skip
    assert invoke("install", "claude-code", "--capture").exit_code == 0

    result = invoke("uninstall", "claude-code")

    assert result.exit_code == 0, result.output
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks == {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    assert not (home / "home" / ".claude.json").exists()  # created by install, now empty


def test_help_names_every_client(home: Path) -> None:
    result = invoke("install", "--help")
    assert result.exit_code == 0
    for client in ALL_CLIENTS:
        assert client in result.output


# -- issue 13: what users expect of an installer -------------------------------------------------


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder under `root`."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "args",
    [
        *[pytest.param([client], id=client) for client in ALL_CLIENTS],
        pytest.param(["claude-code", "--capture"], id="claude-code-capture"),
        pytest.param(["claude-code", "--capture", "--scope", "project"], id="cc-project-capture"),
        pytest.param(["vscode", "--scope", "project"], id="vscode-project"),
        pytest.param(["cursor", "--scope", "project"], id="cursor-project"),
        pytest.param(["codex", "--scope", "project"], id="codex-project"),
    ],
)
def test_install_then_uninstall_on_a_clean_home_leaves_nothing_behind(
    home: Path, args: list[str]
) -> None:
    before = [tree(home / name) for name in ("home", "project", "xdg", "appdata")]

    assert invoke("install", *args).exit_code == 0
    assert invoke("install", *args, "--db", ".sqlgate/other.db").exit_code == 0  # an update
    scope = args[args.index("--scope") :][:2] if "--scope" in args else []
    result = invoke("uninstall", args[0], *scope)

    assert result.exit_code == 0, result.output
    assert [tree(home / name) for name in ("home", "project", "xdg", "appdata")] == before
    assert sorted(p.name for p in (home / "sqlgate-data" / "backups").iterdir())


def test_uninstall_keeps_a_servers_object_and_hook_lists_that_were_there_before(
    home: Path,
) -> None:
    config = home / "home" / ".claude.json"
    config.write_text('{\n  "mcpServers": {},\n  "theme": "dark"\n}\n')
    settings = home / "home" / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "hooks": {\n    "Stop": []\n  }\n}\n')
    before = tree(home / "home")

    assert invoke("install", "claude-code", "--capture").exit_code == 0
    assert invoke("uninstall", "claude-code").exit_code == 0

    assert tree(home / "home") == before


def test_a_reinstall_with_another_db_says_what_changed_in_one_line(home: Path) -> None:
    assert invoke("install", "cursor", "--db", str(home / "a.db")).exit_code == 0

    result = invoke("install", "cursor", "--db", str(home / "b.db"))

    assert result.exit_code == 0, result.output
    path = home / "home" / ".cursor" / "mcp.json"
    first = result.output.splitlines()[0]
    assert first.startswith(
        f'updated cursor entry "sqlgate": --db {home / "a.db"} → {home / "b.db"} ({path}; '
        f"backup: {home / 'sqlgate-data' / 'backups' / 'cursor'}"
    )
    assert entry_in("cursor", path)["args"][-1] == str(home / "b.db")


def test_json_output_has_the_action_and_what_changed(home: Path) -> None:
    added = invoke("install", "vscode", "--db", str(home / "a.db"), "--json")
    updated = invoke("install", "vscode", "--db", str(home / "b.db"), "--json")
    same = invoke("install", "vscode", "--db", str(home / "b.db"), "--json")

    records = [json.loads(r.output) for r in (added, updated, same)]
    assert [r["action"] for r in records] == ["add", "update", "none"]
    assert records[0]["new_file"] is True
    assert records[1]["changed"] == {"db": {"old": str(home / "a.db"), "new": str(home / "b.db")}}
    assert records[1]["backup"] is not None
    assert records[2] == {**records[2], "written": False, "backup": None, "changed": {}}


def test_an_identical_reinstall_writes_no_backup(home: Path) -> None:
    assert invoke("install", "codex").exit_code == 0
    assert invoke("install", "codex").exit_code == 0
    assert not (home / "sqlgate-data" / "backups").exists()


def test_backups_live_in_one_folder_and_only_the_newest_ten_stay(home: Path) -> None:
    for n in range(12):
        assert invoke("install", "claude-desktop", "--db", str(home / f"{n}.db")).exit_code == 0

    backups = home / "sqlgate-data" / "backups" / "claude-desktop"
    assert len(list(backups.iterdir())) == 10
    config_folder = home / "xdg" / "Claude"
    assert sorted(p.name for p in config_folder.iterdir()) == ["claude_desktop_config.json"]
    assert not any("backup" in p.name for p in (home / "home").rglob("*"))


@pytest.mark.parametrize(
    ("client", "expected_db"),
    [
        pytest.param("claude-code", ".sqlgate/agent.db", id="claude-code"),
        pytest.param("vscode", "${workspaceFolder}/.sqlgate/agent.db", id="vscode"),
        pytest.param("cursor", "${workspaceFolder}/.sqlgate/agent.db", id="cursor"),
        pytest.param("codex", ".sqlgate/agent.db", id="codex"),
    ],
)
def test_project_scope_writes_nothing_of_this_machine(
    home: Path, client: str, expected_db: str
) -> None:
    extra = ["--capture"] if client == "claude-code" else []
    result = invoke("install", client, "--scope", "project", *extra)

    assert result.exit_code == 0, result.output
    assert ".sqlgate/ keeps it and sqlgate's records of it out of git" in result.output
    written = [p for p in (home / "project").rglob("*") if p.is_file()]
    assert written
    for path in written:
        text = path.read_text()
        assert str(home) not in text
        assert "/tmp" not in text
        assert str(Path.home()) not in text
    spec = setup.CLIENTS[client]
    entry = entry_in(client, spec.path("project", setup.Where.here()))
    assert entry["command"] == "sqlgate"
    assert entry["args"] == ["serve", "--db", expected_db]


def test_project_scope_takes_a_db_inside_the_project_relative_to_it(home: Path) -> None:
    result = invoke("install", "claude-code", "--scope", "project", "--db",
                    str(home / "project" / "data" / "team.db"))  # fmt: skip
    assert result.exit_code == 0, result.output
    entry = entry_in("claude-code", home / "project" / ".mcp.json")
    assert entry["args"] == ["serve", "--db", "data/team.db"]


def test_project_scope_with_the_apps_database_notes_it_in_the_projects_home(home: Path) -> None:
    """`install claude-code --scope project --db db.sqlite3` (issue 33): the commands run in
    the project find the app's database at once, before the client first starts the server."""
    project = home / "project"
    app_db = project / "db.sqlite3"
    conn = apsw.Connection(str(app_db))
    conn.execute("CREATE TABLE auth_user (id INTEGER PRIMARY KEY)")
    conn.close()
    before = app_db.read_bytes()
    result = invoke("install", "claude-code", "--scope", "project", "--db", "db.sqlite3")
    assert result.exit_code == 0, result.output
    assert "sqlgate keeps its records of it in .sqlgate/" in result.output
    assert (project / ".sqlgate" / ".gitignore").read_text() == "*\n"
    assert guarded(Home(project / ".sqlgate", project)) == [app_db.resolve()]
    assert app_db.read_bytes() == before


@pytest.mark.parametrize("db", ["../elsewhere.db", "/var/lib/agent.db", "."])
def test_project_scope_refuses_a_db_outside_the_project(home: Path, db: str) -> None:
    result = invoke("install", "claude-code", "--scope", "project", "--db", db)
    assert result.exit_code == 2
    assert "is not inside this project" in error_line(result)
    assert snapshot(home) == {}


def test_project_scope_ignores_this_machines_sqlgate_db(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLGATE_DB", str(home / "mine.db"))
    assert invoke("install", "codex", "--scope", "project").exit_code == 0
    assert entry_in("codex", home / "project" / ".codex" / "config.toml")["args"][-1] == (
        ".sqlgate/agent.db"
    )


def test_vscode_mcp_json_with_comments_is_edited_and_restored_exactly(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = home / "project" / ".vscode" / "mcp.json"
    path.parent.mkdir()
    original = (
        "{\n"
        "  // shared servers\n"
        '  "servers": {\n'
        '    "docs": { "type": "http", "url": "https://example.com/mcp" }, /* remote */\n'
        "  },\n"
        "}\n"
    )
    path.write_text(original)

    assert invoke("install", "vscode", "--scope", "project").exit_code == 0
    text = path.read_text()
    assert "// shared servers" in text
    assert "/* remote */" in text
    assert invoke("uninstall", "vscode", "--scope", "project").exit_code == 0

    assert path.read_text() == original


def test_help_explains_scopes_backups_and_comments(home: Path) -> None:
    result = invoke("install", "--help")
    text = " ".join(result.output.split())
    for phrase in ("--scope project", "sqlgate` from PATH", ".sqlgate/agent.db",
                   "${workspaceFolder}", "old → new", "(JSONC) are kept", "backups/CLIENT/",
                   "the newest 10 kept"):  # fmt: skip
        assert phrase in text, phrase


def test_a_run_moves_the_backups_older_versions_left_in_home(home: Path) -> None:
    config = home / "home" / ".claude.json"
    config.write_text("{}\n")
    for n in range(12):
        config.with_name(f".claude.json.sqlgate-backup-202601{n + 1:02}T000000Z").write_text("{}")

    assert invoke("install", "claude-code", "--db", str(home / "a.db")).exit_code == 0

    assert sorted(p.name for p in (home / "home").iterdir()) == [".claude", ".claude.json"]
    assert [p.name for p in (home / "home" / ".claude").iterdir()] == ["settings.json"]
    assert len(list((home / "sqlgate-data" / "backups" / "claude-code").iterdir())) == 10
