"""`sqlgate doctor`'s checks (surfaces/integrations/health.py) against fake homes, one
problem per case, and a healthy home that passes every check with the real server."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.home import record_files
from sqlgate.service import Service
from sqlgate.surfaces.integrations.capture_hooks import capture_command
from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.health import Check, Doctor, examine
from sqlgate.surfaces.integrations.launcher import Launcher
from sqlgate.surfaces.integrations.server_probe import Answer
from sqlgate.surfaces.replication.status import replication_dir, write_status
from tests.surfaces.integrations.fake_home import fake_home

NOW = datetime(2026, 5, 4, 12, 0, 0, tzinfo=timezone.utc).timestamp()
PYTHON = Launcher(sys.executable, ("-m", "sqlgate"))
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Home:
    root: Path
    where: Where

    @property
    def db(self) -> Path:
        return self.root / "data" / "agent.db"

    @property
    def claude_json(self) -> Path:
        return self.where.home / ".claude.json"

    def write(self, path: Path, data: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")

    def server(self, command: str = sys.executable, args: list[str] | None = None,
               scope: str = "user", name: str = "sqlgate") -> None:  # fmt: skip
        if args is None:
            args = ["-m", "sqlgate", "serve", "--db", str(self.db)]
        entry = {"type": "stdio", "command": command, "args": args}
        path = self.where.cwd / ".mcp.json" if scope == "project" else self.claude_json
        data = json.loads(path.read_text()) if path.exists() else {}
        data.setdefault("mcpServers", {})[name] = entry
        self.write(path, data)

    def hooks(self, command: str, scope: str = "user") -> None:
        base = self.where.cwd if scope == "project" else self.where.home
        events = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
        hooks = {event: [{"hooks": [{"type": "command", "command": command}]}] for event in events}
        # the ask rules install writes beside the hooks
        ask = ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]
        self.write(base / ".claude" / "settings.json",
                   {"hooks": hooks, "permissions": {"ask": ask}})  # fmt: skip

    def make_db(self, path: Path | None = None) -> Path:
        path = path or self.db
        path.parent.mkdir(parents=True, exist_ok=True)
        Service.open(Settings(db=path)).close()
        return path

    def script(self, name: str, body: str) -> Path:
        """A program called `name` (so the entry counts as sqlgate's) running `body`."""
        folder = self.root / "bin"
        folder.mkdir(exist_ok=True)
        path = folder / name
        path.write_text(f"#!{sys.executable}\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
        return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    fake_home(tmp_path, monkeypatch, extra=("data",))
    return Home(tmp_path, Where.here())


def run(home: Home, **given: Any) -> list[Check]:
    doctor = Doctor(home.where, now=lambda: NOW, timeout=given.pop("timeout", 30.0), **given)
    return examine(doctor)


def verdicts(checks: list[Check]) -> dict[str, str]:
    return {check.check: check.status for check in checks}


def one(checks: list[Check], name: str) -> Check:
    (found,) = [check for check in checks if check.check == name]
    return found


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# -- the healthy home ----------------------------------------------------------------------
def test_a_healthy_home_passes_every_check_with_the_real_server(home: Home) -> None:
    home.make_db()
    home.server()
    home.hooks(capture_command(PYTHON, home.db, "linux"))
    checks = run(home)
    assert verdicts(checks) == {
        "command": "ok", "database": "ok", "initialize": "ok", "hooks": "ok",
        "capture-log": "ok", "scopes": "ok", "permissions": "ok",
    }, [c.record() for c in checks]  # fmt: skip
    assert "sqlgate" in one(checks, "initialize").detail


# -- one problem per case --------------------------------------------------------------------
def _missing_command(home: Home) -> None:
    home.make_db()
    home.server(str(home.root / "gone" / "sqlgate"), ["serve", "--db", str(home.db)])


def _command_not_runnable(home: Home) -> None:
    home.make_db()
    program = home.script("sqlgate", "")
    program.chmod(0o644)
    home.server(str(program), ["serve", "--db", str(home.db)])


def _not_on_path(home: Home) -> None:
    home.server("sqlgate", ["serve", "--db", ".sqlgate/agent.db"], scope="project")


def _dangling_link(home: Home) -> None:
    home.db.parent.mkdir(parents=True, exist_ok=True)
    home.db.symlink_to(home.root / "nowhere.db")
    home.server()


def _missing_folder(home: Home) -> None:
    home.server(args=["-m", "sqlgate", "serve", "--db", str(home.root / "typo" / "agent.db")])


def _another_programs_file(home: Home) -> None:
    home.db.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(home.db))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.close()
    home.server()


def _a_file_of_sqlgate_0_1_0(home: Home) -> None:
    """A database that still holds sqlgate 0.1.0's own tables (its application_id)."""
    home.db.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(home.db))
    conn.execute("CREATE TABLE query_log (id INTEGER PRIMARY KEY)")
    conn.pragma("application_id", 0x53514754)
    conn.close()
    home.server()


