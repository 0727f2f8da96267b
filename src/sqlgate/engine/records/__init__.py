"""The server's records: the audit log, callers and members, database ids.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    audit            The audit log: one `query_log` row for every tool call, successful or not.
    audit_reader     Reading the audit log: the one query builder of `sqlgate log`, `stats` and
                     the console, and the outcomes of a recorded call.
    audit_queue      The audit queue: query_log rows that could not be written at once, kept until
                     they can.
    actors           Who makes a call: the actor named in every audit row, memory event and claim
                     change.
    members          The members of a team server and their tokens (`sqlgate members ...`, issue
                     22).
    identity         Which database a call belongs to: the random id each sqlgate database is given.
    binding          Which user database a records file belongs to (issue 33, "bad input").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.records.actors import (
        TIERS,
        AuthRefusal,
        Caller,
        Identity,
        acting_as,
        actor_name_problem,
        caller_session,
        current_caller,
        session_now,
        tier_allows,
    )
    from sqlgate.engine.records.audit import (
        AuditEntry,
        AuditLog,
        json_value,
        utc_timestamp,
    )
    from sqlgate.engine.records.audit_queue import AuditQueue, queue_path
    from sqlgate.engine.records.audit_reader import (
        AUDIT_COLUMNS,
        OUTCOME_SQL,
        OUTCOMES,
        REFUSED_SQL,
        AuditFilter,
        AuditReader,
        call_outcome,
        one_call,
        succeeded_calls,
    )
    from sqlgate.engine.records.binding import (
        Binding,
        check_binding,
        history_lost,
        note_history_lost,
        rebind,
        refuse_foreign_records,
    )
    from sqlgate.engine.records.identity import (
        AGENT_FINDS_CALLS,
        LIST_CALLS,
        database_id,
        parse_call_ref,
    )
    from sqlgate.engine.records.members import (
        Member,
        Members,
        check_name,
        looks_like_member_token,
        working_member_count,
    )

__all__ = [
    "AGENT_FINDS_CALLS",
    "AUDIT_COLUMNS",
    "LIST_CALLS",
    "OUTCOMES",
    "OUTCOME_SQL",
    "REFUSED_SQL",
    "TIERS",
    "AuditEntry",
    "AuditFilter",
    "AuditLog",
    "AuditQueue",
    "AuditReader",
    "AuthRefusal",
    "Binding",
    "Caller",
    "Identity",
    "Member",
    "Members",
    "acting_as",
    "actor_name_problem",
    "call_outcome",
    "caller_session",
    "check_binding",
    "check_name",
    "current_caller",
    "database_id",
    "history_lost",
    "json_value",
    "looks_like_member_token",
    "note_history_lost",
    "one_call",
    "parse_call_ref",
    "queue_path",
    "rebind",
    "refuse_foreign_records",
    "session_now",
    "succeeded_calls",
    "tier_allows",
    "utc_timestamp",
    "working_member_count",
]

BEHIND_THE_DOOR = {
    "actors": (
        "AuthRefusal",
        "Caller",
        "Identity",
        "TIERS",
        "acting_as",
        "actor_name_problem",
        "caller_session",
        "current_caller",
        "session_now",
        "tier_allows",
    ),
    "audit": ("AuditEntry", "AuditLog", "json_value", "utc_timestamp"),
    "audit_queue": ("AuditQueue", "queue_path"),
    "binding": (
        "Binding",
        "check_binding",
        "history_lost",
        "note_history_lost",
        "rebind",
        "refuse_foreign_records",
    ),
    "audit_reader": (
        "AUDIT_COLUMNS",
        "AuditFilter",
        "AuditReader",
        "OUTCOMES",
        "OUTCOME_SQL",
        "REFUSED_SQL",
        "call_outcome",
        "one_call",
        "succeeded_calls",
    ),
    "identity": ("AGENT_FINDS_CALLS", "LIST_CALLS", "database_id", "parse_call_ref"),
    "members": (
        "Member",
        "Members",
        "check_name",
        "looks_like_member_token",
        "working_member_count",
    ),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
