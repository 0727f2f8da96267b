"""Adversarial names, descriptions and fragments for the tools that are not plain SQL.

create_view (name, select_sql, description, replace), describe_table, search_text (table,
columns, where, key_column, pattern, limits), list_tables and get_schema, the memory
tools (content, kind, tags, ids, dates, search words) and the claims tools (kinds,
volatilities, confidences, ranks, ids, observed signals, moments): each case is refused with
the named error, or is harmless; either way nothing changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sqlgate.errors import InvalidArgument, NotFound, PolicyDenied, SqlError
from tests.security.cases import (
    HARMLESS,
    Expected,
    case,
    check_records_unchanged,
    check_refused_and_unchanged,
)
from tests.security.conftest import RETIRED_CLAIM, SAME_NAMES, World
from tests.security.fingerprint import assert_unchanged

DENIED, SQL, BAD, MISSING = PolicyDenied, SqlError, InvalidArgument, NotFound
ANSWER = "SELECT 42 AS answer"
OTHER_NAME = "choose another name"


def view(
    name: Any, select_sql: Any, expected: Expected, id: str, phrase: str = "", **extra: Any
) -> Any:
    args = {"name": name, "select_sql": select_sql, **extra}
    return case("create_view", args, expected, id, phrase=phrase)


def describe(table: Any, expected: Expected, id: str) -> Any:
    return case("describe_table", {"table": table}, expected, id)


def search(expected: Expected, id: str, **request: Any) -> Any:
    return case("search_text", {"pattern": "a", "table": "items", **request}, expected, id)


VIEW_NAMES = [
    view("v; DROP TABLE items", ANSWER, BAD, "name-with-statement"),
    view('v" AS SELECT 1; DROP TABLE items; --', ANSWER, BAD, "name-with-quote"),
    view("", ANSWER, BAD, "empty-name"),
    view("1view", ANSWER, BAD, "name-starts-with-digit"),
    view("sqlite_master", ANSWER, BAD, "sqlite-master"),
    view("sqlite_view", ANSWER, BAD, "sqlite-prefix"),
    view("v" * 129, ANSWER, BAD, "name-too-long"),
    view("v\x00x", ANSWER, BAD, "name-with-nul"),
    view("ｖｉｅｗ", ANSWER, BAD, "fullwidth-name"),
    view("temp.v", ANSWER, BAD, "temp-qualified"),
    view("main.v", ANSWER, BAD, "main-qualified"),
    view(None, ANSWER, BAD, "none-name"),
    view(42, ANSWER, BAD, "number-name"),
    # SQLite keeps the names of the attached full-text index's shadow tables (issue 33)
    view("memory_events_fts_data", ANSWER, SQL, "memory-fts-shadow", phrase=OTHER_NAME),
    view("memory_events_fts_content", ANSWER, SQL, "memory-fts-absent-shadow", phrase=OTHER_NAME),
    view("items", ANSWER, DENIED, "replace-user-table", replace=True),
    view("docs", ANSWER, DENIED, "replace-virtual-table", replace=True),
    view("items_name", ANSWER, SQL, "index-name"),
    view("docs_data", ANSWER, SQL, "shadow-table-name"),
    view("cheap_items", ANSWER, BAD, "existing-view-without-replace"),
]

VIEW_BODIES = [
    view("v", "SELECT 1; DROP TABLE items", DENIED, "then-drop"),
    view("v", "SELECT 1 --\n; DROP TABLE items", DENIED, "comment-then-drop"),
    view("v", "SELECT 1 UNION SELECT 2; ATTACH 'evil.db' AS evil", DENIED, "then-attach"),
    view("v", "SELECT * FROM items) ; DROP TABLE items; --", SQL, "close-paren-then-drop"),
    view("v", "DELETE FROM items", DENIED, "delete"),
    view("v", "WITH x AS (SELECT 1) DELETE FROM items", DENIED, "cte-delete"),
    view("v", "INSERT INTO items(name) VALUES ('x') RETURNING *", DENIED, "insert-returning"),
    view("v", "CREATE TABLE x(a)", DENIED, "create-table"),
    view("v", "PRAGMA table_info(items)", DENIED, "pragma"),
    view("v", "EXPLAIN SELECT 1", DENIED, "explain"),
    view("v", "BEGIN", DENIED, "begin"),
    view("v", "ATTACH 'evil.db' AS evil", DENIED, "attach"),
    view("v", "VACUUM INTO '@OUTSIDE@/copy.db'", DENIED, "vacuum-into"),
    view("v", "SELECT load_extension('evil')", DENIED, "load-extension"),
    view("v", "SELECT * FROM temp.sqlite_master", SQL, "reads-temp"),
    view("v", "SELECT * FROM no_such_table", SQL, "missing-table"),
    view("v", "SELECT name FROM items WHERE name = ?", BAD, "parameter"),
    view("v", "", BAD, "empty"),
    view("v", "  ;  ", BAD, "only-semicolon"),
    view("v", 42, BAD, "number"),
    view(
        "v",
        "WITH x AS (DELETE FROM memory_events RETURNING id) SELECT * FROM x",
        SQL,
        "deletes-memory-in-cte",
    ),
    view("v", "SELECT 1; DELETE FROM memory_checkpoints", DENIED, "then-clear-checkpoints"),
    view("v", "SELECT 1; DELETE FROM claims", DENIED, "then-delete-claims"),
    view("v", "UPDATE claims SET state = 'active' WHERE id > 0", DENIED, "updates-claims"),
    view("v", "INSERT INTO claims_history(claim_id) VALUES (1)", DENIED, "forges-history"),
    view(
        "v",
        "WITH x AS (DELETE FROM claims_history RETURNING id) SELECT * FROM x",
        SQL,
        "deletes-history-in-cte",
    ),
    view(
        "v",
        "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('delete-all')",
        DENIED,
        "fts-command",
    ),
    view("v", ANSWER, BAD, "description-with-nul", description="x\x00y"),
    view("v", ANSWER, BAD, "description-with-escape", description="\x1b[31mred"),
    view("v", ANSWER, BAD, "description-too-long", description="x" * 2001),
    view("v", ANSWER, BAD, "description-number", description=42),
]

DESCRIBE = [
    describe("items; DROP TABLE items", MISSING, "statement"),
    describe('items"; DROP TABLE items; --', MISSING, "quote"),
    describe("query_log' OR '1'='1", MISSING, "or-true"),
    describe("sqlite_master", MISSING, "sqlite-master"),
    describe("sqlite_schema", MISSING, "sqlite-schema"),
    describe("sqlite_sequence", MISSING, "sqlite-sequence"),
    describe("../db/agent.db", MISSING, "path"),
    # a qualified name reads the table SQLite would (main.items, sqlgate.query_log): issue 33
    describe("main.items", HARMLESS, "qualified"),
    describe("docs_data", MISSING, "shadow-table"),
    describe("pragma_table_info", MISSING, "pragma-function"),
    describe("claims", HARMLESS, "claims"),
    describe("CLAIMS_HISTORY", HARMLESS, "claims-history-upper"),
    describe("claims_by_state", MISSING, "claims-index"),
    describe("claims_no_delete", MISSING, "claims-trigger"),
    describe("memory_events_fts_data", MISSING, "memory-fts-shadow"),
    describe("memory_events_fts_content", MISSING, "memory-fts-absent-shadow"),
    describe("memory_events_by_ts", MISSING, "memory-index"),
    describe("memory_events", HARMLESS, "memory-events"),
    describe("MEMORY_CHECKPOINTS", HARMLESS, "memory-checkpoints-upper"),
    describe("memory_events_fts", HARMLESS, "memory-fts"),
    describe("items\x00", MISSING, "nul"),
    describe("", BAD, "empty"),
    describe("   ", BAD, "blank"),
    describe(None, BAD, "none"),
    describe(42, BAD, "number"),
    describe("query_log", HARMLESS, "server-table"),
    describe("QUERY_LOG", HARMLESS, "server-table-upper"),
    describe("query_errors", HARMLESS, "server-view"),
    describe("docs", HARMLESS, "fts5-table"),
    describe("boxes", HARMLESS, "rtree-table"),
]

SEARCH = [
    search(MISSING, "table-with-statement", table="items; DROP TABLE items"),
    search(MISSING, "table-sqlite-master", table="sqlite_master"),
    search(MISSING, "table-shadow", table="docs_data"),
    search(BAD, "column-with-statement", columns=["name; DROP TABLE items"]),
    search(BAD, "column-with-quote", columns=['name" FROM items; --']),
    search(BAD, "columns-as-string", columns="name"),
    search(BAD, "columns-empty", columns=[]),
    search(BAD, "column-number", columns=[1]),
    search(BAD, "key-with-statement", key_column="id; DROP TABLE items"),
    search(BAD, "key-rowid-of-view", table="cheap_items", key_column="rowid"),
    search(BAD, "key-number", key_column=5),
    search(BAD, "where-then-delete", where="1); DELETE FROM items; --"),
    search(BAD, "where-then-attach", where="1\n) ; ATTACH 'evil.db' AS evil; --"),
    search(BAD, "where-then-pragma", where="1) ; PRAGMA query_only = 0; --"),
    search(DENIED, "where-load-extension", where="load_extension('evil') IS NULL"),
    search(DENIED, "where-writable-schema", where="(SELECT * FROM pragma_writable_schema)"),
    search(BAD, "where-unterminated-comment", where="1 /*"),
    search(SQL, "where-with-delete-expression", where="(DELETE FROM items)"),
    search(BAD, "where-empty", where=""),
    search(BAD, "where-blank", where="   "),
    search(BAD, "where-nul", where="1\x00) ; DELETE FROM items; --"),
    search(
        BAD,
        "where-escapes-parens-reads",
        columns=["name"],
        where="1) UNION SELECT 1, sql FROM sqlite_schema /*",
    ),
    search(HARMLESS, "where-reads-log", where="(SELECT count(*) FROM query_log) > 0"),
    search(HARMLESS, "where-bound-sql", where="name = ?", params=["x'; DROP TABLE items; --"]),
    search(BAD, "pattern-empty", pattern=""),
    search(BAD, "pattern-invalid", pattern="("),
    search(BAD, "pattern-too-long", pattern="x" * 1001),
    search(BAD, "pattern-backreference", pattern="(?P<n>a)(?P=n)"),
    search(BAD, "pattern-huge-repetition", pattern="a{1000}{1000}"),
    search(HARMLESS, "pattern-catastrophic-in-backtracking", pattern="(a+)+$"),
    search(HARMLESS, "pattern-literal-sql", pattern="'; DROP TABLE items; --", fixed_strings=True),
    search(BAD, "limit-zero", limit=0),
    search(HARMLESS, "limit-huge", limit=10**9),  # lowered to --max-rows, as in read_query
    search(HARMLESS, "limit-past-sqlite", limit=2**63),  # only counted, never given to SQLite
    search(BAD, "limit-bool", limit=True),
    search(BAD, "context-negative", context_chars=-1),
    search(BAD, "context-huge", context_chars=10**6),
    search(HARMLESS, "server-table", table="query_log"),
    search(HARMLESS, "fts5-table", table="docs"),
    search(HARMLESS, "rtree-table", table="boxes", pattern="1"),
    search(HARMLESS, "view", table="cheap_items"),
    search(HARMLESS, "memory-events", table="memory_events", pattern="deploy"),
    search(HARMLESS, "memory-checkpoints", table="memory_checkpoints", pattern="intact"),
    search(HARMLESS, "memory-fts", table="memory_events_fts", pattern="cache"),
    search(MISSING, "memory-fts-shadow", table="memory_events_fts_data"),
    search(HARMLESS, "claims", table="claims", pattern="priority"),
    search(HARMLESS, "claims-history", table="claims_history", pattern="add"),
    search(SQL, "where-deletes-claims", table="claims", where="(DELETE FROM claims)"),
    search(
        SQL,
        "where-deletes-memory",
        table="memory_events",
        where="(DELETE FROM memory_events)",
    ),
]


def memory(tool: str, expected: Expected, id: str, phrase: str = "", **args: Any) -> Any:
    return case(tool, args, expected, id, phrase=phrase)


# what the memory tools are sent: every refusal names the fix, and none writes anything
MEMORY_TOOLS = [
    memory("append_event", BAD, "empty-content", "content is empty", content=""),
    memory("append_event", BAD, "blank-content", "content is empty", content=" \n\t "),
    memory("append_event", BAD, "none-content", content=None),
    memory("append_event", BAD, "number-content", content=42),
    memory("append_event", BAD, "nul-in-content", "control characters", content="a\x00b"),
    memory("append_event", BAD, "escape-in-content", "control characters", content="\x1b[2J"),
    memory(
        "append_event",
        BAD,
        "only-private",
        "content is empty",
        content="<private>api key is hunter2</private>",
    ),
    memory("append_event", BAD, "kind-upper", "kind 'Note' is invalid", content="x", kind="Note"),
    memory("append_event", BAD, "kind-sql", content="x", kind="note'); DROP TABLE items; --"),
    memory("append_event", BAD, "kind-empty", content="x", kind=""),
    memory("append_event", BAD, "kind-too-long", content="x", kind="k" * 33),
    memory("append_event", BAD, "kind-number", content="x", kind=7),
    memory("append_event", BAD, "tags-number", "list of tags", content="x", tags=7),
    memory("append_event", BAD, "tags-empty-text", "tags is empty", content="x", tags=" , "),
    memory("append_event", BAD, "tag-empty", content="x", tags=[""]),
    memory("append_event", BAD, "tag-number", content="x", tags=[1]),
    memory("append_event", BAD, "tag-nul", content="x", tags=["a\x00"]),
    memory("append_event", BAD, "tag-edge-space", content="x", tags=[" deploy"]),
    memory("append_event", BAD, "tag-too-long", content="x", tags=["t" * 65]),
    memory(
        "append_event",
        BAD,
        "too-many-tags",
        "at most 20",
        content="x",
        tags=[f"t{i}" for i in range(21)],
    ),
    memory("append_event", BAD, "tags-object", content="x", tags={"a": 1}),
    memory("checkpoint", BAD, "empty-summary", "summary is empty", summary=""),
    memory("checkpoint", BAD, "none-summary", summary=None),
    memory("checkpoint", BAD, "nul-in-summary", summary="done\x00"),
    memory("get_resume_context", BAD, "max-events-zero", "max_events", max_events=0),
    memory("get_resume_context", BAD, "max-events-huge", "max_events", max_events=10**6),
    memory("get_resume_context", BAD, "max-events-bool", "max_events", max_events=True),
    memory("get_resume_context", BAD, "exclude-kinds-empty-text", exclude_kinds=""),
    memory("get_resume_context", HARMLESS, "exclude-kinds-text", exclude_kinds="tool, note"),
    memory("get_resume_context", BAD, "exclude-kind-sql", exclude_kinds=["x') OR 1=1 --"]),
    memory("get_resume_context", HARMLESS, "exclude-kinds", exclude_kinds=["note"]),
    memory("memory_search", BAD, "no-words", "no words", query="*** ()"),
    memory("memory_search", BAD, "query-number", query=5),
    memory("memory_search", HARMLESS, "fts-command-word", query="delete-all"),
    memory("memory_search", HARMLESS, "fts-syntax", query='NEAR("deploy" cache) OR content:x*'),
    memory("memory_search", HARMLESS, "unbalanced", query='deploy) AND ("'),
    memory("memory_search", HARMLESS, "column-filter", query="{content tags}: deploy"),
    memory("memory_search", HARMLESS, "sql-in-words", query="'; DROP TABLE memory_events; --"),
    memory("memory_search", HARMLESS, "sql-in-session", query="deploy", session="x' OR '1'='1"),
    memory("memory_search", BAD, "sql-in-tag", query="deploy", tags=["x') OR 1=1 --"]),
    memory("memory_search", BAD, "kind-sql", query="deploy", kind="note' OR 1=1 --"),
    memory("memory_search", BAD, "top-k-zero", "top_k", query="deploy", top_k=0),
    memory("memory_search", BAD, "top-k-huge", "top_k", query="deploy", top_k=10**6),
    memory("memory_search", BAD, "since-word", "ISO-8601", query="deploy", since="yesterday"),
    memory("memory_search", BAD, "until-bad-month", "ISO-8601", query="deploy", until="2026-13-01"),
    memory("memory_search", BAD, "since-sql", query="deploy", since="2026-01-01' OR 1=1 --"),
    memory("memory_timeline", BAD, "no-ids", "non-empty list", ids=[]),
    memory("memory_timeline", BAD, "id-zero", ids=[0]),
    memory("memory_timeline", BAD, "id-text", ids=["1 OR 1=1"]),
    memory("memory_timeline", BAD, "window-negative", "window", ids=[1], window=-1),
    memory("memory_timeline", BAD, "window-huge", "window", ids=[1], window=10**6),
    memory("memory_timeline", BAD, "too-many-ids", "at most 50", ids=list(range(1, 52))),
    memory("memory_timeline", MISSING, "unknown-id", "memory_search", ids=[99]),
    memory("memory_details", MISSING, "one-unknown-id", "no event 99", ids=[1, 99]),
    memory("memory_details", BAD, "ids-string", ids="1"),
    memory("memory_details", BAD, "id-bool", ids=[True]),
    memory("memory_details", BAD, "id-negative", ids=[-3]),
    memory("memory_details", HARMLESS, "known-ids", ids=[3, 1]),
    memory("memory_stats", HARMLESS, "stats"),
    memory("verify_chain", HARMLESS, "verify"),
]

OBSERVED_SHAPE = "observed must look like"


def claims(tool: str, expected: Expected, name: str, phrase: str = "", **args: Any) -> Any:
    """A claims tool case; `name` is the case's id (the tools themselves take an `id`)."""
    return case(tool, args, expected, name, phrase=phrase)


