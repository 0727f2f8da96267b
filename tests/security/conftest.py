"""The world adversarial calls run against: a seeded database, a watched folder, a fast clock.

The database lives in `<tmp>/db/`; `<tmp>/outside/` is where ATTACH and VACUUM INTO attacks
point, and the working directory during each test, so a relative file name lands there too.
The whole `<tmp>` folder is watched for new files. The clock moves one second on every
reading, so with a 500 s budget a statement gets ~500 progress checks (~100k VM steps):
CPU bombs time out deterministically and at once, while real statements finish.
The memory holds a few events and a checkpoint, written through the server's own tools, so
the memory tables, their full-text index and its shadow tables have rows to protect.
`claims_world` adds claims (live, ranked, a status, a retired one), also written through
the tools, so the claims tables, their history and the claim events have rows to protect.
The wall clock is fixed (2026-01-01), so what decays and what is stale never depends on the
day the suite runs.

`world` takes a parameter (indirect): PLAIN, the seed above; SAME_NAMES, the seed plus the
app's own tables named like sqlgate's records (query_log, members, claims, memory_events,
server_info, undo_changesets), with the records' column names and a row each. A bare name
then means the user's table: writes to it are judged like any user table's, and sqlgate's
records (schema `sqlgate`) must stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.errors import SqlError
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both
from tests.security.fingerprint import DatabaseState, capture

MAX_UPDATE_ROWS = 5
QUERY_TIMEOUT = 500.0

SEED = """
CREATE TABLE items(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    qty INTEGER NOT NULL DEFAULT 0
);
INSERT INTO items(name, qty) VALUES
    ('apple', 3), ('pear', 7), ('plum', 1), ('fig', 12), ('kiwi', 4), ('lime', 9),
    ('date', 2), ('sloe', 5), ('yuzu', 8), ('quince', 6), ('delete-all', 0), ('rebuild', 0);
CREATE INDEX items_name ON items(name);
CREATE TABLE parents(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE children(
    id INTEGER PRIMARY KEY,
    parent_id INTEGER NOT NULL REFERENCES parents(id) ON DELETE CASCADE ON UPDATE CASCADE,
    label TEXT
);
INSERT INTO parents VALUES (1, 'ada'), (2, 'bo'), (3, 'cy');
INSERT INTO children(parent_id, label) VALUES
    (1, 'a1'), (1, 'a2'), (1, 'a3'), (2, 'b1'), (2, 'b2'), (2, 'b3'), (3, 'c1'), (3, 'c2'),
    (3, 'c3');
CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO notes(body) VALUES ('first note');
CREATE VIEW cheap_items AS SELECT id, name FROM items WHERE qty < 5;
CREATE VIRTUAL TABLE docs USING fts5(title, body);
INSERT INTO docs(title, body) VALUES
    ('alpha', 'the quick brown fox'), ('beta', 'jumps over the lazy dog'),
    ('gamma', 'sphinx of black quartz'), ('delta', 'judge my vow'),
    ('epsilon', 'pack my box'), ('zeta', 'with five dozen liquor jugs'),
    ('eta', 'how vexingly quick'), ('theta', 'daft zebras jump');
CREATE VIRTUAL TABLE tokens USING fts5(body, content='');
INSERT INTO tokens(rowid, body) SELECT rowid, body FROM docs;
CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx, miny, maxy);
INSERT INTO boxes VALUES
    (1, 0, 1, 0, 1), (2, 1, 2, 1, 2), (3, 2, 3, 2, 3), (4, 3, 4, 3, 4),
    (5, 4, 5, 4, 5), (6, 5, 6, 5, 6), (7, 6, 7, 6, 7), (8, 7, 8, 7, 8);
"""


# (content, kind, tags): the first content is an FTS5 command, for attacks that read it from a row
MEMORY = (
    ("delete-all", "note", ["fts"]),
    ("rebuild", "note", []),
    ("deploy fixed: the cache key now includes the region", "decision", ["cache", "deploy"]),
)
CHECKPOINT = "security suite: three events to keep intact"
WALL_START = 1767225600.0  # 2026-01-01T00:00:00Z

# (entity, kind, claim, rank): claim ids 1..4 in this order; claim 4 is retracted
CLAIMS = (
    ("acme", "priority", "acme is priority one", 1),
    ("globex", "priority", "globex is priority two", 2),
    ("launch", "status", "the launch is on schedule", None),
    ("acme", "fact", "acme ships on fridays", None),
)
RETIRED_CLAIM = 4


PLAIN, SAME_NAMES = "plain", "same-names"
# the app's own tables, named like sqlgate's (issue 33: the user's file holds no server table)
APP_TABLES = ("query_log", "members", "claims", "memory_events", "server_info", "undo_changesets")


@dataclass
class World:
    service: Service
    root: Path  # watched for new files
    outside: Path  # where file-writing attacks point
    clock: FakeClock

    def state(self) -> DatabaseState:
        return capture(self.service, self.root)


def seed(path: Path) -> None:
    """User objects, written by a plain connection as any program could."""
    conn = connect_both(path)
    try:
        conn.execute(SEED)
    finally:
        conn.close()


def seed_app_tables(path: Path, prefix: str = "") -> None:
    """The app's own `prefix + name` for each of APP_TABLES, with the columns of sqlgate's
    table of that name (no constraints but an INTEGER PRIMARY KEY id) and one row."""
    conn = connect_both(path)
    try:
        with conn:
            for name in APP_TABLES:
                columns = [
                    (str(column), bool(pk))
                    for _, column, _, _, _, pk in conn.execute(
                        "SELECT * FROM pragma_table_info(?, 'sqlgate')", (name,)
                    )
                ]
                defs = ", ".join(
                    f"{c} INTEGER PRIMARY KEY" if pk and c == "id" else c for c, pk in columns
                )
                conn.execute(f"CREATE TABLE main.{prefix}{name}({defs})")
                names = ", ".join(c for c, _ in columns)
                values = ", ".join("1" if c == "id" else f"'app {c}'" for c, _ in columns)
                conn.execute(f"INSERT INTO main.{prefix}{name}({names}) VALUES ({values})")
    finally:
        conn.close()


@pytest.fixture
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    (tmp_path / "db").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    clock = FakeClock(step=1.0)
    settings = Settings(
        db=tmp_path / "db" / "agent.db",
        query_timeout=QUERY_TIMEOUT,
        max_update_rows=MAX_UPDATE_ROWS,
    )
    service = Service.open(
        settings, clock=clock, wall_clock=FakeClock(start=WALL_START), session="s-security"
    )
    try:
        seed(settings.db)
        if getattr(request, "param", PLAIN) == SAME_NAMES:
            seed_app_tables(settings.db)
        service.read_query("SELECT count(*) FROM items")  # older audit rows to keep intact
        with pytest.raises(SqlError):
            service.read_query("SELECT * FROM no_such_table")
        for content, kind, tags in MEMORY:
            service.append_event(content, kind, tags)
        service.checkpoint(CHECKPOINT)
        yield World(service, tmp_path, outside, clock)
    finally:
        service.close()


@pytest.fixture
def claims_world(world: World) -> World:
    """The world, with claims written by the claims tools (and one of them retracted)."""
    for entity, kind, text, rank in CLAIMS:
        world.service.claim_add(entity, kind, text, rank=rank)
    world.service.claim_retract(RETIRED_CLAIM)
    return world
