"""`sqlgate uninstall` with the real clients (Claude Code, Codex, Gemini CLI, pinned in
tests/e2e/): after install, the client's own list command shows sqlgate connected beside a
server of the user's (Codex lists entries without starting them: `enabled`); after uninstall
it shows only the user's, and every file and folder under the fake HOME and the project is
as it was before install, byte for byte (the databases aside: the data stays).

The user's server (`notes`, another `sqlgate serve` on a database outside HOME) is added with
the client's own `mcp add`, then a note of the user's is written into the file by hand, and
the client lists its servers once before the snapshot: a client writes its own state as it
starts a server (Claude Code adds a `userID` to ~/.claude.json, Gemini CLI its
~/.gemini/projects.json and history folders), which is the client's, not install's.
A project-scope entry needs what the user gives it first: Codex's trust of the project,
Claude Code's trust and approval of the project's `sqlgate` (both in the client's files,
untouched by uninstall); Gemini CLI needs the folder trusted at either scope.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.surfaces.integrations.real_clients import (
    CLAUDE_CODE,
    CODEX,
    GEMINI,
    ClientHome,
    NpmClient,
    install_client,
)
from tests.surfaces.integrations.test_claude_code_client import approve_project_servers

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]

LISTED = re.compile(r"^(?:[✓✗○] )?(\S+): .* - (\S.*?)\s*$")  # Claude Code's, Gemini CLI's lines


def _lines(output: str) -> dict[str, str]:
    return dict(m.groups() for line in output.splitlines() if (m := LISTED.match(line)))


def _codex_json(output: str) -> dict[str, str]:
    listed = json.loads(output)
    return {entry["name"]: "enabled" if entry["enabled"] else "disabled" for entry in listed}


def _approve_claude(home: ClientHome, scope: str) -> None:
    if scope == "project":
        approve_project_servers(home)


def _trust_codex(home: ClientHome, scope: str) -> None:
    if scope == "project":
        with (home.home / ".codex" / "config.toml").open("a", encoding="utf-8") as config:
            config.write(f'\n[projects."{home.project}"]\ntrust_level = "trusted"\n')


def _trust_gemini(home: ClientHome, scope: str) -> None:
    trusted = {str(home.project): "TRUST_FOLDER"}
    (home.home / ".gemini").mkdir(exist_ok=True)
    (home.home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted), "utf-8")


@dataclass(frozen=True)
class Client:
    """A client's name for `sqlgate install`, its npm package and commands, and its files."""

    name: str
    npm: NpmClient
    add: tuple[str, ...]  # `mcp add` of a user-scope server: these, its name, `--`, command
    listing: tuple[str, ...]
    servers: Callable[[str], dict[str, str]]  # the list command's output: name -> status
    connected: str
    config: str  # the user-scope file `add` writes, under HOME
    note: str  # a line of the user's, by hand, at the top of it
    trust: Callable[[ClientHome, str], None]  # what an entry at a scope needs first


CLIENTS = {
    "claude-code": Client(
        "claude-code",
        CLAUDE_CODE,
        ("mcp", "add", "--scope", "user"),
        ("mcp", "list"),
        _lines,
        "✔ Connected",
        ".claude.json",
        "",  # Claude Code keeps ~/.claude.json as plain JSON: no note
        _approve_claude,
    ),
    "codex": Client(
        "codex",
        CODEX,
        ("mcp", "add"),
        ("mcp", "list", "--json"),
        _codex_json,
        "enabled",
        ".codex/config.toml",
        "# my own servers\n",
        _trust_codex,
    ),
    "gemini": Client(
        "gemini",
        GEMINI,
        ("mcp", "add", "--scope", "user"),
        ("mcp", "list"),
        _lines,
        "Connected",
        ".gemini/settings.json",
        "// my own servers\n",
        _trust_gemini,
    ),
}


@pytest.fixture(scope="session")
def clients() -> dict[str, list[str]]:
    """Each pinned client's argv, installed with `npm ci` when needed."""
    return {name: install_client(client.npm) for name, client in CLIENTS.items()}


def snapshot(home: ClientHome) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under HOME and the project, but databases."""
    found: dict[str, bytes | None] = {}
    for top in (home.home, home.project):
        for path in sorted(top.rglob("*")):
            name = path.relative_to(home.root).as_posix()
            if ".sqlgate" in path.parts or path.name.startswith("agent.db"):
                continue
            found[name] = path.read_bytes() if path.is_file() else None
    return found


def changed(before: dict[str, bytes | None], after: dict[str, bytes | None]) -> list[str]:
    """The paths added, removed or rewritten between two snapshots."""
    return sorted(
        name
        for name in before.keys() | after.keys()
        if (name in before, before.get(name)) != (name in after, after.get(name))
    )


def listed(client: Client, argv: list[str], home: ClientHome) -> dict[str, str]:
    """The servers the client lists, each with its status."""
    done = home.run([*argv, *client.listing])
    assert done.returncode == 0, done.stdout + done.stderr
    # Gemini CLI lists on stderr; Codex's stdout is JSON, its stderr warnings
    return client.servers(done.stdout if client.name == "codex" else done.stdout + done.stderr)


def users_own(client: Client, argv: list[str], home: ClientHome, scope: str) -> None:
    """The user's server, a note of theirs, their trust, and the client run once."""
    other = [sys.executable, "-m", "sqlgate", "serve", "--db", str(home.root / "other.db")]
    separator = [] if client.name == "gemini" else ["--"]  # Gemini takes no `--` there
    done = home.run([*argv, *client.add, "notes", *separator, *other])
    assert done.returncode == 0, done.stdout + done.stderr
    config = home.home / client.config
    config.write_text(client.note + config.read_text(encoding="utf-8"), encoding="utf-8")
    client.trust(home, scope)
    assert listed(client, argv, home) == {"notes": client.connected}


WRITES = [  # what install writes, per client and scope (created or rewritten)
    ("claude-code", "user", ["home/.claude.json", "home/.claude/settings.json"]),
    ("claude-code", "project", ["project/.claude/settings.json", "project/.mcp.json"]),
    ("codex", "user", ["home/.codex/config.toml"]),
    ("codex", "project", ["project/.codex", "project/.codex/config.toml"]),
    ("gemini", "user", ["home/.gemini/settings.json"]),
    ("gemini", "project", ["project/.gemini", "project/.gemini/settings.json"]),
]


@pytest.mark.parametrize(
    ("name", "scope", "writes"), WRITES, ids=[f"{c}-{s}" for c, s, _ in WRITES]
)
def test_uninstall_leaves_the_clients_files_as_before_install(
    clients: dict[str, list[str]],
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    scope: str,
    writes: list[str],
) -> None:
    client, argv = CLIENTS[name], clients[name]
    home = ClientHome.make(tmp_path_factory.mktemp(f"uninstall-{name}"))
    users_own(client, argv, home, scope)
    before = snapshot(home)

    home.sqlgate("install", name, "--scope", scope)
    written = changed(before, snapshot(home))
    installed = listed(client, argv, home)
    home.sqlgate("uninstall", name, "--scope", scope)

    assert written == writes
    assert installed == {"notes": client.connected, "sqlgate": client.connected}
    assert listed(client, argv, home) == {"notes": client.connected}
    assert changed(before, snapshot(home)) == []
