"""Ctrl-C and SIGTERM stop every long-running command cleanly (`sqlgate.surfaces.stops`).

Each case starts the real command as a child process, on a pseudo-terminal (the child's
controlling terminal, in the foreground, as when a person runs it) or through pipes (as an
MCP client runs `serve`), waits until it is ready (reads its output, with a deadline: no
sleeps), stops it the way the case says, and checks what a person would: the exit status,
no traceback, no `Fatal Python error`, and that the database (or the replication) was
closed in order.

    ctrl-c        b"\\x03" written to the terminal: its driver sends SIGINT to the foreground
    ctrl-c-twice  a second one once the first was noticed (a person hammering the keys)
    sigint        os.kill(pid, SIGINT)
    sigterm       os.kill(pid, SIGTERM): a normal end, exit 0
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.lowlevel
import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.service import Service
from sqlgate.surfaces.replication.status import replication_dir
from sqlgate.surfaces.stops import (
    STOP_EXIT,
    Stops,
    StopSignal,
    exit_code_for,
    serve_until_stopped,
    stop_signals,
)
from tests.records import connect_both

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals and signals")

READY_SECONDS = 30.0  # start-up on a loaded machine: a deadline, never a measure
STOP_SECONDS = 10.0  # the stop itself is expected within a second or two
NOTICE_SECONDS = 5.0

# the child takes the pseudo-terminal as its controlling terminal, then becomes sqlgate
BECOME_TERMINAL_OWNER = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "stops", "version": "0"}},
}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


# -- the pure part: which signal ends with which status --------------------------------------


@pytest.mark.parametrize(
    ("signum", "code"),
    [
        pytest.param(signal.SIGINT, 130, id="ctrl-c"),
        pytest.param(signal.SIGTERM, 0, id="sigterm"),
        pytest.param(None, 0, id="no-signal"),
    ],
)
def test_each_stop_has_its_exit_status(signum: int | None, code: int) -> None:
    assert exit_code_for(signum) == code


def test_the_table_names_the_signals_it_handles() -> None:
    assert set(STOP_EXIT) == {signal.SIGINT, signal.SIGTERM}
    assert StopSignal(signal.SIGINT).key == "Ctrl-C"
    assert StopSignal(signal.SIGTERM).key == "SIGTERM"


@pytest.fixture
def own_signals() -> Iterator[None]:
    """The test process's handlers for both signals, given back after the test."""
    saved = {signum: signal.getsignal(signum) for signum in STOP_EXIT}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def run_command(signals: list[int], phase: str, called: list[int], reached: list[str]) -> int:
    """A command inside `stop_signals()` that receives `signals` while `phase`; its status."""
    try:
        with stop_signals() as stops:
            if phase == "serving":
                with stops.serving(called.append):
                    for signum in signals:
                        signal.raise_signal(signum)
                    reached.append("body")
                    assert stops.wait(0)
            else:
                if phase == "stopping":
                    with stops.serving(called.append):
                        pass
                for signum in signals:
                    signal.raise_signal(signum)
                reached.append("body")
            reached.append("end")
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


INT, TERM = signal.SIGINT, signal.SIGTERM


@pytest.mark.parametrize(
    ("signals", "phase", "code", "reached", "called"),
    [
        pytest.param([INT], "starting", 130, [], [], id="ctrl-c-while-starting-stops-there"),
        pytest.param([TERM], "starting", 0, [], [], id="sigterm-while-starting-stops-there"),
        pytest.param([INT], "serving", 130, ["body", "end"], [INT], id="ctrl-c-asks-the-server"),
        pytest.param([TERM], "serving", 0, ["body", "end"], [TERM], id="sigterm-asks-the-server"),
        pytest.param([INT, INT, INT], "serving", 130, ["body", "end"], [INT],
                     id="more-ctrl-c-change-nothing"),
        pytest.param([TERM, INT], "serving", 0, ["body", "end"], [TERM], id="the-first-decides"),
        pytest.param([INT], "stopping", 130, ["body", "end"], [], id="clean-up-is-never-cut"),
        pytest.param([], "stopping", 0, ["body", "end"], [], id="no-signal-a-normal-end"),
    ],
)  # fmt: skip
def test_what_a_stop_does_in_each_phase(
    signals: list[int], phase: str, code: int, reached: list[str], called: list[int],
    own_signals: None,
) -> None:  # fmt: skip
    seen: list[str] = []
    heard: list[int] = []
    assert run_command(signals, phase, heard, seen) == code
    assert seen == reached
    assert heard == called


def test_a_normal_end_gives_the_handlers_back_and_a_stop_leaves_them_ignored(
    own_signals: None,
) -> None:
    before = {signum: signal.getsignal(signum) for signum in STOP_EXIT}
    with stop_signals() as stops:
        assert signal.getsignal(signal.SIGINT) == stops.handle
    assert {signum: signal.getsignal(signum) for signum in STOP_EXIT} == before
    assert run_command([TERM], "serving", [], []) == 0
    # the process is ending: a late Ctrl-C neither raises nor kills it by SIGINT
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


