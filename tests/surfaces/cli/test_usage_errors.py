"""A usage error (an unknown option or command, a missing or extra argument, a bad choice or
value) ends any command, lazy or nested, with one line on stderr and exit 2:
`sqlgate: error: <what> (see sqlgate COMMAND --help)`; never click's three lines. `--help`
is unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.surfaces.cli.app import main


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


CASES = [
    pytest.param(("log", "--bogus"), "sqlgate log", "'--bogus'", id="unknown-option"),
    pytest.param(("--bogus",), "sqlgate", "'--bogus'", id="unknown-option-of-sqlgate"),
    pytest.param(("nocmd",), "sqlgate", "'nocmd'", id="unknown-command"),
    pytest.param(("claims", "nope"), "sqlgate claims", "'nope'", id="unknown-subcommand"),
    pytest.param(
        ("claims", "confirm"), "sqlgate claims confirm", "CLAIM_ID", id="missing-argument"
    ),
    pytest.param(("install",), "sqlgate install", "CLIENT", id="missing-argument-lazy"),
    pytest.param(("serve", "--transport", "x"), "sqlgate serve", "'x'", id="bad-choice"),
    pytest.param(("log", "--limit", "x"), "sqlgate log", "--limit", id="bad-value"),
    pytest.param(("log", "--limit"), "sqlgate log", "--limit", id="option-without-its-value"),
    pytest.param(
        ("claims", "confirm", "one"), "sqlgate claims confirm", "'one'", id="bad-argument-value"
    ),
    pytest.param(("log", "extra"), "sqlgate log", "extra", id="extra-argument"),
    pytest.param(
        ("import", "claims-mcp", "--bogus"),
        "sqlgate import claims-mcp",
        "--bogus",
        id="unknown-option-of-a-nested-lazy-command",
    ),
    pytest.param(
        ("serve", "--query-timeout", "ten"), "sqlgate serve", "--query-timeout", id="bad-flag-value"
    ),
]


@pytest.mark.parametrize(("args", "command", "named"), CASES)
def test_a_usage_error_is_one_line_naming_the_commands_help_and_exits_2(
    args: tuple[str, ...], command: str, named: str
) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("sqlgate: error: ")
    assert line.endswith(f" (see {command} --help)")
    assert named in line
    assert "Usage:" not in line
    assert "Try " not in line


def test_a_usage_error_of_the_installed_command_is_one_line() -> None:
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "sqlgate", "log", "--bogus"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "sqlgate: error: no such option '--bogus' (see sqlgate log --help)"
    ]


@pytest.mark.parametrize("args", [("--help",), ("log", "--help"), ("claims", "add", "--help")])
def test_help_is_still_clicks_usage_and_options(args: tuple[str, ...]) -> None:
    result = invoke(*args)
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: sqlgate")
    assert "Options:" in result.stdout
    assert result.stderr == ""


def test_a_group_without_its_command_still_shows_the_groups_help() -> None:
    result = invoke("claims")
    assert result.exit_code == 2
    assert "Commands:" in result.stdout + result.stderr


def test_a_bad_value_from_an_environment_variable_names_the_variable() -> None:
    result = CliRunner().invoke(main, ["serve"], env={"SQLGATE_PORT": "abc"}, prog_name="sqlgate")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "'--port'" in line
    assert "SQLGATE_PORT" in line
    assert line.endswith("(see sqlgate serve --help)")
