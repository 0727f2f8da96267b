"""The door of sqlgate's features: the one thing surfaces import (with `config` and `errors`).

`Service` (service/features.py) composes engine, memory and claims from Settings out of its
parts: the call machinery (service/calls.py: open, close, the audited call) and the tools
(service/sql_tools.py, undo_tools.py, memory_tools.py, claims_tools.py); every tool call
goes through `Service.call`. Beside it the door shows the vocabulary the surfaces share with
the rooms below: the caller and its tier, the limits of a call, the shapes of answers and
records, and the words printed for humans (`counted`, `db_option`, ...). Each name is loaded
when first taken (`engine.front_door`), so importing the door costs nothing.

`tests/test_layout.py` holds every surface to it: a surface module imports
`sqlgate.service`, `sqlgate.config`, `sqlgate.errors` and other surfaces, nothing else
of sqlgate's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.claims.arguments import MAX_CLAIM_CHARS, MAX_ENTITY_CHARS, MAX_RANK
    from sqlgate.claims.landing import ClaimPlan, existing_claims, land_claims
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
    from sqlgate.claims.reading import CLAIMS_EXPORT, claim_history, claims_by_state
    from sqlgate.claims.rules import find_contradictions
    from sqlgate.engine.commands import db_option, in_folder, list_calls, shell_word
    from sqlgate.engine.connect import check_database_file, connect_read_only, immediate_transaction
    from sqlgate.engine.database import (
        MovePlan,
        MoveResult,
        Owner,
        owner_of,
        plan_move,
        read_facts,
        schema_objects,
        shown_path,
    )
    from sqlgate.engine.framing import counted
    from sqlgate.engine.limits import CallControl, Deadline, watched
    from sqlgate.engine.names import fold_name
    from sqlgate.engine.raw_text import raw_rows, raw_select, text_codec
    from sqlgate.engine.records import (
        AUDIT_COLUMNS,
        OUTCOMES,
        TIERS,
        AuditEntry,
        AuditFilter,
        AuditReader,
        AuthRefusal,
        Caller,
        Identity,
        Member,
        Members,
        acting_as,
        actor_name_problem,
        call_outcome,
        caller_session,
        check_name,
        database_id,
        json_value,
        looks_like_member_token,
        parse_call_ref,
        rebind,
        tier_allows,
        utc_timestamp,
        working_member_count,
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
    from sqlgate.engine.running import Outcome, SearchRequest, busy_error, normalize_params
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
    from sqlgate.engine.undo import changeset_states
    from sqlgate.memory.chain_copy import chain_hash_at, holds_chain, stored_head, stored_links
    from sqlgate.memory.contract import GENESIS, ChainStatus, event_hash, stored_tags
    from sqlgate.memory.inputs import (
        MAX_IDS,
        MAX_KINDS,
        MAX_TAGS,
        event_tags,
        moment,
        text_field,
        word_list,
    )
    from sqlgate.memory.landing import (
        IMPORT_KIND,
        IMPORT_SESSION_PREFIX,
        Prepared,
        imported_kind,
        land_chain,
        prior_imports,
    )
    from sqlgate.memory.privacy import Redactor
    from sqlgate.memory.reading import (
        MEMORY_EXPORT,
        count_rows,
        event_and_neighbours,
        event_times,
        events_by_id,
        head_event,
        last_event_time,
        newest_events,
        sessions_since,
        table_records,
    )
    from sqlgate.memory.restore_record import (
        ChainRestoreRecorder,
        append_restore_event,
        recorded_restores,
    )
    from sqlgate.memory.store import redactor_for
    from sqlgate.memory.witness import Witness, WitnessFile
    from sqlgate.service.calls import new_session_id
    from sqlgate.service.features import Service

__all__ = [
    "AUDIT_COLUMNS",
    "CLAIMS_EXPORT",
    "FLOOR",
    "GENESIS",
    "HALF_LIFE_DAYS",
    "IMPORT_KIND",
    "IMPORT_SESSION_PREFIX",
    "KINDS",
    "MAX_CLAIM_CHARS",
    "MAX_ENTITY_CHARS",
    "MAX_IDS",
    "MAX_KINDS",
    "MAX_RANK",
    "MAX_TAGS",
    "MEMORY_EXPORT",
    "MIGRATIONS",
    "OUTCOMES",
    "STALE_THRESHOLD",
    "STATES",
    "TIERS",
    "AuditEntry",
    "AuditFilter",
    "AuditReader",
    "AuthRefusal",
    "CallControl",
    "Caller",
    "ChainRestoreRecorder",
    "ChainStatus",
    "Claim",
    "ClaimPlan",
    "Deadline",
    "Identity",
    "LiveRules",
    "Member",
    "Members",
    "MovePlan",
    "MoveResult",
    "Outcome",
    "Owner",
    "PolicyRecorder",
    "Prepared",
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
    "append_restore_event",
    "busy_error",
    "call_outcome",
    "caller_session",
    "chain_hash_at",
    "changeset_states",
    "check_against",
    "check_database_file",
    "check_name",
    "claim_history",
    "claims_by_state",
    "connect_read_only",
    "count_rows",
    "counted",
    "database_id",
    "db_option",
    "effective_confidence",
    "evaluation_json",
    "event_and_neighbours",
    "event_hash",
    "event_tags",
    "event_times",
    "events_by_id",
    "existing_claims",
    "find_contradictions",
    "fold_name",
    "head_event",
    "holds_chain",
    "immediate_transaction",
    "imported_kind",
    "in_folder",
    "is_live",
    "json_value",
    "land_chain",
    "land_claims",
    "last_event_time",
    "list_calls",
    "list_kept",
    "list_snapshots",
    "looks_like_member_token",
    "moment",
    "new_session_id",
    "newest_events",
    "normalize_params",
    "owner_of",
    "parse_call_ref",
    "parse_timestamp",
    "plan_move",
    "plan_restore",
    "prior_imports",
    "quote_identifier",
    "raw_rows",
    "raw_select",
    "read_facts",
    "rebind",
    "recorded_restores",
    "recording",
    "redactor_for",
    "restore_snapshot",
    "rules_from_settings",
    "schema_objects",
    "sessions_since",
    "shell_word",
    "shown_path",
    "stored_head",
    "stored_links",
    "stored_tags",
    "table_records",
    "text_codec",
    "text_field",
    "tier_allows",
    "toml_reader",
    "utc_timestamp",
    "watched",
    "word_list",
    "working_member_count",
]

BEHIND_THE_DOOR = {
    "calls": ("new_session_id",),
    "features": ("Service",),
    "sqlgate.claims.arguments": (
        "MAX_CLAIM_CHARS",
        "MAX_ENTITY_CHARS",
        "MAX_RANK",
    ),
    "sqlgate.claims.landing": (
        "ClaimPlan",
        "existing_claims",
        "land_claims",
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
    "sqlgate.claims.reading": (
        "CLAIMS_EXPORT",
        "claim_history",
        "claims_by_state",
    ),
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
        "MovePlan",
        "MoveResult",
        "Owner",
        "owner_of",
        "plan_move",
        "read_facts",
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
        "AUDIT_COLUMNS",
        "AuditEntry",
        "AuditFilter",
        "AuditReader",
        "AuthRefusal",
        "Caller",
        "Identity",
        "Member",
        "Members",
        "OUTCOMES",
        "TIERS",
        "acting_as",
        "actor_name_problem",
        "call_outcome",
        "caller_session",
        "check_name",
        "database_id",
        "json_value",
        "looks_like_member_token",
        "parse_call_ref",
        "rebind",
        "tier_allows",
        "utc_timestamp",
        "working_member_count",
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
        "Outcome",
        "SearchRequest",
        "busy_error",
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
    "sqlgate.engine.undo": ("changeset_states",),
    "sqlgate.memory.chain_copy": (
        "chain_hash_at",
        "holds_chain",
        "stored_head",
        "stored_links",
    ),
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
        "event_tags",
        "moment",
        "text_field",
        "word_list",
    ),
    "sqlgate.memory.landing": (
        "IMPORT_KIND",
        "IMPORT_SESSION_PREFIX",
        "Prepared",
        "imported_kind",
        "land_chain",
        "prior_imports",
    ),
    "sqlgate.memory.privacy": ("Redactor",),
    "sqlgate.memory.reading": (
        "MEMORY_EXPORT",
        "count_rows",
        "event_and_neighbours",
        "event_times",
        "events_by_id",
        "head_event",
        "last_event_time",
        "newest_events",
        "sessions_since",
        "table_records",
    ),
    "sqlgate.memory.restore_record": (
        "ChainRestoreRecorder",
        "append_restore_event",
        "recorded_restores",
    ),
    "sqlgate.memory.store": ("redactor_for",),
    "sqlgate.memory.witness": (
        "Witness",
        "WitnessFile",
    ),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
