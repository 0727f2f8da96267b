"""The `sqlgate` command line through click's CliRunner."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest
from click.testing import Result

from sqlgate import __version__
from sqlgate.config import FLAGS, Settings
from sqlgate.errors import StartupError
from sqlgate.service import Service
from tests.records import connect_both
from tests.surfaces.cli.helpers import invoke

pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")


def error_line(result: Result) -> str:
    """The one stderr line an error ends a command with."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sqlgate: error: ")
    return lines[0]


def count_rows(db: Path, table: str) -> int:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert row is not None
        return int(row[0])
    finally:
        conn.close()


@pytest.fixture
def snapshotted(make_service: Callable[..., Service], db_path: Path) -> str:
    """A database with 3 rows whose snapshot (taken before deleting one) still has them."""
    service = make_service(undo="file")
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.write_query("INSERT INTO notes VALUES ('a'), ('b'), ('c')")
    service.destructive_query("DELETE FROM notes WHERE body = 'a'", "a test of restore")
    service.close()
    (snapshot,) = Settings(db=db_path).snapshot_dir.iterdir()
    return snapshot.name


# -- snapshots list -----------------------------------------------------------------------


def test_snapshots_list_says_when_there_are_none(db_path: Path) -> None:
    result = invoke("snapshots", "list", "--db", str(db_path))
    assert (result.exit_code, result.stdout) == (0, "")  # piped: nothing to list
    assert "no snapshots in" in result.stderr


def test_snapshots_list_json_is_empty_when_there_are_none(db_path: Path) -> None:
    result = invoke("snapshots", "list", "--db", str(db_path), "--json")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_snapshots_list_shows_a_table(db_path: Path, snapshotted: str) -> None:
    result = invoke("snapshots", "list", "--db", str(db_path))
    assert result.exit_code == 0, result.output
    assert snapshotted in result.stdout
    assert "created (UTC)" in result.stdout


def test_snapshots_list_json_prints_one_object_per_line(db_path: Path, snapshotted: str) -> None:
    result = invoke("snapshots", "list", "--db", str(db_path), "--json")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 1
    assert records[0]["name"] == snapshotted
    assert records[0]["bytes"] > 0
    assert Path(records[0]["path"]).is_file()
    assert records[0]["created"].endswith("Z")


def test_sqlgate_db_environment_variable_is_honoured(db_path: Path, snapshotted: str) -> None:
    result = invoke("snapshots", "list", "--json", env={"SQLGATE_DB": str(db_path)})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == snapshotted


def test_db_option_beats_the_environment_variable(
    db_path: Path, snapshotted: str, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    result = invoke(
        "snapshots", "list", "--json", "--db", str(db_path), env={"SQLGATE_DB": str(other)}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == snapshotted


# -- snapshots restore ------------------------------------------------------------------------


def test_restore_puts_the_snapshot_back_and_keeps_the_current_file(
    db_path: Path, snapshotted: str
) -> None:
    assert count_rows(db_path, "notes") == 2
    result = invoke("snapshots", "restore", snapshotted, "--db", str(db_path), "--yes")
    assert result.exit_code == 0, result.output
    assert f"restored {db_path} from snapshot {snapshotted}" in result.stdout
    assert "the previous content is kept at" in result.stdout
    assert count_rows(db_path, "notes") == 3
    folder = Settings(db=db_path).snapshot_dir
    assert {p.name for p in folder.glob("*.sqlite")} == {snapshotted}
    assert len(list((folder / "restored").glob("*.sqlite"))) == 1


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("20990101T000000000000Z-abcdef.sqlite", id="unknown-name"),
        pytest.param("../agent.db", id="path-outside-the-folder"),
        pytest.param("not-a-snapshot", id="wrong-suffix"),
    ],
)
def test_restore_of_an_unknown_snapshot_exits_3(db_path: Path, snapshotted: str, name: str) -> None:
    result = invoke("snapshots", "restore", name, "--db", str(db_path))
    assert result.exit_code == 3
    assert "sqlgate snapshots list" in error_line(result)
    assert count_rows(db_path, "notes") == 2


def test_restore_is_refused_while_the_database_is_open(
    db_path: Path, snapshotted: str, make_service: Callable[..., Service]
) -> None:
    running = make_service()  # a server still holding the database
    result = invoke("snapshots", "restore", snapshotted, "--db", str(db_path), "--yes")
    assert result.exit_code == 7
    assert "open in another process" in error_line(result)
    assert "notes\n2\n" in running.read_query("SELECT count(*) AS notes FROM notes")


def test_restore_into_a_missing_database_exits_3(
    db_path: Path, snapshotted: str, tmp_path: Path
) -> None:
    missing = tmp_path / "gone.db"
    folder = Settings(db=db_path).snapshot_dir
    moved = Settings(db=missing).snapshot_dir  # in the missing file's records folder
    moved.parent.mkdir(parents=True, exist_ok=True)
    folder.rename(moved)
    result = invoke("snapshots", "restore", snapshotted, "--db", str(missing), "--yes")
    assert result.exit_code == 3
    assert "does not exist" in error_line(result)
    assert not missing.exists()


