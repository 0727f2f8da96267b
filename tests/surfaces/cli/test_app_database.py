"""`--db` on an application's database (issue 33, part 1): every command opens it as it is,
without a consent flag. A command that only reads leaves the file and its folder byte for
byte as they were (no -wal, -shm or -journal left behind), and so does one that writes only
sqlgate's records (kept in .sqlgate/ or the per-user folder, never beside the file); an
agent's write changes the agent's rows and nothing of the header. `--adopt-db` is still
accepted, with no effect and one stderr line saying so."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.home import record_files
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.cli.options import ADOPT_GONE
from tests.surfaces.cli.helpers import succeeded
from tests.surfaces.integrations.test_importers import build_mycorrhiza
from tests.surfaces.stdio_helpers import rpc

OTHER_APP = 0x47504B47
# the header fields a write of rows never changes: page size, file format write and read
# versions, largest root page (auto-vacuum), text encoding, user_version, incremental
# vacuum, application_id
HEADER_FIELDS = {16: 2, 18: 1, 19: 1, 52: 4, 56: 4, 60: 4, 64: 4, 68: 4}


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=stdin, prog_name="sqlgate")


def make_django_db(
    path: Path, *, wal: bool = False, user_version: int = 0, app_id: int = 0
) -> Path:
    """A Django-like development database: its migrations table, users with password
    hashes, an app's table with an index and a foreign key, in the journal mode asked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    try:
        conn.pragma("journal_mode", "wal" if wal else "delete")
        conn.execute(
            "CREATE TABLE django_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT, "
            "name TEXT, applied TEXT);"
            "CREATE TABLE auth_user (id INTEGER PRIMARY KEY AUTOINCREMENT, password TEXT, "
            "username TEXT UNIQUE);"
            "CREATE TABLE polls_question (id INTEGER PRIMARY KEY AUTOINCREMENT, question_text "
            "TEXT, user_id INTEGER REFERENCES auth_user (id) DEFERRABLE INITIALLY DEFERRED);"
            "CREATE INDEX polls_question_user ON polls_question (user_id);"
            "INSERT INTO django_migrations (app, name, applied) VALUES "
            "('auth', '0001_initial', '2026-01-01'), ('polls', '0001_initial', '2026-01-01');"
            "INSERT INTO auth_user (password, username) VALUES ('pbkdf2_sha256$1$x$y', 'ada');"
            "INSERT INTO polls_question (question_text, user_id) VALUES ('What is new?', 1);"
        )
        conn.pragma("user_version", user_version)
        conn.pragma("application_id", app_id)
    finally:
        conn.close()
    return path


