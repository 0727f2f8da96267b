"""Settings: defaults, one env var per flag, explicit values first, errors that name the fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from sqlgate.config import (
    FLAGS,
    PROJECT_DB,
    TOOL_GROUPS,
    Settings,
    creates_parent,
    default_db_path,
    load_settings,
)
from sqlgate.errors import InvalidArgument


@pytest.fixture(autouse=True)
def no_sqlgate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that read os.environ must not see the developer's own SQLGATE_* settings."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


DEFAULTS = [
    pytest.param("query_timeout", 10.0, id="query-timeout-10s"),
    pytest.param("default_limit", 100, id="default-limit-100"),
    pytest.param("max_rows", 1000, id="max-rows-1000"),
    pytest.param("max_result_bytes", 32768, id="max-result-bytes-32768"),
    pytest.param("max_cell_chars", 2000, id="max-cell-chars-2000"),
    pytest.param("max_update_rows", 500, id="max-update-rows-500"),
    pytest.param("snapshots_keep", 5, id="snapshots-keep-5"),
    pytest.param("max_value_bytes", 1_000_000, id="max-value-bytes"),
    pytest.param("heap_limit_mb", 64, id="heap-limit-64"),
    pytest.param("busy_timeout", 5.0, id="busy-timeout-5s"),
    pytest.param("audit", True, id="audit-on"),
    pytest.param("tools", ("sql", "memory", "claims"), id="all-tool-groups"),
    pytest.param("redact", "default", id="redact-default"),
    pytest.param("redact_patterns", None, id="no-extra-redact-patterns"),
    pytest.param("max_event_chars", 100_000, id="max-event-chars-100000"),
    pytest.param("undo", "rows", id="undo-rows"),
    pytest.param("undo_max_mb", 64, id="undo-max-mb-64"),
    pytest.param("replicate", None, id="no-replication"),
    pytest.param("adopt_db", False, id="another-programs-file-never-adopted"),
    pytest.param("project_db", False, id="one-database-not-one-per-project"),
]


@pytest.mark.parametrize(("name", "value"), DEFAULTS)
def test_defaults_when_nothing_is_set(name: str, value: Any) -> None:
    assert getattr(load_settings(env={}), name) == value


@pytest.mark.parametrize(("name", "value"), DEFAULTS)
def test_settings_dataclass_has_the_same_defaults(name: str, value: Any) -> None:
    assert getattr(Settings(db=Path("x.db")), name) == value


def test_default_db_is_in_the_platform_user_data_dir() -> None:
    path = default_db_path()
    assert path == Path(platformdirs.user_data_dir("sqlgate", appauthor=False)) / "memory.db"
    assert path.parts[-2:] == ("sqlgate", "memory.db")
    assert path.is_absolute()


@pytest.mark.parametrize(
    ("db", "creates"),
    [
        pytest.param(default_db_path(), True, id="per-user-default"),
        pytest.param(PROJECT_DB, True, id="project-relative"),
        pytest.param(Path("/work/app") / PROJECT_DB, True, id="project-expanded"),
        pytest.param(Path("data") / "agent.db", False, id="other-folder"),
        pytest.param(Path("/mnt/typo") / "agent.db", False, id="absolute-other"),
    ],
)
def test_only_sqlgates_own_folders_are_created_for_a_database(db: Path, creates: bool) -> None:
    """A fresh clone has no .sqlgate/ (it is not committed): the server makes it."""
    assert creates_parent(db) is creates


def test_db_defaults_to_the_platform_path() -> None:
    assert load_settings(env={}).db == default_db_path()


# flag -> (text in its env var, the value it becomes)
ENV_VALUES: dict[str, tuple[str, Any]] = {
    "db": ("/data/agent.db", Path("/data/agent.db")),
    "tools": ("SQL, claims", ("sql", "claims")),
    "query_timeout": ("2.5", 2.5),
    "default_limit": ("25", 25),
    "max_rows": ("250", 250),
    "max_result_bytes": ("4096", 4096),
    "max_cell_chars": ("80", 80),
    "max_update_rows": ("0", 0),
    "snapshots_keep": ("2", 2),
    "max_value_bytes": ("5000", 5000),
    "heap_limit_mb": ("128", 128),
    "busy_timeout": ("0.25", 0.25),
    "audit": ("off", False),
    "redact": (" OFF ", "off"),
    "redact_patterns": ("/etc/sqlgate/patterns.txt", Path("/etc/sqlgate/patterns.txt")),
    "max_event_chars": ("500", 500),
    "confirm": (" Always ", "always"),
    "undo": (" FILE ", "file"),
    "undo_max_mb": ("16", 16),
    "write_undo_keep": (" 10 ", 10),
    "write_undo_mb": ("8", 8),
    "replicate": (" file:///srv/backups/agent ", "file:///srv/backups/agent"),
    "adopt_db": ("1", True),
    "project_db": ("0", False),
    "hide_column": (" users.ssn, main.api_keys.secret ", ("users.ssn", "main.api_keys.secret")),
    "protect_table": ("invoices", ("invoices",)),
    "append_only_table": ("events, ledger", ("events", "ledger")),
    "policy": ("/etc/sqlgate/policy.toml", Path("/etc/sqlgate/policy.toml")),
}
# the repeatable flags' variables are plural, as they hold many names
PLURAL_ENV = {
    "hide_column": "SQLGATE_HIDE_COLUMNS",
    "protect_table": "SQLGATE_PROTECT_TABLES",
    "append_only_table": "SQLGATE_APPEND_ONLY_TABLES",
}


def env_var_of(name: str) -> str:
    return PLURAL_ENV.get(name, "SQLGATE_" + name.upper())


def test_env_table_covers_every_flag() -> None:
    assert set(ENV_VALUES) == {flag.name for flag in FLAGS}


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [pytest.param(name, text, value, id=name) for name, (text, value) in ENV_VALUES.items()],
)
def test_every_flag_is_read_from_its_env_var(name: str, text: str, value: Any) -> None:
    env = {env_var_of(name): text}
    assert getattr(load_settings(env=env), name) == value


def test_env_vars_are_named_sqlgate_and_the_flag() -> None:
    assert {flag.env_var for flag in FLAGS} == {env_var_of(f.name) for f in FLAGS}
    assert {flag.name for flag in FLAGS if flag.repeatable} == set(PLURAL_ENV)
    assert {flag.option for flag in FLAGS} >= {"--db", "--query-timeout", "--max-update-rows"}


def test_process_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQLGATE_MAX_ROWS", "33")
    assert load_settings().max_rows == 33


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        pytest.param("sql", ("sql",), id="one"),
        pytest.param("memory,sql", ("memory", "sql"), id="order-kept"),
        pytest.param(" sql , SQL ,claims", ("sql", "claims"), id="spaces-case-duplicates"),
    ],
)
def test_tool_groups_from_env(text: str, tools: tuple[str, ...]) -> None:
    assert load_settings(env={"SQLGATE_TOOLS": text}).tools == tools


@pytest.mark.parametrize(
    ("text", "value"),
    [
        *[(text, True) for text in ("1", "true", "YES", "On")],
        *[(text, False) for text in ("0", "false", "no", " OFF ")],
    ],
)
def test_audit_switch_spellings(text: str, value: bool) -> None:
    assert load_settings(env={"SQLGATE_AUDIT": text}).audit is value


def test_db_from_env_expands_the_home_folder() -> None:
    assert load_settings(env={"SQLGATE_DB": "~/agent.db"}).db == Path.home() / "agent.db"


def test_redact_patterns_from_env_expands_the_home_folder() -> None:
    settings = load_settings(env={"SQLGATE_REDACT_PATTERNS": "~/patterns.txt"})
    assert settings.redact_patterns == Path.home() / "patterns.txt"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("query_timeout", "soon", id="timeout-word"),
        pytest.param("query_timeout", "0", id="timeout-zero"),
        pytest.param("query_timeout", "-1", id="timeout-negative"),
        pytest.param("query_timeout", "nan", id="timeout-nan"),
        pytest.param("query_timeout", "inf", id="timeout-inf"),
        pytest.param("default_limit", "0", id="limit-zero"),
        pytest.param("default_limit", "1.5", id="limit-fraction"),
        pytest.param("max_rows", "", id="rows-empty"),
        pytest.param("max_rows", "many", id="rows-word"),
        pytest.param("max_result_bytes", "-5", id="bytes-negative"),
        pytest.param("max_cell_chars", "0", id="cells-zero"),
        pytest.param("max_update_rows", "-1", id="update-rows-negative"),
        pytest.param("snapshots_keep", "0", id="keep-zero"),
        pytest.param("max_value_bytes", "1e6", id="value-bytes-exponent"),
        pytest.param("heap_limit_mb", "lots", id="heap-word"),
        pytest.param("busy_timeout", "-0.5", id="busy-negative"),
        pytest.param("audit", "maybe", id="audit-word"),
        pytest.param("tools", "sql,web", id="tools-unknown"),
        pytest.param("tools", " , ", id="tools-none"),
        pytest.param("db", "  ", id="db-blank"),
        pytest.param("redact", "some", id="redact-word"),
        pytest.param("redact", "", id="redact-empty"),
        pytest.param("redact_patterns", " ", id="redact-patterns-blank"),
        pytest.param("max_event_chars", "0", id="event-chars-zero"),
        pytest.param("max_event_chars", "big", id="event-chars-word"),
        pytest.param("project_db", "sometimes", id="project-db-word"),
    ],
)
def test_bad_env_value_names_the_variable(name: str, text: str) -> None:
    variable = "SQLGATE_" + name.upper()
    with pytest.raises(InvalidArgument) as caught:
        load_settings(env={variable: text})
    assert variable in str(caught.value)
    assert f'(got "{text}")' in str(caught.value)
    assert "could not convert" not in str(caught.value)
    assert "invalid literal" not in str(caught.value)


def test_explicit_value_beats_env() -> None:
    env = {"SQLGATE_MAX_ROWS": "9", "SQLGATE_AUDIT": "on", "SQLGATE_DB": "/env.db"}
    settings = load_settings({"max_rows": 7, "audit": False, "db": "/explicit.db"}, env=env)
    assert (settings.max_rows, settings.audit, settings.db) == (7, False, Path("/explicit.db"))


def test_explicit_value_hides_a_bad_env_value() -> None:
    settings = load_settings({"max_rows": 7}, env={"SQLGATE_MAX_ROWS": "many"})
    assert settings.max_rows == 7


def test_explicit_none_means_not_given() -> None:
    settings = load_settings({"max_rows": None}, env={"SQLGATE_MAX_ROWS": "9"})
    assert settings.max_rows == 9


def test_env_beats_default_and_leaves_other_flags_alone() -> None:
    settings = load_settings(env={"SQLGATE_DEFAULT_LIMIT": "5"})
    assert settings.default_limit == 5
    assert settings.max_rows == 1000


def test_unknown_explicit_setting_is_invalid() -> None:
    with pytest.raises(InvalidArgument, match="max_rowz"):
        load_settings({"max_rowz": 5}, env={})


def test_unrelated_env_vars_are_ignored() -> None:
    assert load_settings(env={"SQLGATE_NOT_A_FLAG": "x", "MAX_ROWS": "1"}).max_rows == 1000


def test_snapshots_live_in_the_records_folder_not_beside_the_database() -> None:
    settings = Settings(db=Path("/data/agent.db"))
    assert settings.snapshot_dir == settings.records.folder / "snapshots"
    assert settings.snapshot_dir.parent != Path("/data")


def test_settings_are_immutable() -> None:
    settings = Settings(db=Path("x.db"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_rows = 5  # type: ignore[misc]


def test_tool_groups_are_the_three_named_in_the_design() -> None:
    assert TOOL_GROUPS == ("sql", "memory", "claims")


# -- --project-db: one database per project (issue 20) -----------------------------------------
def test_project_db_uses_claude_project_dir_when_it_is_a_folder(tmp_path: Path) -> None:
    project, cwd = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    cwd.mkdir()
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    settings = load_settings({"project_db": True}, env=env, cwd=cwd)
    assert settings.db == project / PROJECT_DB
    assert settings.project_db is True


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="unset"),
        pytest.param("", id="empty"),
        pytest.param("missing", id="not-there"),
        pytest.param("a-file", id="a-file-not-a-folder"),
    ],
)
def test_project_db_falls_back_to_the_working_folder(tmp_path: Path, value: str | None) -> None:
    (tmp_path / "a-file").write_text("x")
    env = {} if value is None else {"CLAUDE_PROJECT_DIR": str(tmp_path / value) if value else ""}
    settings = load_settings({"project_db": True}, env=env, cwd=tmp_path)
    assert settings.db == tmp_path / PROJECT_DB


def test_project_db_with_a_relative_claude_project_dir_is_taken_from_the_working_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "app").mkdir()
    settings = load_settings({"project_db": True}, env={"CLAUDE_PROJECT_DIR": "app"}, cwd=tmp_path)
    assert settings.db == tmp_path / "app" / PROJECT_DB


def test_project_db_from_its_env_var(tmp_path: Path) -> None:
    settings = load_settings(env={"SQLGATE_PROJECT_DB": "on"}, cwd=tmp_path)
    assert (settings.db, settings.project_db) == (tmp_path / PROJECT_DB, True)
    off = load_settings(env={"SQLGATE_PROJECT_DB": "off"}, cwd=tmp_path)
    assert (off.db, off.project_db) == (default_db_path(), False)


def test_the_project_db_folder_is_created_like_a_projects_today(tmp_path: Path) -> None:
    assert creates_parent(load_settings({"project_db": True}, env={}, cwd=tmp_path).db)


@pytest.mark.parametrize(
    ("explicit", "env", "phrase"),
    [
        pytest.param({"db": Path("/a.db"), "project_db": True}, {}, "--db and --project-db",
                     id="both-given"),
        pytest.param({}, {"SQLGATE_DB": "/a.db", "SQLGATE_PROJECT_DB": "1"},
                     "SQLGATE_DB and SQLGATE_PROJECT_DB", id="both-in-env"),
    ],
)  # fmt: skip
def test_db_and_project_db_together_are_a_usage_error(
    tmp_path: Path, explicit: dict[str, Any], env: dict[str, str], phrase: str
) -> None:
    with pytest.raises(InvalidArgument, match=phrase) as caught:
        load_settings(explicit, env=env, cwd=tmp_path)
    assert caught.value.exit_code == 2
    assert "give one" in str(caught.value)


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        pytest.param({"project_db": True}, {"SQLGATE_DB": "/env.db"}, "project",
                     id="explicit-project-db-beats-env-db"),
        pytest.param({"db": Path("/x.db")}, {"SQLGATE_PROJECT_DB": "1"}, "/x.db",
                     id="explicit-db-beats-env-project-db"),
        pytest.param({"project_db": False}, {"SQLGATE_DB": "/env.db"}, "/env.db",
                     id="explicit-off"),
    ],
)  # fmt: skip
def test_an_explicit_choice_of_database_beats_the_other_one_in_the_environment(
    tmp_path: Path, explicit: dict[str, Any], env: dict[str, str], expected: str
) -> None:
    settings = load_settings(explicit, env=env, cwd=tmp_path)
    assert settings.db == (tmp_path / PROJECT_DB if expected == "project" else Path(expected))
    assert settings.project_db is (expected == "project")
