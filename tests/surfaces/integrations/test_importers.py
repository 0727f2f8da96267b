"""`sqlgate import mycorrhiza|mcp-sqlite-memory|claims-mcp PATH` through click's CliRunner.

Each source is built in tmp_path the way its tool writes it. An import verifies the source
before taking anything (a broken chain is refused with the first broken seq or id, exit
2), redacts like memory content, never duplicates on a re-run, records its provenance as
an event of kind `import`, never writes to the source, and writes nothing with --dry-run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import FLAGS, Settings
from sqlgate.errors import SqlgateError
from sqlgate.memory.chain import event_hash
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations.importers import BrokenSource, run_import
from sqlgate.surfaces.integrations.importers.readers import mycorrhiza_hash, read_mycorrhiza
from tests.records import connect_both, records_path

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # publish-gate: allow
ZEROS = "0" * 64


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


# -- building sources as their tools write them -------------------------------------------
def build_mycorrhiza(
    path: Path, items: Sequence[tuple[str, list[str]]], *, start: int = 1
) -> list[str]:
    """A `chain` table holding `items` (content, tags); returns the links' hashes."""
    conn = connect_both(path)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS chain (seq INTEGER PRIMARY KEY, ts TEXT, prev_hash TEXT, "
        "content TEXT, tags TEXT, hash TEXT)"
    )
    row = conn.execute("SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (start - 1, "genesis") if row is None else (row[0], row[1])
    hashes = []
    for content, tags in items:
        seq += 1
        ts = f"2026-01-{seq % 28 + 1:02d}T10:00:00Z"
        digest = mycorrhiza_hash(seq, ts, prev, content, tags)
        conn.execute(
            "INSERT INTO chain VALUES (?, ?, ?, ?, ?, ?)",
            (seq, ts, prev, content, json.dumps(tags), digest),
        )
        hashes.append(digest)
        prev = digest
    conn.close()
    return hashes


def sqlite_memory_hash(*fields: object) -> str:
    text = json.dumps(list(fields), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def build_sqlite_memory(
    path: Path,
    events: Sequence[tuple[str, str]],
    checkpoints: Sequence[tuple[str, int]] = (),
    *,
    wal: bool = False,
) -> None:
    """memory_events (kind, content) and memory_checkpoints (summary, last_event_id) as
    mcp-sqlite-memory writes them."""
    conn = connect_both(path)
    if wal:
        conn.execute("PRAGMA journal_mode = wal")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, "
        "session TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'note', content TEXT NOT NULL, "
        "prev_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE);"
        "CREATE TABLE IF NOT EXISTS memory_checkpoints (id INTEGER PRIMARY KEY, ts TEXT NOT "
        "NULL, session TEXT NOT NULL, summary TEXT NOT NULL, last_event_id INTEGER NOT NULL, "
        "head_hash TEXT NOT NULL);"
    )
    row = conn.execute("SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1").fetchone()
    last, prev = (0, ZEROS) if row is None else (row[0], row[1])
    for kind, content in events:
        last += 1
        ts = f"2026-02-01T09:{last % 60:02d}:00Z"
        digest = sqlite_memory_hash(last, ts, "20260201T090000Z-ab12", kind, content, prev)
        conn.execute(
            "INSERT INTO memory_events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (last, ts, "20260201T090000Z-ab12", kind, content, prev, digest),
        )
        prev = digest
    for summary, anchor in checkpoints:
        found = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (anchor,)).fetchone()
        head = ZEROS if found is None else found[0]
        conn.execute(
            "INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) "
            "VALUES ('2026-02-02T00:00:00Z', 'old-session', ?, ?, ?)",
            (summary, anchor, head),
        )
    conn.close()


