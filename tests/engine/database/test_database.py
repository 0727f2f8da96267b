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
from sqlgate.engine.schema import APPLICATION_ID, LITESTREAM_TABLES, MIGRATIONS
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
    """`open_here` in a forked child that has dropped root for `uid` (POSIX, root only), with a
    per-user data folder of its own (where its records go)."""
    data = Path(tempfile.mkdtemp(prefix="sqlgate-data-"))
    data.chmod(0o777)
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
            os.environ["XDG_DATA_HOME"] = str(data)
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
    shutil.rmtree(data)
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
        assert db.server.pragma("application_id") == APPLICATION_ID  # the records file
        assert db.server.execute("SELECT count(*) FROM query_log").fetchone() == (0,)
        assert db.path == settings.db
    finally:
        db.close()


def test_an_existing_user_database_is_adopted_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "existing.db"
    conn = connect_both(path)
    conn.execute("CREATE TABLE mine(x); INSERT INTO mine VALUES ('kept')")
    conn.close()
    db = Database.open(Settings(db=path))
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
        docs = {"docs_data", "docs_idx", "docs_content", "docs_docsize", "docs_config"}
        # the user's file only: memory_events_fts lives in the records (schema sqlgate)
        assert db.shadow_tables(db.reader) == frozenset(docs)
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

    def open_then_fail_on_reader(
        settings: Settings, *, readonly: bool, records: Path | None = None
    ) -> apsw.Connection:
        if readonly:
            raise StartupError("simulated: the reader cannot be opened")
        conn = real(settings, readonly=readonly, records=records)
        opened.append(conn)
        return conn

    def recording(name: str) -> None:
        real_open: Callable[..., apsw.Connection] = getattr(database_module, name)

        def record(path: Path, settings: Settings) -> apsw.Connection:
            conn = real_open(path, settings)
            opened.append(conn)
            return conn

        monkeypatch.setattr(database_module, name, record)

    monkeypatch.setattr(database_module, "open_agent_connection", open_then_fail_on_reader)
    for name in ("open_server_connection", "open_audit_connection", "open_keeper_connection"):
        recording(name)
    recording("open_records_reader")
    with pytest.raises(StartupError, match="simulated"):
        Database.open(settings)
    assert len(opened) == 5  # server, audit, keeper, records reader, writer
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


# header fields a write of the agent's rows never changes: page size, file format versions
# (journal mode), auto-vacuum, text encoding, user_version, incremental vacuum, application_id
HEADER_FIELDS = ((16, 2), (18, 1), (19, 1), (52, 4), (56, 4), (60, 4), (64, 4), (68, 4))


def rows_of(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(path))
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def header_fields(path: Path) -> list[bytes]:
    head = path.read_bytes()[:100]
    return [head[offset : offset + size] for offset, size in HEADER_FIELDS]


@pytest.mark.parametrize("variant", APP_VARIANTS)
@pytest.mark.parametrize("read_only", [False, True], ids=["serve-open", "read-only-open"])
def test_an_app_database_opens_and_reading_leaves_it_byte_identical(
    tmp_path: Path, variant: dict[str, Any], read_only: bool
) -> None:
    """Issue 33: any SQLite file opens as it is; reading through sqlgate changes no byte and
    leaves no -wal, -shm or journal beside it (another program's header included)."""
    path = make_app_db(tmp_path / "app.db", **variant)
    if read_only:
        Database.open(Settings(db=path)).close()  # the records exist: a read-only open reads them
    before = folder_state(tmp_path, keep=lambda p: True)
    db = Database.open(Settings(db=path), read_only=read_only)
    try:
        with db.reading() as reader:
            names = reader.execute("SELECT name FROM users ORDER BY id").fetchall()
        assert names == [("ada",), ("grace",)]
    finally:
        db.close()
    assert folder_state(tmp_path, keep=lambda p: True) == before