def add(expected: Expected, name: str, phrase: str = "", **args: Any) -> Any:
    return claims("claim_add", expected, name, phrase, **{"entity": "acme", "kind": "fact",
                  "claim": "acme is based in oslo", **args})  # fmt: skip


def observed(expected: Expected, name: str, value: Any, phrase: str = OBSERVED_SHAPE) -> Any:
    return claims("claims_contradictions", expected, name, phrase, observed=value)


# what the claims tools are sent (on `claims_world`): every refusal names what is allowed,
# and writes nothing, neither a claim, a history row nor a chain event
CLAIMS_TOOLS = [
    add(BAD, "kind-unknown", "priority, status, fact, relationship", kind="rumour"),
    add(BAD, "kind-upper", "is not one of", kind="Fact"),
    add(BAD, "kind-sql", kind="fact'); DELETE FROM claims; --"),
    add(BAD, "kind-number", kind=3),
    add(BAD, "volatility-unknown", "stable, slow, volatile", volatility="often"),
    add(BAD, "volatility-none", volatility=None),
    add(BAD, "confidence-above-1", "from 0 to 1", confidence=1.01),
    add(BAD, "confidence-negative", "from 0 to 1", confidence=-0.01),
    add(BAD, "confidence-nan", "from 0 to 1", confidence=float("nan")),
    add(BAD, "confidence-inf", "from 0 to 1", confidence=float("inf")),
    add(BAD, "confidence-bool", confidence=True),
    add(BAD, "confidence-text", confidence="0.5"),
    add(BAD, "rank-on-a-fact", "only for priority", rank=1),
    add(BAD, "rank-on-a-status", "only for priority", kind="status", rank=2),
    add(BAD, "rank-zero", "whole number", kind="priority", rank=0),
    add(BAD, "rank-negative", kind="priority", rank=-1),
    add(BAD, "rank-float", kind="priority", rank=1.5),
    add(BAD, "rank-bool", kind="priority", rank=True),
    add(BAD, "entity-empty", "entity is empty", entity=""),
    add(BAD, "entity-blank", entity="  \n "),
    add(BAD, "entity-none", entity=None),
    add(BAD, "claim-empty", "claim is empty", claim=""),
    add(BAD, "claim-nul", "control characters", claim="acme\x00x"),
    add(BAD, "claim-escape", claim="\x1b[2Jacme"),
    add(BAD, "claim-with-a-secret", "secret", claim="acme api_key=sk-live-abcdef0123456789"),
    add(BAD, "confirmed-at-word", "ISO-8601", confirmed_at="yesterday"),
    add(BAD, "confirmed-at-future", "in the future", confirmed_at="2999-01-01"),
    add(BAD, "confirmed-at-sql", confirmed_at="2026-01-01' OR 1=1 --"),
    add(MISSING, "evidence-unknown-event", "no memory event 999", evidence=[999]),
    add(BAD, "evidence-zero", evidence=[0]),
    add(BAD, "evidence-string", evidence="1"),
    add(
        DENIED,
        "re-add-a-retired-claim",
        "stay retired",
        entity="acme",
        claim="acme ships on fridays",
    ),
    claims("claim_search", BAD, "search-empty", "query is empty", query=""),
    claims("claim_search", BAD, "search-number", query=5),
    claims("claim_search", HARMLESS, "search-sql-text", query="'; DELETE FROM claims; --"),
    claims("claim_search", HARMLESS, "search-like-wildcards", query="%_%"),
    claims("claim_confirm", MISSING, "confirm-unknown-id", "claim_search", id=99),
    claims("claim_confirm", BAD, "confirm-id-zero", "whole number", id=0),
    claims("claim_confirm", BAD, "confirm-id-text", id="1 OR 1=1"),
    claims("claim_confirm", BAD, "confirm-id-bool", id=True),
    claims("claim_confirm", DENIED, "confirm-retired", "retired", id=RETIRED_CLAIM),
    claims("claim_confirm", BAD, "confirm-confidence", "from 0 to 1", id=1, confidence=2),
    claims("claim_confirm", MISSING, "confirm-evidence", "no memory event", id=1, evidence=[77]),
    claims("claim_retract", MISSING, "retract-unknown-id", "claim_search", id=99),
    claims("claim_retract", BAD, "retract-id-negative", id=-1),
    claims("claim_retract", HARMLESS, "retract-retired-again-changes-nothing", id=RETIRED_CLAIM),
    claims("claims_decayed", BAD, "threshold-above-1", "from 0 to 1", threshold=2),
    claims("claims_decayed", BAD, "threshold-text", threshold="0.5"),
    claims("claims_decayed", BAD, "as-of-word", "ISO-8601", as_of="soon"),
    claims("claims_decayed", BAD, "as-of-bad-day", "ISO-8601", as_of="2026-02-30"),
    claims("claims_decayed", HARMLESS, "as-of-far-future-writes-nothing", as_of="2031-01-01"),
    claims("claims_decayed", HARMLESS, "as-of-past-writes-nothing", as_of="2025-01-01"),
    claims(
        "claims_decayed",
        HARMLESS,
        "threshold-1-as-of-writes-nothing",
        threshold=1,
        as_of="2026-01-02",
    ),
    claims("claims_contradictions", BAD, "as-of-sql", "ISO-8601", as_of="x' OR 1=1 --"),
    claims("claims_contradictions", HARMLESS, "as-of-future-writes-nothing", as_of="2026-06-01"),
    observed(BAD, "observed-text", "signals"),
    observed(BAD, "observed-list", [{"acme": [1, 2, 3]}]),
    observed(BAD, "observed-no-periods", {"signals": [{"acme": [9]}]}),
    observed(BAD, "observed-extra-key", {"signals": [], "validPeriods": [], "drop": 1}),
    observed(BAD, "signals-object", {"signals": {"acme": [9]}, "validPeriods": [True]}),
    observed(BAD, "signal-a-list", {"signals": [[9]], "validPeriods": [True]}),
    observed(BAD, "signal-empty", {"signals": [{}], "validPeriods": [True]}),
    observed(BAD, "ranks-text", {"signals": [{"acme": "9"}], "validPeriods": [True]}),
    observed(BAD, "rank-float", {"signals": [{"acme": [9.5]}], "validPeriods": [True]}),
    observed(BAD, "rank-string", {"signals": [{"acme": ["9"]}], "validPeriods": [True]}),
    observed(BAD, "rank-zero", {"signals": [{"acme": [0]}], "validPeriods": [True]}),
    observed(BAD, "rank-bool", {"signals": [{"acme": [True]}], "validPeriods": [True]}),
    observed(
        BAD,
        "lengths-differ",
        {"signals": [{"acme": [9, 9]}], "validPeriods": [True, True, True]},
        "2 ranks for 3 periods",
    ),
    observed(BAD, "period-not-bool", {"signals": [{"acme": [9]}], "validPeriods": [1]}),
    observed(BAD, "periods-text", {"signals": [{"acme": [9]}], "validPeriods": "yes"}),
]

