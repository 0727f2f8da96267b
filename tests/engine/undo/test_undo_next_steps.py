"""An undo's refusal names a next step the one who asked can take.

At the command line that is a `sqlgate` command. The agent (undo_call) cannot run one: its
refusal names a tool, or says what to ask the person who runs sqlgate, and never tells it to
run a command as if it could.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from tests.engine.undo.test_undo_writes import newest_call, ref

AGENT_STEPS = ("read_query", "undo_call", "ask the person who runs sqlgate")


def _world(make_service: Callable[..., Service], tmp_path: Path) -> tuple[Service, dict[str, str]]:
    """A database with one call of each kind an undo refuses, and the ids that name them."""
    service = make_service()
    service.write_query("CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)")
    mine = service.db.database_id
    with pytest.raises(SqlgateError):
        service.write_query("INSERT INTO nowhere VALUES (1)")  # a failed call: nothing to undo
    failed = newest_call(service)
    dropped = service.destructive_query("DROP TABLE tasks", reason="a schema change")
    assert "; snapshot: " in dropped
    snapshot = newest_call(service)
    other = make_service(db=tmp_path / "other.db")
    other.write_query("CREATE TABLE t (v)")
    foreign = ref(other.write_query("INSERT INTO t VALUES (1)"))
    ids = {
        "missing": f"999@{mine}",
        "failed": f"{failed}@{mine}",
        "snapshot": f"{snapshot}@{mine}",
        "other-database": foreign,
        "zero": f"0@{mine}",
    }
    return service, ids


CASES = ["missing", "failed", "snapshot", "other-database", "zero"]


@pytest.mark.parametrize("case", CASES)
def test_an_agents_undo_refusal_names_a_step_an_agent_can_take(
    make_service: Callable[..., Service], tmp_path: Path, case: str
) -> None:
    service, ids = _world(make_service, tmp_path)
    with pytest.raises(SqlgateError) as caught:
        service.undo_call(ids[case], reason="take it back")
    text = str(caught.value)
    assert "`sqlgate undo --list`" not in text, text
    assert "run the command with the --db" not in text, text
    assert any(step in text for step in AGENT_STEPS), text


@pytest.mark.parametrize("case", CASES)
def test_a_persons_undo_refusal_still_names_the_command(
    make_service: Callable[..., Service], tmp_path: Path, case: str
) -> None:
    service, ids = _world(make_service, tmp_path)
    with pytest.raises(SqlgateError) as caught:
        service.undo(ids[case])
    text = str(caught.value)
    assert (
        "sqlgate undo --list" in text
        or "sqlgate snapshots restore" in text
        or ("--db that the undo hint names" in text)
    ), text


def test_an_agent_told_of_another_database_is_shown_this_ones_id(
    make_service: Callable[..., Service], tmp_path: Path
) -> None:
    service, ids = _world(make_service, tmp_path)
    with pytest.raises(SqlgateError) as caught:
        service.undo_call(ids["other-database"], reason="take it back")
    assert f"an id ending in @{service.db.database_id}" in str(caught.value)


def test_an_undo_target_speaks_to_a_person_unless_told_it_is_the_agent(
    make_service: Callable[..., Service],
) -> None:
    from sqlgate.engine.undo.restore import UndoTarget
    from sqlgate.errors import NotFound

    service = make_service()
    listing = f"`sqlgate undo --list --db {service.db.path.absolute()}` shows them"
    with pytest.raises(NotFound, match=re.escape(listing)):
        service.undoing.undo(UndoTarget(audit_id=999))
    with pytest.raises(NotFound, match="read_query over query_log"):
        service.undoing.undo(UndoTarget(audit_id=999, by_agent=True))
