"""Adversarial SQL for read_query, write_query and destructive_query.

Each case is refused with the named error (or is harmless), and afterwards every table, the
schema, the file-level pragmas, the connections' hardening and the watched folder are as they
were; the audit log grew by the one row that records the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sqlgate.errors import InvalidArgument, LimitExceeded, PolicyDenied, SqlError, SqlgateError
from sqlgate.service import Service
from tests.records import connect_both
from tests.security.cases import (
    HARMLESS,
    Expected,
    call,
    case,
    check_records_unchanged,
    check_refused_and_unchanged,
)
from tests.security.cases import destructive as d
from tests.security.cases import read as r
from tests.security.cases import write as w
from tests.security.conftest import APP_TABLES, SAME_NAMES, World, seed_app_tables
from tests.security.fingerprint import assert_records_unchanged

DENIED, SQL, BAD, BIG = PolicyDenied, SqlError, InvalidArgument, LimitExceeded
# an object SQLite looked for in main, where only sqlgate's records hold one of that name
RECORDS = "is one of sqlgate's records"
FORGED = "INSERT INTO query_log(ts, session, tool, ok) VALUES ('t', 's', 'forged', 1)"
NEW_ITEM = "INSERT INTO items(name) VALUES ('intruder')"

COMMENT_AND_WHITESPACE = [
    r("/* harmless */ DELETE FROM items", DENIED, "block-comment-then-delete"),
    r("-- a comment\nDELETE FROM items WHERE id = 1", DENIED, "line-comment-then-delete"),
    r("\n\t  DROP TABLE items", DENIED, "whitespace-then-drop"),
    r("/* a */ -- b\n/* c */ UPDATE items SET qty = 0 WHERE id = 1", DENIED, "comment-pile"),
    r("SELECT 1 /* unterminated", HARMLESS, "select-unterminated-comment"),
    r("SELECT 1 -- ; DROP TABLE items", HARMLESS, "drop-inside-line-comment"),
    r("SELECT 1 /* ; DROP TABLE items */", HARMLESS, "drop-inside-block-comment"),
    r("SELECT '; DROP TABLE items; --'", HARMLESS, "drop-inside-string"),
    r('SELECT 1 AS "; DROP TABLE items"', HARMLESS, "drop-inside-identifier"),
    w("UPDATE items SET qty = 0 -- WHERE id = 1", DENIED, "where-in-line-comment"),
    w("UPDATE items SET qty = 0 /* WHERE id = 1 */", DENIED, "where-in-block-comment"),
    w("UPDATE items SET qty = 0 /* WHERE id = 1", DENIED, "where-in-unterminated-comment"),
    w("update/**/items/**/set/**/qty=0", DENIED, "comments-as-spaces"),
    w("UPDATE items SET name = 'x WHERE id = 1'", DENIED, "where-in-string"),
    w('UPDATE items SET qty = 0, name = "WHERE"', DENIED, "where-as-quoted-name"),
    w("UPDATE items SET qty = 0, name = [WHERE]", DENIED, "where-in-brackets"),
    w("UPDATE items SET qty = 0, name = `WHERE`", DENIED, "where-in-backticks"),
    w(
        "UPDATE items SET name = '\\' , qty = 0 --' WHERE id = 1",
        DENIED,
        "backslash-is-no-escape-in-sqlite",
    ),
    w("UPDATE items SET qty = (SELECT 1 WHERE 1)", DENIED, "where-only-in-subquery"),
    w("UPDATE items SET qty = 1 RETURNING (SELECT 1 WHERE 1)", DENIED, "where-only-in-returning"),
    w(";; UPDATE items SET qty = 0", DENIED, "leading-semicolons"),
    w(
        "UPDATE items SET qty = $v::WHERE",
        DENIED,
        "where-inside-tcl-variable",
        params={"v::WHERE": 0},
    ),
    w(
        "UPDATE items SET qty = @v::WHERE",
        DENIED,
        "where-inside-at-variable",
        params={"v::WHERE": 0},
    ),
    w(
        "UPDATE items SET qty = :v::WHERE",
        DENIED,
        "where-inside-colon-variable",
        params={"v::WHERE": 0},
    ),
    w(
        "UPDATE items SET qty = $v\xa0WHERE\xa01",
        DENIED,
        "where-inside-nbsp-variable",
        params={"v\xa0WHERE\xa01": 0},
    ),
    w(
        "UPDATE items SET qty = $v\u2028WHERE\u20281",
        DENIED,
        "where-inside-line-separator",
        params={"v\u2028WHERE\u20281": 0},
    ),
    w("UPDATE items SET qty = 0\u3000WHERE\u3000id = 1", DENIED, "ideographic-space"),
    w("UPDATE items SET qty = 0 'unterminated", BAD, "unterminated-string"),
    w('INSERT INTO items(name) VALUES ("unterminated)', BAD, "unterminated-identifier"),
    w("INSRT INTO items(name) VALUES ('x')", BAD, "misspelt-verb"),
    r("SELECT 1\x00; DELETE FROM items", BAD, "nul-then-delete"),
    w("INSERT INTO items(name) VALUES ('x')\x00; DROP TABLE items", BAD, "nul-then-drop"),
]

MULTIPLE_STATEMENTS = [
    r("SELECT 1; DELETE FROM items", DENIED, "select-then-delete"),
    r("SELECT 1;DROP TABLE items", DENIED, "select-then-drop-no-space"),
    r("SELECT 1;/**/DROP TABLE items", DENIED, "select-comment-drop"),
    r("SELECT 1 -- c\n; DROP TABLE items", DENIED, "semicolon-after-comment"),
    r("SELECT 1;\n\n-- later\nDROP TABLE items;", DENIED, "drop-on-a-later-line"),
    r("SELECT 1; ; ; DELETE FROM items", DENIED, "empty-statements-then-delete"),
    r("SELECT 1; ATTACH 'evil.db' AS evil", DENIED, "select-then-attach"),
    r("SELECT 1; PRAGMA query_only = 0", DENIED, "select-then-pragma"),
    w(f"{NEW_ITEM}; DELETE FROM items", DENIED, "insert-then-delete"),
    w(f"{NEW_ITEM}; {FORGED}", DENIED, "insert-then-forge-log"),
    w(f"{NEW_ITEM};\n-- more\nDROP TABLE items", DENIED, "insert-comment-drop"),
    w(f"{NEW_ITEM}; COMMIT; DROP TABLE items", DENIED, "insert-commit-drop"),
    w("CREATE TABLE t2(a); DROP TABLE items", DENIED, "create-then-drop"),
    d("DELETE FROM items WHERE id = 1; DROP TABLE query_log", DENIED, "delete-then-drop-log"),
    d("DROP TABLE notes; DELETE FROM query_log", DENIED, "drop-then-clear-log"),
]

CTE_WRAPPED_DML = [
    r("WITH x AS (SELECT 1) DELETE FROM items", DENIED, "cte-delete"),
    r("WITH x AS (SELECT 1) INSERT INTO items(name) SELECT 'x' FROM x", DENIED, "cte-insert"),
    r("WITH x AS (SELECT 1) UPDATE items SET qty = 0 WHERE id = 1", DENIED, "cte-update"),
    r("WITH x AS (SELECT 1) REPLACE INTO items(id, name) VALUES (1, 'x')", DENIED, "cte-replace"),
    r("WITH RECURSIVE x(n) AS (SELECT 1) DELETE FROM items WHERE id IN x", DENIED, "cte-rec-del"),
    r("WITH x AS (DELETE FROM items RETURNING id) SELECT * FROM x", SQL, "dml-inside-cte"),
    w("WITH x AS (SELECT 1) UPDATE items SET qty = 0", DENIED, "cte-update-no-where"),
    w("WITH replace AS (SELECT 1) UPDATE items SET qty = 0", DENIED, "cte-named-replace"),
    w("WITH insert_ AS (SELECT 1), b AS (SELECT 2) UPDATE items SET qty = 0", DENIED, "two-ctes"),
    w(
        "WITH x(a) AS MATERIALIZED (SELECT 1 WHERE 1) UPDATE items SET qty = 0",
        DENIED,
        "materialized-cte-with-where",
    ),
    w("WITH x AS (SELECT 1) DELETE FROM items WHERE id = 1", DENIED, "cte-delete"),
    w("WITH x AS (SELECT id FROM items) DELETE FROM items WHERE id IN x", DENIED, "cte-delete-in"),
    w(f"WITH x AS (SELECT 1) {FORGED}", DENIED, "cte-forge-log"),
    d("WITH x AS (SELECT 1) DELETE FROM query_log WHERE id IN x", DENIED, "cte-clear-log"),
]

TIER_CONFUSION = [
    r(NEW_ITEM, DENIED, "insert"),
    r("REPLACE INTO items(id, name) VALUES (1, 'x')", DENIED, "replace"),
    r("UPDATE items SET qty = 0 WHERE id = 1", DENIED, "update"),
    r("CREATE TABLE t2(a)", DENIED, "create-table"),
    r("CREATE INDEX i2 ON items(qty)", DENIED, "create-index"),
    r("ANALYZE", DENIED, "analyze"),
    r("REINDEX", DENIED, "reindex"),
    r("DROP VIEW cheap_items", DENIED, "drop-view"),
    r("EXPLAIN DELETE FROM items", DENIED, "explain-delete"),
    r("EXPLAIN QUERY PLAN DELETE FROM items", DENIED, "explain-query-plan-delete"),
    r("EXPLAIN DROP TABLE items", DENIED, "explain-drop"),
    r(f"EXPLAIN {FORGED}", DENIED, "explain-forge-log"),
    w("SELECT 1", DENIED, "select"),
    w("DELETE FROM items WHERE id = 1", DENIED, "delete"),
    w("DROP TABLE items", DENIED, "drop-table"),
    w("DROP INDEX items_name", DENIED, "drop-index"),
    w("DROP VIEW cheap_items", DENIED, "drop-view"),
    w("ALTER TABLE items ADD COLUMN extra TEXT", DENIED, "alter-add-column"),
    w("ALTER TABLE items RENAME TO goods", DENIED, "alter-rename"),
    w("REINDEX", DENIED, "reindex-everything", phrase="name a table or index of yours"),
    d("REINDEX", DENIED, "reindex-everything", phrase="name a table or index of yours"),
    w("CREATE VIEW v2 AS SELECT 1", DENIED, "create-view"),
    w("CREATE TRIGGER tg AFTER INSERT ON items BEGIN SELECT 1; END", DENIED, "create-trigger"),
    w("EXPLAIN SELECT 1", DENIED, "explain"),
    d("CREATE VIEW v2 AS SELECT 1", DENIED, "create-view"),
    d("SELECT * FROM items", DENIED, "select"),
    d("PRAGMA table_info(items)", DENIED, "pragma"),
]

TRANSACTIONS = [
    r("BEGIN", DENIED, "begin"),
    r("BEGIN IMMEDIATE", DENIED, "begin-immediate"),
    r("/* x */ BEGIN EXCLUSIVE TRANSACTION", DENIED, "begin-exclusive"),
    r("COMMIT", DENIED, "commit"),
    r("END", DENIED, "end"),
    r("ROLLBACK", DENIED, "rollback"),
    w("SAVEPOINT sp", DENIED, "savepoint"),
    w("RELEASE sp", DENIED, "release"),
    w("ROLLBACK TO sp", DENIED, "rollback-to"),
    w("COMMIT", DENIED, "commit"),
    d("BEGIN", DENIED, "begin"),
    d("END TRANSACTION", DENIED, "end-transaction"),
    r("EXPLAIN BEGIN", DENIED, "explain-begin"),
    r("EXPLAIN SAVEPOINT sp", DENIED, "explain-savepoint"),
]

FILE_WRITES = [
    r("ATTACH 'evil.db' AS evil", DENIED, "attach-relative"),
    r("ATTACH '@OUTSIDE@/evil.db' AS evil", DENIED, "attach-absolute"),
    w("ATTACH DATABASE '@OUTSIDE@/evil.db' AS evil", DENIED, "attach-database"),
    d("ATTACH 'file:@OUTSIDE@/evil.db?mode=rwc' AS evil", DENIED, "attach-uri"),
    d("ATTACH ':memory:' AS scratch", DENIED, "attach-memory"),
    d("ATTACH (SELECT '@OUTSIDE@/evil.db') AS evil", DENIED, "attach-expression"),
    w("/* x */ ATTACH '@OUTSIDE@/evil.db' AS evil /* unterminated", DENIED, "attach-in-comments"),
    r("EXPLAIN ATTACH '@OUTSIDE@/evil.db' AS evil", DENIED, "explain-attach"),
    r("DETACH temp", DENIED, "detach-temp"),
    d("DETACH DATABASE main", DENIED, "detach-main"),
    r("VACUUM", DENIED, "vacuum"),
    d("VACUUM", DENIED, "vacuum"),
    r("VACUUM INTO '@OUTSIDE@/copy.db'", DENIED, "vacuum-into"),
    w("VACUUM INTO 'copy.db'", DENIED, "vacuum-into-relative"),
    d("VACUUM main INTO '@OUTSIDE@/copy.db'", DENIED, "vacuum-main-into"),
    d("VACUUM INTO 'file:@OUTSIDE@/copy.db?mode=rwc'", DENIED, "vacuum-into-uri"),
    w("-- x\nVACUUM INTO '@OUTSIDE@/copy.db' /* unterminated", DENIED, "vacuum-in-comments"),
    r("EXPLAIN VACUUM INTO '@OUTSIDE@/copy.db'", HARMLESS, "explain-vacuum-into-runs-nothing"),
    r("SELECT * FROM pragma_database_list", HARMLESS, "database-list"),
]

PRAGMA_WRITES = [
    r("PRAGMA user_version = 7", DENIED, "user-version"),
    r("PRAGMA main.user_version = 7", DENIED, "main-user-version"),
    r("PRAGMA user_version(7)", DENIED, "user-version-call"),
    r("PRAGMA application_id = 1", DENIED, "application-id"),
    r("PRAGMA schema_version = 1", DENIED, "schema-version"),
    r("PRAGMA query_only = 0", DENIED, "query-only-off"),
    r("PRAGMA query_only = OFF", DENIED, "query-only-off-word"),
    r("PRAGMA foreign_keys = OFF", DENIED, "foreign-keys-off"),
    r("PRAGMA writable_schema = ON", DENIED, "writable-schema"),
    r("PRAGMA trusted_schema = ON", DENIED, "trusted-schema"),
    r("PRAGMA journal_mode = DELETE", DENIED, "journal-mode"),
    r("PRAGMA journal_mode = OFF", DENIED, "journal-mode-off"),
    r("PRAGMA synchronous = OFF", DENIED, "synchronous-off"),
    r("PRAGMA locking_mode = EXCLUSIVE", DENIED, "locking-mode"),
    r("PRAGMA recursive_triggers = ON", DENIED, "recursive-triggers"),
    r("PRAGMA defer_foreign_keys = ON", DENIED, "defer-foreign-keys"),
    r("PRAGMA ignore_check_constraints = ON", DENIED, "ignore-check-constraints"),
    r("PRAGMA legacy_alter_table = ON", DENIED, "legacy-alter-table"),
    r("PRAGMA cell_size_check = OFF", DENIED, "cell-size-check"),
    r("PRAGMA secure_delete = OFF", DENIED, "secure-delete"),
    r("PRAGMA max_page_count = 1", DENIED, "max-page-count"),
    r("PRAGMA mmap_size = 268435456", DENIED, "mmap-size"),
    r("PRAGMA cache_size = -1000000", DENIED, "cache-size"),
    r("PRAGMA temp_store = MEMORY", DENIED, "temp-store"),
    r("PRAGMA busy_timeout = 0", DENIED, "busy-timeout"),
    r("PRAGMA hard_heap_limit = 1", DENIED, "hard-heap-limit"),
    r("PRAGMA soft_heap_limit = 1", DENIED, "soft-heap-limit"),
    r("PRAGMA threads = 8", DENIED, "threads"),
    r("PRAGMA case_sensitive_like = ON", DENIED, "case-sensitive-like"),
    r("PRAGMA reverse_unordered_selects = ON", DENIED, "reverse-unordered-selects"),
    r("PRAGMA automatic_index = OFF", DENIED, "automatic-index"),
    r("PRAGMA auto_vacuum = FULL", DENIED, "auto-vacuum"),
    r("PRAGMA page_size = 512", DENIED, "page-size"),
    r("PRAGMA encoding = 'UTF-16'", DENIED, "encoding"),
    r("PRAGMA wal_checkpoint(TRUNCATE)", DENIED, "wal-checkpoint"),
    r("PRAGMA optimize", DENIED, "optimize"),
    r("PRAGMA incremental_vacuum", DENIED, "incremental-vacuum"),
    r("PRAGMA shrink_memory", DENIED, "shrink-memory"),
    r("PRAGMA analysis_limit = 1", DENIED, "analysis-limit"),
    r("PRAGMA wal_autocheckpoint = 0", DENIED, "wal-autocheckpoint"),
    r("EXPLAIN PRAGMA user_version = 7", DENIED, "explain-pragma-write"),
    r("SELECT * FROM pragma_user_version(7)", SQL, "pragma-function-with-value"),
    r("SELECT * FROM pragma_writable_schema", DENIED, "pragma-function-writable-schema"),
    w("PRAGMA foreign_keys = OFF", DENIED, "foreign-keys-off"),
    w("PRAGMA user_version = 7", DENIED, "user-version"),
    d("PRAGMA writable_schema = ON", DENIED, "writable-schema"),
    d("PRAGMA journal_mode = DELETE", DENIED, "journal-mode"),
    r("PRAGMA user_version", HARMLESS, "user-version-read"),
    r("PRAGMA foreign_key_check", HARMLESS, "foreign-key-check"),
]

EXTENSIONS_AND_FUNCTIONS = [
    r("SELECT load_extension('@OUTSIDE@/evil.so')", DENIED, "load-extension"),
    r("SELECT load_extension('evil', 'sqlite3_evil_init')", DENIED, "load-extension-entry"),
    r("SELECT LOAD_EXTENSION('evil')", DENIED, "load-extension-upper"),
    r("SELECT \"load_extension\"('evil')", DENIED, "load-extension-quoted"),
    r("SELECT 1 WHERE load_extension('evil') IS NULL", DENIED, "load-extension-in-where"),
    r("SELECT fts3_tokenizer('simple')", DENIED, "fts3-tokenizer-read"),
    r("SELECT fts3_tokenizer('evil', x'0000000000000000')", DENIED, "fts3-tokenizer-write"),
    r("SELECT readfile('/etc/hostname')", SQL, "readfile"),
    r("SELECT writefile('@OUTSIDE@/out.txt', 'x')", SQL, "writefile"),
    r("SELECT edit('text', 'vi')", SQL, "edit"),
    w("INSERT INTO items(name) VALUES (load_extension('evil'))", DENIED, "load-extension"),
    w("UPDATE items SET name = load_extension('evil') WHERE id = 1", DENIED, "load-ext-update"),
    w("CREATE INDEX evil ON items(load_extension(name))", DENIED, "load-extension-index"),
    d("DELETE FROM items WHERE load_extension('evil') IS NULL", DENIED, "load-extension"),
    r("SELECT sqlite_compileoption_used('ENABLE_FTS5')", HARMLESS, "compileoption"),
]

TABLE_INSTEAD = "; create a regular table with write_query"
VIEW_INSTEAD = "; save the SELECT as a view with create_view"
INDEX_INSTEAD = "; create a regular index with write_query"
TRIGGER_INSTEAD = "; create a regular trigger with destructive_query"
TEMP_OBJECTS = [
    w("CREATE TEMP TABLE scratch(a)", DENIED, "temp-table", phrase=TABLE_INSTEAD),
    w("CREATE TEMPORARY TABLE scratch(a)", DENIED, "temporary-table", phrase=TABLE_INSTEAD),
    w("CREATE TABLE temp.scratch(a)", DENIED, "temp-dot-table", phrase=TABLE_INSTEAD),
    w('CREATE TABLE "temp".scratch(a)', DENIED, "quoted-temp-dot-table"),
    w("CREATE TABLE TEMP.scratch AS SELECT * FROM query_log", DENIED, "temp-copy-of-log"),
    w("CREATE INDEX temp.i2 ON items(qty)", DENIED, "temp-index", phrase=INDEX_INSTEAD),
    w("CREATE VIRTUAL TABLE temp.f2 USING fts5(a)", DENIED, "temp-virtual-table"),
    w(
        "INSERT INTO temp.sqlite_master VALUES ('table', 'x', 'x', 0, 'CREATE TABLE x(a)')",
        SQL,
        "temp-catalog-insert",
    ),
    d("CREATE TEMP VIEW tv AS SELECT 1", DENIED, "temp-view", phrase=VIEW_INSTEAD),
    r("CREATE TEMP VIEW tv AS SELECT 1", DENIED, "temp-view", phrase=VIEW_INSTEAD),
    w("CREATE TEMP VIEW tv AS SELECT 1", DENIED, "temp-view", phrase=VIEW_INSTEAD),
    d("CREATE VIEW temp.tv AS SELECT 1", DENIED, "temp-dot-view", phrase=VIEW_INSTEAD),
    d(
        "CREATE TEMP TRIGGER tt AFTER INSERT ON items BEGIN SELECT 1; END",
        DENIED,
        "temp-trigger",
        phrase=TRIGGER_INSTEAD,
    ),
    d(
        "CREATE TRIGGER temp.tt AFTER INSERT ON main.items BEGIN SELECT 1; END",
        DENIED,
        "temp-dot-trigger",
    ),
    d(
        "CREATE TEMP TRIGGER tt BEFORE INSERT ON query_log BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "temp-trigger-silencing-log",
    ),
    d("DROP TABLE temp.scratch", DENIED, "drop-temp-table"),
    r("SELECT * FROM temp.sqlite_master", HARMLESS, "read-temp-catalog-is-empty"),
]

TRIGGER_AND_VIEW_BODIES = [
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN DELETE FROM query_log; END",
        DENIED,
        "body-clears-log",
    ),
    d(f"CREATE TRIGGER tg AFTER INSERT ON items BEGIN {FORGED}; END", DENIED, "body-forges-log"),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN "
        "UPDATE query_log SET ok = 1 WHERE id > 0; END",
        DENIED,
        "body-rewrites-log",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN "
        "REPLACE INTO query_log(id, ts, session, tool, ok) VALUES (1, 't', 's', 'x', 1); END",
        DENIED,
        "body-replaces-log",
    ),
    d(
        'CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT OR REPLACE INTO "query_log"(id, ts, '
        "session, tool, ok) VALUES (1, 't', 's', 'x', 1); END",
        DENIED,
        "body-quoted-log",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN DELETE FROM [Query_Log] WHERE 1; END",
        DENIED,
        "body-bracketed-log",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN "
        "UPDATE OR IGNORE `QUERY_LOG` SET ok = 0; END",
        DENIED,
        "body-backticked-log",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT INTO memory_events(content) "
        "VALUES (new.name); END",
        DENIED,
        "body-writes-memory-events",
    ),
    d(
        "CREATE TRIGGER tg AFTER UPDATE ON items BEGIN INSERT INTO memory_checkpoints "
        "SELECT * FROM items; END",
        DENIED,
        "body-writes-checkpoints",
    ),
    d(
        "CREATE TRIGGER tg AFTER DELETE ON children BEGIN UPDATE claims SET x = 1; END",
        DENIED,
        "body-writes-claims",
    ),
    d(
        "CREATE TRIGGER tg BEFORE DELETE ON children BEGIN INSERT INTO claims_history VALUES (1); "
        "END",
        DENIED,
        "body-writes-claims-history",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT INTO memory_events_fts("
        "memory_events_fts) VALUES ('delete-all'); END",
        DENIED,
        "body-fts-command-on-server",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN DELETE FROM memory_events_fts_data; END",
        DENIED,
        "body-clears-server-shadow",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items WHEN new.qty > 0 BEGIN SELECT 1; "
        "DELETE FROM query_log WHERE id = 1; END",
        DENIED,
        "second-body-statement",
    ),
    d(
        "CREATE TRIGGER tg INSTEAD OF INSERT ON cheap_items BEGIN DELETE FROM query_log; END",
        DENIED,
        "instead-of-on-user-view",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON query_log BEGIN SELECT 1; END",
        DENIED,
        "on-log",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg BEFORE INSERT ON query_log BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "silence-log",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg BEFORE INSERT ON main.query_log BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "silence-main-log",
        phrase=RECORDS,
    ),
    d(
        'CREATE TRIGGER tg AFTER INSERT ON "QUERY_LOG" BEGIN SELECT 1; END',
        DENIED,
        "on-log-upper",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg INSTEAD OF INSERT ON query_errors BEGIN SELECT 1; END",
        DENIED,
        "on-server-view",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg INSTEAD OF DELETE ON query_patterns BEGIN SELECT 1; END",
        DENIED,
        "on-server-view-2",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON sqlite_sequence BEGIN SELECT 1; END",
        SQL,
        "on-sqlite-sequence",
    ),
    d("CREATE TRIGGER tg AFTER INSERT ON docs_data BEGIN SELECT 1; END", SQL, "on-shadow-table"),
    d(
        "CREATE TRIGGER query_log_no_update AFTER INSERT ON items BEGIN SELECT 1; END",
        DENIED,
        "takes-server-trigger-name",
    ),
    d(
        "CREATE TRIGGER IF NOT EXISTS query_log_no_delete AFTER INSERT ON items BEGIN SELECT 1; "
        "END",
        DENIED,
        "if-not-exists-server-trigger-name",
    ),
    d(
        "CREATE TRIGGER memory_events AFTER INSERT ON items BEGIN SELECT 1; END",
        DENIED,
        "takes-reserved-name",
    ),
]

SERVER_TABLES = [
    w(FORGED, DENIED, "forge-log"),
    w(
        FORGED.replace("INTO query_log", "INTO main.query_log"),
        DENIED,
        "forge-main-log",
        phrase=RECORDS,
    ),
    w(FORGED.replace("INTO query_log", 'INTO "QUERY_LOG"'), DENIED, "forge-quoted-log"),
    w("INSERT INTO query_log SELECT * FROM query_log", DENIED, "duplicate-log"),
    w(f"{FORGED} RETURNING *", DENIED, "forge-log-returning"),
    w("UPDATE query_log SET ok = 1 WHERE ok = 0", DENIED, "rewrite-failures"),
    w("UPDATE query_log SET error = NULL WHERE id = 1", DENIED, "erase-error"),
    w(
        "REPLACE INTO query_log(id, ts, session, tool, ok) VALUES (1, 't', 's', 'x', 1)",
        DENIED,
        "replace-log-row",
    ),
    w(
        "INSERT INTO query_log(id, ts, session, tool, ok) VALUES (1, 't', 's', 'x', 1) "
        "ON CONFLICT(id) DO UPDATE SET query = 'rewritten'",
        DENIED,
        "upsert-log-row",
    ),
    d("DELETE FROM query_log", DENIED, "clear-log"),
    d("DELETE FROM query_log WHERE id = 1", DENIED, "delete-log-row"),
    d("UPDATE query_log SET ok = 0", DENIED, "rewrite-log"),
    d("DROP TABLE query_log", DENIED, "drop-log"),
    d("DROP TABLE IF EXISTS query_log", DENIED, "drop-log-if-exists"),
    d("DROP TABLE main.query_log", DENIED, "drop-main-log", phrase=RECORDS),
    d('DROP TABLE "Query_Log"', DENIED, "drop-log-mixed-case"),
    d("ALTER TABLE query_log RENAME TO old_log", DENIED, "rename-log"),
    d("ALTER TABLE query_log ADD COLUMN forged TEXT", DENIED, "add-column-to-log"),
    d("ALTER TABLE query_log DROP COLUMN detail", DENIED, "drop-column-of-log"),
    d("ALTER TABLE query_log RENAME COLUMN query TO q", DENIED, "rename-column-of-log"),
    w("CREATE INDEX log_ts ON query_log(ts)", DENIED, "index-log", phrase=RECORDS),
    w("CREATE UNIQUE INDEX log_ts ON query_log(ts)", DENIED, "unique-index-log", phrase=RECORDS),
    w(
        "CREATE INDEX IF NOT EXISTS main.log_ts ON query_log(session)",
        DENIED,
        "index-main-log",
        phrase=RECORDS,
    ),
    w(
        "CREATE INDEX log_failures ON query_log(ts) WHERE ok = 0",
        DENIED,
        "partial-index-log",
        phrase=RECORDS,
    ),
    d("REINDEX query_log", DENIED, "reindex-log"),
    w("REINDEX query_log", DENIED, "reindex-log"),
    # main has no query_log: SQLite names no object, the hint says what REINDEX may name
    w("REINDEX main.query_log", SQL, "reindex-main-log", phrase="records are read-only"),
    d("DROP TRIGGER query_log_no_update", DENIED, "drop-append-only-trigger"),
    d("DROP TRIGGER IF EXISTS query_log_no_delete", DENIED, "drop-append-only-trigger-2"),
    d(
        "DROP TRIGGER main.query_log_no_update",
        DENIED,
        "drop-main-append-only-trigger",
        phrase=RECORDS,
    ),
    d("DROP TRIGGER query_log_no_replace", DENIED, "drop-replace-trigger"),
]

SERVER_VIEWS = [
    d("DROP VIEW query_errors", DENIED, "drop-view"),
    d("DROP VIEW IF EXISTS query_patterns", DENIED, "drop-view-if-exists"),
    d("DROP VIEW main.query_errors", DENIED, "drop-main-view", phrase=RECORDS),
    d('DROP VIEW "QUERY_ERRORS"', DENIED, "drop-view-upper"),
    d("DROP TABLE query_errors", DENIED, "drop-view-as-table"),
    d("ALTER TABLE query_patterns RENAME TO p", SQL, "rename-view"),
    w("CREATE VIEW query_errors AS SELECT 1", DENIED, "create-over-view"),
    w("CREATE TABLE query_patterns(x)", DENIED, "table-over-view"),
    w("INSERT INTO query_errors(id) VALUES (1)", DENIED, "insert-into-view"),
    d("DELETE FROM query_patterns", SQL, "delete-from-view"),
]

# names of server objects stay theirs
RESERVED_NAMES = [
    w("CREATE TABLE memory_events(id)", DENIED, "memory-events"),
    w("CREATE TABLE IF NOT EXISTS memory_events(id)", DENIED, "memory-events-if-not-exists"),
    w('CREATE TABLE "Memory_Events"(id)', DENIED, "memory-events-mixed-case"),
    w("CREATE TABLE main.memory_checkpoints(id)", DENIED, "memory-checkpoints"),
    w("CREATE TABLE claims AS SELECT 1 AS x", DENIED, "claims-as-select"),
    w("CREATE TABLE claims_history(x)", DENIED, "claims-history"),
    w("CREATE VIRTUAL TABLE memory_events_fts USING fts5(content)", DENIED, "memory-fts"),
    w("CREATE TABLE memory_events_fts_data(id, block)", DENIED, "memory-fts-shadow"),
    w(
        "CREATE TABLE memory_events_fts_config(k PRIMARY KEY, v) WITHOUT ROWID",
        DENIED,
        "memory-fts-config",
    ),
    w("CREATE VIRTUAL TABLE claims USING rtree(id, a, b)", DENIED, "claims-rtree"),
    w("CREATE INDEX memory_events ON items(name)", DENIED, "index-takes-name"),
    w("CREATE TABLE query_log_no_update(x)", DENIED, "table-takes-trigger-name"),
    w("CREATE TABLE memory_events_fts_content(x)", DENIED, "memory-fts-absent-shadow"),
    w("CREATE INDEX memory_events_by_ts ON items(qty)", DENIED, "index-takes-memory-index-name"),
    w("CREATE INDEX IF NOT EXISTS memory_events_by_kind ON items(qty)", DENIED, "if-not-exists"),
    w("CREATE VIRTUAL TABLE memory_checkpoints USING fts5(x)", DENIED, "fts-over-checkpoints"),
    w("CREATE TABLE claims(id)", DENIED, "claims"),
    w("CREATE TABLE IF NOT EXISTS Claims(id)", DENIED, "claims-if-not-exists"),
    w("CREATE INDEX claims_by_state ON items(qty)", DENIED, "index-takes-claims-index-name"),
    w("CREATE TABLE claims_no_delete(x)", DENIED, "table-takes-claims-trigger-name"),
    d("ALTER TABLE notes RENAME TO claims_history", DENIED, "rename-to-claims-history"),
    d("ALTER TABLE items RENAME TO memory_events", DENIED, "rename-user-table-to-reserved"),
    d('ALTER TABLE items RENAME TO "CLAIMS"', DENIED, "rename-to-reserved-quoted"),
    d("ALTER TABLE main.notes RENAME TO memory_events_fts_idx", DENIED, "rename-to-shadow-name"),
    d("ALTER TABLE notes RENAME TO query_errors", DENIED, "rename-to-server-view"),
    d("ALTER TABLE notes RENAME TO memory_checkpoints", DENIED, "rename-to-checkpoints"),
    w("CREATE TABLE undo_chunks(changeset_id, seq, data)", DENIED, "undo-chunks"),
    w("CREATE TABLE IF NOT EXISTS Undo_Changesets(id)", DENIED, "undo-changesets"),
    d("ALTER TABLE notes RENAME TO undo_changesets", DENIED, "rename-to-undo-changesets"),
    d("DELETE FROM undo_chunks", DENIED, "clear-undo-chunks"),
    d("UPDATE undo_changesets SET undone_at = NULL", DENIED, "unmark-undone"),
    w("INSERT INTO undo_chunks VALUES (1, 0, x'00')", DENIED, "forge-undo-chunk"),
    d("DROP TABLE undo_changesets", DENIED, "drop-undo-changesets"),
]

# no agent object may make the server's own writes depend on it: a foreign key to a server
# table blocks (or cascades from) the server's deletes, e.g. the pruning of undo_changesets
PINS = [
    w("CREATE TABLE pin(c INTEGER REFERENCES undo_changesets(id))", DENIED, "fk-to-undo",
      phrase="pin.c REFERENCES undo_changesets"),
    w("CREATE TABLE pin(c, FOREIGN KEY (c) REFERENCES query_log(id))", DENIED, "fk-constraint"),
    w('CREATE TABLE pin(c REFERENCES "QUERY_LOG")', DENIED, "fk-quoted-upper"),
    w("CREATE TABLE pin(c REFERENCES [Memory_Events] ON DELETE CASCADE)", DENIED, "fk-cascade"),
    w("CREATE TABLE pin(c REFERENCES claims(id) DEFERRABLE INITIALLY DEFERRED)", DENIED,
      "fk-deferred"),
    w("CREATE TABLE pin(c REFERENCES query_errors)", DENIED, "fk-to-server-view"),
    w("CREATE TABLE pin(c REFERENCES memory_events_fts_data)", DENIED, "fk-to-server-shadow"),
    w("CREATE TABLE IF NOT EXISTS pin(a, b AS (a) STORED REFERENCES undo_chunks)", DENIED,
      "fk-on-generated-column"),
    w("CREATE TABLE pin(a PRIMARY KEY, b REFERENCES undo_chunks(seq)) WITHOUT ROWID", DENIED,
      "fk-without-rowid"),
    d("ALTER TABLE notes ADD COLUMN run INTEGER REFERENCES undo_changesets(id)", DENIED,
      "add-column-fk", phrase="REFERENCES undo_changesets"),
    d("ALTER TABLE notes ADD COLUMN ev REFERENCES memory_checkpoints ON UPDATE SET NULL", DENIED,
      "add-column-fk-action"),
    d("CREATE TRIGGER tg INSTEAD OF UPDATE ON cheap_items BEGIN "
      "UPDATE undo_changesets SET undone_at = 'x'; END", DENIED, "view-writes-through-to-undo"),
    d("CREATE TRIGGER tg AFTER INSERT ON notes BEGIN "
      "INSERT INTO undo_chunks VALUES (new.id, 0, x'00'); END", DENIED, "trigger-forges-undo"),
    # SQLite itself refuses subqueries where a table's rows could come to depend on another
    w("CREATE TABLE pin(c CHECK (c IN (SELECT id FROM query_log)))", SQL, "check-subquery"),
    w("CREATE TABLE pin(a, b AS ((SELECT count(*) FROM query_log)))", SQL, "generated-subquery"),
    w("CREATE TABLE pin(a DEFAULT (SELECT max(id) FROM query_log))", SQL, "default-subquery"),
    w("CREATE INDEX ix ON items(qty) WHERE qty IN (SELECT ok FROM query_log)", SQL,
      "partial-index-subquery"),
    w("CREATE INDEX ix ON items((SELECT max(id) FROM undo_changesets))", SQL,
      "index-expression-subquery"),
]  # fmt: skip

EVENT = "(id, ts, session, kind, content, tags, prev_hash, hash)"
FORGED_EVENT = f"INSERT INTO memory_events{EVENT} VALUES (4, 't', 's', 'note', 'x', '[]', 'p', 'h')"
FORGED_CHECKPOINT = (
    "INSERT INTO memory_checkpoints(ts, session, summary, last_event_id, head_hash) "
    "VALUES ('t', 's', 'forged', 3, 'h')"
)
FTS = "memory_events_fts"

# the memory's tables, index, triggers and full-text index, through every SQL tool
MEMORY_SERVER_OBJECTS = [
    w(FORGED_EVENT, DENIED, "forge-event"),
    w(
        FORGED_EVENT.replace("INTO memory_events", "INTO main.memory_events"),
        DENIED,
        "main",
        phrase=RECORDS,
    ),
    w(FORGED_EVENT.replace("INTO memory_events", 'INTO "MEMORY_EVENTS"'), DENIED, "quoted-upper"),
    w(f"{FORGED_EVENT} RETURNING *", DENIED, "forge-event-returning"),
    w(
        f"INSERT INTO memory_events{EVENT} SELECT id + 10, ts, session, kind, content, tags, "
        "prev_hash, hash FROM memory_events",
        DENIED,
        "duplicate-events",
    ),
    w(
        f"INSERT INTO memory_events{EVENT} VALUES (1, 't', 's', 'note', 'x', '[]', 'p', 'h') "
        "ON CONFLICT(id) DO UPDATE SET content = 'rewritten'",
        DENIED,
        "upsert-event",
    ),
    w(
        f"REPLACE INTO memory_events{EVENT} VALUES (1, 't', 's', 'note', 'x', '[]', 'p', 'h')",
        DENIED,
        "replace-event",
    ),
    w("UPDATE memory_events SET content = 'rewritten' WHERE id = 1", DENIED, "rewrite-event"),
    w("UPDATE memory_events SET hash = prev_hash WHERE id > 0", DENIED, "rehash-events"),
    w(FORGED_CHECKPOINT, DENIED, "forge-checkpoint"),
    w("UPDATE memory_checkpoints SET summary = 'x' WHERE id = 1", DENIED, "rewrite-checkpoint"),
    w(
        "INSERT OR REPLACE INTO memory_checkpoints(id, ts, session, summary, last_event_id, "
        "head_hash) VALUES (1, 't', 's', 'x', 0, 'h')",
        DENIED,
        "replace-checkpoint",
    ),
    d("DELETE FROM memory_events", DENIED, "clear-events"),
    d("DELETE FROM memory_events WHERE id = 3", DENIED, "delete-head-event"),
    d("UPDATE memory_events SET content = 'x'", DENIED, "rewrite-all-events"),
    d("DELETE FROM memory_checkpoints", DENIED, "clear-checkpoints"),
    d("UPDATE memory_checkpoints SET head_hash = 'x'", DENIED, "rewrite-checkpoints"),
    d("WITH x AS (SELECT 1) DELETE FROM memory_events WHERE id IN x", DENIED, "cte-delete"),
    d("DROP TABLE memory_events", DENIED, "drop-events"),
    d("DROP TABLE IF EXISTS memory_checkpoints", DENIED, "drop-checkpoints"),
    d('DROP TABLE main."Memory_Events_Fts"', DENIED, "drop-fts", phrase=RECORDS),
    d("DROP INDEX memory_events_by_session", DENIED, "drop-index"),
    # IF EXISTS over a name main lacks: nothing to drop, nothing changed in either file
    d("DROP INDEX IF EXISTS main.memory_events_by_ts", HARMLESS, "drop-index-if-exists"),
    d("DROP TRIGGER memory_events_no_update", DENIED, "drop-no-update"),
    d("DROP TRIGGER memory_events_no_delete", DENIED, "drop-no-delete"),
    d("DROP TRIGGER IF EXISTS memory_events_no_replace", DENIED, "drop-no-replace"),
    d(
        "DROP TRIGGER main.memory_checkpoints_no_update",
        DENIED,
        "drop-checkpoint-trigger",
        phrase=RECORDS,
    ),
    d("DROP TRIGGER memory_checkpoints_no_delete", DENIED, "drop-checkpoint-no-delete"),
    d("DROP TRIGGER memory_checkpoints_no_replace", DENIED, "drop-checkpoint-no-replace"),
    d("ALTER TABLE memory_events RENAME TO old_events", DENIED, "rename-events"),
    d("ALTER TABLE memory_events ADD COLUMN forged TEXT", DENIED, "add-column"),
    d("ALTER TABLE memory_events DROP COLUMN tags", DENIED, "drop-column"),
    d("ALTER TABLE memory_events RENAME COLUMN content TO body", DENIED, "rename-column"),
    d("ALTER TABLE memory_checkpoints RENAME TO cp", DENIED, "rename-checkpoints"),
    d(f"ALTER TABLE {FTS} RENAME TO old_fts", DENIED, "rename-fts"),
    w("CREATE INDEX ev_content ON memory_events(content)", DENIED, "index-events", phrase=RECORDS),
    w(
        "CREATE UNIQUE INDEX ev_hash ON memory_events(hash)",
        DENIED,
        "unique-index-events",
        phrase=RECORDS,
    ),
    w(
        "CREATE INDEX cp_ts ON memory_checkpoints(ts) WHERE id > 0",
        DENIED,
        "index-checkpoints",
        phrase=RECORDS,
    ),
    d("REINDEX memory_events", DENIED, "reindex-events"),
    d("REINDEX memory_events_by_kind", DENIED, "reindex-memory-index"),
    w("REINDEX memory_events_by_kind", DENIED, "reindex-memory-index"),
    w("REINDEX MEMORY_EVENTS", DENIED, "reindex-events-upper"),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON memory_events BEGIN SELECT 1; END",
        DENIED,
        "on-events",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "silence-events",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON main.memory_checkpoints BEGIN SELECT 1; END",
        DENIED,
        "on-checkpoints",
        phrase=RECORDS,
    ),
    d(
        f"CREATE TRIGGER tg AFTER INSERT ON {FTS} BEGIN SELECT 1; END",
        DENIED,
        "on-fts",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER memory_events_no_update AFTER INSERT ON items BEGIN SELECT 1; END",
        DENIED,
        "takes-memory-trigger-name",
    ),
    # the FTS5 control commands, in every tier and however the command is spelt
    r(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')", DENIED, "fts-optimize-in-read"),
    r(f"EXPLAIN INSERT INTO {FTS}({FTS}) VALUES ('rebuild')", DENIED, "explain-fts-rebuild"),
    w(f"INSERT INTO {FTS}({FTS}) VALUES ('delete-all')", DENIED, "fts-delete-all"),
    d(f"INSERT INTO {FTS}({FTS}) VALUES ('delete-all')", DENIED, "fts-delete-all"),
    w(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')", DENIED, "fts-rebuild"),
    d(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')", DENIED, "fts-rebuild"),
    w(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')", DENIED, "fts-optimize"),
    d(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')", DENIED, "fts-optimize"),
    w(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('merge', 500)", DENIED, "fts-merge"),
    w(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('automerge', 0)", DENIED, "fts-automerge"),
    w(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('rank', 'bm25(0.0, 9.0)')", DENIED, "fts-rank"),
    w(f"INSERT INTO {FTS}({FTS}, rank) VALUES ('integrity-check', 1)", DENIED, "fts-check"),
    d(
        f"INSERT INTO {FTS}({FTS}, rowid, content, tags) VALUES ('delete', 3, 'x', 'y')",
        DENIED,
        "fts-delete-one",
    ),
    w(f"INSERT INTO {FTS}({FTS}) VALUES (?)", DENIED, "fts-bound", params=["delete-all"]),
    w(f"INSERT INTO {FTS}({FTS}) VALUES (upper('rebuild'))", DENIED, "fts-computed"),
    w(f"INSERT INTO main.{FTS}({FTS}) VALUES ('optimize')", DENIED, "fts-main", phrase=RECORDS),
    w(f"REPLACE INTO \"{FTS.upper()}\"({FTS}) VALUES ('delete-all')", DENIED, "fts-replace"),
    w(
        f"INSERT INTO {FTS}({FTS}) SELECT content FROM memory_events WHERE id = 1",
        DENIED,
        "fts-command-from-an-event",
    ),
    w(
        f"WITH c(cmd) AS (SELECT 'rebuild') INSERT INTO {FTS}({FTS}) SELECT cmd FROM c",
        DENIED,
        "fts-command-from-a-cte",
    ),
    w(f"INSERT INTO {FTS}(rowid, content, tags) VALUES (1, 'forged', '')", DENIED, "fts-forge"),
    w(f"UPDATE {FTS} SET content = 'x' WHERE rowid = 1", DENIED, "fts-update"),
    d(f"DELETE FROM {FTS} WHERE rowid = 1", DENIED, "fts-delete-row"),
    d(f"DELETE FROM {FTS}", DENIED, "fts-clear"),
    # its shadow tables: refused by the policy or by SQLite's defensive mode
    w(f"INSERT INTO {FTS}_data VALUES (1000, x'00')", DENIED, "shadow-insert"),
    w(f"UPDATE {FTS}_config SET v = 99 WHERE k = 'version'", SQL, "shadow-update"),
    w(f"REPLACE INTO {FTS}_docsize VALUES (1, x'00')", DENIED, "shadow-replace"),
    d(f"DELETE FROM {FTS}_idx", SQL, "shadow-delete"),
    d(f"DELETE FROM {FTS}_docsize WHERE id = 1", SQL, "shadow-delete-row"),
    d(f"DROP TABLE {FTS}_data", DENIED, "shadow-drop"),
    d(f"DROP TABLE IF EXISTS {FTS}_config", DENIED, "shadow-drop-if-exists"),
    d(f"ALTER TABLE {FTS}_config RENAME TO x", SQL, "shadow-rename"),
    w(f"CREATE INDEX shadow_ix ON {FTS}_idx(term)", DENIED, "shadow-index", phrase=RECORDS),
    d(
        f"CREATE TRIGGER tg AFTER INSERT ON {FTS}_data BEGIN SELECT 1; END",
        DENIED,
        "shadow-tg",
        phrase=RECORDS,
    ),
    # read_query may not write them either, however the write is dressed
    r("DELETE FROM memory_events", DENIED, "read-delete"),
    r("WITH x AS (SELECT 1) UPDATE memory_checkpoints SET summary = 'x'", DENIED, "read-cte"),
    r(f"EXPLAIN {FORGED_EVENT}", DENIED, "read-explain-forge"),
    r("SELECT 1; DROP TABLE memory_events", DENIED, "read-then-drop"),
    # trigger bodies that would write them when a user table changes
    d(
        "CREATE TRIGGER tg AFTER UPDATE ON items BEGIN UPDATE memory_events "
        "SET content = new.name WHERE id = 1; END",
        DENIED,
        "body-rewrites-event",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN DELETE FROM memory_checkpoints; END",
        DENIED,
        "body-clears-checkpoints",
    ),
    d(
        f"CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT INTO {FTS}({FTS}) "
        "VALUES ('rebuild'); END",
        DENIED,
        "body-fts-rebuild",
    ),
    d(
        f"CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT INTO {FTS}({FTS}) "
        "VALUES ('optimize'); END",
        DENIED,
        "body-fts-optimize",
    ),
    d(
        f"CREATE TRIGGER tg AFTER INSERT ON items BEGIN INSERT INTO {FTS}(rowid, content) "
        "VALUES (new.id, new.name); END",
        DENIED,
        "body-forges-fts-row",
    ),
    d(
        f"CREATE TRIGGER tg INSTEAD OF INSERT ON cheap_items BEGIN {FORGED_EVENT}; END",
        DENIED,
        "instead-of-forges-event",
    ),
    d(
        "CREATE TRIGGER tg AFTER DELETE ON parents WHEN old.id > 0 BEGIN SELECT 1; "
        f"INSERT INTO {FTS}_data VALUES (1000, x'00'); END",
        DENIED,
        "second-body-statement-writes-shadow",
    ),
]

CLAIM = (
    "INSERT INTO claims(entity, kind, claim, volatility, confidence, rank, state, created_at, "
    "last_confirmed) VALUES ('initech', 'priority', 'initech is priority one', 'slow', 1, 1, "
    "'active', 't', 't')"
)
HISTORY = (
    "INSERT INTO claims_history(claim_id, ts, session, action, detail) "
    "VALUES (1, 't', 's', 'add', '{}')"
)
CLAIMS_TRIGGERS = ["claims_no_delete", "claims_retired_is_final", "claims_no_replace",
                   "claims_history_no_update", "claims_history_no_delete",
                   "claims_history_no_replace"]  # fmt: skip

# the claims, their history, indexes and triggers, through every SQL tool (on claims_world:
# claims 1-3 live, claim 4 retired); read_query may read them
CLAIMS_SERVER_OBJECTS = [
    w(CLAIM, DENIED, "forge-claim"),
    w(CLAIM.replace("INTO claims", "INTO main.claims"), DENIED, "forge-claim-main", phrase=RECORDS),
    w(CLAIM.replace("INTO claims", 'INTO "CLAIMS"'), DENIED, "forge-claim-quoted-upper"),
    w(f"{CLAIM} RETURNING id", DENIED, "forge-claim-returning"),
    w(
        "INSERT INTO claims SELECT id + 10, entity, kind, claim || '!', volatility, confidence, "
        "rank, state, created_at, last_confirmed, evidence FROM claims",
        DENIED,
        "duplicate-claims",
    ),
    w(
        "INSERT INTO claims(id, entity, kind, claim, volatility, confidence, state, created_at, "
        "last_confirmed) VALUES (1, 'a', 'fact', 'x', 'slow', 1, 'active', 't', 't') "
        "ON CONFLICT(id) DO UPDATE SET confidence = 1",
        DENIED,
        "upsert-claim",
    ),
    w(
        "REPLACE INTO claims(id, entity, kind, claim, volatility, confidence, state, "
        "created_at, last_confirmed) VALUES (4, 'acme', 'fact', 'x', 'slow', 1, 'active', 't', "
        "'t')",
        DENIED,
        "replace-retired-claim",
    ),
    w("UPDATE claims SET confidence = 1 WHERE id = 1", DENIED, "raise-confidence"),
    w("UPDATE claims SET rank = 1 WHERE entity = 'globex'", DENIED, "steal-rank"),
    w("UPDATE claims SET state = 'active' WHERE state = 'retired'", DENIED, "unretire"),
    w("UPDATE claims SET last_confirmed = '2999-01-01' WHERE id > 0", DENIED, "freeze-decay"),
    w("UPDATE claims SET evidence = '[1]' WHERE id = 1", DENIED, "forge-evidence"),
    w(HISTORY, DENIED, "forge-history"),
    w(f"WITH x AS (SELECT 1) {HISTORY}", DENIED, "cte-forge-history"),
    w("UPDATE claims_history SET detail = '{}' WHERE id = 1", DENIED, "rewrite-history"),
    w(
        "REPLACE INTO claims_history(id, claim_id, ts, session, action, detail) "
        "VALUES (1, 1, 't', 's', 'add', '{}')",
        DENIED,
        "replace-history",
    ),
    d("DELETE FROM claims", DENIED, "delete-claims"),
    d("DELETE FROM claims WHERE state = 'retired'", DENIED, "delete-retired"),
    d("UPDATE claims SET state = 'retired'", DENIED, "retire-everything"),
    d("UPDATE claims SET confidence = 1", DENIED, "rewrite-all-claims"),
    d("DELETE FROM claims_history", DENIED, "clear-history"),
    d("DELETE FROM claims_history WHERE claim_id = 1", DENIED, "delete-history-of-a-claim"),
    d("UPDATE claims_history SET event_id = NULL", DENIED, "unlink-history"),
    d("WITH x AS (SELECT 1) DELETE FROM claims WHERE id IN x", DENIED, "cte-delete-claim"),
    d("DROP TABLE claims", DENIED, "drop-claims"),
    d("DROP TABLE IF EXISTS main.claims_history", HARMLESS, "drop-history"),
    d('DROP TABLE "Claims_History"', DENIED, "drop-history-mixed-case"),
    d("DROP INDEX claims_by_state", DENIED, "drop-claims-index"),
    d("DROP INDEX IF EXISTS claims_history_by_claim", DENIED, "drop-history-index"),
    *[d(f"DROP TRIGGER {name}", DENIED, f"drop-{name}") for name in CLAIMS_TRIGGERS],
    d("DROP TRIGGER IF EXISTS main.claims_no_delete", HARMLESS, "drop-main-no-delete"),
    d("ALTER TABLE claims RENAME TO beliefs", DENIED, "rename-claims"),
    d("ALTER TABLE claims ADD COLUMN forged TEXT", DENIED, "add-column"),
    d("ALTER TABLE claims DROP COLUMN evidence", DENIED, "drop-column"),
    d("ALTER TABLE claims RENAME COLUMN confidence TO c", DENIED, "rename-column"),
    d("ALTER TABLE claims_history RENAME TO h", DENIED, "rename-history"),
    d("ALTER TABLE claims_history ADD COLUMN forged TEXT", DENIED, "history-add-column"),
    w("CREATE INDEX claims_entity ON claims(entity)", DENIED, "index-claims", phrase=RECORDS),
    w(
        "CREATE UNIQUE INDEX claims_rank ON claims(rank)",
        DENIED,
        "unique-index-claims",
        phrase=RECORDS,
    ),
    w(
        "CREATE INDEX history_ts ON claims_history(ts) WHERE id > 0",
        DENIED,
        "index-history",
        phrase=RECORDS,
    ),
    d("REINDEX claims_by_state", DENIED, "reindex-claims-index"),
    d("REINDEX claims_history", DENIED, "reindex-history"),
    w("REINDEX claims_by_state", DENIED, "reindex-claims-index"),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON claims BEGIN SELECT 1; END",
        DENIED,
        "on-claims",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg BEFORE UPDATE ON claims BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "silence-claim-updates",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER tg BEFORE INSERT ON main.claims_history BEGIN SELECT RAISE(IGNORE); END",
        DENIED,
        "silence-history",
        phrase=RECORDS,
    ),
    d(
        "CREATE TRIGGER claims_no_delete AFTER INSERT ON items BEGIN SELECT 1; END",
        DENIED,
        "takes-claims-trigger-name",
    ),
    # trigger bodies that would write them when a user table changes
    d(
        "CREATE TRIGGER tg AFTER UPDATE ON items BEGIN UPDATE claims SET state = 'active' "
        "WHERE id = 4; END",
        DENIED,
        "body-unretires",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items BEGIN UPDATE claims SET confidence = 1 "
        "WHERE entity = new.name; END",
        DENIED,
        "body-raises-confidence",
    ),
    d(f"CREATE TRIGGER tg AFTER INSERT ON items BEGIN {CLAIM}; END", DENIED, "body-forges-claim"),
    d(
        "CREATE TRIGGER tg AFTER DELETE ON notes BEGIN DELETE FROM claims_history; END",
        DENIED,
        "body-clears-history",
    ),
    d(
        f"CREATE TRIGGER tg INSTEAD OF INSERT ON cheap_items BEGIN {HISTORY}; END",
        DENIED,
        "instead-of-forges-history",
    ),
    d(
        "CREATE TRIGGER tg AFTER INSERT ON items WHEN new.qty > 0 BEGIN SELECT 1; "
        "DELETE FROM claims WHERE id = 1; END",
        DENIED,
        "second-body-statement-deletes-claim",
    ),
    # read_query may not write them, however the write is dressed, but may read them
    r("DELETE FROM claims", DENIED, "read-delete"),
    r("UPDATE claims SET state = 'active' WHERE id = 4", DENIED, "read-unretire"),
    r(f"EXPLAIN {HISTORY}", DENIED, "read-explain-forge-history"),
    r("WITH x AS (SELECT 1) DELETE FROM claims_history", DENIED, "read-cte-clear-history"),
    r("SELECT 1; DROP TABLE claims", DENIED, "read-then-drop"),
    r("SELECT id, entity, rank, state FROM claims ORDER BY id", HARMLESS, "read-claims"),
    r("SELECT action, event_id FROM claims_history", HARMLESS, "read-history"),
    r(
        "SELECT h.action FROM claims_history AS h JOIN memory_events AS e ON e.id = h.event_id",
        HARMLESS,
        "join-history-to-the-chain",
    ),
    r("SELECT * FROM pragma_index_list('claims')", HARMLESS, "pragma-index-list"),
    r("PRAGMA table_info(claims_history)", HARMLESS, "pragma-table-info"),
]

FTS_COMMANDS = [
    w("INSERT INTO tokens(tokens) VALUES ('delete-all')", DENIED, "delete-all"),
    w("INSERT INTO docs(docs) VALUES ('delete-all')", DENIED, "delete-all-regular-table"),
    w("INSERT INTO tokens(tokens) VALUES (?)", DENIED, "delete-all-bound", params=["delete-all"]),
    w(
        "INSERT INTO tokens(tokens) VALUES (:cmd)",
        DENIED,
        "delete-all-named",
        params={"cmd": "delete-all"},
    ),
    w(
        "INSERT INTO tokens(tokens, rank) VALUES (?, NULL)",
        DENIED,
        "delete-all-bound-2",
        params=["delete-all"],
    ),
    w(
        "INSERT INTO tokens(rowid, tokens, body) VALUES (1, 'delete', 'the quick brown fox')",
        DENIED,
        "delete-reordered",
    ),
    w(
        "INSERT INTO tokens(tokens, rowid, body) VALUES ('delete', 1, 'the quick brown fox')",
        DENIED,
        "delete",
    ),
    w("REPLACE INTO tokens(tokens) VALUES ('delete-all')", DENIED, "replace-delete-all"),
    w("INSERT OR REPLACE INTO tokens(tokens) VALUES ('delete-all')", DENIED, "or-replace"),
    w("INSERT INTO main.tokens(tokens) VALUES ('delete-all')", DENIED, "schema-qualified"),
    w("INSERT INTO tokens AS t(tokens) VALUES ('delete-all')", DENIED, "aliased"),
    w('INSERT INTO "tokens"("tokens") VALUES (\'delete-all\')', DENIED, "quoted"),
    w("INSERT INTO [tokens]([Tokens]) VALUES ('DELETE-ALL')", DENIED, "bracketed-upper"),
    w("INSERT INTO tokens(tokens) SELECT 'delete-all'", DENIED, "insert-select"),
    w("INSERT INTO tokens(tokens) VALUES (lower('DELETE-ALL'))", DENIED, "computed"),
    w("INSERT INTO tokens(tokens) VALUES ('delete' || '-all')", DENIED, "concatenated"),
    w(
        "INSERT INTO tokens(tokens) VALUES (char(100, 101, 108, 101, 116, 101, 45, 97, 108, 108))",
        DENIED,
        "char-codes",
    ),
    w("INSERT INTO tokens(tokens) VALUES (x'64656c6574652d616c6c')", DENIED, "blob"),
    w("INSERT INTO tokens(tokens) SELECT name FROM items WHERE id = 11", DENIED, "from-a-row"),
    w(
        "WITH c(cmd) AS (SELECT 'delete-all') INSERT INTO tokens(tokens) SELECT cmd FROM c",
        DENIED,
        "from-a-cte",
    ),
    w(
        "INSERT INTO tokens(tokens) VALUES ('delete-all') /* unterminated",
        DENIED,
        "unterminated-comment",
    ),
    w("/* x */ INSERT INTO tokens(tokens) VALUES ('delete-all')", DENIED, "leading-comment"),
    w(
        "; REPLACE INTO tokens(tokens, rowid, body) VALUES ('delete', 1, 'the quick brown fox')",
        DENIED,
        "after-a-semicolon",
    ),
    w("INSERT INTO docs(docs) VALUES ('rebuild')", DENIED, "rebuild"),
    w("INSERT INTO docs(docs) SELECT name FROM items WHERE id = 12", DENIED, "rebuild-from-row"),
    r("INSERT INTO docs(docs) VALUES ('optimize')", DENIED, "optimize-in-read"),
    w(
        "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('delete-all')",
        DENIED,
        "server-fts-delete-all",
    ),
    w("INSERT INTO docs_data VALUES (1000, x'00')", SQL, "shadow-insert"),
    w("UPDATE docs_config SET v = 99 WHERE k = 'version'", SQL, "shadow-update"),
    d("DELETE FROM docs_data", SQL, "shadow-delete"),
    d("DELETE FROM tokens_idx WHERE 1", SQL, "contentless-shadow-delete"),
    d("DROP TABLE docs_content", SQL, "shadow-drop"),
    d("ALTER TABLE docs_docsize RENAME TO x", SQL, "shadow-rename"),
    w("INSERT INTO boxes_node VALUES (99, x'00')", SQL, "rtree-shadow-insert"),
]

SQLITE_INTERNALS = [
    w("UPDATE sqlite_sequence SET seq = 0 WHERE name = 'items'", DENIED, "sequence-reset"),
    w(
        "INSERT INTO sqlite_sequence(name, seq) VALUES ('items', 1000000)",
        DENIED,
        "sequence-insert",
    ),
    w("REPLACE INTO sqlite_sequence(name, seq) VALUES ('items', -5)", DENIED, "sequence-replace"),
    w("UPDATE sqlite_sequence SET seq = seq + 1 WHERE 1", DENIED, "sequence-bump"),
    d("DROP TABLE sqlite_sequence", SQL, "sequence-drop"),
    d("ALTER TABLE sqlite_sequence RENAME TO seq", SQL, "sequence-rename"),
    w("CREATE INDEX seq_name ON sqlite_sequence(name)", SQL, "sequence-index"),
    w(
        "INSERT INTO sqlite_master VALUES ('table', 'x', 'x', 0, 'CREATE TABLE x(a)')",
        SQL,
        "catalog-insert",
    ),
    w(
        "UPDATE sqlite_master SET sql = 'CREATE TABLE query_log(x)' WHERE name = 'query_log'",
        SQL,
        "catalog-rewrite",
    ),
    d("DELETE FROM sqlite_schema WHERE name LIKE 'query_log%'", SQL, "catalog-delete"),
    d("UPDATE sqlite_schema SET sql = NULL WHERE type = 'trigger'", SQL, "catalog-kill-triggers"),
    w("CREATE TABLE sqlite_evil(a)", SQL, "reserved-prefix-table"),
    w("DELETE FROM sqlite_stat1", DENIED, "statistics-delete"),
    w("INSERT INTO sqlite_stat1 VALUES ('items', NULL, '1')", SQL, "statistics-insert"),
    w("CREATE TABLE sqlite_stat1(tbl, idx, stat)", SQL, "stat-table"),
    w("CREATE VIRTUAL TABLE pages USING dbstat", DENIED, "dbstat-module"),
    w("CREATE VIRTUAL TABLE t3 USING fts3(a)", DENIED, "fts3-module"),
    w("CREATE VIRTUAL TABLE t4 USING fts4(a)", DENIED, "fts4-module"),
    w("CREATE VIRTUAL TABLE t5 USING fts4aux(docs)", DENIED, "fts4aux-module"),
    w("CREATE VIRTUAL TABLE t6 USING fts5vocab(docs, 'row')", DENIED, "fts5vocab-module"),
    w("CREATE VIRTUAL TABLE t7 USING fts3tokenize(simple)", DENIED, "fts3tokenize-module"),
    w("CREATE VIRTUAL TABLE t8 USING geopoly(a)", DENIED, "geopoly-module"),
    w("CREATE VIRTUAL TABLE t9 USING csv(filename='/etc/passwd')", DENIED, "csv-module"),
    r("SELECT * FROM dbstat LIMIT 1", HARMLESS, "dbstat-read"),
]

ARGUMENTS = [
    case("read_query", {"query": ""}, BAD, "empty"),
    case("read_query", {"query": "   \n"}, BAD, "blank"),
    case("read_query", {"query": "-- only a comment"}, BAD, "only-comment"),
    case("read_query", {"query": None}, BAD, "none"),
    case("read_query", {"query": 42}, BAD, "number"),
    case("read_query", {"query": "SELECT 1", "limit": 0}, BAD, "limit-zero"),
    case("read_query", {"query": "SELECT 1", "limit": -1}, BAD, "limit-negative"),
    case("read_query", {"query": "SELECT 1", "limit": True}, BAD, "limit-bool"),
    case("read_query", {"query": "SELECT ?", "params": [b"bytes"]}, BAD, "param-bytes"),
    case("read_query", {"query": "SELECT ?", "params": [["nested"]]}, BAD, "param-list"),
    case("read_query", {"query": "SELECT ?", "params": "a string"}, BAD, "params-string"),
    case("read_query", {"query": "SELECT :a", "params": {"": 1}}, BAD, "param-empty-name"),
    case("read_query", {"query": "SELECT ?", "params": []}, BAD, "param-missing"),
    case(
        "read_query",
        {"query": "SELECT ?", "params": ["'; DROP TABLE items; --"]},
        HARMLESS,
        "param-holds-sql",
    ),
    case(
        "write_query",
        {"query": "INSERT INTO notes(body) VALUES (?)", "params": [{"a": 1}]},
        BAD,
        "param-object",
    ),
    case("destructive_query", {"query": "DROP TABLE items", "reason": ""}, BAD, "no-reason"),
    case("destructive_query", {"query": "DROP TABLE items", "reason": "   "}, BAD, "blank-reason"),
    case("destructive_query", {"query": "DROP TABLE items", "reason": None}, BAD, "none-reason"),
]

# a WHERE that cannot filter, on tables smaller than --max-update-rows (5), where the mass-
# rewrite guard would let every row through (issue 19)
UNFILTERED_UPDATES = [
    w("UPDATE parents SET name = 'x' WHERE 1=1", DENIED, "where-1-eq-1", phrase="destructive"),
    w("UPDATE parents SET name = 'x' WHERE id = 1 OR '1'='1'", DENIED, "injected-or-tautology"),
    w("UPDATE parents SET name = 'x' WHERE ?1", DENIED, "numbered-param", params=[1]),
    w("UPDATE parents SET name = 'x' WHERE $v(id)", DENIED, "tcl-var", params={"v(id)": 1}),
    w("UPDATE parents SET name = 'x' WHERE :all OR id = 1", DENIED, "param-or", params={"all": 1}),
    w("UPDATE parents SET name = 'x' WHERE EXISTS (SELECT 1 FROM children)", DENIED, "exists"),
    w(
        "UPDATE parents SET name = 'x' FROM children WHERE children.label = 'a1'",
        DENIED,
        "update-from-other-table",
    ),
    w(
        "UPDATE parents SET name = 'x' FROM children WHERE label = 'a1'",
        DENIED,
        "update-from-unqualified-other",
    ),
    w(
        "UPDATE parents SET name = 'x' "
        "WHERE EXISTS (SELECT 1 FROM children AS parents WHERE parents.id = 1)",
        DENIED,
        "alias-shadows-the-target",
    ),
    w(
        "UPDATE parents SET name = 'x' WHERE EXISTS (SELECT 1 FROM children WHERE id = 1)",
        DENIED,
        "inner-id-is-the-subquerys",
    ),
    w("UPDATE OR REPLACE parents SET name = 'x' WHERE 1", DENIED, "update-or-replace"),
    w("UPDATE docs SET title = 'x' WHERE docs MATCH 'fox' OR 1", DENIED, "fts-match-or-1"),
    w("UPDATE parents SET name = 'x' WHERE CAST(1 AS UNSIGNED BIG INT)", DENIED, "unparsed"),
    w("UPDATE parents SET name = 'x' WHERE 'a' = 'a' COLLATE nocase", DENIED, "collate"),
]

CASES = [
    *COMMENT_AND_WHITESPACE,
    *UNFILTERED_UPDATES,
    *MULTIPLE_STATEMENTS,
    *CTE_WRAPPED_DML,
    *TIER_CONFUSION,
    *TRANSACTIONS,
    *FILE_WRITES,
    *PRAGMA_WRITES,
    *EXTENSIONS_AND_FUNCTIONS,
    *TEMP_OBJECTS,
    *TRIGGER_AND_VIEW_BODIES,
    *SERVER_TABLES,
    *SERVER_VIEWS,
    *RESERVED_NAMES,
    *PINS,
    *MEMORY_SERVER_OBJECTS,
    *FTS_COMMANDS,
    *SQLITE_INTERNALS,
    *ARGUMENTS,
]


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CASES)
def test_adversarial_sql_is_refused_and_changes_nothing(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(world, tool, args, expected, phrase)


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CLAIMS_SERVER_OBJECTS)
def test_adversarial_sql_on_the_claims_is_refused_and_changes_nothing(
    claims_world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(claims_world, tool, args, expected, phrase)


def test_read_query_reads_the_claims_the_tools_wrote(claims_world: World) -> None:
    text = claims_world.service.read_query(
        "SELECT c.id, c.state, count(h.id) AS changes FROM claims AS c "
        "JOIN claims_history AS h ON h.claim_id = c.id GROUP BY c.id ORDER BY c.id"
    )
    assert text.splitlines() == [
        "id,state,changes", "1,active,1", "2,active,1", "3,active,1", "4,retired,2", "# 4 rows",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE _litestream_seq",
        "DELETE FROM _litestream_seq",
        "UPDATE _litestream_lock SET id = 2 WHERE id = 1",
        "ALTER TABLE _litestream_seq RENAME TO gone",
    ],
)
def test_litestreams_tables_are_server_objects(
    make_service: Callable[..., Service], sql: str
) -> None:
    """Under `--replicate` Litestream keeps two tables of its own in the database: an agent may
    read them, never drop or write them (replication would lose its place)."""
    service = make_service()
    conn = connect_both(service.db.path)
    conn.execute("CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER)")
    conn.execute("CREATE TABLE _litestream_lock (id INTEGER)")
    conn.execute("INSERT INTO _litestream_seq VALUES (1, 1)")
    conn.close()
    assert "_litestream_seq" in service.read_query("SELECT name FROM sqlite_schema")
    with pytest.raises(PolicyDenied, match="server object"):
        service.destructive_query(sql, reason="tidy up")


@pytest.mark.parametrize("world", [SAME_NAMES], indirect=True)
@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CASES)
def test_on_a_file_holding_the_apps_own_query_log_thecheck_records_unchanged(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    """Issue 33: the user's file holds tables named like sqlgate's records (the app's own
    query_log, claims, memory_events, ...). Every adversarial case runs again: a bare name
    is the app's table, judged like any user table's, and sqlgate's records never change."""
    check_records_unchanged(world, tool, args)