def _not_sqlite(home: Home) -> None:
    home.db.parent.mkdir(parents=True, exist_ok=True)
    home.db.write_text("my notes\n" * 100)
    home.server()


def _unwritable_file(home: Home) -> None:
    home.make_db()
    home.db.chmod(stat.S_IRUSR)
    home.server()


def _silent_server(home: Home) -> None:
    home.make_db()
    program = home.script("sqlgate", "import sys\nsys.stdin.read()")  # reads, never answers
    home.server(str(program), ["serve", "--db", str(home.db)])


def _failing_server(home: Home) -> None:
    home.make_db()
    program = home.script("sqlgate", "import sys\nsys.stderr.write('boom: no luck\\n')\n"
                          "sys.exit(3)")  # fmt: skip
    home.server(str(program), ["serve", "--db", str(home.db)])


def _hooks_elsewhere(home: Home) -> None:
    home.make_db()
    home.server()
    home.hooks(capture_command(PYTHON, home.root / "data" / "old.db", "linux"))


def _hooks_per_project(home: Home) -> None:
    home.make_db()
    home.server()
    home.hooks(f"{sys.executable} -m sqlgate capture --project-db")


def _capture_failing(home: Home) -> None:
    home.make_db()
    home.server()
    home.hooks(capture_command(PYTHON, home.db, "linux"))
    log = home.db.with_name("agent.db.capture.log")
    log.write_text(f"{stamp(NOW - 600)} Stop cc-1: the database is busy\n")


def _capture_recovered(home: Home) -> None:
    _capture_failing(home)
    with Service.open(Settings(db=home.db), wall_clock=lambda: NOW - 60) as service:
        service.append_event("later", "note", [])


def _hidden_by_user_scope(home: Home) -> None:
    home.make_db()
    home.server()  # user scope, another command than the project's
    home.server("sqlgate", ["serve", "--db", ".sqlgate/agent.db"], scope="project")


def _replication_unknown(home: Home) -> None:
    home.make_db()
    home.server(args=["-m", "sqlgate", "serve", "--db", str(home.db),
                      "--replicate", "file:///backup/replica"])  # fmt: skip


def _replication_gone(home: Home) -> None:
    _replication_unknown(home)
    folder = replication_dir(home.db)
    folder.mkdir()
    write_status(folder, {"state": "running", "url": "file:///backup/replica", "pid": 1})


def _malformed_config(home: Home) -> None:
    home.claude_json.write_text('{"mcpServers": {,}}')


@dataclass(frozen=True)
class Case:
    lay_out: Callable[[Home], None]
    check: str
    status: str
    says: str  # in the detail
    fix: str | None = None  # in the fix
    target: str = 'claude-code user "sqlgate"'


CASES = {
    "missing-command": Case(
        _missing_command,
        "command",
        "fail",
        "does not exist",
        "sqlgate install claude-code --scope user --db",
    ),
    "command-not-runnable": Case(_command_not_runnable, "command", "fail", "may not be run"),
    "not-on-path": Case(
        _not_on_path,
        "command",
        "fail",
        "not on PATH",
        "pipx install sqlgate",
        'claude-code project "sqlgate"',
    ),
    "dangling-link": Case(_dangling_link, "database", "fail", "symlink", "ln -sfn"),
    "missing-folder": Case(_missing_folder, "database", "fail", "does not exist", "mkdir -p"),
    "sqlgate-0.1.0": Case(_a_file_of_sqlgate_0_1_0, "database", "fail", "0.1.0", "NEW.db"),
    "not-sqlite": Case(_not_sqlite, "database", "fail", "not a SQLite database", "--db"),
    "unwritable-file": Case(_unwritable_file, "database", "fail", "not writable", "chmod u+w"),
    "silent-server": Case(_silent_server, "initialize", "fail", "did not answer", "--timeout"),
    "failing-server": Case(
        _failing_server, "initialize", "fail", "code 3 before answering initialize: boom: no luck"
    ),
    "hooks-elsewhere": Case(_hooks_elsewhere, "hooks", "fail", "old.db", "--capture"),
    "hooks-per-project": Case(_hooks_per_project, "hooks", "fail", "--project-db", "--capture"),
    "capture-failing": Case(_capture_failing, "capture-log", "fail", "no event was stored", "tail"),
    "capture-recovered": Case(_capture_recovered, "capture-log", "warn", "stored since"),
    "hidden-by-user": Case(
        _hidden_by_user_scope,
        "scopes",
        "fail",
        "user-scope",
        "sqlgate uninstall claude-code --scope user",
        'claude-code project "sqlgate"',
    ),
    "user-hides-project": Case(
        _hidden_by_user_scope,
        "scopes",
        "warn",
        "Conflicting scopes",
        "sqlgate uninstall claude-code --scope project",
    ),
    "replication-unknown": Case(
        _replication_unknown, "replication", "warn", "unknown", "sqlgate stats --db"
    ),
    "replication-gone": Case(_replication_gone, "replication", "fail", "ended", "restart"),
    "malformed-config": Case(
        _malformed_config, "config", "fail", "not valid JSON", "by hand", "claude-code user"
    ),
}


