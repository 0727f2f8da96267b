"""A real second process holds the write lock (Python's sqlite3 in `BEGIN IMMEDIATE`, as a
migration, a capture hook or a backup would): the stdio server and the CLI still answer.

Reading tools and read-only commands run with a busy timeout of an hour, so any wait for
the lock would end the test by its timeout instead of passing. Commands that must write
run with a short busy timeout and end with the clean busy message (exit 5). When the lock
frees, every call made meanwhile has exactly one audit row.

Also: the inspection commands open the file read-only, so an archived copy that cannot be
written (here made immutable with chattr as root, or read-only by mode otherwise) can be
verified, listed and exported.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest

from sqlgate.service import Service
from tests.records import connect_both, records_path
from tests.surfaces.mcp.test_stdio import child_env
from tests.surfaces.stdio_helpers import rpc

pytestmark = pytest.mark.stdio

HOUR = "3600"
# the write lock of each file named (the database and its records file)
HOLD_LOCK = (
    "import sqlite3, sys\n"
    "conns = [sqlite3.connect(p, isolation_level=None, timeout=0) for p in sys.argv[1:]]\n"
    "for conn in conns: conn.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.readline()\n"
    "for conn in conns: conn.execute('ROLLBACK')\n"
)
READ_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("stats",),
    ("stats", "--json"),
    ("verify",),
    ("log", "--json"),
    ("export",),
    ("claims", "search", "acme"),
    ("undo", "--list"),
    ("snapshots", "list"),
)


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    db = tmp_path / "agent.db"
    with Service.open(_settings(db)) as service:
        service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
        service.write_query("INSERT INTO t(body) VALUES ('alpha'), ('beta')")
        service.destructive_query("DELETE FROM t WHERE id = 2", reason="tidy")
        service.append_event("the deploy uses blue-green", tags=["deploy"])
        service.claim_add("acme", "status", "acme ships weekly")
    return db


def _settings(db: Path) -> object:
    from sqlgate.config import Settings

    return Settings(db=db)


@pytest.fixture
def lock_holder(seeded: Path) -> Iterator[subprocess.Popen[str]]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(seeded), str(records_path(seeded))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "locked\n"
    yield holder
    release(holder)


def release(holder: subprocess.Popen[str]) -> None:
    if holder.poll() is None:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> Ran:
    """A CLI command run in this process (the lock holder is the other process): what a
    separate command would print and exit with, without paying its start-up each time."""
    from click.testing import CliRunner

    from sqlgate.surfaces.cli.app import main

    result = CliRunner().invoke(main, list(args), prog_name="sqlgate", env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    """A CLI command in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "sqlgate", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )


def audit_count(db: Path) -> int:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM query_log").fetchall()[0][0])
    finally:
        conn.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a_read_only_command_answers_while_another_process_holds_the_lock(
    seeded: Path, lock_holder: subprocess.Popen[str], command: tuple[str, ...]
) -> None:
    done = cli(
        *command,
        "--db",
        str(seeded),
        *(("--busy-timeout", HOUR) if command[0] != "snapshots" else ()),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            ("claims", "add", "acme", "fact", "slow", "0.8", "acme is big"), id="claims-add"
        ),
        pytest.param(("claims", "retract", "1"), id="claims-retract"),
        pytest.param(("undo", "1"), id="undo"),
    ],
)
def test_a_writing_command_ends_with_the_busy_message_not_a_traceback(
    seeded: Path, lock_holder: subprocess.Popen[str], command: tuple[str, ...]
) -> None:
    done = cli_process(*command, "--db", str(seeded), "--busy-timeout", "0.2")
    assert done.returncode == 5, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("sqlgate: error: the database is busy")
    assert "more than 0.2 s (--busy-timeout)" in done.stderr