def test_a_keyboard_interrupt_from_another_handler_ends_with_130(own_signals: None) -> None:
    with pytest.raises(SystemExit) as stopped, stop_signals():
        raise KeyboardInterrupt
    assert stopped.value.code == 130


def test_an_error_while_starting_passes_through_unchanged(own_signals: None) -> None:
    with pytest.raises(ValueError, match="bad flag"), stop_signals():
        raise ValueError("bad flag")


@pytest.mark.anyio
async def test_serve_until_stopped_cancels_the_server_and_waits_for_its_clean_up() -> None:
    stops = Stops()
    cleaned: list[str] = []

    async def server() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()
                cleaned.append("closed")

    try:
        with anyio.fail_after(STOP_SECONDS):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(serve_until_stopped, stops, server)
                await anyio.wait_all_tasks_blocked()
                stops.handle(signal.SIGTERM, None)  # what the signal handler does
    finally:
        stops.close()
    assert cleaned == ["closed"]
    assert stops.exit_code == 0


@pytest.mark.anyio
async def test_serve_until_stopped_raises_the_servers_own_error_unwrapped() -> None:
    stops = Stops()

    async def server() -> None:
        raise OSError("the wire broke")

    try:
        with pytest.raises(OSError, match="the wire broke"):
            await serve_until_stopped(stops, server)
    finally:
        stops.close()
    assert not stops.stopped


# -- the real commands -----------------------------------------------------------------------


@dataclass
class Child:
    """A sqlgate process and everything it has written so far (stdout and stderr merged)."""

    process: subprocess.Popen[bytes]
    fd: int  # the terminal's master side, or the read end of the output pipe
    terminal: bool
    output: bytearray = field(default_factory=bytearray)
    ended: bool = False

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def _read(self, timeout: float) -> None:
        if self.ended:
            return
        ready, _, _ = select.select([self.fd], [], [], max(timeout, 0.0))
        if not ready:
            return
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: every process holding the terminal's other side has left
            chunk = b""
        if chunk:
            self.output += chunk
        else:
            self.ended = True

    def wait_for(self, pattern: str, seconds: float) -> bool:
        """Read until the output matches `pattern` (True), it ends or the deadline passes."""
        deadline = time.monotonic() + seconds
        found = re.compile(pattern)
        while not found.search(self.text()):
            left = deadline - time.monotonic()
            if self.ended or left <= 0:
                return False
            self._read(left)
        return True

    def send(self, data: bytes) -> None:
        if self.terminal:
            with suppress(OSError):  # it may have gone already
                os.write(self.fd, data)
        else:
            assert self.process.stdin is not None
            with suppress(OSError):  # it may have gone already
                self.process.stdin.write(data)
                self.process.stdin.flush()

    def finish(self, seconds: float = STOP_SECONDS) -> int:
        """Everything it writes until it exits; its exit status (-N: killed by signal N)."""
        deadline = time.monotonic() + seconds
        while not self.ended and time.monotonic() < deadline:
            self._read(deadline - time.monotonic())
            if self.process.poll() is not None and not self.terminal:
                self._read(0)
        try:
            return self.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {seconds:.0f} s after the stop:\n{self.text()}")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env.update({"PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "COLUMNS": "200", **extra})
    return env


def launch(args: list[str], *, terminal: bool, cwd: Path) -> Child:
    command = [sys.executable, "-m", "sqlgate", *args]
    if terminal:
        import termios

        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO  # what is typed is not echoed back into the output
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", BECOME_TERMINAL_OWNER, *command[1:]],
                stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                env=child_env(), cwd=cwd,
            )  # fmt: skip
        finally:
            os.close(slave)
        return Child(process, master, terminal=True)
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, env=child_env(), cwd=cwd,
    )  # fmt: skip
    assert process.stdout is not None
    return Child(process, process.stdout.fileno(), terminal=False)


@pytest.fixture
def made_db(tmp_path: Path) -> Path:
    """A sqlgate database with one event, closed (so no -wal file is left)."""
    db = tmp_path / "agent.db"
    with Service.open(Settings(db=db)) as service:
        service.append_event("the database exists", kind="note")
    return db


@dataclass(frozen=True)
class Command:
    args: tuple[str, ...]
    ready: str  # what it writes once it serves
    stopped: str | None  # what it writes last, having cleaned up (None: nothing)
    rpc: bool = False  # answers an `initialize` on its stdin to show it is ready


