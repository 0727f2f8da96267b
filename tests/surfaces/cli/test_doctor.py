"""`sqlgate doctor` through click's CliRunner: the report, --json, --client, exit codes.
The checks themselves have their cases in tests/surfaces/integrations/test_health.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.surfaces.integrations.fake_home import fake_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_home(tmp_path, monkeypatch)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["doctor", *args], prog_name="sqlgate")


def install(home: Path, db: Path, name: str = "sqlgate", command: str = sys.executable) -> None:
    entry = {
        "type": "stdio",
        "command": command,
        "args": ["-m", "sqlgate", "serve", "--db", str(db)],
    }
    (home / "home" / ".claude.json").write_text(json.dumps({"mcpServers": {name: entry}}))


ASK = ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]


def settings(home: Path, permissions: dict[str, list[str]]) -> Path:
    path = home / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    return path


def healthy(home: Path) -> Path:
    db = home / "agent.db"
    Service.open(Settings(db=db)).close()
    install(home, db)
    settings(home, {"ask": ASK})  # as `sqlgate install claude-code` writes them
    return db


def test_a_healthy_install_exits_0_with_every_check_ok(home: Path) -> None:
    healthy(home)
    result = invoke()
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.splitlines()[0].startswith('claude-code user "sqlgate" (')
    assert "  ok    initialize: answered initialize" in result.stdout
    assert result.stdout.splitlines()[-1] == "0 problems, 0 warnings"
    assert result.stderr == ""


def test_destructive_query_moved_from_ask_to_allow_is_a_warning_naming_the_rule(
    home: Path,
) -> None:
    healthy(home)
    path = settings(home, {"allow": ["mcp__sqlgate__destructive_query"],
                           "ask": ["mcp__sqlgate__undo_call"]})  # fmt: skip
    result = invoke()
    assert result.exit_code == 0, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    (warned,) = [n for n, line in enumerate(lines) if line.startswith("  warn  permissions: ")]
    assert "the second lock is gone" in lines[warned]
    assert "mcp__sqlgate__destructive_query runs without asking" in lines[warned]
    assert str(path) in lines[warned + 1]
    assert '"mcp__sqlgate__destructive_query" back in "permissions"' in lines[warned + 1]
    assert lines[-1] == "0 problems, 1 warning"


def test_a_problem_exits_10_with_its_fix_and_one_line_on_stderr(home: Path) -> None:
    install(home, home / "typo" / "agent.db")
    result = invoke()
    assert result.exit_code == 10, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    failed = lines.index(next(line for line in lines if line.startswith("  FAIL  database: ")))
    assert lines[failed + 1].startswith("        fix: mkdir -p ")
    (line,) = result.stderr.splitlines()
    assert line.startswith("sqlgate: error: doctor found 1 problem (database)")


def test_json_prints_one_object_per_check(home: Path) -> None:
    install(home, home / "typo" / "agent.db")
    result = invoke("--json")
    assert result.exit_code == 10
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {record["check"] for record in records} >= {"command", "database", "initialize"}
    assert all(set(record) == {"target", "file", "check", "status", "detail", "fix"}
               for record in records)  # fmt: skip
    assert [r["status"] for r in records if r["check"] == "database"] == ["fail"]


def test_client_limits_the_clients_checked(home: Path) -> None:
    install(home, home / "typo" / "agent.db")
    result = invoke("--client", "cursor")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.startswith("warn  no sqlgate entry found in cursor")


def test_json_says_when_nothing_is_installed(home: Path) -> None:
    result = invoke("--json", "--client", "cursor")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["check"], record["status"]) == ("installed", "warn")
    assert record["detail"] == "no sqlgate entry found in cursor"
    assert record["fix"].startswith("`sqlgate install claude-code`")


def test_name_limits_the_entries_checked(home: Path) -> None:
    healthy(home)
    assert "no sqlgate entry 'other' found" in invoke("--name", "other").stdout
    assert invoke("--name", "sqlgate").exit_code == 0


def test_text_from_config_files_reaches_the_terminal_escaped(home: Path) -> None:
    install(home, home / "typo\x1b[2J" / "agent.db", name="sqlgate\u202e")
    result = invoke()
    assert "\x1b" not in result.stdout
    assert "\u202e" not in result.stdout
    assert "\\x1b[2J" in result.stdout
    assert "\\u202e" in result.stdout


@pytest.mark.parametrize("value", ["0", "-1", "601"])
def test_a_timeout_out_of_range_is_a_usage_error(home: Path, value: str) -> None:
    result = invoke("--timeout", value)
    assert result.exit_code == 2
    assert "--timeout" in result.stderr


# -- Gemini CLI: folder trust (issue 31 §2) ------------------------------------------------------
def gemini_entry(home: Path, scope: str, db: Path) -> None:
    base = home / "project" if scope == "project" else home / "home"
    path = base / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    args = ["-m", "sqlgate", "serve", "--db", str(db)]
    path.write_text(json.dumps({"mcpServers": {"sqlgate": {"command": sys.executable,
                                                           "args": args}}}))  # fmt: skip


@pytest.mark.parametrize(
    ("scope", "rules", "status", "code"),
    [
        pytest.param("project", None, "FAIL", 10, id="project-no-trust-file"),
        pytest.param("project", {"": "DO_NOT_TRUST"}, "FAIL", 10, id="project-distrusted"),
        pytest.param("project", {"": "TRUST_FOLDER"}, "ok  ", 0, id="project-trusted"),
        pytest.param("user", None, "warn", 0, id="user-from-an-untrusted-folder"),
        pytest.param("user", {"/..": "TRUST_FOLDER"}, "ok  ", 0, id="user-parent-trusted"),
        pytest.param("user", "{broken", "FAIL", 10, id="trust-file-gemini-refuses"),
    ],
)  # fmt: skip
def test_gemini_entries_get_a_trust_check_with_the_fix(
    home: Path, scope: str, rules: dict[str, str] | str | None, status: str, code: int
) -> None:
    db = home / "agent.db"
    Service.open(Settings(db=db)).close()
    gemini_entry(home, scope, db)
    trust_file = home / "home" / ".gemini" / "trustedFolders.json"
    if rules is not None:
        trust_file.parent.mkdir(parents=True, exist_ok=True)
        project = str(home / "project")
        text = (
            rules
            if isinstance(rules, str)
            else json.dumps(
                {str(Path(project + suffix).resolve()): level for suffix, level in rules.items()}
            )
        )
        trust_file.write_text(text)  # fmt: skip
    result = invoke("--client", "gemini")
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f'gemini {scope} "sqlgate" (')
    (at,) = [n for n, line in enumerate(lines) if line.startswith(f"  {status}  trust: ")]
    if status != "ok  ":
        assert str(trust_file) in lines[at + 1]
        assert lines[at + 1].startswith("        fix: ")
