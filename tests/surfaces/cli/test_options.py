"""The options every command builds from `config.FLAGS`: a bad value, given as the option or
in its environment variable, is one line naming the flag and what it takes, never Python's
own wording; `serve --help` shows each option's default and a metavar saying what it takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Flag
from sqlgate.surfaces.cli.app import main

# one bad value for every flag (a new flag needs one: the first test says so)
BAD = {
    "db": " ",
    "tools": "web",
    "query_timeout": "ten",
    "default_limit": "ten",
    "max_rows": "1.5",
    "max_result_bytes": "-5",
    "max_cell_chars": "many",
    "max_update_rows": "-1",
    "snapshots_keep": "0",
    "max_value_bytes": "1e6",
    "heap_limit_mb": "lots",
    "busy_timeout": "soon",
    "audit": "maybe",
    "redact": "some",
    "redact_patterns": " ",
    "max_event_chars": "big",
    "confirm": "perhaps",
    "undo": "never",
    "undo_max_mb": "x",
    "write_undo_keep": "half",
    "write_undo_mb": "0",
    "replicate": " ",
    "adopt_db": "maybe",
    "project_db": "sometimes",
}
SWITCHES = {"audit", "adopt_db", "project_db"}  # on the command line these take no value
PYTHON_WORDING = ("could not convert", "invalid literal", "ValueError", "float", "int(")


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, prog_name="sqlgate")


def the_error(result: Result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("sqlgate: error: ")
    for words in PYTHON_WORDING:
        assert words not in line
    return line


def test_every_flag_has_a_bad_value_here() -> None:
    assert set(BAD) == {flag.name for flag in FLAGS}


@pytest.mark.parametrize(
    "flag", [flag for flag in FLAGS if flag.name not in SWITCHES], ids=lambda flag: flag.name
)
def test_a_bad_option_value_names_the_option_and_what_it_takes(flag: Flag) -> None:
    line = the_error(invoke("serve", flag.option, BAD[flag.name]))
    assert f"{flag.option} must " in line
    assert f'(got "{BAD[flag.name]}")' in line
    assert line.endswith("(see sqlgate serve --help)")


@pytest.mark.parametrize("flag", FLAGS, ids=lambda flag: flag.name)
def test_a_bad_environment_value_names_the_variable_its_option_and_what_it_takes(
    flag: Flag, tmp_path: Path
) -> None:
    name = flag.name
    where = [] if name == "db" else ["--db", str(tmp_path / "none.db")]  # --db beats SQLGATE_DB
    result = invoke("stats", *where, env={flag.env_var: BAD[name]})
    line = the_error(result)
    assert f"{flag.env_var} ({flag.option}) must " in line
    assert f'(got "{BAD[name]}")' in line


def test_the_query_timeout_of_the_issue_reads_as_promised() -> None:
    line = the_error(invoke("serve", "--query-timeout", "ten"))
    assert line.startswith("sqlgate: error: --query-timeout must be a number of seconds")
    assert '(got "ten")' in line
