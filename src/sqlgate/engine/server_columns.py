"""Every column of sqlgate's own tables, by what it can hold. Pure data.

A table or column added to the server's schema (`engine.schema`) must be listed here under
exactly one heading; tests/engine/test_server_columns.py reads the migrated schema and fails
on one that is not, so no new column of user values can be left readable by mistake.

    ROW_VALUES    values of the user's rows, or digests of them (an unsalted digest answers
                  a guess offline): undo data. Read as NULL by the agent while any column
                  is hidden (`engine.rules.hidden_facts`); the server reads them on its own
                  connections, so undo works as before
    CALLER_TEXT   what a caller sent (SQL, its parameters, memory, claims, reasons) or was
                  answered (error texts): a hidden value is there only if a caller had it.
                  Every sqlgate process that applies the rules keeps it so: the agent never
                  reads a hidden value, a SQLite error that could quote one is replaced
                  (`engine.rules.hidden_errors`), an undo conflict shows no hidden key
    SERVER_FACTS  ids, times, names, states, counts and sizes, the schema (column names and
                  types), digests of sqlgate's own records

The headings are keyed by table name, so they hold wherever the agent reads the table: in
main while the server tables live in the user's file, and as `sqlgate.<table>` once the
records are attached to the agent's connections (`engine.rules.rule_policy` judges a read
of the records by the hidden columns alone).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CALLER_TEXT", "ROW_VALUES", "SERVER_FACTS"]


ROW_VALUES: Mapping[str, frozenset[str]] = {
    # data: a changeset (whole rows); digests: 16-byte row digests; created: a CREATE's
    # record, with the count and digest of the rows it left in each table it made
    "undo_changesets": frozenset({"data", "digests", "created"}),
    "undo_chunks": frozenset({"data"}),
    "undo_row_states": frozenset({"digests"}),
}

CALLER_TEXT: Mapping[str, frozenset[str]] = {
    "query_log": frozenset({"query", "error", "detail"}),
    "memory_events": frozenset({"content", "tags"}),
    "memory_checkpoints": frozenset({"summary"}),
    "memory_events_fts": frozenset({"content", "tags"}),
    "memory_events_fts_data": frozenset({"block"}),
    "memory_events_fts_idx": frozenset({"term"}),
    "claims": frozenset({"entity", "claim", "evidence"}),
    "claims_history": frozenset({"detail"}),
}

SERVER_FACTS: Mapping[str, frozenset[str]] = {
    "query_log": frozenset({"id", "ts", "session", "tool", "ok", "rows", "duration_ms", "actor"}),
    "memory_events": frozenset({"id", "ts", "session", "kind", "prev_hash", "hash"}),
    "memory_checkpoints": frozenset({"id", "ts", "session", "last_event_id", "head_hash"}),
    # the fts5 table's own hidden columns (its name, the rank), its bookkeeping and sizes
    "memory_events_fts": frozenset({"memory_events_fts", "rank"}),
    "memory_events_fts_data": frozenset({"id"}),
    "memory_events_fts_idx": frozenset({"segid", "pgno"}),
    "memory_events_fts_docsize": frozenset({"id", "sz"}),
    "memory_events_fts_config": frozenset({"k", "v"}),
    "claims": frozenset(
        {"id", "kind", "volatility", "confidence", "rank", "state", "created_at", "last_confirmed"}
    ),
    "claims_history": frozenset({"id", "claim_id", "ts", "session", "action", "event_id"}),
    # tables: names; shapes: each table's column names and types; bytes: a size
    "undo_changesets": frozenset(
        {
            "id",
            "ts",
            "session",
            "kind",
            "tables",
            "changes",
            "bytes",
            "undone_at",
            "undone_by",
            "tool",
            "format",
            "shapes",
        }
    ),
    "undo_chunks": frozenset({"changeset_id", "seq"}),
    "undo_row_states": frozenset({"changeset_id", "seq"}),
    "undo_table_shapes": frozenset({"changeset_id", "name", "schema_rowid", "rootpage", "shape"}),
    "server_info": frozenset({"key", "value"}),
    "members": frozenset({"id", "name", "tier", "created", "removed"}),
    "member_tokens": frozenset({"digest", "member_id", "created", "revoked"}),
    "_litestream_seq": frozenset({"id", "seq"}),
    "_litestream_lock": frozenset({"id"}),
}
