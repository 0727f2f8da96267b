"""Properties: generated read-tier SQL never changes the database; the policy's invariants.

The first property throws SELECT compositions, pragmas with and without assignments,
comments and spliced-in write keywords at read_query; errors are fine, changes are not.
The others check `policy.decide` over generated facts, whatever SQLite might report.
"""

from __future__ import annotations

import contextlib

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import protected_names
from sqlgate.engine.statements.policy import NEVER, TIER_RULES, Operation, Tier, decide, in_main
from sqlgate.errors import SqlgateError
from tests.security.conftest import PLAIN, SAME_NAMES, World
from tests.security.fingerprint import DatabaseState, assert_unchanged

TABLES = ["items", "parents", "children", "notes", "docs", "tokens", "boxes", "cheap_items",
          "query_log", "query_errors", "query_patterns", "sqlite_schema", "docs_data",
          "sqlite_sequence", "temp.sqlite_master", "memory_events", "memory_checkpoints",
          "memory_events_fts", "memory_events_fts_data", "claims", "claims_history"]  # fmt: skip
PRAGMAS = ["table_info", "index_list", "foreign_key_list", "integrity_check", "user_version",
           "application_id", "schema_version", "journal_mode", "query_only", "foreign_keys",
           "writable_schema", "trusted_schema", "locking_mode", "synchronous", "cache_size",
           "mmap_size", "recursive_triggers", "wal_checkpoint", "optimize", "secure_delete",
           "temp_store", "busy_timeout", "hard_heap_limit", "data_version",
           "table_list"]  # fmt: skip
ASSIGNMENTS = ["", " = 0", " = 1", " = OFF", " = ON", "(7)", "(items)", " = 'delete'",
               " = DELETE", " = -1", "(TRUNCATE)", " = EXCLUSIVE"]  # fmt: skip
WRITES = ["DELETE FROM items", "DROP TABLE items", "ATTACH 'evil.db' AS evil",
          "INSERT INTO items(name) VALUES ('h')", "UPDATE items SET qty = 0", "VACUUM",
          "VACUUM INTO 'copy.db'", "BEGIN", "COMMIT", "CREATE TABLE h(a)", "DETACH main",
          "REPLACE INTO items(id, name) VALUES (1, 'h')", "ALTER TABLE items ADD COLUMN h",
          "CREATE TEMP TABLE h(a)", "SAVEPOINT s", "REINDEX", "ANALYZE", "DROP VIEW cheap_items",
          "INSERT INTO docs(docs) VALUES ('delete-all')", "DELETE FROM query_log",
          "CREATE TRIGGER h AFTER INSERT ON items BEGIN DELETE FROM notes; END",
          "DELETE FROM memory_events", "UPDATE memory_events SET content = 'h'",
          "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('rebuild')",
          "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('delete-all')",
          "DROP TRIGGER memory_events_no_update", "DELETE FROM memory_checkpoints",
          "UPDATE claims SET state = 'active'", "DELETE FROM claims_history",
          "DROP TRIGGER claims_retired_is_final"]  # fmt: skip
KEYWORDS = ["INSERT", "DELETE", "DROP", "ATTACH", "UPDATE", "VACUUM", "REPLACE", "CREATE",
            "ALTER", "PRAGMA", "BEGIN", "INTO", "SET", "TABLE", "WHERE", "RETURNING", ";", "--",
            "/*", "*/", "'", '"', "(", ")", "WITH", "AS", "SELECT", "FROM", "VALUES"]  # fmt: skip
PREFIXES = ["", "-- note\n", "/* note */ ", "\n\t ", ";", "; ;", "/* a */ -- b\n", "EXPLAIN ",
            "EXPLAIN QUERY PLAN "]  # fmt: skip
SUFFIXES = ["", " -- done", " /* done */", ";", "; -- done", " /* unterminated"]

tables = st.sampled_from(TABLES)
conditions = st.sampled_from(["", " WHERE 1", " WHERE rowid > 0", " WHERE 0", " LIMIT 3"])