@pytest.mark.timeout(90)
def test_the_stdio_server_answers_reads_and_audits_every_call_once_the_lock_frees(
    seeded: Path, lock_holder: subprocess.Popen[str]
) -> None:
    before = audit_count(seeded)
    server = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(seeded), "--busy-timeout", HOUR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(),
    )
    try:
        rpc(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})  # fmt: skip
        rpc(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        calls = [
            ("read_query", {"query": "SELECT * FROM t"}),
            ("list_tables", {}),
            ("describe_table", {"table": "t"}),
            ("memory_search", {"query": "deploy"}),
            ("memory_details", {"ids": [1]}),
            ("get_resume_context", {}),
            ("memory_stats", {}),
            ("verify_chain", {}),
            ("claim_search", {"query": "acme"}),
        ]
        for number, (tool, arguments) in enumerate(calls, start=1):
            answer = rpc(server, {"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                  "params": {"name": tool, "arguments": arguments}})  # fmt: skip
            assert answer is not None
            assert not answer["result"].get("isError"), answer
        assert audit_count(seeded) == before  # queued while the lock is held
        release(lock_holder)
        assert server.stdin is not None
        server.stdin.close()  # the server writes what is queued as it closes
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
    assert audit_count(seeded) == before + len(calls)


@pytest.fixture
def unwritable(seeded: Path) -> Iterator[Path]:
    """The database and its folder, made impossible to write (as an archive would be)."""
    with Service.open(_settings(seeded)):
        pass  # a clean close checkpoints the WAL and removes it
    paths = [seeded, seeded.with_name(seeded.name + ".witness.json"), seeded.parent]
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True)
        if made.returncode != 0:
            pytest.skip(
                "as root only chattr +i makes a file unwritable, and it is not permitted here"
            )
        try:
            yield seeded
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {path: path.stat().st_mode for path in paths}
    for path in paths:
        path.chmod(stat.S_IMODE(modes[path]) & ~0o222)
    try:
        yield seeded
    finally:
        for path in reversed(paths):
            path.chmod(stat.S_IMODE(modes[path]))


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a_read_only_command_reads_an_unwritable_copy(
    unwritable: Path, command: tuple[str, ...]
) -> None:
    before = sorted(p.name for p in unwritable.parent.iterdir())
    done = cli(*command, "--db", str(unwritable))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in unwritable.parent.iterdir()) == before


def test_verify_of_an_unwritable_copy_reports_the_chain_whole(unwritable: Path) -> None:
    done = cli("verify", "--db", str(unwritable), "--json")
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout


@pytest.mark.timeout(90)
def test_stats_counts_the_audit_rows_waiting_for_the_lock(
    seeded: Path, lock_holder: subprocess.Popen[str]
) -> None:
    service = Service.open(_settings(seeded))
    service.audit.drainer.stop(10)
    try:
        service.read_query("SELECT 1")
        service.list_tables()
        done = cli("stats", "--json", "--db", str(seeded), "--busy-timeout", HOUR)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["audit"]["queued"] == 2
    finally:
        release(lock_holder)
        service.close()
    done = cli("stats", "--json", "--db", str(seeded))
    assert json.loads(done.stdout)["audit"]["queued"] == 0


@pytest.mark.timeout(90)
def test_verify_says_which_events_it_could_not_confirm_while_an_append_is_in_flight(
    seeded: Path, lock_holder: subprocess.Popen[str]
) -> None:
    from sqlgate.memory.witness import Witness, WitnessFile

    witness = WitnessFile.beside(seeded)
    now = witness.read()
    assert now is not None
    witness.write(Witness(now.head_id + 1, "d" * 64, now.verified_id, now.verified_hash))
    done = cli("verify", "--db", str(seeded), "--busy-timeout", HOUR)
    assert done.returncode == 0, done.stderr
    assert "events 1 to 2 are verified" in done.stdout
    stats = cli("stats", "--db", str(seeded), "--busy-timeout", HOUR)
    assert "newer events unconfirmed" in stats.stdout
