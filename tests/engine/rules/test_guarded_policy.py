"""The guarded-table rules as a table of cases: (fact, rules) -> allowed or refused, why."""

from __future__ import annotations

import pytest

from sqlgate.engine.rules.guarded_policy import (
    LeftWrite,
    NewTable,
    changed_row_refusal,
    guarded_statement_refusal,
    guarded_verdict,
    left_write_refusal,
    new_table_refusal,
    row_change_refused,
    unchecked_trigger_refusal,
)
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements.policy import Operation, Tier

RULES = LiveRules(
    protected=frozenset({"ledger"}),
    append_only=frozenset({"events", "stamps"}),
    shown={"ledger": "Ledger"},
    guarded_parents=frozenset({"accounts"}),
    shadow_of={"events_docsize": "events"},
)
D = Tier.DESTRUCTIVE
INSERT_ACC = Operation("INSERT", "accounts")
INSERT_EVENTS = Operation("INSERT", "events")
CASCADE = Operation("DELETE", "ledger")
SET_NULL = Operation("UPDATE", "events", "acc")

# (operation, the statement's facts before it, None when allowed or words of the refusal)
CASES = [
    (Operation("READ", "ledger", "amount"), (), None),
    (Operation("SELECT"), (), None),
    (Operation("INSERT", "LEDGER"), (), "Ledger is protected by the server's policy: INSERT"),
    (Operation("UPDATE", "ledger", "amount"), (), "UPDATE of its rows (by the statement or"),
    (Operation("DELETE", "ledger"), (), "DELETE of its rows"),
    (Operation("EMPTY_TABLE", "ledger"), (), "EMPTY TABLE of its rows"),
    (Operation("DELETE", "ledger", inside="t1"), (), "(done by trigger or view t1)"),
    (Operation("INSERT", "events"), (), None),  # REPLACE's delete: judged after the run
    (Operation("INSERT", "stamps", inside="feed_replaces"), (), None),
    (Operation("UPDATE", "events", "v"), (), "events is append-only by the server's policy"),
    (Operation("DELETE", "Events"), (), "Events is append-only"),
    (Operation("EMPTY_TABLE", "events"), (), "append-only"),
    (Operation("EMPTY_TABLE", "Events_DocSize"), (), "events is append-only"),  # its shadow
    (Operation("EMPTY_TABLE", "other_docsize"), (), None),
    (Operation("DELETE", "events_docsize", nested=True), (), None),  # the module's bookkeeping
    (Operation("INSERT", "other"), (), None),
    (Operation("DELETE", "other"), (), None),
    # a foreign key's action an INSERT sets off only when REPLACE deletes: after the run
    (CASCADE, (INSERT_ACC,), None),
    (SET_NULL, (Operation("READ", "x", "y"), INSERT_ACC), None),
    (CASCADE, (Operation("INSERT", "sqlite_master"), INSERT_ACC), None),  # DDL's catalog row
    (CASCADE, (Operation("INSERT", "a", nested=True), INSERT_ACC), None),
    (CASCADE, (Operation("INSERT", "a", inside="t"), INSERT_ACC), None),
    (CASCADE, (Operation("DELETE", "a", inside="t"), INSERT_ACC), None),  # not the statement's
    (CASCADE, (Operation("DELETE", "a", nested=True), INSERT_ACC), None),
    (CASCADE, (Operation("INSERT"),), None),  # SQLite named no table: still not the child
    (Operation("DELETE"), (INSERT_ACC,), None),
    (SET_NULL, (INSERT_EVENTS, SET_NULL), "events is append-only"),  # an upsert's DO UPDATE
    (SET_NULL, (Operation("INSERT", "Events"), SET_NULL), "append-only"),
    (CASCADE, (Operation("DELETE", "accounts"), CASCADE), "Ledger is protected"),
    (CASCADE, (Operation("UPDATE", "accounts", "id"), CASCADE), "Ledger is protected"),
    (CASCADE, (CASCADE,), "Ledger is protected"),
    (CASCADE, (Operation("INSERT", "sqlite_master"), CASCADE), "Ledger is protected"),
    (Operation("DELETE", "ledger", inside="t"), (INSERT_ACC,), "done by trigger or view t"),
    (Operation("DELETE", "ledger", nested=True), (INSERT_ACC,), "Ledger is protected"),
    (Operation("EMPTY_TABLE", "ledger"), (INSERT_ACC,), "Ledger is protected"),
    (Operation("INSERT", "ledger"), (INSERT_ACC,), "Ledger is protected"),
    (Operation("DROP_TABLE", "ledger"), (), "Ledger is protected by the server's policy: DROP"),
    (Operation("DROP_VTABLE", "events"), (), "events is append-only"),
    (Operation("DROP_TABLE", "other"), (), None),
    (Operation("ALTER_TABLE", "main", "ledger"), (), "ALTER TABLE"),
    (Operation("ALTER_TABLE", "main", "events"), (), "append-only"),
    (Operation("ALTER_TABLE", "main", "accounts"), (), "would rewrite that table's"),
    (Operation("ALTER_TABLE", "main", "other"), (), None),
    (Operation("CREATE_INDEX", "i", "ledger"), (), "CREATE INDEX"),
    (Operation("DROP_INDEX", "i", "events"), (), "DROP INDEX"),
    (Operation("CREATE_TRIGGER", "t", "events"), (), "CREATE TRIGGER"),
    (Operation("DROP_TRIGGER", "t", "ledger"), (), "DROP TRIGGER"),
    (Operation("CREATE_INDEX", "ledger", "other"), (), None),  # an index named like it
    (Operation("CREATE_INDEX", "i", "accounts"), (), None),  # a parent may be indexed
    (Operation("REINDEX", "ledger"), (), None),
    # the keys of a table created under a rule's name: its own indexes, nothing else's
    (Operation("CREATE_INDEX", "sqlite_autoindex_Events_1", "events"),
     (Operation("CREATE_TABLE", "Events"),), None),
    (Operation("CREATE_INDEX", "sqlite_autoindex_events_1", "events"),
     (Operation("CREATE_TABLE", "other"),), "CREATE INDEX"),
    (Operation("CREATE_INDEX", "sqlite_autoindex_events_1", "events"),
     (Operation("CREATE_VIEW", "events"),), "CREATE INDEX"),
    (Operation("CREATE_INDEX", "events_i", "events"),
     (Operation("CREATE_TABLE", "events"),), "CREATE INDEX"),
    (Operation("CREATE_INDEX", "sqlite_autoindex_ledger_2", "ledger"),
     (Operation("CREATE_TABLE", "ledger"),), None),
    (Operation("DROP_INDEX", "sqlite_autoindex_ledger_2", "ledger"),
     (Operation("CREATE_TABLE", "ledger"),), "DROP INDEX"),
    (Operation("CREATE_INDEX", None, "events"), (Operation("CREATE_TABLE", "events"),),
     "CREATE INDEX"),
    (Operation("CREATE_INDEX", "sqlite_autoindex_events_1", "events"),
     (Operation("CREATE_TABLE"),), "CREATE INDEX"),
    # facts without a table name (SQLite gives none for some): nothing to guard
    (Operation("DELETE"), (), None),
    (Operation("INSERT"), (), None),
    (Operation("ALTER_TABLE", "main"), (), None),
    (Operation("DROP_TABLE"), (), None),
    (Operation("CREATE_INDEX", "i"), (), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("op", "earlier", "refusal"), CASES, ids=[f"{c[0]!r} after {c[1]!r}" for c in CASES]
)
def test_guarded_verdicts(
    op: Operation, earlier: tuple[Operation, ...], refusal: str | None
) -> None:
    verdict = guarded_verdict(D, op, RULES, earlier)
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


@pytest.mark.parametrize(
    ("kind", "target", "refusal"),
    [
        ("UPDATE", "ledger", "Ledger is protected by the server's policy: UPDATE"),
        ("INSERT", "Ledger", "Ledger is protected"),
        ("INSERT", "events", None),
        ("CREATE VIEW", "events", None),
        ("DELETE", "events", "events is append-only by the server's policy: DELETE"),
        ("REPLACE", "events", None),  # it may append: write_query judges what it deletes
        ("REPLACE", "ledger", "Ledger is protected"),
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


# -- rows a statement changed, judged after it ran ------------------------------------------

# (table, action, conflict, None when allowed or words of the refusal)
CHANGED = [
    ("events", "DELETE", "k = 'a'",
     "events is append-only by the server's policy: the statement would delete its existing "
     "row id = 1 (REPLACE deletes it: the new row repeats its k = 'a'), and no tool will run "
     "it; nothing was changed. Give new rows keys no row holds"),
    ("Events", "UPDATE", None, "Events is append-only by the server's policy: the statement "
     "would change its existing row id = 1 (by a foreign key's action, a REPLACE or a "
     "virtual table's command)"),
    ("events", "INSERT", None, None),
    ("ledger", "INSERT", None, "Ledger is protected by the server's policy: the statement would "
     "add its row id = 1 (by a foreign key's action, a REPLACE or a virtual table's command); "
     "agents may read it (read_query) but no tool will change it; nothing was changed; ask the "
     "person who runs sqlgate"),
    ("ledger", "DELETE", None, "would delete its row id = 1 (by a foreign key's action,"),
    ("LEDGER", "UPDATE", None, "Ledger is protected"),
    ("ledger", "DELETE", "id = 1", "(REPLACE deletes it: the new row repeats its id = 1)"),
    ("other", "DELETE", "k = 'a'", None),
    ("other", "UPDATE", None, None),
    ("other", "INSERT", None, None),
    ("ledger", "INSERT", "k = 'a'", "Ledger is protected"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "action", "conflict", "refusal"), CHANGED)
def test_a_guarded_row_the_statement_changed(
    table: str, action: str, conflict: str | None, refusal: str | None
) -> None:
    refused = row_change_refused(table, action, RULES)
    assert refused is (refusal is not None)
    if refusal is not None:
        found = changed_row_refusal(table, action, "id = 1", conflict, RULES)
        assert refusal in found
        assert "no tool will" in found


def test_an_append_only_refusal_says_how_to_append() -> None:
    found = changed_row_refusal("events", "DELETE", "id = 1", None, RULES)
    assert found.endswith(
        "or skip the rows that exist with INSERT OR IGNORE (or ON CONFLICT DO NOTHING) in "
        "write_query"
    )


# -- what a statement leaves in the schema --------------------------------------------------

# (write, None when allowed or the words of the refusal)
LEFT = [
    (LeftWrite("t", Operation("DELETE", "ledger", inside="t")),
     "trigger t would DELETE rows of Ledger when another program's statement fires it, where "
     "sqlgate does not watch; Ledger is protected by the server's policy, set by the person "
     "who runs sqlgate, so no tool will create it; nothing was changed"),
    (LeftWrite("t", Operation("INSERT", "Events", inside="t")),
     "trigger t would INSERT rows of Events when"),
    (LeftWrite("t", Operation("UPDATE", "events", "v", inside="u"), "feed"),
     "trigger t would UPDATE rows of events when another program's statement fires it (its "
     "write to feed does, through trigger u), where sqlgate does not watch; events is "
     "append-only by the server's policy"),
    (LeftWrite("t", Operation("DELETE", "ledger"), "accounts"),
     "(its write to accounts does, through a foreign key's action)"),
    (LeftWrite("t", Operation("EMPTY_TABLE", "ledger", inside="t")), "EMPTY_TABLE rows"),
    (LeftWrite("t", Operation("INSERT", "other", inside="t")), None),
    (LeftWrite("t", Operation("READ", "ledger", "amount", inside="t")), None),
    (LeftWrite("t", Operation("CREATE_INDEX", "i", "ledger")), None),
    (LeftWrite("t", Operation("DELETE", None, inside="t")), None),
]  # fmt: skip


@pytest.mark.parametrize(("write", "refusal"), LEFT, ids=[f"left-{n}" for n in range(len(LEFT))])
def test_a_write_a_new_trigger_would_make(write: LeftWrite, refusal: str | None) -> None:
    found = left_write_refusal(write, RULES)
    if refusal is None:
        assert found is None
    else:
        assert found is not None
        assert refusal in found


def test_a_trigger_that_cannot_be_checked_is_refused_with_sqlites_reason() -> None:
    found = unchecked_trigger_refusal("t", "no such table: main.journal")
    assert found.startswith(
        "trigger t could not be checked: SQLite could not prepare a statement that fires it "
        "(no such table: main.journal)"
    )
    assert "set by the person who runs sqlgate, no tool will create it" in found
    assert found.endswith("create the tables and views its body names first")


CASCADE_OWNERS = (("owners", "ON DELETE CASCADE"),)
# (new table, None when allowed or the words of the refusal)
NEW = [
    (NewTable("Events", triggers=("stage_t", "other_t")),
     "Events is append-only by the server's policy, set by the person who runs sqlgate: the "
     "statement would leave trigger stage_t firing on it or naming it, which another "
     "program's statement would run where sqlgate does not watch; no tool will run it"),
    (NewTable("ledger", actions=(*CASCADE_OWNERS, ("teams", "ON UPDATE SET NULL"))),
     "Ledger is protected by the server's policy, set by the person who runs sqlgate: its "
     "foreign key to owners says ON DELETE CASCADE, so another program's change to owners "
     "would change its rows; no tool will create it so; nothing was changed. Declare the key "
     "without an action"),
    (NewTable("events", replaces=True),
     "events is append-only by the server's policy, set by the person who runs sqlgate: its "
     "definition says ON CONFLICT REPLACE, so another program's INSERT would delete its rows; "
     "no tool will create it so"),
    (NewTable("ledger", replaces=True), None),  # protected: no agent writes it anyway
    (NewTable("events", triggers=("t",), actions=CASCADE_OWNERS, replaces=True), "trigger t"),
    (NewTable("events", actions=CASCADE_OWNERS, replaces=True), "owners"),
    (NewTable("other", triggers=("t",), actions=CASCADE_OWNERS, replaces=True), None),
    (NewTable("events"), None),
    (NewTable("vendors", children=(("Ledger", "ON DELETE CASCADE"),)),
     "Ledger is protected by the server's policy, set by the person who runs sqlgate, and its "
     "foreign key to vendors says ON DELETE CASCADE: another program's change to vendors would "
     "change Ledger, so no tool will create vendors; nothing was changed; ask the person who "
     "runs sqlgate"),
    (NewTable("vendors", children=(("other", "ON DELETE CASCADE"), ("events", "ON UPDATE SET "
                                                                     "NULL"))),
     "events is append-only by the server's policy, set by the person who runs sqlgate, and its "
     "foreign key to vendors says ON UPDATE SET NULL"),
    (NewTable("vendors", children=(("other", "ON DELETE CASCADE"),)), None),
    (NewTable("events", children=(("ledger", "ON DELETE CASCADE"),)), "Ledger is protected"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "refusal"), NEW, ids=[f"new-{n}" for n in range(len(NEW))])
def test_a_table_that_takes_its_place_in_the_schema(table: NewTable, refusal: str | None) -> None:
    found = new_table_refusal(table, RULES)
    if refusal is None:
        assert found is None
    else:
        assert found is not None
        assert refusal in found
        assert "no tool will" in found