def _answers(*_: Any) -> Answer:
    return Answer(True, "answered initialize in 0.01 s", "sqlgate", "0.1.0")


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_each_problem_is_found_with_its_fix(
    home: Home, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.lay_out is _unwritable_file and AS_ROOT:
        pytest.skip("root may write any file")
    case.lay_out(home)
    timeout = 0.5 if case.lay_out is _silent_server else 30.0
    # the server is started only where the case is about it: the others take its answer
    probe = {} if case.check == "initialize" else {"ask": _answers}
    checks = run(home, timeout=timeout, which=lambda *_, **__: None, **probe)
    mine = [c for c in checks if c.target == case.target and c.check == case.check]
    assert mine, [c.record() for c in checks]
    (check,) = mine
    assert check.status == case.status, check.record()
    assert case.says in check.detail, check.record()
    if case.fix is not None:
        assert check.fix is not None, check.record()
        assert case.fix in check.fix, check.record()
    if case.status == "fail":
        assert check.fix, check.record()


@pytest.mark.parametrize(
    ("lay_out", "says"),
    [
        pytest.param(_another_programs_file, "serve keeps sqlgate's records in", id="no-records"),
        pytest.param(
            lambda home: (_another_programs_file(home), home.make_db()), "writable; sqlgate's "
            "records in", id="with-records",
        ),
    ],
)  # fmt: skip
def test_another_programs_file_is_fine_and_its_records_folder_named(
    home: Home, lay_out: Callable[[Home], None], says: str
) -> None:
    lay_out(home)
    before = home.db.read_bytes()
    check = one(run(home, which=lambda *_, **__: None, ask=_answers), "database")
    assert check.status == "ok", check.record()
    assert says in check.detail
    assert str(record_files(home.db).folder) in check.detail
    assert "another program" not in check.detail
    assert home.db.read_bytes() == before


def test_an_old_capture_error_is_not_reported(home: Home) -> None:
    _capture_failing(home)
    log = home.db.with_name("agent.db.capture.log")
    log.write_text(f"{stamp(NOW - 2 * 24 * 3600)} Stop cc-1: the database is busy\n")
    assert one(run(home), "capture-log").status == "ok"


def test_a_missing_database_serve_would_create_is_a_note_and_no_server_is_started(
    home: Home,
) -> None:
    home.server(args=["-m", "sqlgate", "serve", "--db", str(home.root / "p" / ".sqlgate" / "a.db")])
    asked: list[Any] = []
    checks = run(home, ask=lambda *args: asked.append(args))
    assert one(checks, "database").status == "ok"
    assert "does not exist yet" in one(checks, "database").detail
    assert one(checks, "initialize").status == "warn"
    assert asked == []
    assert not (home.root / "p").exists()


def test_the_probe_leaves_out_replicate(home: Home) -> None:
    _replication_unknown(home)
    asked: list[Any] = []

    def ask(argv: Any, env: Any, cwd: Path, timeout: float) -> Any:
        asked.append(list(argv))
        from sqlgate.surfaces.integrations.server_probe import Answer

        return Answer(True, "answered", "sqlgate", "1")

    run(home, ask=ask)
    (argv,) = asked
    assert "--replicate" not in argv
    assert argv[-2:] == ["--db", str(home.db)]


def test_only_sqlgate_entries_are_checked(home: Home) -> None:
    home.write(home.claude_json, {"mcpServers": {"other": {"command": "npx", "args": ["x"]}}})
    assert run(home) == []
