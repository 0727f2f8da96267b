"""`--db` on another program's database (issue 19): every command refuses it, exit 8 and
one line naming the tables and `--adopt-db`, and leaves it byte for byte as it was;
with consent the commands that write adopt it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.engine.schema import APPLICATION_ID
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations.capture import CaptureLog
from tests.app_database import folder_state as shared_folder_state
from tests.app_database import make_app_db as shared_app_db
from tests.records import connect_both
from tests.surfaces.cli.helpers import error_line, read, succeeded
from tests.surfaces.integrations.test_importers import build_mycorrhiza

OTHER_APP = 0x47504B47


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=stdin, prog_name="sqlgate")


def folder_state(folder: Path) -> dict[str, str]:
    """sha256 of the database and of any -wal, -shm or -journal beside it."""
    return shared_folder_state(
        folder,
        lambda path: path.name.startswith("app.db") and not path.name.endswith(".capture.log"),
    )


def make_app_db(path: Path, *, wal: bool = False, user_version: int = 0, app_id: int = 0) -> Path:
    return shared_app_db(path, wal=wal, user_version=user_version, app_id=app_id, users=("ada",))


VARIANTS = [
    pytest.param({}, id="plain"),
    pytest.param({"wal": True}, id="wal"),
    pytest.param({"user_version": 7}, id="user-version-7"),
    pytest.param({"app_id": OTHER_APP}, id="another-apps-id"),
]

CLAIM = ("acme", "fact", "slow", "0.8", "acme ships weekly")
# commands that would write the database: refused, naming --adopt-db where it would help
WRITERS = [
    pytest.param(("serve",), id="serve-stdio"),
    pytest.param(("serve", "--transport", "http", "--port", "0"), id="serve-http"),
    pytest.param(("claims", "add", *CLAIM), id="claims-add"),
    pytest.param(("claims", "confirm", "1"), id="claims-confirm"),
    pytest.param(("undo", "1"), id="undo"),
    pytest.param(("import", "mycorrhiza", "{source}"), id="import"),
    pytest.param(("import", "mycorrhiza", "{source}", "--dry-run"), id="import-dry-run"),
]
# commands that only read: refused, the file is not sqlgate's
READERS = [
    pytest.param(("stats",), id="stats"),
    pytest.param(("log",), id="log"),
    pytest.param(("verify",), id="verify"),
    pytest.param(("export",), id="export"),
    pytest.param(("undo", "--list"), id="undo-list"),
    pytest.param(("claims", "list"), id="claims-list"),
    pytest.param(("ui", "--port", "0"), id="ui"),
    pytest.param(("replicate", "file:///nonexistent-replica"), id="replicate"),  # Litestream writes
]


def _args(command: tuple[str, ...], tmp_path: Path, db: Path) -> list[str]:
    source = tmp_path / "source" / "chain.db"
    if not source.exists():
        source.parent.mkdir()
        build_mycorrhiza(source, [("first note", ["a"])])
    return [part.replace("{source}", str(source)) for part in command] + ["--db", str(db)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("command", WRITERS)
def test_a_command_that_writes_refuses_an_app_database_untouched(
    tmp_path: Path, command: tuple[str, ...], variant: dict[str, object]
) -> None:
    db = make_app_db(tmp_path / "app.db", **variant)
    before = folder_state(tmp_path)
    line = error_line(invoke(*_args(command, tmp_path, db)), 8)
    assert str(db) in line
    assert folder_state(tmp_path) == before
    if not variant or variant == {"wal": True}:
        shown = "another program's tables and views (users, orders, alembic_version, +1 more)"
        assert shown in line
        assert "--adopt-db (SQLGATE_ADOPT_DB=1)" in line
    else:
        assert "belongs to another application" in line


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("command", READERS)
def test_a_command_that_reads_refuses_an_app_database_untouched(
    tmp_path: Path, command: tuple[str, ...], variant: dict[str, object]
) -> None:
    db = make_app_db(tmp_path / "app.db", **variant)
    before = folder_state(tmp_path)
    line = error_line(invoke(*_args(command, tmp_path, db)), 8)
    assert f"{db} is not a sqlgate database" in line
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("command", READERS[:3])
def test_reading_a_sqlgate_database_leaves_its_file_byte_identical(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    db = tmp_path / "app.db"
    succeeded(invoke("claims", "add", *CLAIM, "--db", str(db)))
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    succeeded(invoke(*_args(command, tmp_path, db)))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("consent", "env"),
    [
        pytest.param(("--adopt-db",), None, id="flag"),
        pytest.param((), {"SQLGATE_ADOPT_DB": "1"}, id="environment"),
    ],
)
def test_with_consent_claims_add_adopts_the_file_and_keeps_the_apps_rows(
    tmp_path: Path, consent: tuple[str, ...], env: dict[str, str] | None
) -> None:
    db = make_app_db(tmp_path / "app.db")
    succeeded(invoke("claims", "add", *CLAIM, "--db", str(db), *consent, env=env))
    assert read(db, "SELECT name FROM users") == [("ada",)]
    assert read(db, "PRAGMA application_id") == [(APPLICATION_ID,)]
    assert read(db, "PRAGMA journal_mode") == [("wal",)]
    succeeded(invoke("claims", "list", "--db", str(db)))  # sqlgate's from now on


def test_with_consent_an_import_adopts_the_file(tmp_path: Path) -> None:
    db = make_app_db(tmp_path / "app.db")
    result = invoke(*_args(("import", "mycorrhiza", "{source}", "--json"), tmp_path, db),
                    "--adopt-db")  # fmt: skip
    assert json.loads(succeeded(result))["events"] == 1


def test_consent_never_overwrites_another_applications_header(tmp_path: Path) -> None:
    db = make_app_db(tmp_path / "app.db", user_version=7)
    before = folder_state(tmp_path)
    line = error_line(invoke("claims", "add", *CLAIM, "--db", str(db), "--adopt-db"), 8)
    assert "even with --adopt-db" in line
    assert folder_state(tmp_path) == before


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
def test_every_command_that_writes_takes_the_consent_flag(command: tuple[str, ...]) -> None:
    result = invoke(*command, "--help")
    assert "--adopt-db" in succeeded(result)
    assert "SQLGATE_ADOPT_DB" in result.stdout


def test_a_link_to_an_app_database_is_refused_naming_both(tmp_path: Path) -> None:
    real = make_app_db(tmp_path / "app.db")
    link = tmp_path / "agent.db"
    link.symlink_to(real)
    before = folder_state(tmp_path)
    line = error_line(invoke("claims", "add", *CLAIM, "--db", str(link)), 8)
    assert f"{link} (a link to {real}) holds another program's tables and views" in line
    assert folder_state(tmp_path) == before


def test_a_table_name_with_control_characters_reaches_the_terminal_escaped(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.db"
    conn = connect_both(db)
    conn.execute('CREATE TABLE "evil\x1b]0;pwned\x07\nname" (x)')
    conn.close()
    line = error_line(invoke("claims", "add", *CLAIM, "--db", str(db)), 8)
    assert "\x1b" not in line
    assert "\x07" not in line
    assert '("evil\\x1b]0;pwned\\x07\\nname")' in line


# -- capture: the hooks' command never fails, so the refusal goes to its log -------------------


def hook_payload() -> bytes:
    return json.dumps({
        "session_id": "4f1c2b9e-0a7d-4c3e-9b1f-2d6e8a0c5f11", "hook_event_name":
        "UserPromptSubmit", "prompt": "fix the login bug", "cwd": "/srv/project",
        "transcript_path": "/nonexistent/transcript.jsonl", "permission_mode": "default",
    }).encode()  # fmt: skip


def test_capture_on_an_app_database_logs_the_refusal_and_stores_nothing(tmp_path: Path) -> None:
    db = make_app_db(tmp_path / "app.db")
    before = folder_state(tmp_path)
    result = invoke("capture", "--db", str(db), stdin=hook_payload())
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert folder_state(tmp_path) == before
    log = CaptureLog.beside(db).read_text(encoding="utf-8")
    assert "holds another program's tables" in log


def test_capture_with_consent_stores_the_event(tmp_path: Path) -> None:
    db = make_app_db(tmp_path / "app.db")
    result = invoke("capture", "--db", str(db), "--adopt-db", stdin=hook_payload())
    assert result.exit_code == 0, result.output
    assert read(db, "SELECT kind FROM memory_events") == [("prompt",)]
