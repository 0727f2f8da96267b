"""Another program's SQLite database, as the "the user's database stays theirs" tests (issue 19)
build it, and the fingerprint of a folder that must not change."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw


def make_app_db(
    path: Path,
    *,
    wal: bool = False,
    user_version: int = 0,
    app_id: int = 0,
    users: Sequence[str] = ("ada", "grace"),
    extra_tables: Sequence[str] = (),
) -> Path:
    """An application's database: tables (`extra_tables` too), an index, a view, a trigger and
    a few rows, in rollback-journal mode unless `wal`; its header as given."""
    conn = apsw.Connection(str(path))
    try:
        if wal:
            conn.pragma("journal_mode", "wal")
        conn.execute(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL);"
            "CREATE TABLE alembic_version (version_num TEXT PRIMARY KEY);"
            + "".join(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY);" for name in extra_tables)
            + "CREATE INDEX users_by_name ON users (name);"
            "CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;"
            "CREATE TRIGGER orders_positive BEFORE INSERT ON orders WHEN NEW.total < 0 "
            "BEGIN SELECT RAISE(ABORT, 'negative'); END;"
            "INSERT INTO alembic_version VALUES ('3f2a1b');"
        )
        conn.executemany("INSERT INTO users (name) VALUES (?)", [(name,) for name in users])
        conn.pragma("user_version", user_version)
        conn.pragma("application_id", app_id)
    finally:
        conn.close()
    return path


def folder_state(folder: Path, keep: Callable[[Path], bool] = Path.is_file) -> dict[str, str]:
    """sha256 of every file of `folder` that `keep` accepts, by name: what must not change
    (the database and any -wal, -shm or -journal beside it)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file() and keep(path)
    }