@st.composite
def selects(draw: st.DrawFn) -> str:
    table = draw(tables)
    column = draw(st.sampled_from(["*", "count(*)", "1", "rowid", "typeof(1)"]))
    sql = f"SELECT {column} FROM {table}{draw(conditions)}"
    if draw(st.booleans()):
        sql = f"WITH x AS ({sql}) SELECT * FROM x"
    if draw(st.booleans()):
        sql = f"{sql} UNION ALL SELECT {column} FROM {draw(tables)}"
    return sql


pragmas = st.builds(
    lambda name, value, call: f"SELECT * FROM pragma_{name}" if call else f"PRAGMA {name}{value}",
    st.sampled_from(PRAGMAS),
    st.sampled_from(ASSIGNMENTS),
    st.booleans(),
)


@st.composite
def spliced(draw: st.DrawFn) -> str:
    """A statement with a write keyword or a whole write statement spliced in somewhere."""
    words = draw(selects()).split(" ")
    at = draw(st.integers(0, len(words)))
    insert = draw(st.one_of(st.sampled_from(KEYWORDS), st.sampled_from(WRITES)))
    return " ".join([*words[:at], insert, *words[at:]])


token_soup = st.lists(st.sampled_from(KEYWORDS + TABLES), min_size=1, max_size=12).map(" ".join)
statements = st.one_of(selects(), pragmas, spliced(), st.sampled_from(WRITES), token_soup)
read_tier_sql = st.builds(
    lambda prefix, body, suffix, tail: f"{prefix}{body}{suffix}{tail}",
    st.sampled_from(PREFIXES),
    statements,
    st.sampled_from(SUFFIXES),
    st.one_of(st.just(""), st.sampled_from(WRITES).map(lambda sql: f"; {sql}")),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sql=read_tier_sql)
def test_nothing_sent_to_read_query_changes_the_database(world: World, sql: str) -> None:
    before = world.state()
    with contextlib.suppress(SqlgateError):  # refusals and errors are fine; changes are not
        world.service.read_query(sql)
    assert_unchanged(before, world.state())


# -- the memory's objects under generated attacks from the writing tiers --------------------
MEMORY_TABLES = ["memory_events", "memory_checkpoints", "memory_events_fts",
                 "memory_events_fts_data", "memory_events_fts_idx", "memory_events_fts_docsize",
                 "memory_events_fts_config"]  # fmt: skip
MEMORY_SCHEMA = ["memory_events_by_session", "memory_events_by_kind", "memory_events_by_ts",
                 "memory_events_no_update", "memory_events_no_delete", "memory_events_no_replace",
                 "memory_checkpoints_no_update", "memory_checkpoints_no_delete",
                 "memory_checkpoints_no_replace"]  # fmt: skip
FTS_COMMANDS = ["delete-all", "rebuild", "optimize", "integrity-check", "merge", "DELETE-ALL"]
ATTACKS = ["INSERT INTO {t} SELECT * FROM {t}", "DELETE FROM {t}{where}",
           "UPDATE {t} SET rowid = rowid + 1000{where}", "REPLACE INTO {t} SELECT * FROM {t}",
           "DROP TABLE {t}", "DROP TABLE IF EXISTS {t}", "ALTER TABLE {t} RENAME TO h",
           "ALTER TABLE {t} ADD COLUMN h", "CREATE INDEX h ON {t}(rowid)", "REINDEX {t}",
           "INSERT INTO {fts}({fts}) VALUES ('{cmd}')", "DROP INDEX {o}", "DROP TRIGGER {o}",
           "CREATE TRIGGER h AFTER INSERT ON items BEGIN {inner}; END",
           "CREATE TRIGGER h AFTER INSERT ON {t} BEGIN SELECT 1; END",
           "WITH x AS (SELECT 1) {inner}", "{inner} RETURNING *"]  # fmt: skip
INNER = ["DELETE FROM {t}", "UPDATE {t} SET rowid = rowid WHERE 1",
         "INSERT INTO {t} SELECT * FROM {t}",
         "INSERT INTO {fts}({fts}) VALUES ('{cmd}')"]  # fmt: skip


def _spellings(name: str) -> list[str]:
    return [name, name.upper(), f'"{name}"', f"main.{name}", f"[{name.title()}]", f"`{name}`"]


