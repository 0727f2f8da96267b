"""Files as sqlgate 0.1.0 left them: sqlgate's tables inside the user's file (application_id
"SQGT", user_version = schema), the witness, audit queue and snapshots beside it.

`build_010(path, shape)` makes one the old way: a plain file, `engine.schema`'s migrations
run on it (sqlgate's own file: before the agent's tables; an adopted app file: after the
app's own tables, and the app goes on adding tables after the adoption), then the rows a
session leaves (memory events with their chain and witness, audit rows, the undo data of
write_query calls, a member, a claim). The rows are written by this version's service,
which keeps them in a records file, then put into the file's own tables where 0.1.0 kept
them: the undo data then names the file's tables where they are, root pages and all.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.engine.records import AuditQueue, Members
from sqlgate.engine.schema import APPLICATION_ID, MIGRATIONS, REGISTRY, RESERVED
from sqlgate.home import record_files
from sqlgate.service import Service

__all__ = ["QUEUED_TOKEN", "SHAPES", "Legacy", "build_010", "header", "tree_digest", "user_rows"]

UNDO_ID = re.compile(r"; undo: sqlgate undo (?P<id>\d+)@[0-9a-f]{8}")
APP_SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers (id),
    total REAL, note BLOB);
CREATE INDEX orders_by_customer ON orders (customer_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
INSERT INTO customers VALUES (1, 'ada', 'ada@example.org'), (2, 'bob', NULL);
INSERT INTO orders VALUES (1, 1, 99.5, x'00ff'), (2, 1, 250, NULL), (3, 2, 12, 'text');
"""
LATER_SCHEMA = """
CREATE TABLE invoices (id INTEGER PRIMARY KEY, order_id INTEGER, amount REAL);
INSERT INTO invoices VALUES (1, 2, 250), (2, 3, 12);
"""
QUEUED_TOKEN = "s-010/queued-row"  # an audit row 0.1.0 left in <db>.audit-queue
# name: (app tables before the migrations, auto_vacuum, schema version)
SHAPES = {
    "own-memory-db": (False, 0, 9),
    "adopted-wal": (True, 0, 9),
    "adopted-auto-vacuum": (True, 1, 9),
    "adopted-schema-8": (True, 1, 8),
}


@dataclass
class Legacy:
    """A built 0.1.0 file and what a test checks after its move."""

    path: Path
    database_id: str
    shape: str
    undo_ids: list[str] = field(default_factory=list)  # `N@dbid` of each write_query call
    witness: bytes = b""


def header(path: Path) -> tuple[int, int]:
    """(application_id, user_version) read from the file's header."""
    raw = path.read_bytes()[:100]
    return int.from_bytes(raw[68:72], "big"), int.from_bytes(raw[60:64], "big")


def user_rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the app's tables, in rowid order."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            table: conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
            for table in ("customers", "orders", "invoices")
            if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (table,)).fetchone()
        }
    finally:
        conn.close()


def tree_digest(*folders: Path) -> dict[str, str]:
    """sha256 of every file under `folders` (their own names and modes included)."""
    found = {}
    for folder in folders:
        for item in sorted(folder.rglob("*")):
            if item.is_file():
                mode = oct(item.stat().st_mode & 0o777)
                found[str(item)] = hashlib.sha256(item.read_bytes()).hexdigest() + mode
    return found


def _migrate_to(conn: apsw.Connection, version: int) -> None:
    for migration in MIGRATIONS[:version]:
        with conn:
            for statement in migration.statements:
                conn.execute(statement)
            conn.pragma("application_id", APPLICATION_ID)
            conn.pragma("user_version", migration.version)


