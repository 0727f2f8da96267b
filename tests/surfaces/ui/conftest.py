"""One seeded database for the console's tests (scripts/ui_seed.py), shared by the module,
and a client of the console's app signed in with its token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scripts.ui_seed import seed, seed_history
from starlette.testclient import TestClient

from sqlgate.config import Settings
from sqlgate.surfaces.ui.app import build_ui_app
from sqlgate.surfaces.ui.console import Console
from tests.records import connect_both

TOKEN = "test-token-" + "x" * 24
NOW = 1_796_000_000.0  # 2026-11-28: the seeded history ends here


@pytest.fixture(scope="session")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("ui") / "agent.db"
    seed_history(db, audit_rows=300, events=120, now=NOW)
    seed(db, now=NOW)
    return db


@pytest.fixture(scope="module")
def console(seeded_db: Path) -> Iterator[Console]:
    opened = Console.open(Settings(db=seeded_db), wall_clock=lambda: NOW)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def client(console: Console) -> Iterator[TestClient]:
    """Signed in: the token URL was opened once, the cookie is kept."""
    app = build_ui_app(console, TOKEN, "127.0.0.1")
    with TestClient(app, base_url="http://127.0.0.1:8766") as signed_in:
        answer = signed_in.get(f"/?token={TOKEN}", follow_redirects=False)
        assert answer.status_code == 303
        yield signed_in


def audit_plan(db: Path, query: dict[str, str], columns: str) -> str:
    """SQLite's plan of the activity page's SELECT under the filters in `query` (`*`: every
    column)."""
    import apsw

    from sqlgate.service import AUDIT_COLUMNS, AuditReader
    from sqlgate.surfaces.ui.activity import audit_filter

    shown = AUDIT_COLUMNS if columns == "*" else tuple(columns.split(", "))
    sql, params = AuditReader().select(audit_filter(query), shown, 51)
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return " ; ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()
