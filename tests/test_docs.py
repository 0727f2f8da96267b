"""README, `--help` and CHANGELOG say the same thing as the code.

- Help: every option of every command says what it is for in `--help` (the manual's command
  line page is generated from that help: tests/scripts/test_gen_reference.py checks the
  generated reference pages, commands, options, flags and tools, against the code).
- `--db` help: a command whose help says the file is created if missing creates it; one
  whose help says it must exist exits 3 and creates nothing.
- Runnable examples: every block after a `<!-- runnable -->` line, in the README,
  CONTRIBUTING.md and every page of docs/, is run as a shell session in an empty folder
  (`$ ` lines are commands; the lines after one are its output, `…` standing for any text)
  and must print what the page shows.
- CHANGELOG: names every command and every tool, and its known issues are not contradicted
  by the code (each stale known issue found so far has a check here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.cli.options import EXISTING_DB_HELP

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def leaf_commands(
    group: click.Group = main, path: tuple[str, ...] = (), parent: click.Context | None = None
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    # each context has its parent, as on a real command line: click caches a command's help
    # option from the first context it sees, and `-h` comes from the root's settings
    ctx = click.Context(group, info_name=path[-1] if path else "sqlgate", parent=parent)
    for name in group.list_commands(ctx):  # imports each command (the group loads them lazily)
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name), ctx)
        else:
            yield (*path, name), command


COMMANDS = dict(leaf_commands())


def options_of(command: click.Command) -> dict[str, click.Option]:
    found = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                if name.startswith("--"):
                    found[name] = param
    return found


# -- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_option_says_what_it_is_for(path: tuple[str, ...]) -> None:
    silent = sorted({name for name, param in options_of(COMMANDS[path]).items()
                     if not (param.help or "").strip()})  # fmt: skip
    assert not silent, f"`sqlgate {' '.join(path)}` options without help: {silent}"


# -- --db help and behaviour ----------------------------------------------------------------
# each command that takes --db, with the smallest arguments that reach the database
DB_RUNS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("claims", "add"): ("acme", "fact", "slow", "0.8", "acme ships weekly"),
    ("claims", "confirm"): ("1",),
    ("claims", "contradictions"): (),
    ("claims", "list"): (),
    ("claims", "retract"): ("1",),
    ("claims", "search"): ("acme",),
    ("claims", "stale"): (),
    ("export",): (),
    ("log",): (),
    ("members", "add"): ("alice", "--tier", "read"),
    ("members", "list"): (),
    ("members", "remove"): ("alice",),
    ("members", "revoke"): ("alice",),
    ("members", "rotate"): ("alice",),
    ("members", "set"): ("alice", "--tier", "write"),
    ("migrate",): (),
    ("replicate",): ("file:///nonexistent-replica",),
    ("snapshots", "restore"): ("20260101T000000000000Z-000000.sqlite",),
    ("stats",): (),
    ("undo",): ("1",),
    ("verify",): (),
}


def _child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["HOME"] = str(home)
    # the per-user data folder of this block alone (the test session's is shared by all)
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    return env


def test_every_command_with_a_db_option_is_checked_below() -> None:
    takes_db = {path for path, command in COMMANDS.items() if "--db" in options_of(command)}
    # not here: serve (created if missing, the whole suite shows it), capture (never fails,
    # logs instead), install (writes a client's config), snapshots list (reads a folder),
    # import (the source is checked first; tests/surfaces/integrations has the cases)
    # and ui (serves until stopped; tests/surfaces/ui/test_command.py has the missing file);
    # policy check and show only read it when it is there (tests/surfaces/cli/test_policy.py)
    others = {("serve",), ("capture",), ("install",), ("snapshots", "list"), ("ui",),
              ("policy", "check"), ("policy", "show")}  # fmt: skip
    unchecked = {path for path in takes_db - set(DB_RUNS) - others if path[0] != "import"}
    assert not unchecked, unchecked


@pytest.mark.parametrize("path", sorted(DB_RUNS), ids=" ".join)
def test_db_help_says_what_a_missing_database_does(path: tuple[str, ...], tmp_path: Path) -> None:
    from click.testing import CliRunner

    db_help = options_of(COMMANDS[path])["--db"].help or ""
    db = tmp_path / "typo.db"
    result = CliRunner().invoke(main, [*path, *DB_RUNS[path], "--db", str(db)],
                                env={"HOME": str(tmp_path)}, prog_name="sqlgate")  # fmt: skip
    if EXISTING_DB_HELP in db_help:
        assert (result.exit_code, db.exists()) == (3, False), result.stderr
    else:
        assert "created if missing" in db_help
        assert db.exists(), result.stderr


# -- runnable examples ------------------------------------------------------------------------
def documents() -> list[Path]:
    """The files whose runnable blocks are run: the README, CONTRIBUTING and the manual."""
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def runnable_blocks() -> list[tuple[str, str]]:
    """(`file:line`, block) of every block after a `<!-- runnable -->` line."""
    blocks = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT).as_posix()
        for found in re.finditer(r"<!-- runnable -->\n```(?:text|console)\n(.*?)```", text, re.S):
            blocks.append((f"{where}:{text[: found.start()].count(chr(10)) + 1}", found.group(1)))
    return blocks


def _matches(expected: str, actual: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def test_the_docs_keep_their_runnable_examples() -> None:
    """The blocks that were in the README before issue 21 moved with their prose."""
    where = {line.split(":")[0] for line, _ in runnable_blocks()}
    assert len(runnable_blocks()) >= 5
    assert {
        "README.md", "docs/how-to/connect.md", "docs/reference/output-format.md",
        "docs/claims.md", "docs/how-to/inspect.md",
    } <= where  # fmt: skip


@pytest.mark.stdio
@pytest.mark.parametrize(
    ("line", "block"), runnable_blocks(), ids=[w for w, _ in runnable_blocks()]
)
def test_a_runnable_block_prints_what_it_shows(line: str, block: str, tmp_path: Path) -> None:
    commands: list[tuple[str, list[str]]] = []
    for text in block.splitlines():
        if text.startswith("$ "):
            commands.append((text[2:], []))
        else:
            assert commands, f"{line}: output before any command"
            commands[-1][1].append(text)
    marker = "@@sqlgate-readme@@"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sqlgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sqlgate "$@"\n')
    (bin_dir / "sqlgate").chmod(0o755)
    script = "\n".join(
        f"{command} 2>&1; __rc=$?; echo {marker}; (exit $__rc)" for command, _ in commands
    )
    env = _child_env(tmp_path)
    env.update({"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "COLUMNS": "100",
                "TTY_COMPATIBLE": "0"})  # fmt: skip
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    outputs = done.stdout.split(marker + "\n")
    for (command, expected), actual in zip(commands, outputs, strict=False):
        want = "\n".join(expected) + ("\n" if expected else "")
        assert _matches(want, actual), f"{line}: `{command}` printed:\n{actual}"


# -- CHANGELOG --------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_the_changelog_names_every_command(path: tuple[str, ...]) -> None:
    name = " ".join(path)
    assert (
        f"sqlgate {name}" in CHANGELOG or f"`{name}`" in CHANGELOG or (f"`{path[-1]}`" in CHANGELOG)
    ), name


def test_the_changelog_names_every_tool() -> None:
    from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS

    missing = [t for t in (*SQL_TOOLS, *MEMORY_TOOLS, *CLAIMS_TOOLS) if t not in CHANGELOG]
    assert not missing


def test_known_issues_are_not_contradicted_by_the_code() -> None:
    issues = "\n".join(
        part.split("\n### ", 1)[0] for part in CHANGELOG.split("### Known issues")[1:]
    )
    assert "announce no tools" not in issues  # --tools memory/claims announce their tools
    for path in documents():  # HTTP is a transport too
        assert "only transport" not in path.read_text(encoding="utf-8"), path


def test_ci_runs_exactly_the_readme_test_command() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (command,) = [
        line
        for line in quick_start.splitlines()
        if line.startswith("python3 -m venv") and "pip install -q -e" in line
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == command


def test_the_manual_says_an_app_database_is_left_as_it_is(tmp_path: Path) -> None:
    """The manual's "Where the database lives" (Connect a client) says an app's database
    works as it is and `--adopt-db` is no longer needed: a database sqlgate opens gains none
    of sqlgate's tables (they are in its records file), so the page lists none for Alembic
    to leave out."""
    import apsw

    from sqlgate.config import Settings
    from sqlgate.engine.database import Database

    path = tmp_path / "app.db"
    app = apsw.Connection(str(path))
    app.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    app.close()
    Database.open(Settings(db=path)).close()
    app = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = {str(name) for (name,) in app.execute("SELECT name FROM sqlite_schema")}
    finally:
        app.close()
    assert names == {"users"}
    connect = (ROOT / "docs" / "how-to" / "connect.md").read_text(encoding="utf-8")
    section = connect.split("## Where the database lives", 1)[1].split("\n## ", 1)[0]
    prose = " ".join(section.split())
    assert "works as it is" in prose
    assert "`--adopt-db` (`SQLGATE_ADOPT_DB=1`)" in prose
    assert "no longer needed" in prose
    assert "SQLGATE_TABLES" not in section


def test_the_team_members_page_names_the_tier_of_every_tool() -> None:
    """docs/how-to/team-members.md's table: each tier's row lists exactly its tools."""
    from sqlgate.surfaces.mcp.tool_tiers import TIERS, tools_of_tier

    page = (ROOT / "docs" / "how-to" / "team-members.md").read_text(encoding="utf-8")
    section = page.split("## Which tier each tool needs", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (read|write|destructive) \| (.*) \|$", section, re.M))
    assert set(rows) == set(TIERS)
    for tier in TIERS:
        assert re.findall(r"`(\w+)`", rows[tier]) == list(tools_of_tier(tier)), tier