def _make_file(path: Path, app_first: bool, auto_vacuum: int, version: int) -> str:
    conn = apsw.Connection(str(path))
    try:
        conn.pragma("auto_vacuum", auto_vacuum)
        conn.pragma("journal_mode", "wal")  # 0.1.0 switched every file to WAL
        if app_first:
            conn.execute(APP_SCHEMA)
        _migrate_to(conn, version)
        conn.execute(APP_SCHEMA if not app_first else LATER_SCHEMA)
        found = conn.execute("SELECT value FROM server_info WHERE key = 'database_id'").fetchone()
        # as a user's file for the session that writes the rows (see the module)
        conn.pragma("application_id", 0)
        conn.pragma("user_version", 0)
        return str(found[0])
    finally:
        conn.close()


def _session(service: Service, legacy: Legacy, dbid: str) -> None:
    writes = [
        "UPDATE customers SET email = 'bob@example.org' WHERE id = 2",
        "INSERT INTO orders (customer_id, total) VALUES (2, 300)",
        "UPDATE orders SET total = total + 1 WHERE customer_id = 1",
    ]
    if "invoices" in service.list_tables():
        writes.append("UPDATE invoices SET amount = 0 WHERE id = 1")
    for sql in writes:
        found = UNDO_ID.search(service.write_query(sql))
        assert found, sql
        legacy.undo_ids.append(f"{found['id']}@{dbid}")
    for n in range(3):
        service.append_event(f"event {n}: fixed the orders", kind="note", tags=["orders"])
    service.checkpoint("orders fixed")
    service.claim_add("orders", "fact", "orders.total is in euros")
    Members(service.db.server).add("carol", "write")


def _fold(path: Path, version: int) -> None:
    """The records' rows into the file's own server tables, the header back to sqlgate's."""
    files = record_files(path)
    conn = apsw.Connection(str(path))
    try:
        conn.execute("ATTACH ? AS rec", (str(files.records),))
        with conn:
            for obj in REGISTRY:
                if obj.kind != "table" or obj in RESERVED or obj.name == "server_info":
                    continue
                if not conn.execute(
                    "SELECT 1 FROM main.sqlite_schema WHERE name = ?", (obj.name,)
                ).fetchone():
                    continue
                columns = ", ".join(
                    c for (c,) in conn.execute("SELECT name FROM pragma_table_info(?)", (obj.name,))
                )
                conn.execute(
                    f"INSERT INTO main.{obj.name} ({columns}) SELECT {columns} FROM rec.{obj.name}"
                )
            conn.execute("INSERT INTO memory_events_fts (memory_events_fts) VALUES ('rebuild')")
            conn.pragma("application_id", APPLICATION_ID)
            conn.pragma("user_version", version)
        conn.execute("DETACH rec")
    finally:
        conn.close()
    shutil.move(str(files.witness), path.with_name(path.name + ".witness.json"))
    row = {"ts": "2026-12-01T00:00:00Z", "session": "s-010", "tool": "read_query",
           "query": "SELECT 1", "ok": 1, "rows": 1, "error": None, "duration_ms": 1.0,
           "detail": json.dumps({"queued": QUEUED_TOKEN}), "actor": "local"}  # fmt: skip
    AuditQueue(path.with_name(path.name + ".audit-queue"), 1.0).append(QUEUED_TOKEN, row)
    snapshots = path.with_name(path.name + ".snapshots")
    snapshots.mkdir()
    (snapshots / "20261201T000000000000Z-abcd.sqlite").write_bytes(b"a snapshot")
    shutil.rmtree(files.folder)


def build_010(path: Path, shape: str) -> Legacy:
    """A 0.1.0 file of `shape` (SHAPES) at `path`."""
    app_first, auto_vacuum, version = SHAPES[shape]
    dbid = _make_file(path, app_first, auto_vacuum, version)
    legacy = Legacy(path, dbid, shape)
    service = Service.open(Settings(db=path), session="s-010")
    try:
        _session(service, legacy, dbid)
    finally:
        service.close()
    _fold(path, version)
    legacy.witness = path.with_name(path.name + ".witness.json").read_bytes()
    return legacy