def folder_state(folder: Path) -> dict[str, str]:
    """The folder's listing with the sha256 of each file: what must not change."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
    }


def header_fields(db: Path) -> dict[int, bytes]:
    header = db.read_bytes()[:100]
    return {offset: header[offset : offset + size] for offset, size in HEADER_FIELDS.items()}


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


JOURNALS = [
    pytest.param({}, id="rollback-journal"),
    pytest.param({"wal": True}, id="wal"),
    pytest.param({"user_version": 7, "app_id": OTHER_APP}, id="its-own-header"),
]

CLAIM = ("acme", "fact", "slow", "0.8", "acme ships weekly")
# commands that only read: the file and its folder stay byte for byte as they were
READERS = [
    pytest.param(("stats",), id="stats"),
    pytest.param(("log",), id="log"),
    pytest.param(("verify",), id="verify"),
    pytest.param(("export",), id="export"),
    pytest.param(("undo", "--list"), id="undo-list"),
    pytest.param(("claims", "list"), id="claims-list"),
    pytest.param(("members", "list"), id="members-list"),
    pytest.param(("policy", "show"), id="policy-show"),
]
# commands that write sqlgate's records only: the user's file stays as it was too
RECORD_WRITERS = [
    pytest.param(("claims", "add", *CLAIM), id="claims-add"),
    pytest.param(("claims", "confirm", "1"), id="claims-confirm"),
    pytest.param(("import", "mycorrhiza", "{source}"), id="import"),
    pytest.param(("import", "mycorrhiza", "{source}", "--dry-run"), id="import-dry-run"),
    pytest.param(("members", "add", "ada", "--tier", "read"), id="members-add"),
]


def _args(command: tuple[str, ...], tmp_path: Path, db: Path) -> list[str]:
    source = tmp_path / "source" / "chain.db"
    if not source.exists():
        source.parent.mkdir()
        build_mycorrhiza(source, [("first note", ["a"])])
    return [part.replace("{source}", str(source)) for part in command] + ["--db", str(db)]


@pytest.mark.parametrize("journal", JOURNALS)
@pytest.mark.parametrize("command", READERS)
def test_a_command_that_reads_leaves_an_app_database_byte_identical(
    tmp_path: Path, command: tuple[str, ...], journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    succeeded(invoke("claims", "add", *CLAIM, "--db", str(db)))  # records to read
    before = folder_state(db.parent)
    succeeded(invoke(*_args(command, tmp_path, db)))
    assert folder_state(db.parent) == before
    assert list(before) == ["db.sqlite3"]  # nothing beside it: no -wal, -shm, -journal


@pytest.mark.parametrize("journal", JOURNALS)
@pytest.mark.parametrize("command", READERS[:4])
def test_a_reader_before_any_records_says_so_and_leaves_the_file(
    tmp_path: Path, command: tuple[str, ...], journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    before = folder_state(db.parent)
    result = invoke(*_args(command, tmp_path, db))
    assert result.exit_code == 8, result.output
    assert f"has no sqlgate records at {record_files(db).folder}" in result.stderr
    assert "sqlgate serve" in result.stderr  # the next step that works
    assert folder_state(db.parent) == before


@pytest.mark.parametrize("journal", JOURNALS)
@pytest.mark.parametrize("command", RECORD_WRITERS)
def test_a_command_that_writes_records_leaves_an_app_database_byte_identical(
    tmp_path: Path, command: tuple[str, ...], journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    if command[:2] == ("claims", "confirm"):
        succeeded(invoke("claims", "add", *CLAIM, "--db", str(db)))
    before = folder_state(db.parent)
    succeeded(invoke(*_args(command, tmp_path, db)))
    assert folder_state(db.parent) == before
    assert record_files(db).records.is_file() or "--dry-run" in command


def _serve(db: Path, *calls: tuple[str, dict[str, object]]) -> list[str]:
    """An MCP session over stdio with `serve --db db`: initialize, then each tool call;
    the answers' text, in order."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    answers: list[str] = []
    try:
        rpc(process, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})  # fmt: skip
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for number, (tool, arguments) in enumerate(calls, start=1):
            answer = rpc(process, {"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                   "params": {"name": tool, "arguments": arguments}})  # fmt: skip
            assert answer is not None
            result = answer["result"]
            assert not result.get("isError"), result
            answers.append("".join(part["text"] for part in result["content"]))
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    return answers


@pytest.mark.parametrize("journal", JOURNALS)
def test_serving_reads_leaves_an_app_database_byte_identical(
    tmp_path: Path, journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    before = folder_state(db.parent)
    (read,) = _serve(db, ("read_query", {"query": "SELECT username FROM auth_user"}))
    assert "ada" in read
    assert folder_state(db.parent) == before


@pytest.mark.parametrize("journal", JOURNALS)
def test_an_agents_write_changes_only_its_rows_and_no_header_field(
    tmp_path: Path, journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    fields = header_fields(db)
    mode = rows(db, "PRAGMA journal_mode")
    tables = ("django_migrations", "auth_user", "polls_question")
    kept = {name: rows(db, f"SELECT * FROM {name}") for name in tables}
    for path in db.parent.glob("db.sqlite3-*"):  # what this test's own reads left (WAL)
        path.unlink()
    insert = "INSERT INTO polls_question (question_text, user_id) VALUES ('Why?', 1)"
    _serve(db, ("write_query", {"query": insert}))
    assert sorted(p.name for p in db.parent.iterdir()) == ["db.sqlite3"]
    assert header_fields(db) == fields
    assert rows(db, "PRAGMA journal_mode") == mode
    assert rows(db, "SELECT * FROM polls_question") == [*kept["polls_question"], (2, "Why?", 1)]
    for name in ("django_migrations", "auth_user"):
        assert rows(db, f"SELECT * FROM {name}") == kept[name]
    names = [name for (name,) in rows(db, "SELECT name FROM sqlite_schema ORDER BY name")]
    assert names == sorted(
        [*tables, "polls_question_user", "sqlite_autoindex_auth_user_1", "sqlite_sequence"]
    )


@pytest.mark.parametrize(
    ("consent", "env"),
    [
        pytest.param(("--adopt-db",), None, id="flag"),
        pytest.param((), {"SQLGATE_ADOPT_DB": "1"}, id="environment"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("claims", "add", *CLAIM), id="claims-add"),
        pytest.param(("import", "mycorrhiza", "{source}"), id="import"),
    ],
)
def test_adopt_db_is_accepted_with_no_effect_and_one_line(
    tmp_path: Path, consent: tuple[str, ...], env: dict[str, str] | None,
    command: tuple[str, ...],
) -> None:  # fmt: skip
    db = make_django_db(tmp_path / "app" / "db.sqlite3")
    before = folder_state(db.parent)
    result = invoke(*_args(command, tmp_path, db), *consent, env=env)
    succeeded(result)
    assert result.stderr.splitlines() == [f"sqlgate: {ADOPT_GONE}"]
    assert folder_state(db.parent) == before


def test_adopt_db_says_nothing_when_not_given(tmp_path: Path) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3")
    result = invoke("claims", "add", *CLAIM, "--db", str(db))
    succeeded(result)
    assert "adopt" not in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("serve",),
        ("claims", "add"),
        ("claims", "confirm"),
        ("undo",),
        ("capture",),
        ("import", "mycorrhiza"),
        ("import", "claims-mcp"),
    ],
    ids=" ".join,
)
def test_every_command_that_took_the_flag_still_takes_it(command: tuple[str, ...]) -> None:
    result = invoke(*command, "--help")
    assert "--adopt-db" in succeeded(result)
    assert "SQLGATE_ADOPT_DB" in result.stdout
    assert "no longer needed" in result.stdout


def test_a_link_to_an_app_database_keeps_its_records_by_the_real_file(tmp_path: Path) -> None:
    real = make_django_db(tmp_path / "app" / "db.sqlite3")
    link = tmp_path / "app" / "agent.db"
    link.symlink_to(real)
    before = folder_state(real.parent)
    succeeded(invoke("claims", "add", *CLAIM, "--db", str(link)))
    assert folder_state(real.parent) == before
    listed = json.loads(succeeded(invoke("claims", "list", "--json", "--db", str(real))))
    assert listed["claim"] == "acme ships weekly"


def test_a_table_name_with_control_characters_is_left_alone(tmp_path: Path) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3")
    conn = apsw.Connection(str(db))
    conn.execute('CREATE TABLE "evil\x1b]0;pwned\x07\nname" (x)')
    conn.close()
    before = folder_state(db.parent)
    result = invoke("claims", "add", *CLAIM, "--db", str(db))
    succeeded(result)
    assert "\x1b" not in result.output
    assert folder_state(db.parent) == before


# -- capture: the hooks' events go to the records, never into the app's file --------------------


def hook_payload() -> bytes:
    return json.dumps({
        "session_id": "4f1c2b9e-0a7d-4c3e-9b1f-2d6e8a0c5f11", "hook_event_name":
        "UserPromptSubmit", "prompt": "fix the login bug", "cwd": "/srv/project",
        "transcript_path": "/nonexistent/transcript.jsonl", "permission_mode": "default",
    }).encode()  # fmt: skip


@pytest.mark.parametrize("journal", JOURNALS)
def test_capture_on_an_app_database_stores_the_event_in_the_records(
    tmp_path: Path, journal: dict[str, object]
) -> None:
    db = make_django_db(tmp_path / "app" / "db.sqlite3", **journal)
    before = folder_state(db.parent)
    result = invoke("capture", "--db", str(db), "--log", str(tmp_path / "capture.log"),
                    stdin=hook_payload())  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert folder_state(db.parent) == before
    assert not (tmp_path / "capture.log").exists()  # no problem to log
    kinds = rows(record_files(db).records, "SELECT kind FROM memory_events")
    assert kinds == [("prompt",)]