INTROSPECTION = [
    case("list_tables", {"include_row_counts": True}, HARMLESS, "with-counts"),
    case("list_tables", {"include_row_counts": False}, HARMLESS, "without-counts"),
    case("get_schema", {"include_system": True}, HARMLESS, "with-system"),
    case("get_schema", {"include_system": False}, HARMLESS, "without-system"),
]


@pytest.mark.parametrize(
    ("tool", "args", "expected", "phrase"),
    VIEW_NAMES + VIEW_BODIES + DESCRIBE + SEARCH + MEMORY_TOOLS + INTROSPECTION,
)
def test_adversarial_arguments_are_refused_and_change_nothing(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(world, tool, args, expected, phrase)


@pytest.mark.parametrize("world", [SAME_NAMES], indirect=True)
@pytest.mark.parametrize(
    ("tool", "args", "expected", "phrase"),
    VIEW_NAMES + VIEW_BODIES + DESCRIBE + SEARCH + INTROSPECTION,
)
def test_on_a_file_holding_the_apps_own_query_log_the_records_never_change(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    """Issue 33: the same arguments on a file holding the app's own tables named like
    sqlgate's records: a bare name is the app's, and sqlgate's records never change."""
    check_records_unchanged(world, tool, args)


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CLAIMS_TOOLS)
def test_adversarial_claims_arguments_are_refused_and_change_nothing(
    claims_world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(claims_world, tool, args, expected, phrase)


INJECTED_DESCRIPTIONS = [
    pytest.param("x\nDROP TABLE items", id="newline-then-statement"),
    pytest.param("x\r\nDROP TABLE items; --", id="crlf-then-statement"),
    pytest.param("x\rDROP TABLE items", id="carriage-return"),
    pytest.param("x\u2028DROP TABLE items", id="line-separator"),
    pytest.param("x\x85DROP TABLE items", id="next-line"),
    pytest.param("x\v\fDROP TABLE items", id="vertical-tab-form-feed"),
    pytest.param("x\n) ; DROP TABLE items; --", id="close-paren"),
    pytest.param("ends */ here\n/* opens", id="block-comment-markers"),
    pytest.param("'; DROP TABLE items; --", id="quote"),
    pytest.param("-- already a comment\nSELECT 2", id="second-select"),
    pytest.param("\n\n\n", id="only-newlines"),
    pytest.param("SELECT 1;\nSELECT 2;", id="statements"),
]


@pytest.mark.parametrize("description", INJECTED_DESCRIPTIONS)
def test_an_injected_description_stays_a_comment_in_the_view(
    world: World, description: str
) -> None:
    before = world.state()
    world.service.create_view("answer_view", ANSWER, description=description)
    after = world.state()
    new_schema = sorted(set(after.schema) - set(before.schema), key=repr)
    assert [row[:3] for row in new_schema] == [("main", "view", "answer_view")]
    assert set(before.schema) <= set(after.schema)
    assert world.service.read_query("SELECT * FROM answer_view") == "answer\n42\n# 1 row"
    # the description changed nothing but the schema: the view row is the only difference
    # ... and the create_view's own undo record (issue 19), which names the view alone
    undo = "sqlgate.undo_changesets"
    added = [row for row in after.tables[undo] if row not in before.tables.get(undo, [])]
    assert [(row[3], row[4]) for row in added] == [("CREATE VIEW", '["answer_view"]')]
    version = "main.schema_version"
    unchanged = dataclasses.replace(
        after,
        schema=before.schema,
        tables={**after.tables, undo: before.tables.get(undo, [])},
        pragmas={**after.pragmas, version: before.pragmas[version]},
    )
    assert_unchanged(before, unchanged)


@pytest.mark.parametrize(
    "name",
    [
        "memory_events_by_ts", "memory_events_no_update", "memory_checkpoints_no_delete",
        "claims_by_state", "claims_history_by_claim", "claims_no_delete",
        "claims_retired_is_final", "claims_no_replace", "claims_history_no_update",
        "query_log_no_update",
        # and of its tables and views, in any case (an app may have its own query_log)
        "query_errors", "Query_Patterns", "query_log", "QUERY_LOG", "memory_events",
        "Memory_Checkpoints", "memory_events_fts", "claims", "Claims_History",
    ],
)  # fmt: skip
def test_the_name_of_one_of_sqlgates_indexes_or_triggers_is_free_in_the_users_file(
    world: World, name: str
) -> None:
    """Issue 33: sqlgate's indexes and triggers live in its records (schema sqlgate), so the
    user's file may hold a view of that name; sqlgate's records stay as they were (on the
    one-file layout these names were server objects, and create_view refused them)."""
    before = world.state()
    world.service.create_view(name, ANSWER)
    after = world.state()
    new_schema = sorted(set(after.schema) - set(before.schema), key=repr)
    assert [row[:3] for row in new_schema] == [("main", "view", name)]
    assert any(row[0] == "sqlgate" and row[2].lower() == name.lower() for row in before.schema)
    records = {key: rows for key, rows in before.tables.items() if key.startswith("sqlgate.")}
    undo = "sqlgate.undo_changesets"
    assert {k: v for k, v in after.tables.items() if k.startswith("sqlgate.") and k != undo} == {
        k: v for k, v in records.items() if k != undo
    }
    assert world.service.read_query(f"SELECT * FROM {name}") == "answer\n42\n# 1 row"


def test_a_view_over_a_refused_pragma_is_saved_but_never_read(world: World) -> None:
    # EXPLAIN does not run the pragma function, so the body passes; with trusted_schema off
    # SQLite itself refuses it inside a view, before the read policy would
    world.service.create_view("schema_flag", "SELECT * FROM pragma_writable_schema")
    before = world.state()
    with pytest.raises(SqlError, match="unsafe use of virtual table"):
        world.service.read_query("SELECT * FROM schema_flag")
    assert_unchanged(before, world.state())
