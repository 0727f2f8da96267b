"""Every command sqlgate prints for a person runs as written, from any folder (issue 30).

A project's server runs on a relative database (`.sqlgate/agent.db`, as `--project-db`
gives it); the agent's answers, its refusals and the CLI's output and errors are collected,
every `sqlgate ...` command in them is taken out, and each is run from another folder, with
no SQLGATE_* variable and no default database to fall back on. Each must name the database
by its absolute path and reach it: exit 0, or a refusal about the data (an undo conflict,
a restore that waits for --yes after listing what it would take away), never a database
or file it cannot find.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main

DB = Path(".sqlgate") / "agent.db"  # relative, as --project-db chooses it
SUBCOMMANDS = ("undo", "snapshots", "members", "claims", "stats", "log", "verify", "serve",
               "export", "restore")  # fmt: skip
MENTION = re.compile(rf"sqlgate (?:{'|'.join(SUBCOMMANDS)})\b")
# where a command that is not in backticks ends: a line, a clause, a bracket, a sentence
ENDS = re.compile(r"\n|; |\)|, |\.(?:\s|$)|$")


def commands_in(text: str) -> list[str]:
    """The `sqlgate ...` commands a text gives a person: in backticks, or to the end of the
    clause that names one."""
    found = [m[1] for m in re.finditer(r"`(sqlgate [^`]+)`", text) if MENTION.match(m[1])]
    rest = re.sub(r"`[^`]*`", " ", text)
    for mention in MENTION.finditer(rest):
        tail = rest[mention.start() :]
        end = ENDS.search(tail)
        found.append(tail[: end.start() if end else len(tail)].strip())
    return found


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


def said(call: object) -> str:
    """What a call answered, or the message of what it raised."""
    assert callable(call)
    try:
        return str(call())
    except SqlgateError as exc:
        return exc.for_cli()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    home = tmp_path / "home"  # no default database there
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    folder = tmp_path / "my project"  # a space, so that an unquoted path breaks
    (folder / ".sqlgate").mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


def _agent_texts() -> list[str]:
    """What a server on the relative database answers an agent, refusals included."""
    service = Service.open(Settings(db=DB), session="s-project")
    try:
        texts = [
            service.write_query("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"),
            service.write_query("INSERT INTO notes(body) VALUES ('a'), ('b')"),
            service.destructive_query("DELETE FROM notes WHERE body = 'a'", "not needed"),
        ]
        dropped = service.destructive_query("DROP TABLE notes", "start again")
        texts.append(dropped)
        call = str(service.db.server.execute("SELECT max(id) FROM query_log").fetchone()[0])
        texts.append(said(lambda: service.undo_call(call, "bring it back")))
        texts.append(said(lambda: service.undo(call)))  # as the CLI asks it
        texts.append(said(lambda: service.undo("999")))
        texts.append(said(lambda: service.undo("x1")))
    finally:
        service.close()
    return texts


def _cli_texts(snapshot: str) -> list[str]:
    """What the CLI prints, run in the project folder on the relative database."""
    db = str(DB)
    runs = [
        invoke("undo", "999", "--db", db),
        invoke("undo", "nonsense", "--db", db),
        invoke("snapshots", "restore", snapshot, "--db", db),
        invoke("snapshots", "restore", snapshot, "--db", db, "--yes"),
        invoke("snapshots", "restore", "20990101T000000000000Z-000000.sqlite", "--db", db),
        invoke("snapshots", "restore", "not a snapshot", "--db", db),
        invoke("members", "list", "--db", db),
        invoke("members", "add", "bob", "--tier", "read", "--db", db),
        invoke("members", "add", "bob", "--tier", "read", "--db", db),
        invoke("members", "revoke", "bob", "--db", db),
        invoke("members", "rotate", "nobody", "--db", db),
        invoke("claims", "confirm", "99", "--db", db),
        invoke("claims", "search", " ", "--db", db),
    ]
    return [result.output for result in runs]


def test_every_printed_command_runs_as_written_from_another_folder(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent_texts()
    snapshot = re.search(r"snapshot: (.+?); restore: ", agent[3])
    assert snapshot, agent[3]
    texts = agent + _cli_texts(Path(snapshot[1]).name)
    commands = list(dict.fromkeys(c for text in texts for c in commands_in(text)))
    kinds = {tuple(shlex.split(command)[1:3]) for command in commands}
    for expected in (("undo",), ("snapshots", "restore"), ("snapshots", "list"),
                     ("members", "rotate"), ("members", "list"), ("claims", "list")):  # fmt: skip
        assert any(kind[: len(expected)] == expected for kind in kinds), (expected, commands)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    # a restore puts an older file back (members added since go): restores run last
    for command in sorted(commands, key=lambda command: " restore " in command):
        words = shlex.split(command)
        assert words[0] == "sqlgate", command
        assert "--db" in words, f"names no database: {command}"
        assert Path(words[words.index("--db") + 1]).is_absolute(), command
        result = invoke(*words[1:])
        reached = result.exit_code == 0 or (
            # the database and the call or snapshot were found: a refusal about the data
            result.exit_code in (2, 7) and ("pass --yes" in result.output
                                            or "refused" in result.output)
        )  # fmt: skip
        assert reached, f"{command}\n{result.output}"
    assert not list(elsewhere.iterdir())  # nothing was made where they ran


def test_the_snapshot_a_destructive_call_names_is_absolute_with_its_restore_command(
    project: Path,
) -> None:
    service = Service.open(Settings(db=DB), session="s-project")
    try:
        service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY)")
        answer = service.destructive_query("DROP TABLE t", "not needed")
    finally:
        service.close()
    found = re.fullmatch(r"ok: DROP TABLE done; snapshot: (.+?); restore: (.+)", answer)
    assert found, answer
    path = Path(found[1])
    assert path.is_absolute()
    assert path.is_file()
    assert shlex.split(found[2]) == [
        "sqlgate", "snapshots", "restore", path.name, "--db", str(project / DB)
    ]  # fmt: skip