@pytest.mark.parametrize("world", [SAME_NAMES], indirect=True)
@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CLAIMS_SERVER_OBJECTS)
def test_on_a_file_holding_the_apps_own_claims_thecheck_records_unchanged(
    claims_world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_records_unchanged(claims_world, tool, args)


# (tool, statement over {t}, whose first column is {c}): the last one drops the table
AS_ANY_USER_TABLE = [
    ("read_query", "SELECT count(*) AS n FROM {t}"),
    ("write_query", "INSERT INTO {t}({c}) VALUES (2)"),
    ("write_query", "UPDATE {t} SET {c} = 3 WHERE {c} = 2"),
    ("write_query", "UPDATE {t} SET {c} = 4"),
    ("write_query", "DELETE FROM {t}"),
    ("write_query", "CREATE INDEX ix_{t} ON {t}({c})"),
    ("write_query", "CREATE TABLE pin_{t}(x REFERENCES {t}({c}))"),
    ("destructive_query", "CREATE TRIGGER tg_{t} AFTER INSERT ON {t} BEGIN SELECT 1; END"),
    ("destructive_query", "DELETE FROM {t} WHERE {c} = 3"),
    ("destructive_query", "ALTER TABLE {t} ADD COLUMN extra TEXT"),
    ("destructive_query", "DROP TABLE {t}"),
]


def _verdict(world: World, tool: str, sql: str) -> str:
    before = world.state()
    try:
        call(world.service, tool, {"query": sql})
        verdict = "ok"
    except SqlgateError as exc:
        verdict = type(exc).__name__
    assert_records_unchanged(before, world.state())
    return verdict


@pytest.mark.parametrize("world", [SAME_NAMES], indirect=True)
@pytest.mark.parametrize("name", APP_TABLES)
def test_the_apps_table_named_like_a_record_is_judged_like_any_user_table(
    world: World, name: str
) -> None:
    """Issue 33: `query_log` in the app's file is the app's: every statement over it gets the
    verdict the same statement gets over a same-shaped table of another name (app_<name>),
    and sqlgate's records stay as they were after each call."""
    seed_app_tables(world.service.db.path, prefix="app_")
    first = "key" if name == "server_info" else "id"
    verdicts = [
        (
            _verdict(world, tool, sql.format(t=f"app_{name}", c=first)),
            _verdict(world, tool, sql.format(t=name, c=first)),
        )
        for tool, sql in AS_ANY_USER_TABLE
    ]
    assert [theirs for theirs, _ in verdicts] == [ours for _, ours in verdicts]
    assert {theirs for theirs, _ in verdicts} >= {"ok", "PolicyDenied"}
