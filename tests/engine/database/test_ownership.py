"""Whose file is it: the facts read from a database file change nothing in it, and a pure
function decides whether sqlgate may add its tables to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.engine.database.ownership import (
    SQLGATE_LOG_COLUMNS,
    FileFacts,
    Owner,
    SchemaObject,
    check_ownership,
    owner_of,
    read_facts,
    refusal,
    shown_path,
)
from sqlgate.engine.framing import LINE_BREAKS
from sqlgate.engine.schema import APPLICATION_ID, MIGRATIONS, migrate
from sqlgate.errors import StartupError
from tests.app_database import folder_state
from tests.app_database import make_app_db as shared_app_db
from tests.records import connect_both

OTHER_APP = 0x47504B47  # GeoPackage's "GPKG"
APP_TABLES = ("users", "orders", "alembic_version", "invoices", "payments", "sessions")


def facts(
    *objects: tuple[str, str],
    size: int = 8192,
    app_id: int = 0,
    user_version: int = 0,
    log_columns: tuple[str, ...] = (),
) -> FileFacts:
    return FileFacts(
        size=size,
        application_id=app_id,
        user_version=user_version,
        objects=tuple(SchemaObject(kind, name) for kind, name in objects),
        log_columns=log_columns,
    )


APP = (("table", "users"), ("index", "users_by_name"), ("view", "active_users"),
       ("trigger", "users_touch"))  # fmt: skip
SERVER = (("table", "query_log"), ("trigger", "query_log_no_update"))

# (facts, owner, refused without --adopt-db, refused with it)
CASES = [
    pytest.param(facts(size=0), Owner.NEW, False, False, id="empty-0-byte-file"),
    pytest.param(facts(), Owner.NEW, False, False, id="sqlite-file-with-no-schema"),
    pytest.param(facts(*APP), Owner.OTHER_TABLES, True, False, id="app-tables-index-view-trigger"),
    pytest.param(facts(("view", "v")), Owner.OTHER_TABLES, True, False, id="a-view-alone"),
    pytest.param(
        facts(("table", "sqlite_stat1")),
        Owner.OTHER_TABLES,
        True,
        False,
        id="only-sqlites-own-statistics",
    ),
    pytest.param(
        facts(*APP, user_version=7), Owner.OTHER_HEADER, True, True, id="app-tables-user-version-7"
    ),
    pytest.param(
        facts(user_version=7), Owner.OTHER_HEADER, True, True, id="user-version-without-tables"
    ),
    pytest.param(
        facts(*APP, app_id=OTHER_APP), Owner.OTHER_HEADER, True, True, id="another-apps-id"
    ),
    pytest.param(
        facts(app_id=OTHER_APP), Owner.OTHER_HEADER, True, True, id="another-apps-id-without-tables"
    ),
    pytest.param(
        facts(*SERVER, ("table", "query_log"), app_id=OTHER_APP, log_columns=SQLGATE_LOG_COLUMNS),
        Owner.OTHER_HEADER,
        True,
        True,
        id="sqlgate-tables-under-another-apps-id",
    ),
    pytest.param(
        facts(
            *SERVER,
            ("table", "notes"),
            app_id=APPLICATION_ID,
            user_version=7,
            log_columns=SQLGATE_LOG_COLUMNS,
        ),
        Owner.SQLGATE,
        False,
        False,
        id="sqlgate-with-the-agents-tables",
    ),
    pytest.param(
        facts(app_id=APPLICATION_ID), Owner.SQLGATE, False, False, id="sqlgates-id-no-schema-yet"
    ),
    pytest.param(
        facts(*SERVER, ("table", "notes"), log_columns=SQLGATE_LOG_COLUMNS),
        Owner.SQLGATE_UNMARKED,
        True,
        True,
        id="sqlgate-tables-header-lost",
    ),
    pytest.param(
        facts(*SERVER, user_version=3, log_columns=SQLGATE_LOG_COLUMNS),
        Owner.SQLGATE_UNMARKED,
        True,
        True,
        id="sqlgate-tables-version-without-id",
    ),
    pytest.param(
        facts(("table", "query_log"), log_columns=("id", "sql", "at")),
        Owner.OTHER_TABLES,
        True,
        False,
        id="an-apps-own-query-log",
    ),
    pytest.param(
        facts(("table", "QUERY_LOG"), log_columns=SQLGATE_LOG_COLUMNS),
        Owner.SQLGATE_UNMARKED,
        True,
        True,
        id="query-log-in-capitals",
    ),
]


@pytest.mark.parametrize(("given_facts", "owner", "refused", "refused_adopting"), CASES)
def test_owner_and_consent_follow_the_table(
    given_facts: FileFacts, owner: Owner, refused: bool, refused_adopting: bool
) -> None:
    assert owner_of(given_facts) is owner
    for adopt, expected in ((False, refused), (True, refused_adopting)):
        message = refusal(given_facts, "/data/app.db", adopt=adopt, read_only=False)
        assert (message is not None) is expected, (adopt, message)


@pytest.mark.parametrize(("given_facts", "owner", "refused", "refused_adopting"), CASES)
def test_read_only_commands_refuse_every_file_that_is_not_sqlgates(
    given_facts: FileFacts, owner: Owner, refused: bool, refused_adopting: bool
) -> None:
    """Nothing to read in a file that is not sqlgate's; a new one is the version check's."""
    message = refusal(given_facts, "/data/app.db", adopt=True, read_only=True)
    assert (message is not None) is (owner not in (Owner.NEW, Owner.SQLGATE))
    if message is not None:
        assert "not a sqlgate database" in message
        assert "--adopt-db" not in message


def test_the_refusal_names_the_file_the_tables_and_the_flag() -> None:
    app = facts(*((("table", name)) for name in APP_TABLES), ("index", "users_by_name"))
    message = refusal(app, "/abs/app.db", adopt=False, read_only=False)
    assert message == (
        "/abs/app.db holds another program's tables (users, orders, alembic_version, +3 more) "
        "and was left untouched: sqlgate would add its own tables and switch it to WAL. Point "
        "--db at a file of its own (a new path is created), or pass --adopt-db "
        "(SQLGATE_ADOPT_DB=1) to let sqlgate add its tables to this file"
    )


@pytest.mark.parametrize(
    ("objects", "shown"),
    [
        pytest.param((("table", "users"),), "tables (users)", id="one-table"),
        pytest.param((("table", "a"), ("view", "b")), "tables and views (a, b)", id="mixed"),
        pytest.param((("view", "v"),), "views (v)", id="views-only"),
        pytest.param(
            (("table", "t"), ("index", "i"), ("trigger", "g")),
            "tables (t)",
            id="indexes-and-triggers-not-listed",
        ),
        pytest.param(
            (("table", "bad\nname\x1b[2J"),),
            'tables ("bad\\nname\\x1b[2J")',
            id="control-characters-escaped",
        ),
        pytest.param(
            (("table", "a, b"), ("table", 'q"t')), 'tables ("a, b", "q""t")', id="odd-names-quoted"
        ),
        pytest.param(
            tuple(("table", f"t{i}") for i in range(4)),
            "tables (t0, t1, t2, +1 more)",
            id="at-most-three",
        ),
    ],
)
def test_names_are_shown_safely_and_few(objects: tuple[tuple[str, str], ...], shown: str) -> None:
    message = refusal(facts(*objects), "/abs/app.db", adopt=False, read_only=False)
    assert message is not None
    assert f"another program's {shown} and was left untouched" in message


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        pytest.param({"user_version": 7}, "user_version 7, application_id 0", id="user-version"),
        pytest.param(
            {"app_id": OTHER_APP}, "user_version 0, application_id 0x47504b47", id="application-id"
        ),
    ],
)
def test_another_applications_header_is_refused_even_with_consent(
    header: dict[str, int], shown: str
) -> None:
    message = refusal(facts(*APP, **header), "/abs/app.db", adopt=True, read_only=False)
    assert message is not None
    assert message.startswith(f"/abs/app.db belongs to another application ({shown})")
    assert "even with --adopt-db" in message
    assert "Point --db at a file of its own" in message


def test_sqlgate_tables_without_the_mark_are_refused_with_the_way_out() -> None:
    copy = facts(*SERVER, log_columns=SQLGATE_LOG_COLUMNS)
    message = refusal(copy, "/abs/copy.db", adopt=True, read_only=False)
    assert message is not None
    assert "sqlgate's tables" in message
    assert ".dump" in message
    assert ".backup" in message


names = st.text(min_size=1, max_size=12)
any_facts = st.builds(
    FileFacts,
    size=st.sampled_from([0, 4096]),
    application_id=st.sampled_from([0, APPLICATION_ID, OTHER_APP, -1]),
    user_version=st.sampled_from([0, 1, 7, -5]),
    objects=st.lists(
        st.builds(SchemaObject, st.sampled_from(["table", "view", "index", "trigger"]), names),
        max_size=6,
    ).map(tuple),
    log_columns=st.sampled_from([(), SQLGATE_LOG_COLUMNS, ("id",)]),
)


@given(any_facts, st.booleans())
def test_every_refusal_is_one_printable_line(given_facts: FileFacts, read_only: bool) -> None:
    for adopt in (False, True):
        message = refusal(given_facts, "/abs/app.db", adopt=adopt, read_only=read_only)
        if message is not None:
            assert not set(message) & set(LINE_BREAKS)
            assert message.isprintable()


@given(any_facts)
def test_consent_only_ever_lets_another_programs_tables_through(given_facts: FileFacts) -> None:
    without = refusal(given_facts, "/abs/app.db", adopt=False, read_only=False)
    adopting = refusal(given_facts, "/abs/app.db", adopt=True, read_only=False)
    if adopting is not None:
        assert without is not None
    if without is not None and adopting is None:
        assert owner_of(given_facts) is Owner.OTHER_TABLES
    if owner_of(given_facts) in (Owner.NEW, Owner.SQLGATE):
        assert without is None


# -- reading the facts ----------------------------------------------------------------------


fingerprint = folder_state


def make_app_db(path: Path, *, wal: bool = False, user_version: int = 0, app_id: int = 0) -> None:
    shared_app_db(path, wal=wal, user_version=user_version, app_id=app_id)


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_reading_the_facts_changes_no_byte_and_creates_no_file(tmp_path: Path, wal: bool) -> None:
    path = tmp_path / "app.db"
    make_app_db(path, wal=wal, user_version=7, app_id=OTHER_APP)
    before = fingerprint(tmp_path)
    found = read_facts(path, busy_timeout=1.0)
    assert fingerprint(tmp_path) == before
    assert found.size == path.stat().st_size
    assert (found.application_id, found.user_version) == (OTHER_APP, 7)
    assert found.objects[:3] == (
        SchemaObject("table", "users"),
        SchemaObject("table", "orders"),
        SchemaObject("table", "alembic_version"),
    )
    for obj in (("index", "users_by_name"), ("view", "big_orders"), ("trigger", "orders_positive")):
        assert SchemaObject(*obj) in found.objects


@pytest.fixture
def live_wal_app(tmp_path: Path) -> Iterator[apsw.Connection]:
    """A WAL database another program has open, its newest table still in the -wal file."""
    path = tmp_path / "app.db"
    conn = connect_both(path)
    conn.pragma("journal_mode", "wal")
    conn.pragma("wal_autocheckpoint", 0)
    conn.execute("CREATE TABLE first (x)")
    conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    conn.execute("CREATE TABLE only_in_the_log (x)")
    yield conn
    conn.close()


def test_a_wal_database_in_use_is_read_with_its_log(
    tmp_path: Path, live_wal_app: apsw.Connection
) -> None:
    before = fingerprint(tmp_path)
    found = read_facts(tmp_path / "app.db", busy_timeout=1.0)
    assert SchemaObject("table", "only_in_the_log") in found.objects
    after = fingerprint(tmp_path)
    assert after.keys() == before.keys()  # nothing created
    for name in ("app.db", "app.db-wal"):  # the -shm is the live program's shared memory
        assert after[name] == before[name]


def test_a_file_another_program_locks_is_refused_naming_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    make_app_db(path)
    holder = connect_both(path)
    try:
        holder.pragma("locking_mode", "exclusive")
        holder.execute("INSERT INTO users (name) VALUES ('held')")  # keeps the exclusive lock
        with pytest.raises(StartupError, match=r"busy-timeout") as caught:
            read_facts(path, busy_timeout=0.05)
        assert "left untouched" in str(caught.value)
    finally:
        holder.close()


def test_sqlgates_log_columns_are_the_ones_its_first_migration_creates(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    conn = connect_both(path)
    migrate(conn)
    conn.close()
    found = read_facts(path, busy_timeout=1.0)
    # migration 9 added `actor` (issue 22): unmarked files are older than it
    assert found.log_columns == (*SQLGATE_LOG_COLUMNS, "actor")
    assert owner_of(found) is Owner.SQLGATE
    assert found.user_version == MIGRATIONS[-1].version


def test_a_missing_or_empty_file_is_new(tmp_path: Path) -> None:
    assert read_facts(tmp_path / "missing.db", busy_timeout=1.0) == FileFacts(size=0)
    (tmp_path / "empty.db").write_bytes(b"")
    assert owner_of(read_facts(tmp_path / "empty.db", busy_timeout=1.0)) is Owner.NEW


def test_a_link_is_shown_with_the_file_it_points_to(tmp_path: Path) -> None:
    target = tmp_path / "real" / "app.db"
    target.parent.mkdir()
    make_app_db(target)
    link = tmp_path / "link.db"
    link.symlink_to(target)
    assert shown_path(link) == f"{link} (a link to {target})"
    assert shown_path(target) == str(target)
    with pytest.raises(StartupError) as caught:
        check_ownership(link, busy_timeout=1.0, adopt=False, read_only=False)
    assert str(caught.value).startswith(f"{link} (a link to {target}) holds another program's")


def test_a_hot_journal_is_refused_and_neither_file_is_touched(tmp_path: Path) -> None:
    """A program that stopped mid-write left a journal only a writer may roll back."""
    source = tmp_path / "source"
    source.mkdir()
    writer = connect_both(source / "app.db")
    writer.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
    writer.pragma("cache_size", 1)  # pages spill to the file before the commit
    writer.execute("BEGIN")
    writer.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
        "INSERT INTO t SELECT randomblob(500) FROM n"
    )
    for name in ("app.db", "app.db-journal"):  # the state a crash would leave
        (tmp_path / name).write_bytes((source / name).read_bytes())
    writer.execute("ROLLBACK")
    writer.close()
    (source / "app.db").unlink()
    source.rmdir()
    before = fingerprint(tmp_path)
    with pytest.raises(StartupError, match="left untouched"):
        read_facts(tmp_path / "app.db", busy_timeout=0.05)
    assert fingerprint(tmp_path) == before