# -- options and their errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        pytest.param(("serve", "--query-timeout", "soon"), "--query-timeout", id="timeout-text"),
        pytest.param(("serve", "--query-timeout", "0"), "--query-timeout", id="timeout-zero"),
        pytest.param(("serve", "--max-rows", "0"), "--max-rows", id="max-rows-zero"),
        pytest.param(("serve", "--tools", "sql,bogus"), "--tools", id="unknown-tool-group"),
        pytest.param(("serve", "--busy-timeout", "-1"), "--busy-timeout", id="negative-busy"),
        pytest.param(("serve", "--heap-limit-mb", "lots"), "--heap-limit-mb", id="heap-text"),
        pytest.param(("serve", "--db", ""), "--db", id="empty-db"),
        pytest.param(("serve", "--redact", "some"), "--redact", id="redact-word"),
        pytest.param(("serve", "--redact-patterns", " "), "--redact-patterns", id="blank-file"),
        pytest.param(("serve", "--max-event-chars", "0"), "--max-event-chars", id="chars-zero"),
        pytest.param(
            ("snapshots", "restore", "x.sqlite", "--snapshots-keep", "0"),
            "--snapshots-keep",
            id="keep-zero",
        ),
    ],
)
def test_bad_option_value_is_a_usage_error_naming_the_flag(
    args: tuple[str, ...], flag: str
) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert f"{flag} must " in error_line(result)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("SQLGATE_DB", "", id="empty-db"),
        pytest.param("SQLGATE_SNAPSHOTS_KEEP", "none", id="keep-text"),
    ],
)
def test_bad_environment_value_exits_2_naming_the_variable(variable: str, value: str) -> None:
    result = invoke("snapshots", "restore", "x.sqlite", env={variable: value})
    assert result.exit_code == 2
    assert variable in error_line(result)


def test_serve_help_names_every_flag_and_its_environment_variable() -> None:
    result = invoke("serve", "--help")
    assert result.exit_code == 0
    for flag in FLAGS:
        assert flag.env_var in result.stdout
        assert flag.option in result.stdout


def test_version_option_prints_the_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"sqlgate, version {__version__}\n"


# -- serve start-up errors ----------------------------------------------------------------------


def _not_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("plain text, not a database\n")
    return path


def _missing_parent(tmp_path: Path) -> Path:
    return tmp_path / "missing" / "agent.db"


def _directory(tmp_path: Path) -> Path:
    path = tmp_path / "folder"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("make_path", "phrase"),
    [
        pytest.param(_not_sqlite, "not a SQLite database", id="not-sqlite"),
        pytest.param(_missing_parent, "does not exist", id="missing-parent"),
        pytest.param(_directory, "is a directory", id="directory"),
    ],
)
def test_serve_start_up_error_exits_8_with_one_line(
    tmp_path: Path, make_path: Callable[[Path], Path], phrase: str
) -> None:
    db = make_path(tmp_path)
    before = db.read_bytes() if db.is_file() else None
    result = invoke("serve", "--db", str(db))
    assert result.exit_code == 8
    assert phrase in error_line(result)
    assert result.stdout == ""
    if before is not None:
        assert db.read_bytes() == before


def _missing_patterns(tmp_path: Path) -> Path:
    return tmp_path / "missing-patterns.txt"


def _bad_pattern(tmp_path: Path) -> Path:
    path = tmp_path / "patterns.txt"
    path.write_text("broken (unclosed\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make_patterns", "phrase"),
    [
        pytest.param(_missing_patterns, "cannot read redaction patterns", id="missing-file"),
        pytest.param(_bad_pattern, "is not valid RE2", id="bad-regex"),
    ],
)
def test_serve_with_unusable_redaction_patterns_exits_2_before_opening_the_database(
    tmp_path: Path, make_patterns: Callable[[Path], Path], phrase: str
) -> None:
    db = tmp_path / "agent.db"
    patterns = make_patterns(tmp_path)
    result = invoke("serve", "--db", str(db), "--redact-patterns", str(patterns))
    assert result.exit_code == 2
    assert phrase in error_line(result)
    assert result.stdout == ""
    assert not db.exists()


# -- every flag reaches Settings, as an option and as SQLGATE_<NAME> -------------------------