def build_claims_mcp(path: Path, claims: Sequence[dict[str, Any]]) -> None:
    """A claims table as claims-mcp (bun:sqlite) creates it."""
    conn = connect_both(path)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS claims (id TEXT PRIMARY KEY, claim TEXT NOT NULL, "
        "entity TEXT NOT NULL, kind TEXT NOT NULL, volatility TEXT NOT NULL, confidence REAL "
        "NOT NULL, asserted_rank INTEGER, source TEXT NOT NULL, evidence_json TEXT NOT NULL "
        "DEFAULT '[]', last_confirmed TEXT, state TEXT NOT NULL DEFAULT 'active', created_at "
        "TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE (entity, kind, claim))"
    )
    for number, claim in enumerate(claims, 1):
        row = {
            "id": f"cl_{number:016x}", "kind": "fact", "volatility": "slow", "confidence": 0.8,
            "asserted_rank": None, "source": "declared", "state": "active",
            "last_confirmed": "2026-03-01T00:00:00.000Z",
            "created_at": f"2026-02-{number:02d}T00:00:00.000Z",
            "updated_at": "2026-03-01T00:00:00.000Z", **claim,
        }  # fmt: skip
        conn.execute(
            "INSERT OR REPLACE INTO claims (id, claim, entity, kind, volatility, confidence, "
            "asserted_rank, source, last_confirmed, state, created_at, updated_at) VALUES "
            "(:id, :claim, :entity, :kind, :volatility, :confidence, :asserted_rank, :source, "
            ":last_confirmed, :state, :created_at, :updated_at)",
            row,
        )
    conn.close()


def sql(path: Path, statement: str, params: Sequence[Any] = ()) -> None:
    conn = connect_both(path)
    conn.execute(statement, params)
    conn.close()


# -- running the command and reading the result -------------------------------------------
def run(db: Path, source: str, path: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["import", source, str(path), "--db", str(db), *args], prog_name="sqlgate"
    )


