"""Fixtures of the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from tests.surfaces.integrations.fake_home import fake_home


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    """Where the clients look, in a fake HOME (fake_home.py) with a project folder as the cwd."""
    fake_home(tmp_path, monkeypatch)
    return Where.here()