# flag -> (raw text, parsed value); every flag in FLAGS must be here
SAMPLES: dict[str, tuple[str, object]] = {
    "tools": ("sql", ("sql",)),
    "query_timeout": ("2.5", 2.5),
    "default_limit": ("7", 7),
    "max_rows": ("9", 9),
    "max_result_bytes": ("1234", 1234),
    "max_cell_chars": ("50", 50),
    "max_update_rows": ("0", 0),
    "snapshots_keep": ("2", 2),
    "max_value_bytes": ("5000", 5000),
    "heap_limit_mb": ("32", 32),
    "busy_timeout": ("0.5", 0.5),
    "audit": ("off", False),
    "redact": ("off", "off"),
    "redact_patterns": ("/etc/sqlgate/patterns.txt", Path("/etc/sqlgate/patterns.txt")),
    "max_event_chars": ("500", 500),
    "confirm": ("always", "always"),
    "undo": ("file", "file"),
    "undo_max_mb": ("8", 8),
    "write_undo_keep": ("0", 0),
    "write_undo_mb": ("4", 4),
    "replicate": ("file:///srv/backups/agent", "file:///srv/backups/agent"),
    "adopt_db": ("1", True),
    "hide_column": ("users.ssn", ("users.ssn",)),
    "protect_table": ("invoices", ("invoices",)),
    "append_only_table": ("events", ("events",)),
    "policy": ("/etc/sqlgate/policy.toml", Path("/etc/sqlgate/policy.toml")),
}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Settings, dict[str, object]]]:
    """Replace Service.open: record what serve asked for, then stop with a StartupError."""
    calls: list[tuple[Settings, dict[str, object]]] = []

    def fake_open(settings: Settings, **options: object) -> Service:
        calls.append((settings, options))
        raise StartupError("stopped by the test")

    monkeypatch.setattr(Service, "open", staticmethod(fake_open))
    return calls


def test_samples_cover_every_flag() -> None:
    # --project-db chooses the database as --db does: they cannot be given together
    assert set(SAMPLES) | {"db", "project_db"} == {flag.name for flag in FLAGS}


@pytest.mark.parametrize("how", ["option", "environment"])
def test_serve_project_db_opens_the_projects_database_and_may_create_its_folder(
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[tuple[Settings, dict[str, object]]],
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    args, env = (["--project-db"], None) if how == "option" else ([], {"SQLGATE_PROJECT_DB": "1"})
    result = invoke("serve", *args, env=env)
    assert result.exit_code == 8, result.output
    (settings, options) = opened[-1]
    assert settings.db == tmp_path / ".sqlgate" / "agent.db"
    assert options["create_parent"] is True


def _option_args(name: str, raw: str) -> list[str]:
    if name == "audit":
        return ["--no-audit"] if raw == "off" else ["--audit"]
    if name == "adopt_db":  # consent is a bare flag
        return ["--adopt-db"]
    return [next(f.option for f in FLAGS if f.name == name), raw]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_serve_option_reaches_settings(
    name: str, tmp_path: Path, opened: list[tuple[Settings, dict[str, object]]]
) -> None:
    raw, parsed = SAMPLES[name]
    result = invoke("serve", "--db", str(tmp_path / "a.db"), *_option_args(name, raw))
    assert result.exit_code == 8, result.output
    (settings, _) = opened[-1]
    assert getattr(settings, name) == parsed


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_serve_environment_variable_reaches_settings(
    name: str, tmp_path: Path, opened: list[tuple[Settings, dict[str, object]]]
) -> None:
    raw, parsed = SAMPLES[name]
    env_var = next(f.env_var for f in FLAGS if f.name == name)
    env = {"SQLGATE_DB": str(tmp_path / "a.db"), env_var: raw}
    result = invoke("serve", env=env)
    assert result.exit_code == 8, result.output
    (settings, _) = opened[-1]
    assert settings.db == tmp_path / "a.db"
    assert getattr(settings, name) == parsed


def test_serve_option_beats_the_environment_variable(
    tmp_path: Path, opened: list[tuple[Settings, dict[str, object]]]
) -> None:
    env = {"SQLGATE_QUERY_TIMEOUT": "30"}
    invoke("serve", "--db", str(tmp_path / "a.db"), "--query-timeout", "3", env=env)
    (settings, _) = opened[-1]
    assert settings.query_timeout == 3.0


def test_serve_creates_only_the_default_and_a_projects_database_folder(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[tuple[Settings, dict[str, object]]],
) -> None:
    default = tmp_path / "data" / "memory.db"
    monkeypatch.setattr("sqlgate.config.default_db_path", lambda: default)
    invoke("serve")
    invoke("serve", "--db", str(tmp_path / "elsewhere" / "a.db"))
    invoke("serve", "--db", ".sqlgate/agent.db")  # a fresh clone of a project-scope install
    (first, first_options), (_, second_options), (_, third_options) = opened
    assert first.db == default
    assert first_options["create_parent"] is True
    assert second_options["create_parent"] is False
    assert third_options["create_parent"] is True


def test_restore_keeps_the_memory_written_after_the_snapshot_and_the_chain_verifies(
    db_path: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service()
    service.append_event("kept by the snapshot")
    service.write_query("CREATE TABLE t (x)")
    service.destructive_query("DROP TABLE t", reason="take a snapshot")
    service.append_event("appended after the snapshot")
    service.close()
    (snapshot,) = [p.name for p in Settings(db=db_path).snapshot_dir.glob("*.sqlite")]
    result = invoke("snapshots", "restore", snapshot, "--db", str(db_path), "--yes")
    assert result.exit_code == 0, result.output
    assert "the memory chain records it as event 3" in result.stdout
    reopened = make_service()
    status = json.loads(reopened.verify_chain())
    assert status["ok"] is True
    assert status["events"] == 3  # both events, and the restore's
    assert status["restores"]["latest"]["id"] == 3
