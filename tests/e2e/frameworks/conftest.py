"""Each framework's project is built once per test session (a few seconds each), and each
test works on a copy of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.frameworks.projects import (
    AlembicProject,
    DjangoProject,
    build_alembic,
    build_django,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", params=["delete", "wal"])
def django_built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                 ) -> DjangoProject:  # fmt: skip
    """Django's project with its database in the rollback-journal (`delete`) or WAL mode."""
    journal = str(request.param)
    return build_django(tmp_path_factory.mktemp(f"django-{journal}") / "mysite", journal)


@pytest.fixture
def django_project(django_built: DjangoProject, tmp_path: Path) -> DjangoProject:
    return django_built.copy_to(tmp_path / "mysite")


@pytest.fixture(scope="session")
def alembic_built(tmp_path_factory: pytest.TempPathFactory) -> AlembicProject:
    return build_alembic(tmp_path_factory.mktemp("alembic") / "bookshop")


@pytest.fixture
def alembic_project(alembic_built: AlembicProject, tmp_path: Path) -> AlembicProject:
    return alembic_built.copy_to(tmp_path / "bookshop")
