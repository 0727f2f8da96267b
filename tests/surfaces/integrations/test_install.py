"""Client config locations and edits (surfaces/clients/install.py), with a fake HOME for
every OS scheme."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations import config_writer, install, install_records
from sqlgate.surfaces.integrations.install import (
    CAPTURE_EVENTS,
    CLIENTS,
    Change,
    ConfigMalformed,
    ConfigUnwritable,
    Launcher,
    Where,
    apply,
    capture_command,
    client_named,
    find_launcher,
    is_capture_command,
    plan_capture,
    plan_install,
    plan_uncapture,
    plan_uninstall,
    resolve_scope,
    settings_path,
)
from sqlgate.surfaces.integrations.toml_config import toml_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the backport sqlgate reads Codex's TOML with on 3.10
    tomllib = pytest.importorskip("tomli")

PLATFORMS = ["linux", "darwin", "win32"]
TARGETS = [
    pytest.param(client, scope, id=f"{client}-{scope or 'only'}")
    for client, scope in [
        ("claude-code", "user"), ("claude-code", "project"), ("claude-desktop", None),
        ("cursor", "user"), ("cursor", "project"), ("vscode", "user"), ("vscode", "project"),
        ("codex", "user"), ("codex", "project"), ("gemini", "user"), ("gemini", "project"),
    ]
]  # fmt: skip
LAUNCHER = Launcher("/opt/tools/bin/sqlgate")
NOW = datetime(2026, 5, 4, 3, 2, 1, tzinfo=timezone.utc)

MakeWhere = Callable[[str], Where]


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, XDG_CONFIG_HOME and APPDATA inside tmp_path; the project folder is the cwd."""
    for name in ("home", "xdg", "appdata", "project", "data"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.chdir(tmp_path / "project")
    # sqlgate's own data folder (backups, the install record): never the real one
    monkeypatch.setattr(install_records, "data_dir", lambda: tmp_path / "sqlgate-data")
    return tmp_path


@pytest.fixture
def where(fake_home: Path) -> MakeWhere:
    """Where for one OS scheme, read from the (fake) environment like the CLI does."""

    def make(platform: str) -> Where:
        return replace(Where.here(), platform=platform)

    return make


@pytest.fixture
def db(fake_home: Path) -> Path:
    return fake_home / "data" / "agent.db"


def servers_in(client: str, path: Path) -> dict[str, Any]:
    """The servers table of a client's config file, parsed."""
    text = path.read_text(encoding="utf-8")
    spec = CLIENTS[client]
    data = tomllib.loads(text) if spec.toml else json.loads(text)
    servers = data[spec.servers_key]
    assert isinstance(servers, dict)
    return servers


def seed_for(client: str) -> str:
    """A config file with another server, unknown keys and (TOML) comments and tables."""
    spec = CLIENTS[client]
    if spec.toml:
        return (
            '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n'
            'args = ["x"]\n\n# profiles follow\n[profiles.fast]\nmodel = "mini"\n'
        )
    data = {
        "theme": "dark",
        spec.servers_key: {"other": {"command": "other", "args": ["x"], "x-extra": {"a": 1}}},
        "inputs": [{"id": "key"}],
        "numbers": [1, 2.5, None, True],
    }
    return json.dumps(data, indent=2) + "\n"


def for_scope(db: Path, scope: str | None) -> Path:
    """The --db a test gives: a project's database is inside the project (the cwd)."""
    return Path(".sqlgate") / db.name if scope == "project" else db


def db_arg(client: str, scope: str | None, db: Path) -> str:
    """The --db value the entry holds for `for_scope(db, scope)`."""
    if scope != "project":
        return str(db)
    root = CLIENTS[client].project_root
    return f"{root}/.sqlgate/{db.name}" if root else f".sqlgate/{db.name}"


def install_one(
    client: str, scope: str | None, where: Where, db: Path, name: str = "sqlgate"
) -> Change:
    change = plan_install(CLIENTS[client], name, LAUNCHER, for_scope(db, scope), scope, where)
    apply(change, NOW)
    return change


def files_under(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- locations ---------------------------------------------------------------------------------

LOCATIONS = [
    pytest.param("claude-code", "user", "linux", "home/.claude.json", id="claude-code-user"),
    pytest.param("claude-code", "project", "win32", "project/.mcp.json", id="claude-code-project"),
    pytest.param("claude-desktop", None, "linux", "xdg/Claude/claude_desktop_config.json",
                 id="claude-desktop-linux"),
    pytest.param("claude-desktop", None, "darwin",
                 "home/Library/Application Support/Claude/claude_desktop_config.json",
                 id="claude-desktop-macos"),
    pytest.param("claude-desktop", None, "win32", "appdata/Claude/claude_desktop_config.json",
                 id="claude-desktop-windows"),
    pytest.param("cursor", "user", "darwin", "home/.cursor/mcp.json", id="cursor-user"),
    pytest.param("cursor", "project", "linux", "project/.cursor/mcp.json", id="cursor-project"),
    pytest.param("vscode", "user", "linux", "xdg/Code/User/mcp.json", id="vscode-linux"),
    pytest.param("vscode", "user", "darwin", "home/Library/Application Support/Code/User/mcp.json",
                 id="vscode-macos"),
    pytest.param("vscode", "user", "win32", "appdata/Code/User/mcp.json", id="vscode-windows"),
    pytest.param("vscode", "project", "darwin", "project/.vscode/mcp.json", id="vscode-project"),
    pytest.param("codex", "user", "win32", "home/.codex/config.toml", id="codex-user"),
    pytest.param("codex", "project", "linux", "project/.codex/config.toml", id="codex-project"),
    pytest.param("gemini", "user", "win32", "home/.gemini/settings.json", id="gemini-user"),
    pytest.param("gemini", "project", "darwin", "project/.gemini/settings.json",
                 id="gemini-project"),
]  # fmt: skip


@pytest.mark.parametrize(("client", "scope", "platform", "expected"), LOCATIONS)
def test_config_file_is_at_the_clients_documented_location_per_os(
    where: MakeWhere, fake_home: Path, client: str, scope: str | None, platform: str, expected: str
) -> None:
    assert CLIENTS[client].path(scope, where(platform)) == fake_home / expected


@pytest.mark.parametrize(
    ("platform", "env", "expected"),
    [
        pytest.param("linux", {}, "home/.config/Claude", id="linux-no-xdg"),
        pytest.param("linux", {"XDG_CONFIG_HOME": ""}, "home/.config/Claude", id="linux-empty-xdg"),
        pytest.param("linux", {"XDG_CONFIG_HOME": "rel"}, "home/.config/Claude", id="relative-xdg"),
        pytest.param("win32", {}, "home/AppData/Roaming/Claude", id="windows-no-appdata"),
    ],
)  # fmt: skip
def test_claude_desktop_falls_back_to_the_default_folder_without_the_variable(
    fake_home: Path, platform: str, env: dict[str, str], expected: str
) -> None:
    where = Where(platform, fake_home / "home", fake_home / "project", env)
    path = CLIENTS["claude-desktop"].path(None, where)
    assert path == fake_home / expected / "claude_desktop_config.json"


def test_codex_home_variable_moves_codexs_config(fake_home: Path) -> None:
    where = Where("linux", fake_home / "home", fake_home / "project",
                  {"CODEX_HOME": str(fake_home / "codex")})  # fmt: skip
    assert CLIENTS["codex"].path("user", where) == fake_home / "codex" / "config.toml"


def test_gemini_cli_home_variable_moves_geminis_user_settings_not_the_projects(
    fake_home: Path,
) -> None:
    """Gemini CLI 0.61's homedir() is $GEMINI_CLI_HOME when set (packages/core/src/utils/
    paths.ts); a project's settings stay in the project."""
    where = Where("linux", fake_home / "home", fake_home / "project",
                  {"GEMINI_CLI_HOME": str(fake_home / "gh")})  # fmt: skip
    assert CLIENTS["gemini"].path("user", where) == fake_home / "gh" / ".gemini" / "settings.json"
    assert CLIENTS["gemini"].path("project", where) == (
        fake_home / "project" / ".gemini" / "settings.json"
    )


def test_claude_code_settings_file_per_scope(where: MakeWhere, fake_home: Path) -> None:
    assert settings_path("user", where("linux")) == fake_home / "home/.claude/settings.json"
    assert settings_path("project", where("win32")) == fake_home / "project/.claude/settings.json"


# -- install -----------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_fresh_install_writes_absolute_paths_for_user_scope_and_none_for_project(
    where: MakeWhere, db: Path, fake_home: Path, client: str, scope: str | None, platform: str
) -> None:
    change = install_one(client, scope, where(platform), db)

    assert change.before is None
    assert change.path.is_file()
    entry = servers_in(client, change.path)["sqlgate"]
    assert entry["args"] == ["serve", "--db", db_arg(client, scope, db)]
    if scope == "project":  # a file to commit: nothing of this machine
        assert entry["command"] == "sqlgate"
        assert str(fake_home) not in change.path.read_text()
    else:
        assert entry["command"] == LAUNCHER.command
        assert Path(entry["args"][2]).is_absolute()
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"


def test_vscode_uses_the_servers_key_not_mcpservers(where: MakeWhere, db: Path) -> None:
    change = install_one("vscode", "project", where("linux"), db)
    data = json.loads(change.path.read_text())
    assert list(data) == ["servers"]


def test_python_module_launcher_puts_m_sqlgate_before_serve(where: MakeWhere, db: Path) -> None:
    launcher = Launcher("/usr/bin/python3", ("-m", "sqlgate"))
    change = plan_install(CLIENTS["cursor"], "sqlgate", launcher, db, "user", where("linux"))
    apply(change)
    entry = servers_in("cursor", change.path)["sqlgate"]
    assert entry == {
        "command": "/usr/bin/python3",
        "args": ["-m", "sqlgate", "serve", "--db", str(db)],
    }


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_installing_twice_changes_nothing_the_second_time(
    where: MakeWhere, db: Path, fake_home: Path, client: str, scope: str | None
) -> None:
    first = install_one(client, scope, where("linux"), db)
    before = files_under(fake_home)

    second = plan_install(
        CLIENTS[client], "sqlgate", LAUNCHER, for_scope(db, scope), scope, where("linux")
    )

    assert not second.needed
    assert apply(second, NOW) is None
    assert files_under(fake_home) == before
    assert first.path.read_text() == second.before


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_install_keeps_other_servers_and_unknown_keys(
    where: MakeWhere, db: Path, client: str, scope: str | None
) -> None:
    path = CLIENTS[client].path(scope, where("darwin"))
    path.parent.mkdir(parents=True, exist_ok=True)
    seed = seed_for(client)
    path.write_text(seed)

    install_one(client, scope, where("darwin"), db)

    text = path.read_text()
    if CLIENTS[client].toml:
        assert text.startswith(seed)  # every byte of the old file, our table after it
        data = tomllib.loads(text)
        assert data["model"] == "o3"
        assert data["profiles"] == {"fast": {"model": "mini"}}
    else:
        data = json.loads(text)
        old = json.loads(seed)
        key = CLIENTS[client].servers_key
        assert {k: v for k, v in data.items() if k != key} == {
            k: v for k, v in old.items() if k != key
        }
    servers = servers_in(client, path)
    assert list(servers) == ["other", "sqlgate"]
    assert servers["other"] == (
        {"command": "other", "args": ["x"]}
        if CLIENTS[client].toml
        else {"command": "other", "args": ["x"], "x-extra": {"a": 1}}
    )


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_install_backs_up_the_file_it_changes_into_sqlgates_data_folder(
    where: MakeWhere, db: Path, fake_home: Path, client: str, scope: str | None
) -> None:
    path = CLIENTS[client].path(scope, where("win32"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(seed_for(client))
    original = path.read_bytes()

    change = plan_install(
        CLIENTS[client], "sqlgate", LAUNCHER, for_scope(db, scope), scope, where("win32")
    )
    backup = apply(change, NOW)

    data = fake_home / "sqlgate-data"
    assert backup == data / "backups" / client / f"20260504T030201Z-{path.name}"
    assert backup.read_bytes() == original
    assert path.read_bytes() != original
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing beside it


def test_a_second_backup_in_the_same_second_gets_its_own_name(where: MakeWhere, db: Path) -> None:
    first = install_one("cursor", "user", where("linux"), db, name="one")
    cursor, here = CLIENTS["cursor"], where("linux")
    backups = [apply(plan_install(cursor, name, LAUNCHER, db, "user", here), NOW)
               for name in ("two", "three")]  # fmt: skip
    assert [b.name if b else None for b in backups] == [
        "20260504T030201Z-mcp.json",
        "20260504T030201Z.2-mcp.json",
    ]
    assert first.before is None


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_install_updates_an_entry_that_names_another_db(
    where: MakeWhere, db: Path, client: str, scope: str | None
) -> None:
    path = CLIENTS[client].path(scope, where("linux"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(seed_for(client))
    install_one(client, scope, where("linux"), db.with_name("old.db"))

    change = install_one(client, scope, where("linux"), db)

    old, new = db_arg(client, scope, db.with_name("old.db")), db_arg(client, scope, db)
    assert change.summary == f'updated {client} entry "sqlgate": --db {old} → {new}'
    assert change.changed == (("db", old, new),)
    assert servers_in(client, path)["sqlgate"]["args"] == ["serve", "--db", new]
    assert list(servers_in(client, path)) == ["other", "sqlgate"]


def test_toml_update_replaces_the_whole_table_with_its_subtables_in_place(
    where: MakeWhere, db: Path
) -> None:
    path = CLIENTS["codex"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text(
        'model = "o3"\n\n[mcp_servers.sqlgate]\ncommand = "old"\n\n[mcp_servers.sqlgate.env]\n'
        'A = "1"\n\n# the next table\n[mcp_servers.other]\ncommand = "other"\n'
    )

    install_one("codex", "user", where("linux"), db)

    text = path.read_text()
    assert text == (
        'model = "o3"\n\n' + toml_table(("mcp_servers", "sqlgate"), {
            "command": LAUNCHER.command, "args": ["serve", "--db", str(db)]})
        + '\n# the next table\n[mcp_servers.other]\ncommand = "other"\n'
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('mcp_servers = { sqlgate = { command = "old" } }\n', id="inline-table"),
        pytest.param('[mcp_servers]\nsqlgate.command = "old"\n', id="dotted-keys"),
    ],
)
def test_toml_entry_in_a_form_we_do_not_edit_is_refused_untouched(
    where: MakeWhere, db: Path, text: str
) -> None:
    path = CLIENTS["codex"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ConfigMalformed, match="edit it by hand"):
        plan_install(CLIENTS["codex"], "sqlgate", LAUNCHER, db, "user", where("linux"))
    assert path.read_text() == text


def test_toml_file_without_final_newline_gets_one_before_our_table(
    where: MakeWhere, db: Path
) -> None:
    path = CLIENTS["codex"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text('model = "o3"')
    install_one("codex", "user", where("linux"), db)
    assert path.read_text().startswith('model = "o3"\n\n[mcp_servers.sqlgate]\n')


# -- malformed and unwritable ------------------------------------------------------------------

MALFORMED_JSON = [
    pytest.param("{not json", id="syntax"),
    pytest.param('{"a": 1,,}', id="two-commas"),
    pytest.param('{\n  /* a comment that never ends\n  "a": 1\n}', id="open-comment"),
    pytest.param("{'a': 1}", id="single-quotes"),
    pytest.param("[]", id="array-at-top"),
    pytest.param('{"mcpServers": [], "servers": []}', id="servers-not-an-object"),
]
MALFORMED_TOML = [
    pytest.param("[mcp_servers\n", id="syntax"),
    pytest.param("a = 1\na = 2\n", id="duplicate-key"),
    pytest.param("mcp_servers = 1\n", id="servers-not-a-table"),
]


def _malformed_cases() -> list[Any]:
    cases = []
    for target in TARGETS:
        client, scope = target.values
        for bad in MALFORMED_TOML if CLIENTS[str(client)].toml else MALFORMED_JSON:
            cases.append(pytest.param(client, scope, bad.values[0], id=f"{target.id}-{bad.id}"))
    cases.append(pytest.param("cursor", "user", b"\xff\xfe{}", id="cursor-not-utf8"))
    return cases


@pytest.mark.parametrize(("client", "scope", "content"), _malformed_cases())
def test_malformed_config_is_refused_and_left_byte_identical(
    where: MakeWhere,
    db: Path,
    fake_home: Path,
    client: str,
    scope: str | None,
    content: str | bytes,
) -> None:
    path = CLIENTS[client].path(scope, where("linux"))
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(raw)
    before = files_under(fake_home)

    with pytest.raises(ConfigMalformed, match="left untouched"):
        plan_install(
            CLIENTS[client], "sqlgate", LAUNCHER, for_scope(db, scope), scope, where("linux")
        )
    with pytest.raises(ConfigMalformed):
        plan_uninstall(CLIENTS[client], "sqlgate", scope, where("linux"))

    assert files_under(fake_home) == before


def test_json_error_names_the_line_and_column(where: MakeWhere, db: Path) -> None:
    path = CLIENTS["cursor"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "a": 1\n  "b": 2\n}\n')
    with pytest.raises(ConfigMalformed, match=r"line 3, column 3"):
        plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, db, "user", where("linux"))


def test_empty_config_file_counts_as_an_empty_object(where: MakeWhere, db: Path) -> None:
    path = CLIENTS["claude-desktop"].path(None, where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text("\n")
    install_one("claude-desktop", None, where("linux"), db)
    assert list(servers_in("claude-desktop", path)) == ["sqlgate"]


def test_unwritable_location_is_reported_and_nothing_is_written(
    where: MakeWhere, db: Path, fake_home: Path
) -> None:
    (fake_home / "home" / ".cursor").write_text("a file where the folder should be")
    before = files_under(fake_home)
    with pytest.raises(ConfigUnwritable, match=r"cannot read .*Not a directory"):
        apply(plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, db, "user", where("linux")))
    assert files_under(fake_home) == before


def test_folder_that_cannot_be_created_is_reported(where: MakeWhere, fake_home: Path) -> None:
    blocker = fake_home / "home" / ".cursor"
    blocker.write_text("a file where the folder should be")
    change = Change(blocker / "mcp.json", None, "{}\n", "add server 'sqlgate'")
    with pytest.raises(ConfigUnwritable, match="cannot write"):
        apply(change, NOW)
    assert blocker.read_text() == "a file where the folder should be"


def test_failed_rename_leaves_the_old_file_and_no_temp_or_backup(
    where: MakeWhere, db: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = CLIENTS["cursor"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text(seed_for("cursor"))
    before = files_under(fake_home)
    change = plan_install(CLIENTS["cursor"], "sqlgate", LAUNCHER, db, "user", where("linux"))

    def refuse(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(config_writer.os, "replace", refuse)
    with pytest.raises(ConfigUnwritable, match="Permission denied"):
        apply(change, NOW)
    assert files_under(fake_home) == before


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_rewrite_keeps_the_files_mode(where: MakeWhere, db: Path) -> None:
    path = CLIENTS["claude-code"].path("user", where("linux"))
    path.write_text("{}")
    path.chmod(0o600)
    install_one("claude-code", "user", where("linux"), db)
    assert path.stat().st_mode & 0o777 == 0o600


def test_successful_write_leaves_no_temp_files(where: MakeWhere, db: Path) -> None:
    change = install_one("vscode", "project", where("linux"), db)
    assert sorted(p.name for p in change.path.parent.iterdir()) == ["mcp.json"]


# -- uninstall ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_uninstall_removes_only_our_entry(
    where: MakeWhere, db: Path, client: str, scope: str | None
) -> None:
    path = CLIENTS[client].path(scope, where("linux"))
    path.parent.mkdir(parents=True, exist_ok=True)
    seed = seed_for(client)
    path.write_text(seed)
    install_one(client, scope, where("linux"), db)

    change = plan_uninstall(CLIENTS[client], "sqlgate", scope, where("linux"))
    backup = apply(change, NOW)

    assert path.read_text() == seed
    assert backup is not None
    assert "sqlgate" in servers_in(client, backup)
    again = plan_uninstall(CLIENTS[client], "sqlgate", scope, where("linux"))
    assert not again.needed
    assert again.summary == f'no {client} entry "sqlgate" to remove, nothing changed'


@pytest.mark.parametrize(("client", "scope"), TARGETS)
def test_uninstall_without_a_config_file_writes_nothing(
    where: MakeWhere, fake_home: Path, client: str, scope: str | None
) -> None:
    change = plan_uninstall(CLIENTS[client], "sqlgate", scope, where("darwin"))
    assert not change.needed
    assert apply(change, NOW) is None
    assert files_under(fake_home) == {}


def test_uninstall_of_the_only_toml_table_in_a_file_sqlgate_created_removes_the_file(
    where: MakeWhere, db: Path
) -> None:
    change = install_one("codex", "user", where("linux"), db)
    apply(plan_uninstall(CLIENTS["codex"], "sqlgate", "user", where("linux")), NOW)
    assert not change.path.exists()
    assert not change.path.parent.exists()  # ~/.codex was made for it


def test_uninstall_of_the_only_toml_table_leaves_a_file_it_did_not_create_empty(
    where: MakeWhere, db: Path
) -> None:
    path = CLIENTS["codex"].path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text("")
    install_one("codex", "user", where("linux"), db)
    apply(plan_uninstall(CLIENTS["codex"], "sqlgate", "user", where("linux")), NOW)
    assert path.read_text() == ""


def test_uninstall_keeps_a_server_with_another_name(where: MakeWhere, db: Path) -> None:
    install_one("cursor", "user", where("linux"), db, name="sqlgate-work")
    install_one("cursor", "user", where("linux"), db)
    path = CLIENTS["cursor"].path("user", where("linux"))
    apply(plan_uninstall(CLIENTS["cursor"], "sqlgate", "user", where("linux")), NOW)
    assert list(servers_in("cursor", path)) == ["sqlgate-work"]


# -- TOML writer -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    key=st.text(min_size=1, max_size=20),
    values=st.dictionaries(
        st.text(min_size=1, max_size=10),
        st.one_of(st.text(max_size=30), st.lists(st.text(max_size=10), max_size=4)),
        max_size=4,
    ),
)
def test_toml_table_reads_back_as_the_same_values(key: str, values: dict[str, Any]) -> None:
    assert tomllib.loads(toml_table(("mcp_servers", key), values)) == {"mcp_servers": {key: values}}


def test_windows_paths_are_escaped_in_toml() -> None:
    text = toml_table(("mcp_servers", "sqlgate"), {"command": r"C:\Tools\me\sqlgate.exe"})
    assert r'command = "C:\\Tools\\me\\sqlgate.exe"' in text


# -- names, scopes, launcher -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "given", "expected"),
    [
        pytest.param("claude-code", None, "user", id="default-user"),
        pytest.param("cursor", "global", "user", id="cursor-global-alias"),
        pytest.param("vscode", "workspace", "project", id="vscode-workspace-alias"),
        pytest.param("codex", "project", "project", id="codex-project"),
        pytest.param("gemini", None, "user", id="gemini-default-user"),
        pytest.param("gemini", "workspace", "project", id="gemini-workspace-alias"),
        pytest.param("claude-desktop", None, None, id="desktop-no-scope"),
    ],
)
def test_scope_defaults_and_aliases(client: str, given: str | None, expected: str | None) -> None:
    assert resolve_scope(CLIENTS[client], given) == expected


@pytest.mark.parametrize(
    ("client", "given", "phrase"),
    [
        pytest.param("claude-desktop", "user", "has no scopes", id="desktop-any-scope"),
        pytest.param("cursor", "local", "not one of", id="unknown-scope"),
    ],
)
def test_bad_scope_is_refused(client: str, given: str, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        resolve_scope(CLIENTS[client], given)


def test_unknown_client_names_the_known_ones() -> None:
    with pytest.raises(
        InvalidArgument, match="claude-code, claude-desktop, cursor, vscode, codex, gemini"
    ):
        client_named("windsurf")


@pytest.mark.parametrize("name", ["", "has space", "dot.ted", "x" * 65, "é"])
def test_bad_server_name_is_refused(where: MakeWhere, db: Path, name: str) -> None:
    with pytest.raises(InvalidArgument, match="--name"):
        plan_install(CLIENTS["cursor"], name, LAUNCHER, db, "user", where("linux"))


@pytest.mark.parametrize(
    ("layout", "platform", "expected"),
    [
        pytest.param({"bin/sqlgate"}, "linux", ("bin/sqlgate", ()), id="script-beside-python"),
        pytest.param({"Scripts/sqlgate.exe"}, "win32", ("Scripts/sqlgate.exe", ()), id="win-exe"),
        pytest.param({"elsewhere/sqlgate"}, "linux", ("elsewhere/sqlgate", ()), id="on-path"),
        pytest.param(set(), "linux", ("bin/python", ("-m", "sqlgate")), id="python-m"),
    ],
)  # fmt: skip
def test_launcher_prefers_the_script_beside_python_then_path_then_python_m(
    tmp_path: Path, layout: set[str], platform: str, expected: tuple[str, tuple[str, ...]]
) -> None:
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    folder = "Scripts" if platform == "win32" else "bin"
    python = str(tmp_path / folder / "python")

    def which(name: str) -> str | None:
        found = tmp_path / "elsewhere" / name
        return str(found) if found.exists() else None

    launcher = find_launcher(python, which, platform)
    command, prefix = expected
    expected_command = tmp_path / (command if command != "bin/python" else f"{folder}/python")
    assert launcher == Launcher(str(expected_command), prefix)


def test_launcher_for_this_interpreter_is_absolute() -> None:
    launcher = find_launcher()
    assert os.path.isabs(launcher.command)


# -- capture hooks -----------------------------------------------------------------------------


def test_capture_command_quotes_paths_for_the_shell() -> None:
    launcher = Launcher("/opt/my tools/sqlgate")
    command = capture_command(launcher, Path("/data/it's.db"), "linux")
    assert shlex.split(command) == ["/opt/my tools/sqlgate", "capture", "--db", "/data/it's.db"]


def test_capture_command_on_windows_uses_forward_slashes_and_quotes_spaces() -> None:
    launcher = Launcher(r"C:\Program Files\py\Scripts\sqlgate.exe")
    command = capture_command(launcher, Path("agent.db"), "win32")
    assert command == '"C:/Program Files/py/Scripts/sqlgate.exe" capture --db agent.db'
    assert is_capture_command(command)


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        pytest.param("/x/bin/sqlgate capture --db /a.db", True, id="script"),
        pytest.param("'/my dir/sqlgate' capture", True, id="quoted"),
        pytest.param('"C:/x/sqlgate.exe" capture --db a', True, id="windows-exe"),
        pytest.param("/usr/bin/python3 -m sqlgate capture --db a", True, id="python-m"),
        pytest.param("/x/bin/sqlgate serve", False, id="serve"),
        pytest.param("/x/bin/other capture", False, id="other-program"),
        pytest.param("echo sqlgate capture", False, id="echo"),
        pytest.param("'unclosed", False, id="bad-quoting"),
    ],
)
def test_capture_hooks_are_recognised_by_program_and_subcommand(command: str, ours: bool) -> None:
    assert is_capture_command(command) is ours


CAPTURE = "/opt/tools/bin/sqlgate capture --db /data/agent.db"


def hook(command: str, event: str) -> dict[str, Any]:
    """Our hook as install writes it: in the background but on SessionStart."""
    found = {"type": "command", "command": command}
    return found if event == "SessionStart" else {**found, "async": True}


def hooks_in(path: Path) -> dict[str, Any]:
    hooks = json.loads(path.read_text())["hooks"]
    assert isinstance(hooks, dict)
    return hooks


@pytest.mark.parametrize("scope", ["user", "project"])
def test_capture_registers_one_hook_per_event(where: MakeWhere, scope: str) -> None:
    change = plan_capture(CAPTURE, scope, where("linux"))
    apply(change, NOW)

    hooks = hooks_in(change.path)
    assert list(hooks) == list(CAPTURE_EVENTS)
    for event in CAPTURE_EVENTS:
        expected: dict[str, Any] = {"hooks": [hook(CAPTURE, event)]}
        if event == "PostToolUse":
            expected = {"matcher": "*", **expected}
        assert hooks[event] == [expected]


def test_capture_twice_changes_nothing(where: MakeWhere, fake_home: Path) -> None:
    apply(plan_capture(CAPTURE, "user", where("linux")), NOW)
    before = files_under(fake_home)
    again = plan_capture(CAPTURE, "user", where("linux"))
    assert not again.needed
    assert apply(again, NOW) is None
    assert files_under(fake_home) == before


OTHERS_HOOKS = {
    "PostToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]},
        {"hooks": [
            {"type": "command", "command": "notify.sh", "timeout": 5},
            {"type": "command", "command": "/old/bin/sqlgate capture --db /old.db"},
        ]},
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "/old/bin/sqlgate capture --db /old.db"}]}],
    "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "guard.sh"}]}],
}  # fmt: skip


