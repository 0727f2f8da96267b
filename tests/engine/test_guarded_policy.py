"""The guarded-table rules as a table of cases: (fact, rules) -> allowed or refused, why."""

from __future__ import annotations

import pytest

from sqlgate.engine.guarded_policy import guarded_statement_refusal, guarded_verdict
from sqlgate.engine.live_rules import LiveRules
from sqlgate.engine.policy import Operation, Tier

RULES = LiveRules(
    protected=frozenset({"ledger"}),
    append_only=frozenset({"events", "stamps"}),
    shown={"ledger": "Ledger"},
    guarded_parents=frozenset({"accounts"}),
    replacing=frozenset({"stamps"}),
    replacing_triggers=frozenset({"feed_replaces"}),
)
D = Tier.DESTRUCTIVE

# (operation, conflict clause, None when allowed or words of the refusal)
CASES = [
    (Operation("READ", "ledger", "amount"), None, None),
    (Operation("SELECT"), None, None),
    (Operation("INSERT", "LEDGER"), None, "Ledger is protected by the server's policy: INSERT"),
    (Operation("UPDATE", "ledger", "amount"), None, "UPDATE of its rows (by the statement or"),
    (Operation("DELETE", "ledger"), None, "DELETE of its rows"),
    (Operation("EMPTY_TABLE", "ledger"), None, "EMPTY TABLE of its rows"),
    (Operation("DELETE", "ledger", inside="t1"), None, "(done by trigger or view t1)"),
    (Operation("INSERT", "events"), None, None),
    (Operation("INSERT", "events"), "ABORT", None),
    (Operation("INSERT", "events"), "REPLACE", "REPLACE deletes the row it replaces"),
    (Operation("INSERT", "events", inside="feed_replaces"), None, "trigger feed_replaces"),
    (Operation("INSERT", "events", inside="other"), None, None),
    (Operation("INSERT", "stamps"), None, "ON CONFLICT REPLACE"),
    (Operation("INSERT", "stamps"), "IGNORE", None),
    (Operation("INSERT", "stamps"), "FAIL", None),
    (Operation("INSERT", "stamps"), "ROLLBACK", None),
    (Operation("INSERT", "stamps"), "ABORT", None),
    (Operation("INSERT", "stamps"), "REPLACE", "REPLACE deletes"),
    (Operation("UPDATE", "events", "v"), None, "events is append-only by the server's policy"),
    (Operation("DELETE", "Events"), None, "Events is append-only"),
    (Operation("EMPTY_TABLE", "events"), None, "append-only"),
    (Operation("INSERT", "other"), "REPLACE", None),
    (Operation("DELETE", "other"), None, None),
    (Operation("DROP_TABLE", "ledger"), None, "Ledger is protected by the server's policy: DROP"),
    (Operation("DROP_VTABLE", "events"), None, "events is append-only"),
    (Operation("DROP_TABLE", "other"), None, None),
    (Operation("ALTER_TABLE", "main", "ledger"), None, "ALTER TABLE"),
    (Operation("ALTER_TABLE", "main", "events"), None, "append-only"),
    (Operation("ALTER_TABLE", "main", "accounts"), None, "would rewrite that table's"),
    (Operation("ALTER_TABLE", "main", "other"), None, None),
    (Operation("CREATE_INDEX", "i", "ledger"), None, "CREATE INDEX"),
    (Operation("DROP_INDEX", "i", "events"), None, "DROP INDEX"),
    (Operation("CREATE_TRIGGER", "t", "events"), None, "CREATE TRIGGER"),
    (Operation("DROP_TRIGGER", "t", "ledger"), None, "DROP TRIGGER"),
    (Operation("CREATE_INDEX", "ledger", "other"), None, None),  # an index named like it
    (Operation("CREATE_INDEX", "i", "accounts"), None, None),  # a parent may be indexed
    (Operation("REINDEX", "ledger"), None, None),
    (Operation("INSERT", "events", inside="other"), "REPLACE", "(done by trigger or view other)"),
    # facts without a table name (SQLite gives none for some): nothing to guard
    (Operation("DELETE"), "REPLACE", None),
    (Operation("INSERT"), "REPLACE", None),
    (Operation("ALTER_TABLE", "main"), None, None),
    (Operation("DROP_TABLE"), None, None),
    (Operation("CREATE_INDEX", "i"), None, None),
]


@pytest.mark.parametrize(("op", "conflict", "refusal"), CASES, ids=[repr(c[0]) for c in CASES])
def test_guarded_verdicts(op: Operation, conflict: str | None, refusal: str | None) -> None:
    verdict = guarded_verdict(D, op, RULES, conflict)
    if refusal is None:
        assert verdict.allowed
        assert not verdict.ignore
    else:
        assert not verdict.allowed
        assert refusal in verdict.reason
        assert "no tool will" in verdict.reason


def test_a_refusal_asks_the_person_and_a_protected_one_points_to_read_query() -> None:
    protected = guarded_verdict(D, Operation("UPDATE", "ledger", "a"), RULES).reason
    assert protected.endswith("ask the person who runs sqlgate")
    inserted = guarded_verdict(D, Operation("INSERT", "ledger"), RULES).reason
    assert "policy: INSERT of its rows; agents" in inserted  # no foreign key deletes an INSERT
    assert "agents may read it (read_query)" in protected
    appended = guarded_verdict(D, Operation("DELETE", "events"), RULES).reason
    assert appended.endswith("write_query may only INSERT new rows into it")
    replaced = guarded_verdict(D, Operation("INSERT", "stamps"), RULES).reason
    assert replaced.endswith("in write_query")
    assert "INSERT OR ABORT" in replaced


@pytest.mark.parametrize(
    ("kind", "target", "refusal"),
    [
        ("UPDATE", "ledger", "Ledger is protected by the server's policy: UPDATE"),
        ("INSERT", "Ledger", "Ledger is protected"),
        ("INSERT", "events", None),
        ("CREATE VIEW", "events", None),
        ("DELETE", "events", "events is append-only by the server's policy: DELETE"),
        ("REPLACE", "events", "append-only"),
        ("DROP TABLE", "events", "append-only"),
        ("UPDATE", "other", None),
        ("UPDATE", None, None),
    ],
)
def test_a_statement_no_tool_would_run_is_refused_before_a_tiers_advice(
    kind: str, target: str | None, refusal: str | None
) -> None:
    found = guarded_statement_refusal(kind, target, RULES)
    if refusal is None:
        assert found is None
    else:
        assert found is not None
        assert refusal in found
        assert "no tool will" in found
