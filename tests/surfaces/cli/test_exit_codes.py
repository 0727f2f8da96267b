"""Every exit code sqlgate documents, produced by a real command.

The codes are `errors.EXIT_CODES` (the manual's docs/reference/exit-codes.md is generated
from it, and lists each): they must be exactly those of the error classes plus 0, 1 and
130, and each has a case here that ends a command with that code.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from click.testing import CliRunner, Result

from sqlgate import errors
from sqlgate.config import FLAGS, Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.records import connect_both, records_path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "exit-codes.md"
_ROW = re.compile(r"^\| (\d+) \| (.+?) \| (.+) \|$")


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def page_exit_codes() -> dict[int, str]:
    """The codes of the manual's exit-code table, with their meanings."""
    return {
        int(found.group(1)): found.group(2)
        for line in PAGE.read_text(encoding="utf-8").splitlines()
        if (found := _ROW.match(line))
    }


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


def seeded(db: Path) -> Service:
    service = Service.open(Settings(db=db))
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b')")
    return service


# -- each code, for real -------------------------------------------------------------------------
def _ok(db: Path, _: pytest.MonkeyPatch) -> Result:
    seeded(db).close()
    return invoke("stats", "--db", str(db))


def _bug(db: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    seeded(db).close()

    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(Service, "open", broken)
    return invoke("stats", "--db", str(db))


def _bad_argument(db: Path, _: pytest.MonkeyPatch) -> Result:
    seeded(db).close()
    return invoke("log", "--since", "yesterday", "--db", str(db))


def _missing_database(db: Path, _: pytest.MonkeyPatch) -> Result:
    return invoke("stats", "--db", str(db))


def _policy(db: Path, _: pytest.MonkeyPatch) -> Result:
    service = seeded(db)
    claim, _created = service.claims.add("acme", "fact", "acme ships weekly", "slow", 0.8)
    service.claims.retract(claim.id)
    service.close()
    return invoke("claims", "add", "acme", "fact", "slow", "0.8", "acme ships weekly",
                  "--db", str(db))  # fmt: skip


def _busy(db: Path, _: pytest.MonkeyPatch) -> Result:
    seeded(db).close()
    holder = connect_both(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        return invoke("claims", "add", "acme", "fact", "slow", "0.8", "acme ships weekly",
                      "--db", str(db), "--busy-timeout", "0.05")  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _sqlite_error(db: Path, _: pytest.MonkeyPatch) -> Result:
    service = seeded(db)
    service.write_query("INSERT INTO notes (body) SELECT hex(randomblob(600)) FROM notes")
    service.close()
    conn = connect_both(db)
    ((root,),) = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'notes'")
    ((size,),) = conn.execute("PRAGMA page_size")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with db.open("r+b") as raw:  # the table's root page overwritten: a corrupt file
        raw.seek((root - 1) * size)
        raw.write(b"\xff" * size)
    return invoke("stats", "--db", str(db))


def _undo_problem(db: Path, _: pytest.MonkeyPatch) -> Result:
    service = seeded(db)
    service.destructive_query("DROP TABLE notes", reason="clear out")  # a whole-file snapshot
    service.close()
    return invoke("undo", "3", "--db", str(db))


def _cannot_open(db: Path, _: pytest.MonkeyPatch) -> Result:
    db.write_text("not a database, a text file of notes\n" * 200)
    return invoke("stats", "--db", str(db))


def _broken_chain(db: Path, _: pytest.MonkeyPatch) -> Result:
    service = seeded(db)
    service.append_event("first", "note", [])
    service.append_event("second", "note", [])
    service.close()
    conn = apsw.Connection(str(records_path(db)))  # sqlgate's tables, in its records file
    names = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'memory_events'"
        )
    ]
    for name in names:  # an attacker with the file drops the append-only triggers first
        conn.execute(f'DROP TRIGGER "{name}"')
    conn.execute("UPDATE memory_events SET content = 'edited' WHERE id = 1")
    conn.close()
    return invoke("verify", "--db", str(db))


def _unhealthy(db: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    home = db.parent / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(db.parent)
    entry = {"command": "/nowhere/sqlgate", "args": ["serve", "--db", str(db)]}
    (home / ".claude.json").write_text(f'{{"mcpServers": {{"sqlgate": {json.dumps(entry)}}}}}')
    return invoke("doctor", "--client", "claude-code")


def _interrupted(db: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    import sqlgate.surfaces.mcp.server as server

    class Stopped:
        async def run_stdio_async(self) -> None:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C while serving
            await anyio.sleep_forever()

    monkeypatch.setattr(server, "build_server", lambda service: Stopped())
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return invoke("serve", "--db", str(db))
    finally:  # a stopped command leaves both signals ignored: the process is ending
        for signum, handler in saved.items():
            signal.signal(signum, handler)


CASES: dict[int, Callable[[Path, pytest.MonkeyPatch], Result]] = {
    0: _ok,
    1: _bug,
    2: _bad_argument,
    3: _missing_database,
    4: _policy,
    5: _busy,
    6: _sqlite_error,
    7: _undo_problem,
    8: _cannot_open,
    9: _broken_chain,
    10: _unhealthy,
    130: _interrupted,
}


def test_the_table_lists_exactly_the_codes_sqlgate_uses() -> None:
    used = {0, 1, 130} | {getattr(errors, name).exit_code for name in errors.__all__}
    assert set(errors.EXIT_CODES) == used == set(CASES)
    assert set(page_exit_codes()) == used  # the manual's page lists each, and no other


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_documented_code_ends_a_real_command(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CASES[code](tmp_path / "agent.db", monkeypatch)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    if code == 9:  # the verdict is verify's answer, on stdout
        assert result.stdout.startswith("chain BROKEN at event 1: ")
    elif code not in (0, 1, 130):  # one readable line, never a traceback
        (line,) = result.stderr.splitlines()
        assert line.startswith("sqlgate: error: ")
        assert "Traceback" not in result.stderr
