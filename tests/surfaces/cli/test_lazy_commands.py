"""`sqlgate`'s commands are imported only when they run (`cli.lazy`): the table in app.py
names each one's module and holds its one-line help, which must be the real command's, so
`--help` reads the same whether or not a command was imported."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from sqlgate.surfaces.cli.app import COMMANDS, main
from sqlgate.surfaces.cli.lazy import LazyCommand, LazyGroup

WHOLE = 10_000  # a limit past any first sentence: the whole short help


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_held_help_is_the_commands_own(name: str) -> None:
    command = COMMANDS[name].load(name)
    assert command.name == name
    assert COMMANDS[name].help == command.get_short_help_str(WHOLE)


def fresh_group(*, loaded: bool) -> click.Group:
    """A copy of `main` with nothing imported yet, or with every command imported."""
    eager = {name: main.commands[name] for name in main.commands if name not in COMMANDS}
    if loaded:
        eager |= {name: COMMANDS[name].load(name) for name in COMMANDS}
    return LazyGroup(
        main.name, commands=eager, lazy={} if loaded else COMMANDS, params=main.params,
        help=main.help, context_settings=main.context_settings,
    )  # fmt: skip


@pytest.mark.parametrize("width", ["80", "50", "200"])
def test_help_lists_the_same_commands_imported_or_not(width: str) -> None:
    def shown(group: click.Group) -> str:
        result = CliRunner().invoke(group, ["--help"], env={"COLUMNS": width}, prog_name="sqlgate")
        assert result.exit_code == 0, result.output
        return result.stdout

    lazy = shown(fresh_group(loaded=False))
    assert lazy == shown(fresh_group(loaded=True))
    assert all(f"  {name} " in lazy for name in COMMANDS)


def test_help_and_version_import_no_command() -> None:
    probe = (
        "import json, sys\n"
        "from click.testing import CliRunner\n"
        "from sqlgate.surfaces.cli import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(done.stdout))
    modules = {entry.target.partition(":")[0] for entry in COMMANDS.values()}
    assert not modules & loaded


def test_an_unknown_command_is_a_usage_error_naming_it() -> None:
    result = CliRunner().invoke(main, ["stat"], prog_name="sqlgate")
    assert result.exit_code == 2
    assert result.stderr == (
        "sqlgate: error: no such command 'stat'; did you mean 'stats'? (see sqlgate --help)\n"
    )


def test_an_unknown_command_is_told_the_same_lazy_command_whatever_was_imported() -> None:
    main.commands.pop("stats", None)  # as in a fresh process: nothing imported yet
    result = CliRunner().invoke(main, ["stat"], prog_name="sqlgate")
    assert "did you mean 'stats'?" in result.stderr


def test_an_entry_that_names_no_command_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a click command"):
        LazyCommand("sqlgate.surfaces.cli.app:COMMANDS", "").load("commands")
