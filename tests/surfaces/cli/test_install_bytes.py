"""`sqlgate install CLIENT` then `sqlgate uninstall CLIENT` gives every file install wrote
back byte for byte (issue 30 §6): for every client and scope, and for the byte shapes people's
files have: a UTF-8 byte order mark, CRLF line endings, no newline at the end, tab
indentation, comments (JSONC), and all of them at once. Claude Code's settings file (the
permission rules and capture hooks) is held to the same, next to its server file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where, settings_path
from tests.surfaces.integrations.fake_home import fake_home

TARGETS = [
    ("claude-code", "user"), ("claude-code", "project"), ("claude-desktop", None),
    ("cursor", "user"), ("cursor", "project"), ("vscode", "user"), ("vscode", "project"),
    ("codex", "user"), ("codex", "project"), ("gemini", "user"), ("gemini", "project"),
]  # fmt: skip


def _bom(text: str) -> str:
    return "\ufeff" + text


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _no_final_newline(text: str) -> str:
    return text.rstrip("\r\n")


def _tabs(text: str) -> str:
    return "\n".join(
        "\t" * ((len(line) - len(line.lstrip(" "))) // 2) + line.lstrip(" ")
        for line in text.split("\n")
    )


def _all(text: str) -> str:
    return _bom(_crlf(_no_final_newline(_tabs(text))))


SHAPES: dict[str, Callable[[str], str]] = {
    "plain": lambda text: text,
    "bom": _bom,
    "crlf": _crlf,
    "no-final-newline": _no_final_newline,
    "tabs": _tabs,
    "bom-crlf": lambda text: _bom(_crlf(text)),
    "all": _all,
}

CASES = [
    pytest.param(client, scope, shape, id=f"{client}-{scope or 'only'}-{shape}")
    for client, scope in TARGETS
    for shape in SHAPES
]


def seed(client: str) -> str:
    """A config file with another server, other keys and (TOML) comments and tables."""
    spec = CLIENTS[client]
    if spec.toml:
        return (
            '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n'
            'args = ["x"]\n\n# profiles follow\n[profiles.fast]\n  model = "mini"\n'
        )
    data = {"theme": "dark", spec.servers_key: {"other": {"command": "other", "args": ["x"]}}}
    text = json.dumps(data, indent=2) + "\n"
    if client in ("vscode", "cursor", "gemini"):  # JSONC: comments too
        text = "// my settings\n" + text.replace('"theme"', '/* mine */ "theme"')
    return text


SETTINGS_SEED = (
    '{\n  "model": "opus",\n  "permissions": {\n    "allow": [\n      "Bash(ls:*)"\n    ]\n'
    '  },\n  "env": {\n    "A": "1"\n  }\n}\n'
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


@pytest.mark.parametrize(("client", "scope", "shape"), CASES)
def test_install_then_uninstall_gives_every_file_back_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str, scope: str | None, shape: str
) -> None:
    fake_home(tmp_path, monkeypatch)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    where = replace(Where.here(), platform="linux")
    files = {CLIENTS[client].path(scope, where): SHAPES[shape](seed(client))}
    if client == "claude-code":
        files[settings_path(scope, where)] = SHAPES[shape](SETTINGS_SEED)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    scoped = ("--scope", scope) if scope else ()
    extra = ("--capture",) if client == "claude-code" else ()
    db = () if scope == "project" else ("--db", str(tmp_path / "a.db"))
    installed = invoke("install", client, *scoped, *extra, *db)
    assert installed.exit_code == 0, (installed.output, installed.stderr)
    for path, text in files.items():
        assert path.read_bytes() != text.encode("utf-8"), path  # install did write it
    removed = invoke("uninstall", client, *scoped)
    assert removed.exit_code == 0, (removed.output, removed.stderr)
    for path, text in files.items():
        assert path.read_bytes() == text.encode("utf-8"), path
