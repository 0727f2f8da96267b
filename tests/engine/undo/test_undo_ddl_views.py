"""Undo of create_view: the record it keeps; a new view dropped, a replaced one put back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sqlgate.engine.limits import CallControl
from sqlgate.service import Service
from tests.engine.undo.test_undo_ddl import direct, dump, ready, record_of, texts, undo
from tests.undo_hint import plain

__all__ = ["ready"]  # the fixture, shared


def save_view(service: Service, name: str, select: str, replace: bool = False) -> int:
    text, undo_id = service.views.create_view(name, select, "", replace, CallControl())
    assert text == f"ok: view {name} {'replaced' if replace else 'created'}"
    assert undo_id is not None
    return undo_id


def view_sql(db: Path, name: str) -> str | None:
    with direct(db) as conn:
        row = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def test_create_view_keeps_its_undo_record(ready: Service, db_path: Path) -> None:
    before = dump(db_path)
    undo_id = save_view(ready, "v_src", "SELECT body FROM src")
    with direct(db_path) as conn:
        row = conn.execute(
            "SELECT tool, kind, tables, changes FROM undo_changesets WHERE id = ?", (undo_id,)
        ).fetchone()
    assert row == ("create_view", "CREATE VIEW", '["v_src"]', 0)
    assert undo(ready, undo_id) == []
    assert dump(db_path)[0] == before[0]
    assert view_sql(db_path, "v_src") is None


def test_service_create_view_puts_the_undo_id_in_the_audit_detail(
    ready: Service, db_path: Path
) -> None:
    assert plain(ready.create_view("v_src", "SELECT body FROM src")) == "ok: view v_src created"
    with direct(db_path) as conn:
        (detail,) = conn.execute(
            "SELECT detail FROM query_log WHERE tool = 'create_view'"
        ).fetchone()
        (newest,) = conn.execute("SELECT max(id) FROM undo_changesets").fetchone()
    assert json.loads(detail)["undo"] == newest


def test_undo_of_a_replace_puts_the_old_view_back(ready: Service, db_path: Path) -> None:
    ready.create_view("v", "SELECT body FROM src", "the old one")
    old = view_sql(db_path, "v")
    undo_id = save_view(ready, "V", "SELECT id FROM src", replace=True)
    assert view_sql(db_path, "v") != old
    assert undo(ready, undo_id) == []
    assert view_sql(db_path, "v") == old
    with direct(db_path) as conn:
        assert conn.execute("SELECT * FROM v ORDER BY 1").fetchall() == [
            ("alpha",),
            ("beta",),
            ("gamma",),
        ]


def test_a_view_over_the_replaced_view_does_not_block_its_undo(
    ready: Service, db_path: Path
) -> None:
    ready.create_view("v", "SELECT body FROM src")
    ready.create_view("w", "SELECT body FROM v")
    old = view_sql(db_path, "v")
    undo_id = save_view(ready, "v", "SELECT body || '!' AS body FROM src", replace=True)
    assert undo(ready, undo_id) == []
    assert view_sql(db_path, "v") == old
    assert view_sql(db_path, "w") is not None


@pytest.mark.parametrize(
    ("later", "expected"),
    [
        pytest.param(
            lambda s: s.create_view("v", "SELECT 2 AS x", replace=True),
            "view v: its definition changed after the call",
            id="replaced-again",
        ),
        pytest.param(
            lambda s: s.create_view("w", "SELECT x FROM v"),
            "view v: view w depends on it",
            id="view-over-it",
        ),
        pytest.param(
            lambda s: s.destructive_query("DROP VIEW v", "gone"),
            "view v: it was renamed or dropped after the call",
            id="dropped",
        ),
    ],
)
def test_undo_of_a_view_is_refused_after_changes(
    ready: Service, db_path: Path, later: Any, expected: str
) -> None:
    ready.create_view("v", "SELECT 0 AS x")
    undo_id = save_view(ready, "v", "SELECT 1 AS x", replace=True)
    later(ready)
    before = dump(db_path)
    assert expected in texts(undo(ready, undo_id))
    assert dump(db_path) == before


def test_a_tampered_replaced_view_is_never_run(ready: Service, db_path: Path) -> None:
    ready.create_view("v", "SELECT 0 AS x")
    undo_id = save_view(ready, "v", "SELECT 1 AS x", replace=True)
    before = dump(db_path)
    for sql in (
        "CREATE VIEW v AS SELECT 1; DROP TABLE src",
        "CREATE VIEW elsewhere AS SELECT 1",
        "CREATE TEMP VIEW v AS SELECT 1",
        "CREATE TABLE v (x)",
    ):
        (view,) = json.loads(record_of(ready, undo_id))
        tampered = json.dumps([{**view, "replaces": sql}])
        assert "the view it replaced cannot be put back" in texts(undo(ready, undo_id, tampered))
        assert dump(db_path) == before


def test_a_replace_by_the_same_view_in_the_same_place_offers_no_undo(ready: Service) -> None:
    ready.create_view("v", "SELECT body FROM src")
    text, undo_id = ready.views.create_view("v", "SELECT body FROM src", "", True, CallControl())
    assert (text, undo_id) == ("ok: view v replaced", None)
