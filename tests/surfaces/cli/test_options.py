"""The options every command builds from `config.FLAGS`: a bad value, given as the option or
in its environment variable, is one line naming the flag and what it takes, never Python's
own wording; `serve --help` shows each option's default and a metavar saying what it takes."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import Result

from sqlgate.config import FLAGS, Flag, default_db_path
from sqlgate.surfaces.cli.app import main
from tests.surfaces.cli.helpers import invoke

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
    "hide_column": " , ",
    "protect_table": ",",
    "append_only_table": " ",
    "policy": " ",
}
SWITCHES = {"audit", "adopt_db", "project_db"}  # on the command line these take no value
PYTHON_WORDING = ("could not convert", "invalid literal", "ValueError", "float", "int(")


pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")


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


# -- serve --help: each option's default and a metavar saying what it takes --------------------
# written out, not computed from Settings the way the code under test computes it: a default
# changed by mistake, or rendered another way, fails here; a new flag must be added
DEFAULTS_SHOWN = {
    "tools": "sql,memory,claims",
    "query_timeout": "10",
    "default_limit": "100",
    "max_rows": "1000",
    "max_result_bytes": "32768",
    "max_cell_chars": "2000",
    "max_update_rows": "500",
    "snapshots_keep": "5",
    "max_value_bytes": "1000000",
    "heap_limit_mb": "64",
    "busy_timeout": "5",
    "audit": "on",
    "redact": "default",
    "redact_patterns": "none",
    "max_event_chars": "100000",
    "confirm": "auto",
    "undo": "rows",
    "undo_max_mb": "64",
    "write_undo_keep": "1000",
    "write_undo_mb": "64",
    "replicate": "none",
    "adopt_db": "off",
    "project_db": "off",
    "hide_column": "none",
    "protect_table": "none",
    "append_only_table": "none",
    "policy": "none",
}


def expected_default(flag: Flag) -> str:
    """The default `--help` should show: the table above, or the database's path here."""
    if flag.name == "db":  # platformdirs' per-user folder of this machine, `~` for the home
        home = str(Path.home())
        shown = str(default_db_path())
        return "~" + shown[len(home) :] if shown.startswith(home + os.sep) else shown
    return DEFAULTS_SHOWN[flag.name]


def test_every_flag_has_its_default_written_out_here() -> None:
    assert {flag.name for flag in FLAGS} - {"db"} == set(DEFAULTS_SHOWN)


def help_records() -> dict[str, tuple[str, str]]:
    """serve's options as `--help` lists them: name -> (option and metavar, help text)."""
    command = main.get_command(click.Context(main), "serve")
    assert command is not None
    ctx = click.Context(command, info_name="serve")
    records = {}
    for param in command.params:
        record = param.get_help_record(ctx)
        if record is not None and param.name is not None:
            records[param.name] = record
    return records


@pytest.mark.parametrize("flag", FLAGS, ids=lambda flag: flag.name)
def test_serve_help_shows_each_flags_default(flag: Flag) -> None:
    _, text = help_records()[flag.name]
    assert f"[default: {expected_default(flag)}" in " ".join(text.split())


def test_serve_help_as_printed_shows_every_default() -> None:
    result = invoke("serve", "--help")
    assert result.exit_code == 0
    # without any whitespace: help wraps a long path at its hyphens (the tests' data folder)
    printed = "".join(result.stdout.split())
    for flag in FLAGS:
        assert "".join(f"[default: {expected_default(flag)}".split()) in printed, flag.name


def test_serve_help_says_where_the_default_database_is_and_why() -> None:
    _, text = help_records()["db"]
    assert "per-user data folder" in text


@pytest.mark.parametrize(
    "flag", [flag for flag in FLAGS if flag.name not in SWITCHES], ids=lambda flag: flag.name
)
def test_serve_help_metavars_say_what_an_option_takes(flag: Flag) -> None:
    shown, _ = help_records()[flag.name]
    option, _, metavar = shown.partition(" ")
    assert option == flag.option
    assert metavar
    assert metavar not in (flag.name.upper(), flag.option[2:].upper(), "TEXT", "INTEGER")


@pytest.mark.parametrize("command", ["serve", "log"])
def test_no_option_of_serve_or_log_shows_a_bare_type_or_its_own_name_as_metavar(
    command: str,
) -> None:
    found = main.get_command(click.Context(main), command)
    assert found is not None
    ctx = click.Context(found, info_name=command)
    for param in found.params:
        record = param.get_help_record(ctx)
        if record is None or " " not in record[0].split(",")[-1].strip():
            continue  # a switch: it takes no value
        metavar = record[0].rsplit(" ", 1)[-1]
        assert metavar not in ("TEXT", "INTEGER", "RANGE", str(param.name).upper()), record[0]
