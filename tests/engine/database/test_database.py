"""Opening the database: clear start-up errors, files left untouched, three connections."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.database import file as database_module
from sqlgate.engine.database.file import Database
from sqlgate.engine.schema import APPLICATION_ID, MIGRATIONS
from sqlgate.errors import StartupError
from tests.app_database import folder_state
from tests.app_database import make_app_db as shared_app_db
from tests.records import connect_both

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def unprivileged_user() -> int | None:
    """The uid of `nobody` when tests run as root on POSIX; root could write anything."""
    if not IS_ROOT:
        return None
    import pwd

    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("running as root with no unprivileged user to test permissions")


def open_here(path: Path) -> str:
    try:
        Database.open(Settings(db=path)).close()
    except StartupError as exc:
        return f"StartupError: {exc}"
    return "opened"


def open_as(uid: int, path: Path) -> str:
    """`open_here` in a forked child that has dropped root for `uid` (POSIX, root only)."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork in a threaded process
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        outcome = "child failed"
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            outcome = open_here(path)
        except BaseException as exc:
            outcome = f"child failed: {exc!r}"
        finally:
            os.write(write_end, outcome.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        outcome = pipe.read().decode()
    os.waitpid(pid, 0)
    return outcome


def open_outcome(path: Path) -> str:
    """Open `path` as a user who lacks write permission; 'opened' or the StartupError line."""
    uid = unprivileged_user()
    return open_here(path) if uid is None else open_as(uid, path)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder others may read but not write (tmp_path's parents are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="sqlgate-perm-"))
    folder.chmod(0o755)
    yield folder
    for path in (folder, *folder.iterdir()):
        path.chmod(stat.S_IRWXU | (path.stat().st_mode & 0o777))
    shutil.rmtree(folder)


def snapshot_bytes(path: Path) -> bytes:
    return path.read_bytes()


# -- start-up errors ------------------------------------------------------------------------


def test_a_non_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"my precious notes\n" * 100)
    before = snapshot_bytes(path)
    with pytest.raises(StartupError, match="not a SQLite database") as caught:
        Database.open(Settings(db=path))
    assert "\n" not in str(caught.value)
    assert snapshot_bytes(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="directory") as caught:
        Database.open(Settings(db=tmp_path))
    assert "\n" not in str(caught.value)


def test_a_missing_parent_folder_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "agent.db"
    with pytest.raises(StartupError, match="does not exist") as caught:
        Database.open(Settings(db=path))
    assert "\n" not in str(caught.value)
    assert not path.parent.exists()


def test_create_parent_makes_the_missing_folder(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "agent.db"
    Database.open(Settings(db=path), create_parent=True).close()
    assert path.is_file()


def test_a_parent_that_is_a_file_is_refused_even_with_create_parent(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a file, not a folder")
    with pytest.raises(StartupError):
        Database.open(Settings(db=tmp_path / "a" / "agent.db"), create_parent=True)


def test_an_unwritable_file_is_refused_and_left_untouched(shared_dir: Path) -> None:
    path = shared_dir / "agent.db"
    Database.open(Settings(db=path)).close()
    path.chmod(0o444 if not IS_ROOT else 0o644)  # as root, `nobody` may read but not write
    before = snapshot_bytes(path)
    outcome = open_outcome(path)
    assert outcome.startswith("StartupError:")
    assert "not writable" in outcome
    assert snapshot_bytes(path) == before


@pytest.mark.skipif(sys.platform == "win32", reason="folder permissions differ on Windows")
def test_an_unwritable_folder_is_refused(shared_dir: Path) -> None:
    folder = shared_dir / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    outcome = open_outcome(folder / "agent.db")
    assert outcome.startswith("StartupError:")
    assert "not writable" in outcome
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="folder permissions differ on Windows")
def test_the_same_user_opens_a_folder_it_may_write(shared_dir: Path) -> None:
    """Control for the two tests above: the unprivileged open itself works."""
    folder = shared_dir / "open"
    folder.mkdir()
    folder.chmod(0o777)
    assert open_outcome(folder / "agent.db") == "opened"


def test_a_corrupt_sqlite_file_is_a_startup_error(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    conn = connect_both(path)
    conn.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1)")
    conn.close()
    data = bytearray(path.read_bytes())
    data[16:100] = b"\xff" * 84  # header says SQLite; the rest is garbage
    path.write_bytes(bytes(data))
    with pytest.raises(StartupError) as caught:
        Database.open(Settings(db=path))
    assert "\n" not in str(caught.value)


# -- what an open Database holds --------------------------------------------------------------


def test_open_migrates_and_records_the_schema_version(settings: Settings) -> None:
    db = Database.open(settings)
    try:
        assert db.schema_version == MIGRATIONS[-1].version
        assert db.server.pragma("application_id") == APPLICATION_ID
        assert "query_log" in db.protected
        assert db.path == settings.db
    finally:
        db.close()


def test_an_existing_user_database_is_adopted_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "existing.db"
    conn = connect_both(path)
    conn.execute("CREATE TABLE mine(x); INSERT INTO mine VALUES ('kept')")
    conn.close()
    db = Database.open(Settings(db=path, adopt_db=True))
    try:
        with db.reading() as reader:
            assert reader.execute("SELECT x FROM mine").fetchall() == [("kept",)]
    finally:
        db.close()


def test_reading_and_writing_hand_out_their_own_connections(settings: Settings) -> None:
    db = Database.open(settings)
    try:
        with db.reading() as reader:
            assert reader is db.reader
            assert db.read_lock.locked()
        with db.writing() as writer:
            assert writer is db.writer
            assert db.write_lock.locked()
        assert not db.read_lock.locked()
        assert not db.write_lock.locked()
    finally:
        db.close()


def test_shadow_tables_are_listed(settings: Settings) -> None:
    db = Database.open(settings)
    try:
        db.writer.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
        # memory_events_fts is external content: no _content shadow of its own
        server = {f"memory_events_fts_{part}" for part in ("data", "idx", "docsize", "config")}
        docs = {"docs_data", "docs_idx", "docs_content", "docs_docsize", "docs_config"}
        assert db.shadow_tables(db.reader) == frozenset(docs | server)
    finally:
        db.close()


def test_shadow_tables_follow_schema_changes_made_after_a_first_listing(
    settings: Settings,
) -> None:
    db = Database.open(settings)
    try:
        before = db.shadow_tables(db.reader)
        assert before == db.shadow_tables(db.reader)  # unchanged schema: the same answer
        db.writer.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
        db.writer.execute("CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1)")
        added = {"docs_data", "docs_idx", "docs_content", "docs_docsize", "docs_config"}
        added |= {"boxes_node", "boxes_parent", "boxes_rowid"}
        # the reader sees the writer's change, and the writer its own
        assert db.shadow_tables(db.reader) == before | added
        assert db.shadow_tables(db.writer) == before | added
        db.writer.execute("DROP TABLE docs")
        assert db.shadow_tables(db.reader) == before | {"boxes_node", "boxes_parent", "boxes_rowid"}
    finally:
        db.close()


def test_shadow_tables_see_a_virtual_table_another_process_created(settings: Settings) -> None:
    db = Database.open(settings)
    try:
        before = db.shadow_tables(db.writer)
        other = connect_both(settings.db)
        try:
            other.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
        finally:
            other.close()
        assert "docs_content" in db.shadow_tables(db.writer) - before
    finally:
        db.close()


def test_close_closes_every_connection(settings: Settings) -> None:
    db = Database.open(settings)
    db.close()
    for conn in (db.server, db.reader, db.writer):
        with pytest.raises(apsw.ConnectionClosedError):
            conn.execute("SELECT 1")


def test_a_failed_open_closes_what_it_opened(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[apsw.Connection] = []
    real: Callable[..., apsw.Connection] = database_module.open_agent_connection

    def open_then_fail_on_reader(settings: Settings, *, readonly: bool) -> apsw.Connection:
        if readonly:
            raise StartupError("simulated: the reader cannot be opened")
        conn = real(settings, readonly=readonly)
        opened.append(conn)
        return conn

    real_server: Callable[..., apsw.Connection] = database_module.open_server_connection

    def recording_server(settings: Settings) -> apsw.Connection:
        conn = real_server(settings)
        opened.append(conn)
        return conn

    monkeypatch.setattr(database_module, "open_agent_connection", open_then_fail_on_reader)
    monkeypatch.setattr(database_module, "open_server_connection", recording_server)
    with pytest.raises(StartupError, match="simulated"):
        Database.open(settings)
    assert len(opened) == 2
    for conn in opened:
        with pytest.raises(apsw.ConnectionClosedError):
            conn.execute("SELECT 1")


# -- a file that holds another program's tables (issue 19) -----------------------------------

OTHER_APP = 0x47504B47  # GeoPackage's "GPKG"
APP_VARIANTS = [
    pytest.param({}, id="plain"),
    pytest.param({"user_version": 7}, id="user-version-7"),
    pytest.param({"app_id": OTHER_APP}, id="another-apps-id"),
    pytest.param({"wal": True}, id="wal-mode"),
]
ADOPTABLE = [APP_VARIANTS[0], APP_VARIANTS[3]]


def make_app_db(path: Path, *, wal: bool = False, user_version: int = 0, app_id: int = 0) -> Path:
    """An application's database: tables, an index, a view and a trigger, rollback journal."""
    return shared_app_db(
        path, wal=wal, user_version=user_version, app_id=app_id, extra_tables=("invoices",)
    )


@pytest.mark.parametrize("variant", APP_VARIANTS)
@pytest.mark.parametrize("read_only", [False, True], ids=["serve-open", "read-only-open"])
def test_an_app_database_is_refused_and_left_byte_identical(
    tmp_path: Path, variant: dict[str, Any], read_only: bool
) -> None:
    path = make_app_db(tmp_path / "app.db", **variant)
    before = folder_state(tmp_path)
    with pytest.raises(StartupError) as caught:
        Database.open(Settings(db=path), read_only=read_only)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("variant", ADOPTABLE)
def test_without_consent_the_refusal_names_the_tables_and_the_flag(
    tmp_path: Path, variant: dict[str, Any]
) -> None:
    path = make_app_db(tmp_path / "app.db", **variant)
    with pytest.raises(StartupError) as caught:
        Database.open(Settings(db=path))
    message = str(caught.value)
    assert "users, orders, alembic_version, +2 more" in message
    assert "--adopt-db (SQLGATE_ADOPT_DB=1)" in message


@pytest.mark.parametrize("variant", ADOPTABLE)
def test_with_consent_an_app_database_is_migrated_and_keeps_its_rows(
    tmp_path: Path, variant: dict[str, Any]
) -> None:
    path = make_app_db(tmp_path / "app.db", **variant)
    db = Database.open(Settings(db=path, adopt_db=True))
    try:
        assert db.schema_version == MIGRATIONS[-1].version
        assert db.server.pragma("application_id") == APPLICATION_ID
        assert db.server.pragma("journal_mode") == "wal"
        with db.reading() as reader:
            assert reader.execute("SELECT name FROM users ORDER BY id").fetchall() == [
                ("ada",),
                ("grace",),
            ]
    finally:
        db.close()
    Database.open(Settings(db=path)).close()  # adopted once: the file is sqlgate's now


@pytest.mark.parametrize("variant", APP_VARIANTS[1:3])
def test_consent_does_not_let_sqlgate_overwrite_another_applications_header(
    tmp_path: Path, variant: dict[str, Any]
) -> None:
    path = make_app_db(tmp_path / "app.db", **variant)
    before = folder_state(tmp_path)
    with pytest.raises(StartupError, match="even with --adopt-db"):
        Database.open(Settings(db=path, adopt_db=True))
    assert folder_state(tmp_path) == before


def _empty_schema_file(path: Path) -> None:
    conn = connect_both(path)
    conn.execute("CREATE TABLE scratch (x); DROP TABLE scratch; VACUUM")
    conn.close()
    assert path.stat().st_size > 0


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda path: path.write_bytes(b""), id="0-byte-file"),
        pytest.param(_empty_schema_file, id="sqlite-file-with-no-schema"),
        pytest.param(lambda path: None, id="missing-file"),
    ],
)
def test_a_new_or_empty_file_is_taken_without_consent(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    path = tmp_path / "agent.db"
    make(path)
    db = Database.open(Settings(db=path))
    try:
        assert db.server.pragma("application_id") == APPLICATION_ID
    finally:
        db.close()


def test_a_sqlgate_database_with_the_agents_tables_opens_without_consent(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    db = Database.open(Settings(db=path))
    with db.writing() as writer:
        writer.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    db.close()
    Database.open(Settings(db=path)).close()
    Database.open(Settings(db=path), read_only=True).close()


def test_a_link_to_an_app_database_is_refused_the_same_way(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    target = make_app_db(real / "app.db")
    link = tmp_path / "agent.db"
    link.symlink_to(target)
    before = folder_state(real)
    with pytest.raises(StartupError, match="holds another program's tables") as caught:
        Database.open(Settings(db=link))
    assert f"(a link to {target})" in str(caught.value)
    assert folder_state(real) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.db", "real"]


def test_a_relative_path_is_shown_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_app_db(tmp_path / "app.db")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StartupError) as caught:
        Database.open(Settings(db=Path("app.db")))
    assert str(caught.value).startswith(f"{tmp_path / 'app.db'} holds another program's tables")


def test_a_copy_of_sqlgates_tables_without_its_header_is_refused(tmp_path: Path) -> None:
    """`sqlite3 agent.db .dump | sqlite3 copy.db` keeps the tables, not the header."""
    path = tmp_path / "copy.db"
    conn = connect_both(path)
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.close()
    before = folder_state(tmp_path)
    for adopt in (False, True):
        with pytest.raises(StartupError, match="sqlgate's tables"):
            Database.open(Settings(db=path, adopt_db=adopt))
    assert folder_state(tmp_path) == before