def report(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def failed(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sqlgate: error: ")
    return lines[0]


def rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(query))
    finally:
        conn.close()


def events(db: Path) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT id, ts, session, kind, content, tags FROM memory_events ORDER BY id")


def chain_ok(db: Path) -> bool:
    with Service.open(Settings(db=db)) as service:
        return bool(json.loads(service.verify_chain())["ok"])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


# -- mycorrhiza -----------------------------------------------------------------------------
def test_mycorrhiza_import_keeps_content_tags_and_time_and_records_provenance(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    hashes = build_mycorrhiza(source, [("first thought", ["b", "a"]), ("héllo", [])])

    done = report(run(db, "mycorrhiza", source, "--json"))

    assert (done["status"], done["events"]) == ("imported", 2)
    assert done["head_hash"] == hashes[-1]
    imported = events(db)
    assert [(e[3], e[4], e[5]) for e in imported[:2]] == [
        ("note", "first thought", '["a","b"]'),
        ("note", "héllo", "[]"),
    ]
    assert imported[0][1] == "2026-01-02T10:00:00.000Z"  # the source's moment, normalised
    event_id, _, session, kind, content, tags = imported[2]
    assert (event_id, kind, json.loads(tags)) == (done["provenance_event"], "import",
                                                   ["import", "mycorrhiza"])  # fmt: skip
    assert session.startswith("import-")
    record = json.loads(content)
    assert record["path"] == str(source.absolute())
    assert (record["head_hash"], record["last_ref"], record["events"]) == (hashes[-1], 2, 2)
    assert ("import", 1) in rows(db, "SELECT tool, ok FROM query_log")  # audited as a call
    assert chain_ok(db)


def test_mycorrhiza_human_output_says_what_was_imported(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", [])])
    result = run(db, "mycorrhiza", source)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("imported: 1 event from mycorrhiza ")
    assert "recorded as event 2 (kind import)" in result.stdout


def _edit_content(path: Path) -> None:
    sql(path, "UPDATE chain SET content = 'changed' WHERE seq = 3")


def _relink(path: Path) -> None:
    sql(path, "UPDATE chain SET prev_hash = ? WHERE seq = 3", ("f" * 64,))


def _drop_middle(path: Path) -> None:
    sql(path, "DELETE FROM chain WHERE seq = 3")


def _bad_genesis(path: Path) -> None:
    sql(path, "UPDATE chain SET prev_hash = 'origin' WHERE seq = 1")


def _bad_tags(path: Path) -> None:
    sql(path, "UPDATE chain SET tags = 'not json' WHERE seq = 2")


@pytest.mark.parametrize(
    ("tamper", "broken_seq"),
    [
        pytest.param(_edit_content, 3, id="edited-content"),
        pytest.param(_relink, 3, id="relinked-prev-hash"),
        pytest.param(_drop_middle, 4, id="deleted-link"),
        pytest.param(_bad_genesis, 1, id="first-link-not-genesis"),
        pytest.param(_bad_tags, 2, id="tags-not-json"),
    ],
)
def test_broken_mycorrhiza_chain_is_refused_at_its_first_broken_seq(
    tmp_path: Path, db: Path, tamper: Callable[[Path], None], broken_seq: int
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [(f"item {n}", ["t"]) for n in range(5)])
    tamper(source)

    line = failed(run(db, "mycorrhiza", source), 2)

    assert f"broken at seq {broken_seq}:" in line
    assert "nothing was imported" in line
    assert not db.exists()
    with pytest.raises(BrokenSource) as caught:
        read_mycorrhiza(source)
    assert caught.value.first_broken == broken_seq


def test_rerun_imports_nothing_and_a_grown_source_only_its_new_links(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", []), ("two", [])])
    report(run(db, "mycorrhiza", source, "--json"))
    before = events(db)

    again = report(run(db, "mycorrhiza", source, "--json"))
    assert again["status"] == "already imported"
    assert events(db) == before

    build_mycorrhiza(source, [("three", ["new"])])
    grown = report(run(db, "mycorrhiza", source, "--json"))
    assert (grown["status"], grown["events"], grown["after"]) == ("imported", 1, 2)
    assert [e[4] for e in events(db) if e[3] == "note"] == ["one", "two", "three"]
    assert report(run(db, "mycorrhiza", source, "--json"))["status"] == "already imported"
    assert chain_ok(db)


def test_a_different_chain_at_the_same_path_is_imported_whole(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", [])])
    report(run(db, "mycorrhiza", source, "--json"))
    source.unlink()
    build_mycorrhiza(source, [("other", []), ("chain", [])])

    done = report(run(db, "mycorrhiza", source, "--json"))

    assert (done["events"], done.get("after")) == (2, None)


def test_secrets_in_source_content_are_redacted_and_private_blocks_dropped(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(
        source,
        [
            (f"deploy with password=hunter2hunter2 and {AWS_KEY}", ["deploy", AWS_KEY]),
            ("<private>all of it</private>", []),
        ],
    )

    done = report(run(db, "mycorrhiza", source, "--json"))

    stored = [e for e in events(db) if e[3] == "note"]
    assert [(e[4], e[5]) for e in stored] == [
        ("deploy with password=[REDACTED:secret] and [REDACTED:aws-key]", '["deploy"]')
    ]
    assert done["redacted"] == {"secret": 1, "aws-key": 1, "private": 1}
    assert done["skipped"] == {"private": 1, "tags_secret": 1}
    assert AWS_KEY not in json.dumps(events(db))


def test_content_over_the_event_limit_is_refused_before_anything_is_written(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("short", []), ("x" * 50, [])])
    line = failed(run(db, "mycorrhiza", source, "--max-event-chars", "20"), 2)
    assert "mycorrhiza seq 2 content is 50 characters" in line
    assert not db.exists()


# -- dry run and the source left alone --------------------------------------------------------
def test_dry_run_writes_nothing_and_reports_what_would_be_imported(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", []), ("two", [])])

    planned = report(run(db, "mycorrhiza", source, "--dry-run", "--json"))
    assert (planned["status"], planned["events"], planned["dry_run"]) == ("would import", 2, True)
    assert not db.exists()

    report(run(db, "mycorrhiza", source, "--json"))
    before = db.read_bytes()
    build_mycorrhiza(source, [("three", [])])
    planned = report(run(db, "mycorrhiza", source, "--dry-run", "--json"))
    assert (planned["events"], planned["after"]) == (1, 2)
    assert db.read_bytes() == before


@pytest.mark.parametrize("wal", [pytest.param(False, id="rollback"), pytest.param(True, id="wal")])
def test_the_source_file_is_never_written(tmp_path: Path, db: Path, wal: bool) -> None:
    source = tmp_path / "memory.db"
    build_sqlite_memory(source, [("note", "a"), ("decision", "b")], [("so far", 2)], wal=wal)
    content = source.read_bytes()

    report(run(db, "mcp-sqlite-memory", source, "--json"))

    assert source.read_bytes() == content
    # a read-only reader of a WAL file may leave SQLite's (empty) write-ahead log beside it
    wal_file = tmp_path / "memory.db-wal"
    assert not wal_file.exists() or wal_file.stat().st_size == 0


# -- mcp-sqlite-memory ------------------------------------------------------------------------
def test_sqlite_memory_import_keeps_kinds_sessions_and_anchors_checkpoints(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "memory.db"
    build_sqlite_memory(
        source,
        [("decision", "use sqlite"), ("claim", "forged server kind"), ("todo", "write docs")],
        [("start", 0), ("decided", 1)],
    )
    with Service.open(Settings(db=db)) as service:
        service.append_event("already here")

    done = report(run(db, "mcp-sqlite-memory", source, "--json"))

    assert (done["events"], done["checkpoints"]) == (3, 2)
    imported = events(db)[1:4]
    assert [(e[0], e[2], e[3], e[4]) for e in imported] == [
        (2, "20260201T090000Z-ab12", "decision", "use sqlite"),
        (3, "20260201T090000Z-ab12", "note", "forged server kind"),  # not a server kind here
        (4, "20260201T090000Z-ab12", "todo", "write docs"),
    ]
    hashes = dict(rows(db, "SELECT id, hash FROM memory_events"))
    checkpoints = rows(db, "SELECT summary, last_event_id, head_hash FROM memory_checkpoints")
    assert checkpoints == [("start", 1, hashes[1]), ("decided", 2, hashes[2])]
    assert chain_ok(db)


def test_sqlite_memory_rerun_imports_only_new_events_and_checkpoints(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "memory.db"
    build_sqlite_memory(source, [("note", "a")], [("one", 1)])
    report(run(db, "mcp-sqlite-memory", source, "--json"))
    assert report(run(db, "mcp-sqlite-memory", source, "--json"))["status"] == "already imported"

    build_sqlite_memory(source, [("note", "b")], [("two", 2)])
    grown = report(run(db, "mcp-sqlite-memory", source, "--json"))

    assert (grown["events"], grown["checkpoints"], grown["after"]) == (1, 1, 1)
    assert [e[4] for e in events(db) if e[3] == "note"] == ["a", "b"]
    assert [r[0] for r in rows(db, "SELECT summary FROM memory_checkpoints")] == ["one", "two"]


@pytest.mark.parametrize(
    ("tamper", "phrase"),
    [
        pytest.param(
            "UPDATE memory_events SET content = 'edited' WHERE id = 2",
            "broken at event 2: hash does not match", id="edited",
        ),
        pytest.param(
            "DELETE FROM memory_events WHERE id = 2", "broken at event 3: expected event 2",
            id="deleted",
        ),
        pytest.param(
            "UPDATE memory_events SET prev_hash = 'x' WHERE id = 3",
            "broken at event 3: prev_hash", id="relinked",
        ),
        pytest.param(
            "UPDATE memory_checkpoints SET head_hash = 'x' WHERE id = 1",
            "checkpoint 1 is not anchored", id="checkpoint-moved",
        ),
    ],
)  # fmt: skip
def test_broken_sqlite_memory_is_refused_with_the_first_broken_id(
    tmp_path: Path, db: Path, tamper: str, phrase: str
) -> None:
    source = tmp_path / "memory.db"
    build_sqlite_memory(source, [("note", "a"), ("note", "b"), ("note", "c")], [("x", 1)])
    sql(source, tamper)
    line = failed(run(db, "mcp-sqlite-memory", source), 2)
    assert phrase in line
    assert not db.exists()


@pytest.mark.parametrize("genesis", ["", "genesis", None, "1" * 64])
def test_a_wrong_genesis_says_what_the_importer_expects(
    tmp_path: Path, db: Path, genesis: str | None
) -> None:
    source = tmp_path / "memory.db"
    build_sqlite_memory(source, [("note", "a")])
    conn = connect_both(source)
    conn.execute("CREATE TABLE copy AS SELECT * FROM memory_events")
    conn.execute("DROP TABLE memory_events")
    conn.execute("CREATE TABLE memory_events (id INTEGER PRIMARY KEY, ts, session, kind, "
                 "content, prev_hash, hash)")  # fmt: skip
    conn.execute("INSERT INTO memory_events SELECT * FROM copy")
    conn.execute("UPDATE memory_events SET prev_hash = ?", (genesis,))
    conn.close()
    line = failed(run(db, "mcp-sqlite-memory", source), 2)
    assert (
        f"broken at event 1: event 1's prev_hash is {genesis!r}; this importer expects 64 "
        "zeros (the genesis of mcp-sqlite-memory and of sqlgate): see docs/importers.md; "
        "nothing was imported"
    ) in line


def test_a_wrong_mycorrhiza_genesis_says_what_the_importer_expects(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", [])])
    sql(source, "UPDATE chain SET prev_hash = ? WHERE seq = 1", (ZEROS,))
    line = failed(run(db, "mycorrhiza", source), 2)
    assert (
        f"broken at seq 1: the first link's prev_hash is '{ZEROS}'; this importer expects "
        "'genesis' (mycorrhiza's genesis): see docs/importers.md"
    ) in line


def test_import_help_points_at_the_formats_and_skip_bad() -> None:
    group = CliRunner().invoke(main, ["import", "--help"], prog_name="sqlgate")
    claims = CliRunner().invoke(main, ["import", "claims-mcp", "--help"], prog_name="sqlgate")
    assert "docs/importers.md" in group.stdout
    assert "--skip-bad" in group.stdout
    assert "--skip-bad" in claims.stdout
    assert "docs/importers.md" in " ".join(claims.stdout.split())


def test_a_sqlgate_database_imports_as_sqlite_memory_under_its_own_hash_rule(
    tmp_path: Path, db: Path
) -> None:
    other = tmp_path / "other.db"
    with Service.open(Settings(db=other)) as service:
        service.append_event("from another sqlgate", "decision", ["x"])
        service.checkpoint("other summary")
    row = rows(other, "SELECT id, ts, session, kind, content, tags, prev_hash, hash "
                      "FROM memory_events")[0]  # fmt: skip
    event_id, ts, session, kind, content, tags, prev_hash, digest = row
    assert digest == event_hash(event_id, ts, session, kind, content, json.loads(tags), prev_hash)

    # another sqlgate's memory is in its records file (the database itself holds none)
    done = report(run(db, "mcp-sqlite-memory", records_path(other), "--json"))

    assert (done["events"], done["checkpoints"]) == (1, 1)
    assert events(db)[0][3:] == (
        "decision", "from another sqlgate", '["x"]',
    )  # fmt: skip


# -- claims-mcp -------------------------------------------------------------------------------
def claims_here(db: Path) -> list[tuple[Any, ...]]:
    return rows(
        db,
        "SELECT entity, kind, claim, volatility, confidence, rank, state, last_confirmed "
        "FROM claims ORDER BY id",
    )


def test_claims_import_keeps_confirmation_rank_and_skips_retired(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    build_claims_mcp(
        source,
        [
            {"entity": "acme", "kind": "priority", "claim": "acme comes first",
             "asserted_rank": 1, "volatility": "stable", "confidence": 0.9},
            {"entity": "launch", "kind": "status", "claim": "on   track",
             "last_confirmed": None, "updated_at": "2026-03-05T12:00:00.000Z"},
            {"entity": "old", "claim": "gone", "state": "retired"},
        ],
    )  # fmt: skip

    done = report(run(db, "claims-mcp", source, "--json"))

    assert (done["claims"], done["skipped"]) == (2, {"retired": 1})
    assert claims_here(db) == [
        ("acme", "priority", "acme comes first", "stable", 0.9, 1, "active",
         "2026-03-01T00:00:00.000Z"),
        ("launch", "status", "on track", "slow", 0.8, None, "active", "2026-03-05T12:00:00.000Z"),
    ]  # fmt: skip
    provenance = rows(db, "SELECT content FROM memory_events WHERE kind = 'import'")
    assert json.loads(provenance[0][0])["head_hash"] == done["head_hash"]


def test_claims_rerun_changes_nothing_and_a_newer_confirmation_updates(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "claims.db"
    build_claims_mcp(source, [{"entity": "acme", "claim": "is a customer"}])
    report(run(db, "claims-mcp", source, "--json"))
    history = rows(db, "SELECT count(*) FROM claims_history")

    assert report(run(db, "claims-mcp", source, "--json"))["status"] == "already imported"
    assert rows(db, "SELECT count(*) FROM claims_history") == history

    build_claims_mcp(source, [{"entity": "acme", "claim": "is a customer",
                               "last_confirmed": "2026-04-01T00:00:00.000Z"}])  # fmt: skip
    refreshed = report(run(db, "claims-mcp", source, "--json"))
    assert refreshed["claims"] == 1
    assert [c[7] for c in claims_here(db)] == ["2026-04-01T00:00:00.000Z"]


def test_secrets_in_claims_are_redacted(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    build_claims_mcp(source, [{"entity": "ci", "claim": f"deploys with {AWS_KEY}"}])
    done = report(run(db, "claims-mcp", source, "--json"))
    assert done["redacted"] == {"aws-key": 1}
    assert [c[2] for c in claims_here(db)] == ["deploys with [REDACTED:aws-key]"]


def test_a_claim_sqlgate_cannot_hold_refuses_the_whole_import(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    build_claims_mcp(source, [{"entity": "a", "claim": "fine"},
                              {"entity": "b", "claim": "odd", "kind": "rumour"}])  # fmt: skip
    line = failed(run(db, "claims-mcp", source), 2)
    assert "claim cl_0000000000000002: kind 'rumour' is not one of" in line
    assert not db.exists()


BAD_ROWS = [
    {"entity": "k", "claim": "odd kind", "kind": "rumour"},
    {"entity": "v", "claim": "odd volatility", "volatility": "sometimes"},
    {"entity": "c", "claim": "too sure", "confidence": 1.5},
    {"entity": "r", "claim": "rank zero", "kind": "priority", "asserted_rank": 0},
    {"entity": "t", "claim": "odd time", "last_confirmed": "last tuesday"},
    {"entity": "e", "claim": "x" * 2001},
]


def many_claims(path: Path, good: int, bad: Sequence[dict[str, Any]]) -> None:
    rows_ = [{"entity": f"good{n}", "claim": f"claim {n}"} for n in range(good)]
    build_claims_mcp(path, [*rows_, *bad])


def test_every_bad_claim_is_listed_and_nothing_is_imported(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    many_claims(source, 3, BAD_ROWS)
    line = failed(run(db, "claims-mcp", source), 2)
    assert "6 of 9 claims cannot be imported: " in line
    for number, problem in [
        (4, "kind 'rumour' is not one of"),
        (5, "volatility 'sometimes' is not one of"),
        (6, "confidence 1.5 is not a number from 0 to 1"),
        (7, "rank 0 is not a whole number from 1 to"),
        (
            8,
            "its confirmation time has the timestamp 'last tuesday', which is neither "
            "ISO-8601 text nor epoch seconds",
        ),
        (9, "claim is 2001 characters, over the limit of 2000"),
    ]:
        assert f"claim cl_{number:016x}: {problem}" in line
    assert line.endswith(
        "; nothing was imported. Fix them in the source, or pass --skip-bad to import the "
        "other claims and list these"
    )
    assert not db.exists()


def test_a_long_list_of_bad_claims_shows_twenty_and_counts_the_rest(
    tmp_path: Path, db: Path
) -> None:
    source = tmp_path / "claims.db"
    many_claims(source, 1, [{"entity": f"b{n}", "claim": "c", "kind": "rumour"}
                            for n in range(25)])  # fmt: skip
    line = failed(run(db, "claims-mcp", source), 2)
    assert "25 of 26 claims cannot be imported: " in line
    assert line.count("kind 'rumour'") == 20
    assert "; and 5 more; nothing was imported" in line


def test_skip_bad_imports_the_good_claims_and_lists_the_bad(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    many_claims(source, 3, BAD_ROWS[:2])
    done = report(run(db, "claims-mcp", source, "--skip-bad", "--json"))
    assert (done["status"], done["claims"], done["skipped"]) == ("imported", 3, {"bad": 2})
    assert done["bad"] == [
        {"ref": "cl_0000000000000004",
         "problem": "kind 'rumour' is not one of priority, status, fact, relationship"},
        {"ref": "cl_0000000000000005",
         "problem": "volatility 'sometimes' is not one of stable, slow, volatile"},
    ]  # fmt: skip
    assert [c[0] for c in claims_here(db)] == ["good0", "good1", "good2"]
    (provenance,) = rows(db, "SELECT content FROM memory_events WHERE kind = 'import'")
    assert json.loads(provenance[0])["bad"] == ["cl_0000000000000004", "cl_0000000000000005"]
    assert report(run(db, "claims-mcp", source, "--skip-bad", "--json"))["status"] == (
        "already imported"
    )


def test_skip_bad_says_in_words_which_claims_were_left_out(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    many_claims(source, 1, BAD_ROWS[:1])
    result = run(db, "claims-mcp", source, "--skip-bad")
    assert result.exit_code == 0, result.stderr
    assert "imported: 1 claim from claims-mcp" in result.stdout
    assert "  skipped: bad 1" in result.stdout
    assert "  bad claim cl_0000000000000002: kind 'rumour' is not one of" in result.stdout


def test_skip_bad_dry_run_lists_the_bad_and_writes_nothing(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    many_claims(source, 2, BAD_ROWS[:1])
    planned = report(run(db, "claims-mcp", source, "--skip-bad", "--dry-run", "--json"))
    assert (planned["status"], planned["claims"], len(planned["bad"])) == ("would import", 2, 1)
    assert not db.exists()


def test_claims_land_in_one_transaction_or_not_at_all(
    tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlgate.claims.store import ClaimStore

    source = tmp_path / "claims.db"
    many_claims(source, 3, [])
    with Service.open(Settings(db=db)) as service:  # a database that exists, with memory
        service.append_event("before the import")
    added: list[object] = []
    real = ClaimStore.add_in

    def fail_on_the_third(self: ClaimStore, *args: Any, **kwargs: Any) -> Any:
        if len(added) == 2:
            raise RuntimeError("the disk is full")
        added.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ClaimStore, "add_in", fail_on_the_third)
    with pytest.raises(SqlgateError, match=r"internal error \(RuntimeError\)"):
        run_import(Settings(db=db), "claims-mcp", source)
    assert len(added) == 2  # two claims were written inside the transaction, then rolled back
    assert rows(db, "SELECT count(*) FROM claims") == [(0,)]
    assert rows(db, "SELECT count(*) FROM claims_history") == [(0,)]
    assert [e[4] for e in events(db)] == ["before the import"]
    assert chain_ok(db)


def test_claims_dry_run_writes_nothing(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "claims.db"
    build_claims_mcp(source, [{"entity": "acme", "claim": "is a customer"}])
    planned = report(run(db, "claims-mcp", source, "--dry-run", "--json"))
    assert (planned["status"], planned["claims"]) == ("would import", 1)
    assert not db.exists()


# -- sources that are not what they say -------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "schema", "phrase"),
    [
        pytest.param("mycorrhiza", "CREATE TABLE other (x)", "has no table chain", id="myco-table"),
        pytest.param(
            "mycorrhiza", "CREATE TABLE chain (seq, ts, content, hash)",
            "lacks the columns prev_hash, tags", id="myco-columns",
        ),
        pytest.param(
            "mcp-sqlite-memory", "CREATE TABLE memory_events (id, ts, content)",
            "lacks the columns session, kind, prev_hash, hash", id="memory-columns",
        ),
        pytest.param(
            "mcp-sqlite-memory",
            "CREATE TABLE memory_events (id, ts, session, kind, content, prev_hash, hash)",
            "has no table memory_checkpoints", id="memory-no-checkpoints",
        ),
        pytest.param(
            "claims-mcp", "CREATE TABLE claims (id, entity, claim)",
            "lacks the columns kind, volatility, confidence", id="claims-columns",
        ),
    ],
)  # fmt: skip
def test_a_source_without_the_expected_tables_is_refused_with_what_is_missing(
    tmp_path: Path, db: Path, source: str, schema: str, phrase: str
) -> None:
    path = tmp_path / "source.db"
    sql(path, schema)
    line = failed(run(db, source, path), 2)
    assert phrase in line
    assert not db.exists()


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, db: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just text, not a database\n" * 100)
    assert "is not a SQLite database" in failed(run(db, "mycorrhiza", path), 2)


def test_a_missing_source_file_is_not_found(tmp_path: Path, db: Path) -> None:
    assert "no source file at" in failed(run(db, "claims-mcp", tmp_path / "nope.db"), 3)


def test_the_target_database_cannot_import_itself(tmp_path: Path, db: Path) -> None:
    with Service.open(Settings(db=db)) as service:
        service.append_event("x")
    assert "is the database being imported into" in failed(run(db, "mcp-sqlite-memory", db), 2)


# -- the chain rule, as a property --------------------------------------------------------------
texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(st.tuples(texts, st.lists(st.sampled_from("abc"), max_size=2)), min_size=1,
                   max_size=6),
    victim=st.integers(min_value=0, max_value=5),
)  # fmt: skip
def test_any_edited_link_is_found_at_its_own_seq(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, list[str]]], victim: int
) -> None:
    path = tmp_path_factory.mktemp("prop") / "myco.db"
    build_mycorrhiza(path, items)
    assert len(read_mycorrhiza(path).events) == len(items)
    seq = victim % len(items) + 1
    sql(path, "UPDATE chain SET content = content || '!' WHERE seq = ?", (seq,))
    with pytest.raises(BrokenSource) as caught:
        read_mycorrhiza(path)
    assert caught.value.first_broken == seq


def test_run_import_api_reports_without_the_cli(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "myco.db"
    build_mycorrhiza(source, [("one", [])])
    done = run_import(Settings(db=db), "mycorrhiza", source, wall_clock=lambda: 1.8e9)
    assert (done.status, done.events) == ("imported", 1)
    provenance_ts = rows(db, "SELECT ts FROM memory_events WHERE kind = 'import'")
    assert provenance_ts == [("2027-01-15T08:00:00.000Z",)]
