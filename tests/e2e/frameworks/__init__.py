"""An app's development database, built by its framework's own tools (Django; SQLAlchemy
with Alembic), guarded by sqlgate while the app keeps working on it (issue 33, part 6)."""

import pytest

# the helpers' asserts explain themselves as the tests' do
pytest.register_assert_rewrite(
    "tests.e2e.frameworks.agent", "tests.e2e.frameworks.checks", "tests.e2e.frameworks.projects"
)
