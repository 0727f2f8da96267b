"""A Django project's development database, guarded by sqlgate while Django works on it.

The first test is the framework alone (the control): Django's own commands build the project,
its code writes, and its checks pass; the file checks hold with no agent. The second is an
agent's session through `sqlgate serve --db db.sqlite3` over stdio, its calls interleaved
with the ORM's writes from another process; afterwards Django's drift checks, `check` and
its test client work, and the file is still Django's (tests/e2e/frameworks/checks.py).
Both run in the rollback-journal and WAL modes (Django's `init_command`).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.frameworks.agent import Agent, agent_session
from tests.e2e.frameworks.checks import Baseline, assert_home, assert_still_the_apps
from tests.e2e.frameworks.projects import DjangoProject
from tests.e2e.frameworks.sqlite_file import header, journal

pytestmark = [pytest.mark.e2e, pytest.mark.stdio]

DJANGO_TABLES = {"auth_user", "auth_group", "django_migrations", "django_session", "shop_order"}
HIDDEN = "auth_user.password"
INSERT_ORDER = (
    "INSERT INTO shop_order (customer_id, number, total, shipped, placed_at) "
    "VALUES ((SELECT id FROM auth_user WHERE username = 'admin'), 'A-1', 5, 0, "
    "'2026-12-07 00:00:00')"
)
CREATE_NOTES = "CREATE TABLE agent_notes (id INTEGER PRIMARY KEY, body TEXT)"
NOTES = ("table", "agent_notes", "agent_notes", CREATE_NOTES)


def assert_django_works(project: DjangoProject) -> None:
    """Django's own checks: no model change without a migration, no migration unapplied,
    the system checks, and the admin through its test client (as the superuser)."""
    project.manage("makemigrations", "--check", "--dry-run")
    project.manage("migrate", "--check")
    project.manage("check")
    assert project.admin_requests() == ["200", "True", "200", "200"]


def test_django_alone_builds_writes_and_passes_the_checks(django_project: DjangoProject) -> None:
    """The control, sqlgate nowhere: what the session test asserts holds for Django alone."""
    db = django_project.db
    assert journal(header(db)) == django_project.journal
    before = Baseline.of(db)
    assert {name for _, name, _, _ in before.schema} >= DJANGO_TABLES
    django_project.add_order("D-1")
    django_project.add_order("D-2")
    assert django_project.order_numbers() == ["D-1", "D-2"]
    assert_django_works(django_project)
    assert_still_the_apps(db, before, django_project.journal)


async def agent_works_beside_django(agent: Agent, project: DjangoProject) -> None:
    """Reads, a write and its undo, a destructive call and its undo, a hidden column and the
    audit log; between the calls, Django's ORM writes orders from a process of its own."""
    listed = await agent.call("list_tables")
    assert {line.split(",")[0] for line in listed.splitlines()[1:]} >= DJANGO_TABLES
    users = await agent.call("read_query", query="SELECT username, password FROM auth_user")
    assert users.splitlines() == [
        "username,password", "admin,", "# 1 row", f"# hidden by policy: {HIDDEN}",
    ]  # fmt: skip
    log = await agent.call("read_query", query="SELECT tool FROM sqlgate.query_log ORDER BY id")
    assert log.splitlines()[:3] == ["tool", "list_tables", "read_query"]

    await anyio.to_thread.run_sync(project.add_order, "D-1")
    inserted = await agent.call("write_query", query=INSERT_ORDER)
    await anyio.to_thread.run_sync(project.add_order, "D-2")
    numbers = "SELECT number FROM shop_order ORDER BY number"
    assert (await agent.call("read_query", query=numbers)).splitlines()[1:4] == [
        "A-1", "D-1", "D-2",
    ]  # fmt: skip
    await agent.undo(inserted, "the test order is not needed")

    deleted = await agent.call(
        "destructive_query", query="DELETE FROM shop_order WHERE number = ?", params=["D-1"],
        reason="D-1 looks like a duplicate",
    )  # fmt: skip
    assert "DELETE FROM shop_order WHERE number = ?" in agent.person.asked[-1]
    assert await anyio.to_thread.run_sync(project.order_numbers) == ["D-2"]
    await anyio.to_thread.run_sync(project.add_order, "D-3")
    await agent.undo(deleted, "D-1 was a real order")
    await agent.call("write_query", query=CREATE_NOTES)


@pytest.mark.anyio
async def test_an_agent_session_leaves_django_working_and_the_file_djangos(
    django_project: DjangoProject, tmp_path: Path
) -> None:
    db = django_project.db
    before = Baseline.of(db)
    serve = ["sqlgate", "serve", "--db", str(db), "--hide-column", HIDDEN]
    async with agent_session(serve, cwd=django_project.folder, home=tmp_path / "home") as agent:
        await agent_works_beside_django(agent, django_project)
    assert django_project.order_numbers() == ["D-1", "D-2", "D-3"]
    assert_django_works(django_project)
    assert_still_the_apps(db, before, django_project.journal, created=frozenset({NOTES}))
    assert_home(db)