memory_names = st.sampled_from(MEMORY_TABLES).flatmap(lambda n: st.sampled_from(_spellings(n)))
memory_objects = st.sampled_from(MEMORY_SCHEMA).flatmap(lambda n: st.sampled_from(_spellings(n)))


CLAIMS_TABLES = ["claims", "claims_history"]
CLAIMS_SCHEMA = ["claims_by_state", "claims_history_by_claim", "claims_no_delete",
                 "claims_retired_is_final", "claims_no_replace", "claims_history_no_update",
                 "claims_history_no_delete", "claims_history_no_replace"]  # fmt: skip
claims_names = st.sampled_from(CLAIMS_TABLES).flatmap(lambda n: st.sampled_from(_spellings(n)))
claims_objects = st.sampled_from(CLAIMS_SCHEMA).flatmap(lambda n: st.sampled_from(_spellings(n)))


@st.composite
def memory_attacks(
    draw: st.DrawFn,
    names: st.SearchStrategy[str] = memory_names,
    objects: st.SearchStrategy[str] = memory_objects,
) -> str:
    template = draw(st.sampled_from(ATTACKS))
    inner = draw(st.sampled_from(INNER))
    fill = {
        "t": draw(names),
        "fts": draw(st.sampled_from(_spellings("memory_events_fts"))),
        "o": draw(objects),
        "cmd": draw(st.sampled_from(FTS_COMMANDS)),
        "where": draw(st.sampled_from(["", " WHERE 1", " WHERE rowid = 1", " WHERE rowid > 0"])),
    }
    return template.format(inner=inner.format(**fill), **fill)


def _memory_part(state: DatabaseState) -> tuple[object, ...]:
    """sqlgate's memory, in its records (a main object of such a name is the user's)."""
    rows = {k: v for k, v in state.tables.items() if k.startswith("sqlgate.memory_")}
    schema = [
        row for row in state.schema if row[:1] == ("sqlgate",) and row[2].startswith("memory_")
    ]
    return rows, schema


@pytest.mark.parametrize("world", [PLAIN, SAME_NAMES], indirect=True)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sql=memory_attacks(), destructive=st.booleans())
def test_no_sql_tool_changes_the_memory(world: World, sql: str, destructive: bool) -> None:
    before = world.state()
    with contextlib.suppress(SqlgateError):  # refusals and errors are fine; changes are not
        if destructive:
            world.service.destructive_query(sql, "property: attack the memory")
        else:
            world.service.write_query(sql)
    after = world.state()
    assert _memory_part(after) == _memory_part(before)
    assert len(before.tables["sqlgate.memory_events"]) == 3
    assert after.connections == before.connections


def _claims_part(state: DatabaseState) -> tuple[object, ...]:
    """sqlgate's claims, in its records (a main object of such a name is the user's)."""
    rows = {k: v for k, v in state.tables.items() if k.startswith("sqlgate.claims")}
    schema = [
        row for row in state.schema if row[:1] == ("sqlgate",) and row[2].startswith("claims")
    ]
    return rows, schema, state.tables["sqlgate.memory_events"]


@pytest.mark.parametrize("world", [PLAIN, SAME_NAMES], indirect=True)
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sql=memory_attacks(claims_names, claims_objects), destructive=st.booleans())
def test_no_sql_tool_changes_the_claims(claims_world: World, sql: str, destructive: bool) -> None:
    before = claims_world.state()
    with contextlib.suppress(SqlgateError):  # refusals and errors are fine; changes are not
        if destructive:
            claims_world.service.destructive_query(sql, "property: attack the claims")
        else:
            claims_world.service.write_query(sql)
    after = claims_world.state()
    assert _claims_part(after) == _claims_part(before)
    assert len(before.tables["sqlgate.claims"]) == 4
    assert after.connections == before.connections


# -- the policy over generated facts ------------------------------------------------------
PROTECTED = protected_names()
SERVER_OBJECTS = in_main(PROTECTED)
SQLITE_ACTIONS = sorted(
    name.removeprefix("SQLITE_")
    for name in apsw.mapping_authorizer_function
    if isinstance(name, str) and name not in ("SQLITE_OK", "SQLITE_DENY", "SQLITE_IGNORE")
)
ACTIONS = sorted({*SQLITE_ACTIONS, *TIER_RULES, *NEVER, "EMPTY_TABLE", "UNKNOWN_99"})
SCHEMA_CHANGES = {a for a in ACTIONS if a.startswith(("CREATE_", "DROP_"))} | {"ALTER_TABLE"}
ROW_WRITES = {"INSERT", "UPDATE", "DELETE"}