@pytest.mark.parametrize("variant", APP_VARIANTS)
def test_a_write_changes_only_the_agents_rows(tmp_path: Path, variant: dict[str, Any]) -> None:
    path = make_app_db(tmp_path / "app.db", **variant)
    header = header_fields(path)
    schema = rows_of(path, "SELECT * FROM sqlite_schema ORDER BY name")
    db = Database.open(Settings(db=path))
    try:
        with db.writing() as writer:
            writer.execute("INSERT INTO users (name) VALUES ('linus')")
    finally:
        db.close()
    assert header_fields(path) == header
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # nothing beside it
    assert rows_of(path, "SELECT * FROM sqlite_schema ORDER BY name") == schema
    assert rows_of(path, "SELECT count(*) FROM users") == [(3,)]


def test_the_records_live_in_the_home_not_in_or_beside_the_file(tmp_path: Path) -> None:
    path = make_app_db(tmp_path / "app.db")
    db = Database.open(Settings(db=path))
    try:
        records = db.files.records
        assert records.is_file()
        assert path.parent not in records.parents
        assert db.server.pragma("application_id") == APPLICATION_ID
        with db.reading() as reader:
            tables = {name for (name,) in reader.execute("SELECT name FROM main.sqlite_schema")}
        assert "query_log" not in tables
        # no server table lives in the user's file: Litestream's, when it replicates it
        assert db.protected == frozenset(LITESTREAM_TABLES)
    finally:
        db.close()


def test_the_records_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        db = Database.open(Settings(db=tmp_path / "agent.db"))
        db.close()
    finally:
        os.umask(previous)
    files = Settings(db=tmp_path / "agent.db").records
    assert stat.S_IMODE(files.records.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.folder.stat().st_mode) == 0o700


def test_a_file_that_still_holds_sqlgates_tables_is_moved_out_by_a_writable_open(
    tmp_path: Path,
) -> None:
    """A database of sqlgate 0.1.0 (its tables inside, application_id "SQGT") is refused by
    a read-only open, byte for byte as it was, naming the command that moves its tables
    out; a writable open moves them (engine.database.legacy, tests/engine/database/
    test_legacy.py) and leaves the file with its header fields at 0."""
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.pragma("application_id", APPLICATION_ID)
    conn.pragma("user_version", 1)
    conn.close()
    before = folder_state(tmp_path, keep=lambda p: True)
    with pytest.raises(StartupError, match=r"holds sqlgate 0\.1\.0's own tables.*sqlgate migrate"):
        Database.open(Settings(db=path), read_only=True)
    assert folder_state(tmp_path, keep=lambda p: True) == before
    db = Database.open(Settings(db=path), relocate=lambda conn, moved: 0)
    try:
        assert db.moved is not None
        assert db.moved.copied["query_log"] == 0
        with db.reading() as reader:
            assert reader.execute("SELECT name FROM main.sqlite_schema").fetchall() == []
            assert (reader.pragma("application_id"), reader.pragma("user_version")) == (0, 0)
    finally:
        db.close()


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


def test_a_link_to_an_app_database_opens_the_real_file_with_one_records_file(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    target = make_app_db(real / "app.db")
    link = tmp_path / "agent.db"
    link.symlink_to(target)
    for name in (link, target):
        db = Database.open(Settings(db=name))
        try:
            with db.writing() as writer:
                writer.execute("INSERT INTO users (name) VALUES (?)", (name.name,))
            records = db.files.records
        finally:
            db.close()
        assert records == Settings(db=target).records.records  # one history for both names
    assert sorted(p.name for p in real.iterdir()) == ["app.db"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.db", "real"]


def test_tables_named_like_sqlgates_are_the_users_own(tmp_path: Path) -> None:
    """`sqlite3 agent.db .dump | sqlite3 copy.db` keeps sqlgate 0.1.0's tables without its
    header: to this version they are tables of the user's like any other."""
    path = tmp_path / "copy.db"
    conn = apsw.Connection(str(path))
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.execute("INSERT INTO query_log (ts, session, tool, ok) VALUES ('t', 's', 'x', 1)")
    conn.close()
    db = Database.open(Settings(db=path))
    try:
        with db.reading() as reader:
            assert reader.execute("SELECT tool FROM main.query_log").fetchall() == [("x",)]
        assert db.server.execute("SELECT count(*) FROM query_log").fetchone() == (0,)
    finally:
        db.close()
