"""The door of sqlgate's features: the one thing surfaces import (with `config` and `errors`).

`Service` composes engine, memory and claims from Settings; every tool call goes through
`Service.call`. Beside it the door shows the vocabulary the surfaces share with the rooms
below: the caller and its tier, the limits of a call, the shapes of answers and records,
and the words printed for humans (`counted`, `db_option`, ...). Each name is loaded when
first taken (`engine.front_door`), so importing the door costs nothing.

`tests/test_layout.py` holds every surface to it: a surface module imports
`sqlgate.service`, `sqlgate.config`, `sqlgate.errors` and other surfaces, nothing else
of sqlgate's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.claims.arguments import MAX_CLAIM_CHARS, MAX_ENTITY_CHARS, MAX_RANK
    from sqlgate.claims.model import (
        FLOOR,
        HALF_LIFE_DAYS,
        KINDS,
        STALE_THRESHOLD,
        STATES,
        Claim,
        effective_confidence,
        is_live,
        parse_timestamp,
    )
    from sqlgate.claims.present import evaluation_json
    from sqlgate.claims.rules import find_contradictions
    from sqlgate.engine.commands import db_option, in_folder, list_calls, shell_word
    from sqlgate.engine.connect import check_database_file, connect_read_only, immediate_transaction
    from sqlgate.engine.database import (
        Owner,
        check_ownership,
        owner_of,
        read_facts,
        refusal,
        schema_objects,
        shown_path,
    )
    from sqlgate.engine.framing import counted
    from sqlgate.engine.limits import CallControl, Deadline, watched
    from sqlgate.engine.names import fold_name
    from sqlgate.engine.raw_text import raw_rows, raw_select, text_codec
    from sqlgate.engine.records import (
        ACTOR_SINCE,
        TIERS,
        AuditEntry,
        AuthRefusal,
        Caller,
        Identity,
        Member,
        Members,
        acting_as,
        actor_name_problem,
        actor_sql,
        caller_session,
        check_name,
        database_id,
        json_value,
        looks_like_member_token,
        parse_call_ref,
        queued_rows,
        tier_allows,
        utc_timestamp,
    )
    from sqlgate.engine.rules import (
        LiveRules,
        PolicyRecorder,
        TableRules,
        check_against,
        recording,
        rules_from_settings,
        toml_reader,
    )
    from sqlgate.engine.running import (
        OUTCOME_SQL,
        OUTCOMES,
        REFUSED_SQL,
        Outcome,
        SearchRequest,
        busy_error,
        call_outcome,
        normalize_params,
    )
    from sqlgate.engine.schema import MIGRATIONS
    from sqlgate.engine.snapshots import (
        RestorePlan,
        RestoreResult,
        list_kept,
        list_snapshots,
        plan_restore,
        restore_snapshot,
    )
    from sqlgate.engine.sqltext import quote_identifier
    from sqlgate.engine.statements import Tier
    from sqlgate.memory.chain import ChainWriter
    from sqlgate.memory.contract import GENESIS, ChainStatus, event_hash, stored_tags
    from sqlgate.memory.inputs import (
        MAX_IDS,
        MAX_KINDS,
        MAX_TAGS,
        event_kind,
        event_tags,
        moment,
        text_field,
        word_list,
    )
    from sqlgate.memory.privacy import Redactor
    from sqlgate.memory.restore_record import (
        ChainRestoreRecorder,
        append_restore_event,
        recorded_restores,
    )
    from sqlgate.memory.store import SERVER_KINDS, redactor_for
    from sqlgate.memory.witness import Witness, WitnessFile
    from sqlgate.service.calls import Service, new_session_id

__all__ = [
    "ACTOR_SINCE",
    "FLOOR",
    "GENESIS",
    "HALF_LIFE_DAYS",
    "KINDS",
    "MAX_CLAIM_CHARS",
    "MAX_ENTITY_CHARS",
    "MAX_IDS",
    "MAX_KINDS",
    "MAX_RANK",
    "MAX_TAGS",
    "MIGRATIONS",
    "OUTCOMES",
    "OUTCOME_SQL",
    "REFUSED_SQL",
    "SERVER_KINDS",
    "STALE_THRESHOLD",
    "STATES",
    "TIERS",
    "AuditEntry",
    "AuthRefusal",
    "CallControl",
    "Caller",
    "ChainRestoreRecorder",
    "ChainStatus",
    "ChainWriter",
    "Claim",
    "Deadline",
    "Identity",
    "LiveRules",
    "Member",
    "Members",
    "Outcome",
    "Owner",
    "PolicyRecorder",
    "Redactor",
    "RestorePlan",
    "RestoreResult",
    "SearchRequest",
    "Service",
    "TableRules",
    "Tier",
    "Witness",
    "WitnessFile",
    "acting_as",
    "actor_name_problem",
    "actor_sql",
    "append_restore_event",
    "busy_error",
    "call_outcome",
    "caller_session",
    "check_against",
    "check_database_file",
    "check_name",
    "check_ownership",
    "connect_read_only",
    "counted",
    "database_id",
    "db_option",
    "effective_confidence",
    "evaluation_json",
    "event_hash",
    "event_kind",
    "event_tags",
    "find_contradictions",
    "fold_name",
    "immediate_transaction",
    "in_folder",
    "is_live",
    "json_value",
    "list_calls",
    "list_kept",
    "list_snapshots",
    "looks_like_member_token",
    "moment",
    "new_session_id",
    "normalize_params",
    "owner_of",
    "parse_call_ref",
    "parse_timestamp",
    "plan_restore",
    "queued_rows",
    "quote_identifier",
    "raw_rows",
    "raw_select",
    "read_facts",
    "recorded_restores",
    "recording",
    "redactor_for",
    "refusal",
    "restore_snapshot",
    "rules_from_settings",
    "schema_objects",
    "shell_word",
    "shown_path",
    "stored_tags",
    "text_codec",
    "text_field",
    "tier_allows",
    "toml_reader",
    "utc_timestamp",
    "watched",
    "word_list",
]

BEHIND_THE_DOOR = {
    "calls": (
        "Service",
        "new_session_id",
    ),
    "sqlgate.claims.arguments": (
        "MAX_CLAIM_CHARS",
        "MAX_ENTITY_CHARS",
        "MAX_RANK",
    ),
    "sqlgate.claims.model": (
        "Claim",
        "FLOOR",
        "HALF_LIFE_DAYS",
        "KINDS",
        "STALE_THRESHOLD",
        "STATES",
        "effective_confidence",
        "is_live",
        "parse_timestamp",
    ),
    "sqlgate.claims.present": ("evaluation_json",),
    "sqlgate.claims.rules": ("find_contradictions",),
    "sqlgate.engine.commands": (
        "db_option",
        "in_folder",
        "list_calls",
        "shell_word",
    ),
    "sqlgate.engine.connect": (
        "check_database_file",
        "connect_read_only",
        "immediate_transaction",
    ),
    "sqlgate.engine.database": (
        "Owner",
        "check_ownership",
        "owner_of",
        "read_facts",
        "refusal",
        "schema_objects",
        "shown_path",
    ),
    "sqlgate.engine.framing": ("counted",),
    "sqlgate.engine.limits": (
        "CallControl",
        "Deadline",
        "watched",
    ),
    "sqlgate.engine.names": ("fold_name",),
    "sqlgate.engine.raw_text": (
        "raw_rows",
        "raw_select",
        "text_codec",
    ),
    "sqlgate.engine.records": (
        "ACTOR_SINCE",
        "AuditEntry",
        "AuthRefusal",
        "Caller",
        "Identity",
        "Member",
        "Members",
        "TIERS",
        "acting_as",
        "actor_name_problem",
        "actor_sql",
        "caller_session",
        "check_name",
        "database_id",
        "json_value",
        "looks_like_member_token",
        "parse_call_ref",
        "queued_rows",
        "tier_allows",
        "utc_timestamp",
    ),
    "sqlgate.engine.rules": (
        "LiveRules",
        "PolicyRecorder",
        "TableRules",
        "check_against",
        "recording",
        "rules_from_settings",
        "toml_reader",
    ),
    "sqlgate.engine.running": (
        "OUTCOMES",
        "OUTCOME_SQL",
        "Outcome",
        "REFUSED_SQL",
        "SearchRequest",
        "busy_error",
        "call_outcome",
        "normalize_params",
    ),
    "sqlgate.engine.schema": ("MIGRATIONS",),
    "sqlgate.engine.snapshots": (
        "RestorePlan",
        "RestoreResult",
        "list_kept",
        "list_snapshots",
        "plan_restore",
        "restore_snapshot",
    ),
    "sqlgate.engine.sqltext": ("quote_identifier",),
    "sqlgate.engine.statements": ("Tier",),
    "sqlgate.memory.chain": ("ChainWriter",),
    "sqlgate.memory.contract": (
        "ChainStatus",
        "GENESIS",
        "event_hash",
        "stored_tags",
    ),
    "sqlgate.memory.inputs": (
        "MAX_IDS",
        "MAX_KINDS",
        "MAX_TAGS",
        "event_kind",
        "event_tags",
        "moment",
        "text_field",
        "word_list",
    ),
    "sqlgate.memory.privacy": ("Redactor",),
    "sqlgate.memory.restore_record": (
        "ChainRestoreRecorder",
        "append_restore_event",
        "recorded_restores",
    ),
    "sqlgate.memory.store": (
        "SERVER_KINDS",
        "redactor_for",
    ),
    "sqlgate.memory.witness": (
        "Witness",
        "WitnessFile",
    ),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
