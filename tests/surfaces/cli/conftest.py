"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest

from sqlgate.config import FLAGS


@pytest.fixture
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the developer's shell must not leak into a test (a module takes it with
    `pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")`)."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
