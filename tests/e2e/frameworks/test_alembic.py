"""A SQLAlchemy app's database, migrated by Alembic, guarded by sqlgate while the app works.

As for Django (test_django.py): first the framework alone (the control), then an agent's
session over stdio interleaved with SQLAlchemy sessions writing from another process;
afterwards `alembic check` finds no drift (sqlgate's tables would be "removed tables" to it)
and the file is still the app's.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.frameworks.agent import Agent, agent_session
from tests.e2e.frameworks.checks import Baseline, assert_home, assert_still_the_apps
from tests.e2e.frameworks.projects import AlembicProject

pytestmark = [pytest.mark.e2e, pytest.mark.stdio]

APP_TABLES = {"alembic_version", "authors", "books"}
NO_DRIFT = "No new upgrade operations detected."
INSERT_BOOK = (
    "INSERT INTO books (title, author_id) "
    "VALUES ('Agent Notes', (SELECT id FROM authors WHERE name = 'ada'))"
)


def assert_alembic_sees_no_drift(project: AlembicProject) -> None:
    """The models, the migrations and the database agree, by Alembic's own comparison."""
    assert NO_DRIFT in project.alembic("check")
    assert "(head)" in project.alembic("current")


def test_sqlalchemy_alone_builds_writes_and_passes_the_checks(
    alembic_project: AlembicProject,
) -> None:
    """The control, sqlgate nowhere: what the session test asserts holds for the app alone."""
    db = alembic_project.db
    before = Baseline.of(db)
    assert {name for _, name, _, _ in before.schema} >= APP_TABLES
    alembic_project.add_book("Notes on the Engine")
    alembic_project.add_book("Sketch of the Engine", author="luigi")
    assert alembic_project.book_titles() == ["Notes on the Engine", "Sketch of the Engine"]
    assert_alembic_sees_no_drift(alembic_project)
    assert_still_the_apps(db, before, "delete")


async def agent_works_beside_sqlalchemy(agent: Agent, project: AlembicProject) -> None:
    """Reads, a write and its undo, a destructive call and its undo, the audit log; between
    the calls, SQLAlchemy sessions of the app write from a process of their own."""
    listed = await agent.call("list_tables")
    assert {line.split(",")[0] for line in listed.splitlines()[1:]} >= APP_TABLES
    await anyio.to_thread.run_sync(project.add_book, "Notes on the Engine")
    inserted = await agent.call("write_query", query=INSERT_BOOK)
    await anyio.to_thread.run_sync(project.add_book, "Sketch of the Engine")
    titles = await agent.call("read_query", query="SELECT title FROM books ORDER BY title")
    assert titles.splitlines()[1:4] == ["Agent Notes", "Notes on the Engine",
                                        "Sketch of the Engine"]  # fmt: skip
    await agent.undo(inserted, "the agent's test book is not needed")

    deleted = await agent.call(
        "destructive_query", query="DELETE FROM books WHERE title LIKE ?",
        params=["Notes%"], reason="a duplicate of the sketch",
    )  # fmt: skip
    assert "DELETE FROM books WHERE title LIKE ?" in agent.person.asked[-1]
    assert await anyio.to_thread.run_sync(project.book_titles) == ["Sketch of the Engine"]
    await anyio.to_thread.run_sync(project.add_book, "Translation of the Sketch", "luigi")
    await agent.undo(deleted, "the notes were not a duplicate")
    log = await agent.call("read_query", query="SELECT tool FROM sqlgate.query_log ORDER BY id")
    assert log.splitlines()[1:3] == ["list_tables", "write_query"]


@pytest.mark.anyio
async def test_an_agent_session_leaves_alembic_without_drift_and_the_file_the_apps(
    alembic_project: AlembicProject, tmp_path: Path
) -> None:
    db = alembic_project.db
    before = Baseline.of(db)
    serve = ["sqlgate", "serve", "--db", str(db)]
    async with agent_session(serve, cwd=alembic_project.folder, home=tmp_path / "home") as agent:
        await agent_works_beside_sqlalchemy(agent, alembic_project)
    assert alembic_project.book_titles() == [
        "Notes on the Engine", "Sketch of the Engine", "Translation of the Sketch",
    ]  # fmt: skip
    assert_alembic_sees_no_drift(alembic_project)
    assert_still_the_apps(db, before, "delete")
    assert_home(db)
