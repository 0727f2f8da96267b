"""Server objects: the registry of what the server owns, and migrations by `user_version`.

The objects live in the database's records file (`records.sqlite` of its home, see
`sqlgate.home`), sqlgate's own file: `check_owner` and `migrate` run on it, never on the
user's database, whose header and schema sqlgate leaves as they are. Agents read these
objects under the schema `sqlgate` (the records attached read-only); no tool may write,
drop, alter, rename, replace, index or attach a trigger to any of them. Later features add
their objects by appending a `Migration` and its `ServerObject`s.

A new records file takes the text encoding of the user's file (`migrate`'s `encoding`):
SQLite attaches only files of the main file's encoding, so a UTF-16 database gets UTF-16
records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.names import fold_name
from sqlgate.errors import StartupError

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "REGISTRY",
    "Migration",
    "ServerObject",
    "check_owner",
    "migrate",
    "protected_names",
    "text_encoding",
]

# "SQGT": marks a file whose user_version is sqlgate's schema version
APPLICATION_ID = 0x53514754
# the database header's text encoding field (offset 56, big-endian), as PRAGMA encoding names it
_ENCODINGS = {1: "UTF-8", 2: "UTF-16le", 3: "UTF-16be"}
_ENCODING_OFFSET = 56
FTS5_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")
# the audit queue's token of a query_log row; NULL for rows written at once (and for a
# detail that is not JSON, which json_extract would refuse)
QUEUED_KEY = "(CASE WHEN json_valid(detail) THEN json_extract(detail, '$.queued') END)"


@dataclass(frozen=True)
class ServerObject:
    name: str
    kind: str  # table, view, trigger, index, fts5


@dataclass(frozen=True)
class Migration:
    version: int
    summary: str
    statements: tuple[str, ...]
    objects: tuple[ServerObject, ...]


def _append_only(table: str) -> tuple[tuple[str, ...], tuple[ServerObject, ...]]:
    """Triggers refusing UPDATE, DELETE and REPLACE of existing rows, from any connection.

    REPLACE deletes the old row without firing DELETE triggers (unless recursive_triggers
    is on), so an INSERT that would hit an existing id is refused before it runs.
    """
    refuse = f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
    statements = (
        f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} {refuse}",
        f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} {refuse}",
        f"CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table} "
        f"WHEN EXISTS (SELECT 1 FROM {table} WHERE id = NEW.id) {refuse}",
    )
    objects = tuple(
        ServerObject(f"{table}_no_{verb}", "trigger") for verb in ("update", "delete", "replace")
    )
    return statements, objects


_LOG_TRIGGERS, _LOG_TRIGGER_OBJECTS = _append_only("query_log")
_EVENT_TRIGGERS, _EVENT_TRIGGER_OBJECTS = _append_only("memory_events")
_CHECKPOINT_TRIGGERS, _CHECKPOINT_TRIGGER_OBJECTS = _append_only("memory_checkpoints")
_HISTORY_TRIGGERS, _HISTORY_TRIGGER_OBJECTS = _append_only("claims_history")

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "audit log: query_log with its views query_errors and query_patterns",
        (
            """CREATE TABLE query_log (
                id INTEGER PRIMARY KEY,
                ts TEXT NOT NULL,
                session TEXT NOT NULL,
                tool TEXT NOT NULL,
                query TEXT,
                ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
                rows INTEGER,
                error TEXT,
                duration_ms REAL,
                detail TEXT
            )""",
            *_LOG_TRIGGERS,
            """CREATE VIEW query_errors AS
                SELECT id, ts, session, tool, query, error, duration_ms
                FROM query_log WHERE ok = 0 ORDER BY id DESC""",
            """CREATE VIEW query_patterns AS
                SELECT json_extract(detail, '$.fingerprint') AS fingerprint,
                       count(*) AS calls,
                       sum(ok = 0) AS failures,
                       max(ts) AS last_used,
                       query AS example
                FROM query_log
                WHERE json_extract(detail, '$.fingerprint') IS NOT NULL
                GROUP BY 1
                ORDER BY calls DESC, last_used DESC""",
        ),
        (
            ServerObject("query_log", "table"),
            *_LOG_TRIGGER_OBJECTS,
            ServerObject("query_errors", "view"),
            ServerObject("query_patterns", "view"),
        ),
    ),
    Migration(
        2,
        "memory: the hash-chained event log, its full-text index, and checkpoints",
        (
            # no AUTOINCREMENT: ids are assigned by the chain (previous id + 1), and
            # sqlite_sequence is a table agents may reach in destructive_query
            """CREATE TABLE memory_events (
                id INTEGER PRIMARY KEY,
                ts TEXT NOT NULL,
                session TEXT NOT NULL,
                kind TEXT NOT NULL,
                content TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                prev_hash TEXT NOT NULL,
                hash TEXT NOT NULL
            )""",
            "CREATE INDEX memory_events_by_session ON memory_events (session, id)",
            "CREATE INDEX memory_events_by_kind ON memory_events (kind, id)",
            "CREATE INDEX memory_events_by_ts ON memory_events (ts)",
            *_EVENT_TRIGGERS,
            # external content: the text is stored once, in memory_events; the server adds
            # each event's index row in the same transaction as the event
            """CREATE VIRTUAL TABLE memory_events_fts USING fts5(
                content, tags, content='memory_events', content_rowid='id',
                tokenize='porter unicode61 remove_diacritics 2'
            )""",
            """CREATE TABLE memory_checkpoints (
                id INTEGER PRIMARY KEY,
                ts TEXT NOT NULL,
                session TEXT NOT NULL,
                summary TEXT NOT NULL,
                last_event_id INTEGER NOT NULL,
                head_hash TEXT NOT NULL
            )""",
            *_CHECKPOINT_TRIGGERS,
        ),
        (
            ServerObject("memory_events", "table"),
            ServerObject("memory_events_by_session", "index"),
            ServerObject("memory_events_by_kind", "index"),
            ServerObject("memory_events_by_ts", "index"),
            *_EVENT_TRIGGER_OBJECTS,
            ServerObject("memory_events_fts", "fts5"),
            ServerObject("memory_checkpoints", "table"),
            *_CHECKPOINT_TRIGGER_OBJECTS,
        ),
    ),
    Migration(
        3,
        "claims: beliefs about entities that decay, and the history of every change",
        (
            """CREATE TABLE claims (
                id INTEGER PRIMARY KEY,
                entity TEXT NOT NULL,
                kind TEXT NOT NULL
                    CHECK (kind IN ('priority', 'status', 'fact', 'relationship')),
                claim TEXT NOT NULL,
                volatility TEXT NOT NULL CHECK (volatility IN ('stable', 'slow', 'volatile')),
                confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
                rank INTEGER CHECK (rank IS NULL OR (kind = 'priority' AND rank >= 1)),
                state TEXT NOT NULL
                    CHECK (state IN ('active', 'stale', 'contradicted', 'retired')),
                created_at TEXT NOT NULL,
                last_confirmed TEXT NOT NULL,
                evidence TEXT NOT NULL DEFAULT '[]',
                UNIQUE (entity, kind, claim)
            )""",
            "CREATE INDEX claims_by_state ON claims (state, kind)",
            """CREATE TRIGGER claims_no_delete BEFORE DELETE ON claims
                BEGIN SELECT RAISE(ABORT, 'claims are retired, never deleted'); END""",
            """CREATE TRIGGER claims_retired_is_final BEFORE UPDATE ON claims
                WHEN OLD.state = 'retired'
                BEGIN SELECT RAISE(ABORT, 'a retired claim stays retired'); END""",
            # REPLACE deletes the conflicting row without firing DELETE triggers
            """CREATE TRIGGER claims_no_replace BEFORE INSERT ON claims
                WHEN EXISTS (SELECT 1 FROM claims WHERE id = NEW.id
                    OR (entity = NEW.entity AND kind = NEW.kind AND claim = NEW.claim))
                BEGIN SELECT RAISE(ABORT, 'claims are never replaced; update the claim'); END""",
            """CREATE TABLE claims_history (
                id INTEGER PRIMARY KEY,
                claim_id INTEGER NOT NULL,
                ts TEXT NOT NULL,
                session TEXT NOT NULL,
                action TEXT NOT NULL,
                detail TEXT NOT NULL,
                event_id INTEGER
            )""",
            "CREATE INDEX claims_history_by_claim ON claims_history (claim_id, id)",
            *_HISTORY_TRIGGERS,
        ),
        (
            ServerObject("claims", "table"),
            ServerObject("claims_by_state", "index"),
            ServerObject("claims_no_delete", "trigger"),
            ServerObject("claims_retired_is_final", "trigger"),
            ServerObject("claims_no_replace", "trigger"),
            ServerObject("claims_history", "table"),
            ServerObject("claims_history_by_claim", "index"),
            *_HISTORY_TRIGGER_OBJECTS,
        ),
    ),
    Migration(
        4,
        "row-level undo: the changeset of each destructive DML call, stored in chunks",
        (
            # server-owned, not append-only: the server prunes old changesets and marks
            # undone ones; agents may read both tables but never write them
            """CREATE TABLE undo_changesets (
                id INTEGER PRIMARY KEY,
                ts TEXT NOT NULL,
                session TEXT NOT NULL,
                kind TEXT NOT NULL,
                tables TEXT NOT NULL DEFAULT '[]',
                changes INTEGER NOT NULL,
                bytes INTEGER NOT NULL,
                undone_at TEXT,
                undone_by TEXT
            )""",
            """CREATE TABLE undo_chunks (
                changeset_id INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (changeset_id, seq)
            ) WITHOUT ROWID""",
        ),
        (
            ServerObject("undo_changesets", "table"),
            ServerObject("undo_chunks", "table"),
        ),
    ),
    Migration(
        5,
        "audit queue: rows written late (the write lock was held) are inserted exactly once",
        # a row that waited in the audit queue carries its token in detail ("queued"); a drain
        # interrupted after its commit inserts nothing twice when it runs again
        (
            f"CREATE UNIQUE INDEX query_log_queued ON query_log ({QUEUED_KEY}) "
            f"WHERE {QUEUED_KEY} IS NOT NULL",
        ),
        (ServerObject("query_log_queued", "index"),),
    ),
    Migration(
        6,
        "row-level undo checks: each changeset's tables as they were, and its rows' states",
        (
            # one row per table a changeset changed: which table it was (its catalog row and
            # root page) and its columns, so an undo never writes into another or reshaped one
            """CREATE TABLE undo_table_shapes (
                changeset_id INTEGER NOT NULL,
                name TEXT NOT NULL,
                schema_rowid INTEGER NOT NULL,
                rootpage INTEGER NOT NULL,
                shape TEXT NOT NULL,
                PRIMARY KEY (changeset_id, name)
            ) WITHOUT ROWID""",
            # a 16-byte digest of every row an UPDATE left, in changeset order, in chunks: an
            # UPDATE's changeset holds only the columns it changed
            """CREATE TABLE undo_row_states (
                changeset_id INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                digests BLOB NOT NULL,
                PRIMARY KEY (changeset_id, seq)
            ) WITHOUT ROWID""",
        ),
        (
            ServerObject("undo_table_shapes", "table"),
            ServerObject("undo_row_states", "table"),
        ),
    ),
    Migration(
        7,
        "web console (issue 14): indexes for the audit log's filters by session, tool, time "
        "and failure",
        # the console pages newest first with `id < ?`; each filter walks its index in id
        # order (an index ends with the rowid), so a page reads about as many rows as it shows
        (
            "CREATE INDEX query_log_by_session ON query_log (session)",
            "CREATE INDEX query_log_by_tool ON query_log (tool)",
            "CREATE INDEX query_log_by_ts ON query_log (ts)",
            "CREATE INDEX query_log_failures ON query_log (id) WHERE ok = 0",
        ),
        (
            ServerObject("query_log_by_session", "index"),
            ServerObject("query_log_by_tool", "index"),
            ServerObject("query_log_by_ts", "index"),
            ServerObject("query_log_failures", "index"),
        ),
    ),
    Migration(
        8,
        "undo of every change (issue 19): the database's own id, which every undo id carries; "
        "each changeset's tool, and the objects a CREATE made",
        (
            # one row per fact, written once: the id is random, made when the file is created
            # (or upgraded), so an undo id of another database never selects a call of this one
            """CREATE TABLE server_info (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) WITHOUT ROWID""",
            "INSERT INTO server_info (key, value) VALUES "
            "('database_id', lower(hex(randomblob(4))))",
            """CREATE TRIGGER server_info_no_update BEFORE UPDATE ON server_info
                BEGIN SELECT RAISE(ABORT, 'server_info is append-only'); END""",
            """CREATE TRIGGER server_info_no_delete BEFORE DELETE ON server_info
                BEGIN SELECT RAISE(ABORT, 'server_info is append-only'); END""",
            """CREATE TRIGGER server_info_no_replace BEFORE INSERT ON server_info
                WHEN EXISTS (SELECT 1 FROM server_info WHERE key = NEW.key)
                BEGIN SELECT RAISE(ABORT, 'server_info is append-only'); END""",
            # write_query's changesets are pruned apart from destructive_query's
            "ALTER TABLE undo_changesets ADD COLUMN tool TEXT NOT NULL DEFAULT 'destructive_query'",
            # JSON list of the sqlite_schema rows a CREATE made (undo drops them); NULL for DML
            "ALTER TABLE undo_changesets ADD COLUMN created TEXT",
            # 1: data in undo_chunks, shapes in undo_table_shapes, states in undo_row_states,
            # row digests over each value; 2: the same digests over the row's ascii() text,
            # and data, shapes and states kept in this row when each fits in one chunk (a
            # write_query call then writes one row of undo data, not four tables)
            "ALTER TABLE undo_changesets ADD COLUMN format INTEGER NOT NULL DEFAULT 1",
            "ALTER TABLE undo_changesets ADD COLUMN data BLOB",
            "ALTER TABLE undo_changesets ADD COLUMN shapes TEXT",
            "ALTER TABLE undo_changesets ADD COLUMN digests BLOB",
        ),
        (
            ServerObject("server_info", "table"),
            ServerObject("server_info_no_update", "trigger"),
            ServerObject("server_info_no_delete", "trigger"),
            ServerObject("server_info_no_replace", "trigger"),
        ),
    ),
    Migration(
        9,
        "a team server that knows who did what (issue 22): each audit row's actor, the views "
        "naming it, and the members of an HTTP server with their hashed tokens",
        (
            # NULL on rows written before: who made them was not recorded
            "ALTER TABLE query_log ADD COLUMN actor TEXT",
            # `sqlgate log --actor`, the console's filter, and a member's last use
            "CREATE INDEX query_log_by_actor ON query_log (actor, ts)",
            "DROP VIEW query_errors",
            """CREATE VIEW query_errors AS
                SELECT id, ts, actor, session, tool, query, error, duration_ms
                FROM query_log WHERE ok = 0 ORDER BY id DESC""",
            "DROP VIEW query_patterns",
            """CREATE VIEW query_patterns AS
                SELECT json_extract(detail, '$.fingerprint') AS fingerprint,
                       count(*) AS calls,
                       sum(ok = 0) AS failures,
                       max(ts) AS last_used,
                       query AS example,
                       group_concat(DISTINCT actor) AS actors
                FROM query_log
                WHERE json_extract(detail, '$.fingerprint') IS NOT NULL
                GROUP BY 1
                ORDER BY calls DESC, last_used DESC""",
            # a member is never deleted: `members remove` sets `removed`, so its tokens
            # still say why they fail, and the name may be given to a new member
            """CREATE TABLE members (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                tier TEXT NOT NULL CHECK (tier IN ('read', 'write', 'destructive')),
                created TEXT NOT NULL,
                removed TEXT
            )""",
            # names are unique among current members, ignoring case (Alice is alice)
            "CREATE UNIQUE INDEX members_by_name ON members (name COLLATE NOCASE) "
            "WHERE removed IS NULL",
            # the sha256 of each token, never the token (engine/records/members.py)
            """CREATE TABLE member_tokens (
                digest TEXT PRIMARY KEY,
                member_id INTEGER NOT NULL REFERENCES members (id),
                created TEXT NOT NULL,
                revoked TEXT
            ) WITHOUT ROWID""",
            "CREATE INDEX member_tokens_by_member ON member_tokens (member_id)",
        ),
        (
            ServerObject("query_log_by_actor", "index"),
            ServerObject("members", "table"),
            ServerObject("members_by_name", "index"),
            ServerObject("member_tokens", "table"),
            ServerObject("member_tokens_by_member", "index"),
        ),
    ),
)

# Names the server does not create but protects (an agent's table cannot take them).
# Litestream's own bookkeeping (`sqlgate serve --replicate`): created by Litestream, never by
# a migration; an agent may read them but must not drop or write them under replication.
LITESTREAM_TABLES = ("_litestream_seq", "_litestream_lock")
RESERVED: tuple[ServerObject, ...] = tuple(
    ServerObject(name, "table") for name in LITESTREAM_TABLES
)

REGISTRY: tuple[ServerObject, ...] = (
    *(obj for migration in MIGRATIONS for obj in migration.objects),
    *RESERVED,
)


def protected_names() -> frozenset[str]:
    """Names of every server object, FTS5 shadow tables included, folded as SQLite folds
    them (`engine.names.fold_name`): compare a folded name against them."""
    names: set[str] = set()
    for obj in REGISTRY:
        names.add(fold_name(obj.name))
        if obj.kind == "fts5":
            names.update(fold_name(f"{obj.name}{suffix}") for suffix in FTS5_SHADOW_SUFFIXES)
    return frozenset(names)


def _current_version(conn: apsw.Connection) -> int:
    """sqlgate's schema version of this records file; StartupError when it is not sqlgate's."""
    version = int(conn.pragma("user_version"))
    app_id = int(conn.pragma("application_id"))
    name = conn.filename or "this records file"
    if app_id not in (0, APPLICATION_ID) or (version and app_id != APPLICATION_ID):
        raise StartupError(
            f"{name} belongs to another application (user_version={version}, "
            f"application_id={app_id}), not sqlgate's records; it was left untouched: move it "
            "out of sqlgate's home and sqlgate starts new records there"
        )
    newest = MIGRATIONS[-1].version
    if version > newest:
        raise StartupError(
            f"{name} was written by a newer sqlgate (schema {version}, this one knows "
            f"{newest}); upgrade sqlgate. It was left untouched"
        )
    return version


def text_encoding(path: Path) -> str:
    """The text encoding of the SQLite file at `path`, read from its header ("UTF-8" for a
    file that is missing, empty or has no valid field: SQLite's default)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(_ENCODING_OFFSET + 4)
    except OSError:
        return "UTF-8"
    if len(header) < _ENCODING_OFFSET + 4:
        return "UTF-8"
    code = int.from_bytes(header[_ENCODING_OFFSET:], "big")
    return _ENCODINGS.get(code, "UTF-8")


def check_owner(conn: apsw.Connection) -> int:
    """Refuse, before anything is written, a records file of another application or a newer
    sqlgate.

    Run it on a read-only connection: a refused file must stay byte for byte as it was.
    Returns the file's schema version (0 for a new or foreign-free file).
    """
    return _current_version(conn)


def migrate(conn: apsw.Connection, encoding: str = "UTF-8") -> int:
    """Bring the server objects of the records file up to the newest version; returns it.

    Each migration runs in its own IMMEDIATE transaction, so two servers starting together
    apply it once. `encoding` (`text_encoding` of the user's file) is the text encoding a new
    records file is made in; SQLite ignores it once the file holds anything.
    """
    if encoding != "UTF-8" and _current_version(conn) == 0:
        conn.pragma("encoding", encoding)
    for migration in MIGRATIONS:
        if _current_version(conn) >= migration.version:
            continue
        with immediate_transaction(conn):
            if _current_version(conn) >= migration.version:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.pragma("application_id", APPLICATION_ID)
            conn.pragma("user_version", migration.version)
    return _current_version(conn)
