"""Property of the undo of additive DDL: for any later mix of writes into the new table,
objects standing on it and unrelated changes, the undo succeeds exactly when nothing wrote
into it or stands on it, and then leaves the catalog as it was less what the call made."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.service import Service
from tests.engine.undo.test_undo_ddl import SOURCE, call, direct, dump, undo

STEPS = st.lists(
    st.sampled_from(
        (
            "insert-into-it",
            "view-over-it",
            "trigger-writing-it",
            "index-on-it",
            "unrelated-table",
            "unrelated-insert",
            "unrelated-view",
        )
    ),
    max_size=4,
)
STEP_SQL = {
    "insert-into-it": "INSERT INTO made (v) VALUES (hex(randomblob(8)))",
    "view-over-it": "CREATE VIEW IF NOT EXISTS made_v AS SELECT v FROM made",
    "trigger-writing-it": "CREATE TRIGGER IF NOT EXISTS made_t AFTER INSERT ON other "
    "BEGIN INSERT INTO made (v) VALUES (hex(randomblob(8))); END",
    "index-on-it": "CREATE INDEX IF NOT EXISTS made_i ON made (v)",
    "unrelated-table": "CREATE TABLE IF NOT EXISTS apart (x)",
    "unrelated-insert": "INSERT INTO other (v) VALUES ('y')",
    "unrelated-view": "CREATE VIEW IF NOT EXISTS other_v AS SELECT v FROM other",
}
BLOCKING = {"insert-into-it", "view-over-it", "trigger-writing-it", "index-on-it"}
MADE = st.sampled_from(
    (
        "CREATE TABLE made (id INTEGER PRIMARY KEY, v TEXT)",
        "CREATE TABLE made (v TEXT UNIQUE, w)",
        "CREATE TABLE made (v TEXT PRIMARY KEY) WITHOUT ROWID",
        "CREATE TABLE made AS SELECT id, body AS v FROM src",
    )
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(create=MADE, steps=STEPS)
def test_undo_succeeds_exactly_when_nothing_wrote_into_or_depends_on_it(
    create: str, steps: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "p.db"
        with Service.open(Settings(db=db), session="s-prop") as service:
            with direct(db) as conn:
                conn.execute(SOURCE)
            before_call = dump(db)
            record_id = call(service, create)
            assert record_id is not None
            with direct(db) as conn:
                for step in steps:
                    conn.execute(STEP_SQL[step])
            before_undo = dump(db)
            conflicts = undo(service, record_id)
            after = dump(db)
        if BLOCKING & set(steps):
            assert conflicts
            assert after == before_undo
            return
        assert conflicts == []
        made = {row[0] for row in before_undo[0]} - {row[0] for row in before_call[0]}
        kept = [row for row in before_undo[0] if row[2] != "made" and row[3] != "made"]
        assert after[0] == kept
        if not steps:
            assert after[0] == before_call[0]
        assert len(made) > len(kept) - len(before_call[0])  # it dropped something: its own
        assert {k: v for k, v in after[1].items() if k != "undo_changesets"} == {
            k: v for k, v in before_undo[1].items() if k not in ("made", "undo_changesets")
        }