def seed_settings(path: Path) -> dict[str, Any]:
    settings = {"model": "opus", "permissions": {"allow": ["Bash(ls)"]}, "hooks": OTHERS_HOOKS}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return settings


def test_capture_keeps_others_hooks_and_replaces_an_older_sqlgate_hook(
    where: MakeWhere,
) -> None:
    path = settings_path("user", where("linux"))
    settings = seed_settings(path)

    backup = apply(plan_capture(CAPTURE, "user", where("linux")), NOW)

    data = json.loads(path.read_text())
    assert {k: data[k] for k in ("model", "permissions")} == {
        k: settings[k] for k in ("model", "permissions")
    }
    hooks = data["hooks"]
    assert hooks["PreToolUse"] == OTHERS_HOOKS["PreToolUse"]
    assert hooks["PostToolUse"] == [
        OTHERS_HOOKS["PostToolUse"][0],
        {"hooks": [{"type": "command", "command": "notify.sh", "timeout": 5}]},
        {"matcher": "*", "hooks": [hook(CAPTURE, "PostToolUse")]},
    ]
    assert hooks["Stop"] == [{"hooks": [hook(CAPTURE, "Stop")]}]
    assert backup is not None
    assert json.loads(backup.read_text()) == settings


def test_uncapture_removes_only_sqlgate_hooks(where: MakeWhere) -> None:
    path = settings_path("project", where("darwin"))
    seed_settings(path)
    apply(plan_capture(CAPTURE, "project", where("darwin")), NOW)

    apply(plan_uncapture("project", where("darwin")), NOW)

    hooks = hooks_in(path)
    assert hooks["PreToolUse"] == OTHERS_HOOKS["PreToolUse"]
    assert hooks["PostToolUse"] == [
        OTHERS_HOOKS["PostToolUse"][0],
        {"hooks": [{"type": "command", "command": "notify.sh", "timeout": 5}]},
    ]
    assert hooks["Stop"] == []  # the list was there before capture: it stays
    assert "SessionStart" not in hooks  # capture added this list: it goes once empty
    assert "UserPromptSubmit" not in hooks
    assert not plan_uncapture("project", where("darwin")).needed