def _cases(name: str) -> list[str]:
    # the last is another name to SQLite (U+212A KELVIN SIGN, not "K"): never protected
    return [name, name.upper(), name.title(), name.upper().replace("K", "\u212a")]


names = st.one_of(
    st.sampled_from(sorted(PROTECTED)).flatmap(lambda name: st.sampled_from(_cases(name))),
    st.sampled_from(["items", "notes", "docs_data", "boxes_node", "sqlite_sequence",
                     "sqlite_master", "sqlite_temp_master", "sqlite_stat1", "main", "temp"]),
    st.text(max_size=12),
    st.none(),
)  # fmt: skip
operations = st.builds(
    Operation,
    action=st.sampled_from(ACTIONS),
    target=names,
    detail=st.one_of(names, st.sampled_from(["load_extension", "1", "delete", "fts5", "csv"])),
    database=st.sampled_from([None, "main", "temp", "evil", "MAIN"]),
    inside=st.sampled_from([None, "tg", "query_log_no_update"]),
    nested=st.booleans(),
)
tiers = st.sampled_from(list(Tier))


def _written_names(op: Operation) -> list[str | None]:
    """The arguments that name what `op` creates, changes or removes."""
    if op.action in ("CREATE_INDEX", "CREATE_TRIGGER", "CREATE_TEMP_INDEX", "CREATE_TEMP_TRIGGER"):
        return [op.target, op.detail]
    if op.action == "ALTER_TABLE":
        return [op.detail]
    if op.action in ROW_WRITES | SCHEMA_CHANGES | {"EMPTY_TABLE", "REINDEX"}:
        return [op.target]
    return []


@settings(max_examples=500, deadline=None)
@given(tier=tiers, op=operations)
def test_decide_never_allows_a_never_action(tier: Tier, op: Operation) -> None:
    if op.action in NEVER:
        assert not decide(tier, op, SERVER_OBJECTS).allowed


@settings(max_examples=500, deadline=None)
@given(tier=tiers, op=operations)
def test_decide_never_lets_any_tier_write_a_server_object(tier: Tier, op: Operation) -> None:
    if any(name is not None and fold_name(name) in PROTECTED for name in _written_names(op)):
        assert not decide(tier, op, SERVER_OBJECTS).allowed


@settings(max_examples=500, deadline=None)
@given(op=operations)
def test_decide_never_lets_read_query_change_the_schema_or_rows(op: Operation) -> None:
    verdict = decide(Tier.READ, op, SERVER_OBJECTS)
    if op.action in SCHEMA_CHANGES | {"EMPTY_TABLE", "ANALYZE", "REINDEX"}:
        assert not verdict.allowed
    if op.action in ROW_WRITES and verdict.allowed:
        # only a module's own statements, prepared on the read-only connection (rtree does
        # this when it connects), never one the agent wrote
        assert op.nested
        assert fold_name(op.target or "") not in PROTECTED


@settings(max_examples=500, deadline=None)
@given(tier=tiers, op=operations)
def test_decide_only_touches_the_main_database(tier: Tier, op: Operation) -> None:
    database = op.target if op.action == "ALTER_TABLE" else op.database
    temp_catalog = fold_name(op.target or "") in {"sqlite_temp_master", "sqlite_temp_schema",
                                                 "sqlite_master", "sqlite_schema"}  # fmt: skip
    if database not in (None, "main") and not (database == "temp" and temp_catalog):
        assert not decide(tier, op, SERVER_OBJECTS).allowed


@settings(max_examples=500, deadline=None)
@given(tier=tiers, op=operations)
def test_decide_refuses_actions_it_does_not_know(tier: Tier, op: Operation) -> None:
    if op.action not in TIER_RULES:
        assert not decide(tier, op, SERVER_OBJECTS).allowed
