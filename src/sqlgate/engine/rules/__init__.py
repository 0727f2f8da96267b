"""The user's table rules: hidden columns, protected and append-only tables, the policy file.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    table_rules      The user's rules about their own tables, as given: hidden columns, protected
                     and append-only tables.
    live_rules       The table rules as they apply to the schema now: which live tables and columns
                     they name.
    rule_notes       What describe_table and get_schema tell the agent of the user's table rules.
    policy_file      The table rules from the flags and the `--policy` file: TOML, with notes for
                     the agent.
    rule_policy      The server's policy and the user's table rules together, for one fact. Pure.
    hidden_policy    Hidden columns as policy: what the agent may do with a column the user hid.
                     Pure.
    hidden_facts     What the schema adds to hidden columns: the objects that hold, order or test
                     their values.
    hidden_errors    Error texts that could carry a hidden value, and the value-free words that
                     replace them.
    hidden_order     Whether a read's answer is the same in whatever order its rows are visited.
                     Pure.
    hidden_checks    Hidden columns, statement by statement: what the authorizer's facts one at a
                     time miss.
    guard_facts      What the schema says about the user's protected and append-only tables, beyond
                     their names: facts the authorizer is never told.
    guarded_policy   Protected and append-only user tables as policy. Pure.
    guard_schema     What a statement leaves in the schema for other programs to fire, while tables
                     are guarded.
    authorizer       Gathering facts: an authorizer that turns SQLite's callbacks into `Operation`s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.rules.authorizer import (
        PolicyRecorder,
        check_references,
        recording,
        shadow_tables,
    )
    from sqlgate.engine.rules.guard_schema import SchemaGuard
    from sqlgate.engine.rules.guarded_policy import (
        changed_row_refusal,
        guarded_statement_refusal,
        row_change_refused,
    )
    from sqlgate.engine.rules.hidden_checks import HiddenWatch, veiled_error
    from sqlgate.engine.rules.hidden_policy import hidden_trailer
    from sqlgate.engine.rules.live_rules import NO_RULES, LiveRules, RuleResolver
    from sqlgate.engine.rules.policy_file import (
        check_against,
        listed,
        rules_from_settings,
        toml_reader,
    )
    from sqlgate.engine.rules.rule_notes import schema_notes, table_notes
    from sqlgate.engine.rules.table_rules import TableRules

__all__ = [
    "NO_RULES",
    "HiddenWatch",
    "LiveRules",
    "PolicyRecorder",
    "RuleResolver",
    "SchemaGuard",
    "TableRules",
    "changed_row_refusal",
    "check_against",
    "check_references",
    "guarded_statement_refusal",
    "hidden_trailer",
    "listed",
    "recording",
    "row_change_refused",
    "rules_from_settings",
    "schema_notes",
    "shadow_tables",
    "table_notes",
    "toml_reader",
    "veiled_error",
]

BEHIND_THE_DOOR = {
    "authorizer": ("PolicyRecorder", "check_references", "recording", "shadow_tables"),
    "guard_schema": ("SchemaGuard",),
    "guarded_policy": ("changed_row_refusal", "guarded_statement_refusal", "row_change_refused"),
    "hidden_checks": ("HiddenWatch", "veiled_error"),
    "hidden_policy": ("hidden_trailer",),
    "live_rules": ("LiveRules", "NO_RULES", "RuleResolver"),
    "policy_file": ("check_against", "listed", "rules_from_settings", "toml_reader"),
    "rule_notes": ("schema_notes", "table_notes"),
    "table_rules": ("TableRules",),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