def _commands(db: Path, tmp: Path) -> dict[str, Command]:
    replica = (tmp / "replica").as_uri()
    return {
        "serve": Command(("serve", "--db", str(db)), r'"serverInfo"', None, rpc=True),
        "serve-http": Command(
            ("serve", "--db", str(db), "--transport", "http", "--port", "0"),
            "serving MCP over streamable HTTP at", "stopped; database closed",
        ),
        "ui": Command(("ui", "--db", str(db), "--port", "0"),
                      "the web console \\(read-only\\) is at", "the web console stopped"),
        "replicate": Command(("replicate", replica, "--db", str(db)), "Ctrl-C stops",
                             "stopped; Litestream synced what it had"),
    }  # fmt: skip


@dataclass(frozen=True)
class Case:
    command: str
    terminal: bool
    stop: str  # ctrl-c, ctrl-c-twice, sigint, sigterm
    code: int


# each ctrl-c-twice case begins as a ctrl-c case; serve-http through a pipe with SIGTERM is
# in tests/surfaces/mcp/test_http.py
CASES = [
    Case("serve", True, "ctrl-c", 130),
    Case("serve", True, "ctrl-c-twice", 130),
    Case("serve", True, "sigterm", 0),
    Case("serve", False, "sigint", 130),
    Case("serve", False, "sigterm", 0),
    Case("serve-http", True, "ctrl-c-twice", 130),
    Case("ui", True, "ctrl-c-twice", 130),
    Case("ui", True, "sigterm", 0),
    Case("replicate", True, "ctrl-c-twice", 130),
    Case("replicate", False, "sigterm", 0),
]


def _case_id(case: Case) -> str:
    return f"{case.command}-{'pty' if case.terminal else 'pipe'}-{case.stop}"


def send_line(child: Child, message: dict[str, object]) -> None:
    child.send((json.dumps(message) + "\n").encode("utf-8"))


def start(command: Command, *, terminal: bool, cwd: Path) -> Child:
    child = launch(list(command.args), terminal=terminal, cwd=cwd)
    if command.rpc:
        send_line(child, INITIALIZE)
    if not child.wait_for(command.ready, READY_SECONDS):
        child.process.kill()
        child.process.wait()
        pytest.fail(f"{command.args[0]} did not get ready:\n{child.text()}")
    if command.rpc:
        send_line(child, INITIALIZED)
    return child


def stop(child: Child, how: str) -> None:
    if how.startswith("ctrl-c"):
        child.send(b"\x03")
        if how == "ctrl-c-twice":
            # once the first was noticed (or the process is gone): the second ^C a person types
            child.wait_for("stopping", NOTICE_SECONDS)
            child.send(b"\x03")
    else:
        child.process.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)


def assert_clean(child: Child, code: int, status: int) -> None:
    text = child.text()
    assert status == code, text
    assert "Traceback" not in text
    assert "Fatal Python error" not in text


@pytest.fixture
def running() -> Iterator[list[Child]]:
    """Children started by a test; any still running at its end are killed."""
    children: list[Child] = []
    yield children
    for child in children:
        if child.process.poll() is None:
            child.process.kill()
            child.process.wait()
        if child.terminal:
            os.close(child.fd)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_a_stop_ends_the_command_cleanly(
    case: Case, made_db: Path, tmp_path: Path, running: list[Child]
) -> None:
    command = _commands(made_db, tmp_path)[case.command]
    child = start(command, terminal=case.terminal, cwd=tmp_path)
    running.append(child)
    stop(child, case.stop)
    assert_clean(child, case.code, child.finish())
    if command.stopped is not None:
        assert command.stopped in child.text()
    if case.command.startswith("serve"):
        # the last connection closed: SQLite checkpointed the WAL and removed it
        assert not Path(f"{made_db}-wal").exists(), child.text()
    if case.command == "replicate":
        status = json.loads((replication_dir(made_db) / "status.json").read_text())
        assert status["state"] == "stopped"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_interrupts_a_running_query_instead_of_waiting_for_it(
    made_db: Path, tmp_path: Path, running: list[Child]
) -> None:
    command = Command(("serve", "--db", str(made_db), "--query-timeout", "600"),
                      r'"serverInfo"', None, rpc=True)  # fmt: skip
    child = start(command, terminal=True, cwd=tmp_path)
    running.append(child)
    idle = cpu_seconds(child.process.pid)
    call = {"name": "read_query", "arguments": {"query": ENDLESS}}
    send_line(child, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    # the query runs once the server spends CPU of its own (it is idle otherwise)
    deadline = time.monotonic() + READY_SECONDS
    while cpu_seconds(child.process.pid) < idle + 0.3:
        assert time.monotonic() < deadline, child.text()
        child.wait_for("never printed", 0.02)  # reads what it writes meanwhile
    child.send(b"\x03")
    assert_clean(child, 130, child.finish())
    conn = connect_both(made_db, flags=apsw.SQLITE_OPEN_READONLY)
    rows = conn.execute("SELECT ok FROM query_log WHERE tool = 'read_query'").fetchall()
    assert rows == [(0,)]  # its audit row was written: the call ended before the database closed