@pytest.mark.parametrize(
    "settings_text",
    [
        pytest.param('{"hooks": []}', id="hooks-not-an-object"),
        pytest.param('{"hooks": {"Stop": {}}}', id="event-not-a-list"),
        pytest.param('{"hooks": ', id="syntax"),
    ],
)
def test_malformed_settings_are_refused_untouched(
    where: MakeWhere, fake_home: Path, settings_text: str
) -> None:
    path = settings_path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text(settings_text)
    before = files_under(fake_home)
    with pytest.raises(ConfigMalformed):
        plan_capture(CAPTURE, "user", where("linux"))
    with pytest.raises(ConfigMalformed):
        plan_uncapture("user", where("linux"))
    assert files_under(fake_home) == before


def test_capture_leaves_hook_groups_of_unknown_shape_alone(where: MakeWhere) -> None:
    path = settings_path("user", where("linux"))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {"Stop": ["odd", {"no-hooks": 1}]}}))
    apply(plan_capture(CAPTURE, "user", where("linux")), NOW)
    assert hooks_in(path)["Stop"] == [
        "odd", {"no-hooks": 1}, {"hooks": [hook(CAPTURE, "Stop")]}
    ]  # fmt: skip


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
def test_a_project_db_given_through_a_linked_path_is_still_inside_the_project(
    fake_home: Path,
) -> None:
    (fake_home / "link").symlink_to(fake_home / "project")
    here = Where("linux", fake_home / "home", fake_home / "project", {})
    assert install.project_db(fake_home / "link" / "data" / "a.db", here).as_posix() == (
        "data/a.db"
    )
    with pytest.raises(InvalidArgument, match="not inside this project"):
        install.project_db(fake_home / "home" / "a.db", here)
