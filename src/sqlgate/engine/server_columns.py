"""Every column of sqlgate's own tables, by what it can hold. Pure data.

A table or column added to the server's schema (`engine.schema`) must be listed here under
exactly one heading; tests/engine/test_server_columns.py reads the migrated schema and fails
on one that is not, so no new column of user values can be left readable by mistake.

    ROW_VALUES    values of the user's rows, or digests of them (an unsalted digest answers
                  a guess offline): undo data. Read as NULL by the agent while any column
                  is hidden (`engine.hidden_facts`); the server reads them on its own
                  connections, so undo works as before
    CALLER_TEXT   what a caller sent (SQL, its parameters, memory, claims, reasons) or was
                  answered (error texts): a hidden value is there only if a caller had it.
                  Every sqlgate process that applies the rules keeps it so: the agent never
                  reads a hidden value, a SQLite error that could quote one is replaced
                  (`engine.hidden_errors`), an undo conflict shows no hidden key
    SERVER_FACTS  ids, times, names, states, counts and sizes, the schema (column names and
                  types), digests of sqlgate's own records
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CALLER_TEXT", "ROW_VALUES", "SERVER_FACTS"]


def _columns(**tables: str) -> Mapping[str, frozenset[str]]:
    return {table: frozenset(names.split()) for table, names in tables.items()}


ROW_VALUES = _columns(
    # data: a changeset (whole rows); digests: 16-byte row digests; created: a CREATE's
    # record, with the count and digest of the rows it left in each table it made
    undo_changesets="data digests created",
    undo_chunks="data",
    undo_row_states="digests",
)

CALLER_TEXT = _columns(
    query_log="query error detail",
    memory_events="content tags",
    memory_checkpoints="summary",
    memory_events_fts="content tags",
    memory_events_fts_data="block",
    memory_events_fts_idx="term",
    claims="entity claim evidence",
    claims_history="detail",
)

SERVER_FACTS = _columns(
    query_log="id ts session tool ok rows duration_ms actor",
    memory_events="id ts session kind prev_hash hash",
    memory_checkpoints="id ts session last_event_id head_hash",
    # the fts5 table's own hidden columns (its name, the rank), its bookkeeping and sizes
    memory_events_fts="memory_events_fts rank",
    memory_events_fts_data="id",
    memory_events_fts_idx="segid pgno",
    memory_events_fts_docsize="id sz",
    memory_events_fts_config="k v",
    claims="id kind volatility confidence rank state created_at last_confirmed",
    claims_history="id claim_id ts session action event_id",
    # tables: names; shapes: each table's column names and types; bytes: a size
    undo_changesets=(
        "id ts session kind tables changes bytes undone_at undone_by tool format shapes"
    ),
    undo_chunks="changeset_id seq",
    undo_row_states="changeset_id seq",
    undo_table_shapes="changeset_id name schema_rowid rootpage shape",
    server_info="key value",
    members="id name tier created removed",
    member_tokens="digest member_id created revoked",
    _litestream_seq="id seq",
    _litestream_lock="id",
)
