"""docs/hash-contract.md works as printed: its snippets run, and agree with the server.

The snippets are the fenced blocks whose info string carries `title="..."`. Each runs in a
fresh interpreter (as a reader would run it), against databases built through `Service`
and copies tampered with through a plain `sqlite3` connection after dropping the
append-only triggers, as someone with access to the file could.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.records import rebind
from sqlgate.home import record_files
from sqlgate.memory.chain import GENESIS, canonical, event_hash
from sqlgate.service import Service
from tests.conftest import FakeClock

DOC = Path(__file__).resolve().parents[2] / "docs" / "hash-contract.md"
VECTOR_HASH = "6fc0a3258c47bbd21190c9f9f16f7eeea6e0bc04bc373adfd906ca13dda4a771"  # DESIGN.md
VECTOR: tuple[Any, ...] = (
    1, "2026-01-01T00:00:00.000Z", "s-0001", "note", "héllo, chain", ["alpha", "beta"], GENESIS
)  # fmt: skip
WALL_START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
_BLOCK = re.compile(r'^```\w+ title="(?P<title>[^"]+)"\n(?P<body>.*?)^```$', re.M | re.S)

Event = tuple[str, str, list[str]]  # content, kind, tags
EVENTS: list[Event] = [
    ("héllo, chain: the first event", "note", ["alpha", "beta"]),
    ("Decision: run migration 0042 in batches", "decision", ["deploy"]),
    ('a quote " a backslash \\ a tab\tand\nlines; the staging token=abc123xyz', "note", []),
    ("größe ✓ 日本語 and U+2028 \u2028 inside", "finding", ["größe", "deploy"]),
]


def doc_blocks() -> dict[str, str]:
    found = [(m["title"], m["body"]) for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]
    titles = [title for title, _ in found]
    assert len(titles) == len(set(titles)), f"duplicate snippet titles in {DOC.name}: {titles}"
    return dict(found)


def block(title: str) -> str:
    blocks = doc_blocks()
    assert title in blocks, f'{DOC.name} has no block titled "{title}"; it has {list(blocks)}'
    return blocks[title]


def code_lines(title: str) -> list[str]:
    """The snippet's lines that hold code (blank lines are layout)."""
    return [line for line in block(title).splitlines() if line.strip()]


def run_snippet(title: str, *args: Path) -> subprocess.CompletedProcess[str]:
    """The snippet run as `python snippet.py ARGS`, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", block(title), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )


def witness_of(db: Path) -> Path:
    return record_files(db).witness


def records_of(db: Path) -> Path:
    """The records file the snippets read: the chain is there, not in the database."""
    return record_files(db).records


def build_memory(db: Path, events: Sequence[Event] = EVENTS) -> dict[str, Any]:
    """Append `events` through a Service, verify, close; returns verify_chain's answer."""
    with Service.open(
        Settings(db=db),
        clock=FakeClock(),
        wall_clock=FakeClock(WALL_START, step=1.5),
        session="s-20260101T000000Z-d0c5d0",
    ) as service:
        for content, kind, tags in events:
            service.append_event(content, kind, tags)
        service.checkpoint("checkpoints are not part of the chain")
        status: dict[str, Any] = json.loads(service.verify_chain())
    assert status["ok"], status
    return status


def build_memory_copy(tmp_path: Path) -> Path:
    """A database built through Service, in its own folder under tmp_path."""
    db = tmp_path / "witnessed" / "memory.db"
    db.parent.mkdir()
    build_memory(db)
    return db


def server_verdict(db: Path) -> dict[str, Any]:
    with Service.open(Settings(db=db), clock=FakeClock(), session="s-verify") as service:
        verdict: dict[str, Any] = json.loads(service.verify_chain())
    return verdict


def copy_memory(source: Path, target: Path) -> Path:
    """A consistent copy of the database and of its records (WAL included) and witness, the
    copy's records in the copy's own records folder."""
    for origin, copy in ((source, target), (records_of(source), records_of(target))):
        copy.parent.mkdir(parents=True, exist_ok=True)
        with (
            sqlite3.connect(origin.resolve().as_uri() + "?mode=ro", uri=True) as src,
            sqlite3.connect(copy) as dst,
        ):
            src.backup(dst)
        src.close()
        dst.close()
    witness_of(target).write_bytes(witness_of(source).read_bytes())
    # the copied records are bound to the source file: bind them to the copy, as a restore
    # does (engine.records.binding refuses records of another file)
    records = apsw.Connection(str(records_of(target)))
    try:
        rebind(records, target, "copied by the test", "2026-12-07T00:00:00.000Z")
    finally:
        records.close()
    return target


def tamper(db: Path, sql: str, params: Sequence[Any] = ()) -> None:
    """Change the records as someone with write access could: drop the guards, then write."""
    conn = sqlite3.connect(records_of(db))
    try:
        conn.execute("DROP TRIGGER IF EXISTS memory_events_no_update")
        conn.execute("DROP TRIGGER IF EXISTS memory_events_no_delete")
        conn.execute(sql, tuple(params))
        conn.commit()
    finally:
        conn.close()


def rewrite_and_rehash(db: Path, event_id: int, content: str) -> None:
    """Rewrite one event and recompute every hash from it on: a chain that is whole again."""
    conn = sqlite3.connect(records_of(db))
    try:
        conn.execute("DROP TRIGGER IF EXISTS memory_events_no_update")
        (prev,) = conn.execute(
            "SELECT coalesce(max(hash), ?) FROM memory_events WHERE id = ?", (GENESIS, event_id - 1)
        ).fetchone()
        rows = conn.execute(
            "SELECT id, ts, session, kind, content, tags FROM memory_events WHERE id >= ? "
            "ORDER BY id",
            (event_id,),
        ).fetchall()
        for row_id, ts, session, kind, old, tags in rows:
            text = content if row_id == event_id else old
            digest = event_hash(row_id, ts, session, kind, text, json.loads(tags), prev)
            conn.execute(
                "UPDATE memory_events SET content = ?, prev_hash = ?, hash = ? WHERE id = ?",
                (text, prev, digest, row_id),
            )
            prev = digest
        conn.commit()
    finally:
        conn.close()


# -- the test vector ------------------------------------------------------------------------
def test_documented_vector_hash_is_the_design_hash_and_event_hash_agrees() -> None:
    assert block("vector-hash").strip() == VECTOR_HASH
    assert event_hash(*VECTOR) == VECTOR_HASH


def test_documented_canonical_bytes_are_what_the_server_hashes() -> None:
    assert block("vector-canonical").rstrip("\n").encode("utf-8") == canonical(*VECTOR)


def test_vector_snippet_is_three_lines_and_prints_the_documented_hash() -> None:
    assert len(code_lines("verify-vector")) == 3
    result = run_snippet("verify-vector")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == VECTOR_HASH


# -- verifying a whole database -----------------------------------------------------------
def test_chain_snippet_is_about_ten_lines() -> None:
    assert len(code_lines("verify-chain")) <= 11


def test_chain_snippet_reports_ok_and_the_servers_head_on_a_service_database(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    status = build_memory(db)
    result = run_snippet("verify-chain", records_of(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"OK: {len(EVENTS)} events, head {status['head_hash']}"


def test_chain_snippet_reports_ok_on_an_empty_memory(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    build_memory(db, events=[])
    result = run_snippet("verify-chain", records_of(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"OK: 0 events, head {GENESIS}"


TAMPERINGS = [
    pytest.param("UPDATE memory_events SET content = 'rewritten' WHERE id = 2", (), 2,
                 id="content-edited"),
    pytest.param("UPDATE memory_events SET tags = '[\"alpha\"]' WHERE id = 1", (), 1,
                 id="tags-edited"),
    pytest.param("UPDATE memory_events SET kind = 'note' WHERE id = 2", (), 2, id="kind-edited"),
    pytest.param("UPDATE memory_events SET ts = '2025-01-01T00:00:00.000Z' WHERE id = 3", (), 3,
                 id="timestamp-edited"),
    pytest.param("UPDATE memory_events SET session = 's-other' WHERE id = 4", (), 4,
                 id="session-edited"),
    pytest.param("UPDATE memory_events SET prev_hash = ? WHERE id = 3", (GENESIS,), 3,
                 id="link-edited"),
    pytest.param("UPDATE memory_events SET hash = ? WHERE id = 4", ("f" * 64,), 4,
                 id="hash-edited"),
    pytest.param("DELETE FROM memory_events WHERE id = 2", (), 2, id="middle-event-removed"),
    pytest.param("DELETE FROM memory_events WHERE id = 1", (), 1, id="first-event-removed"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "params", "broken_id"), TAMPERINGS)
def test_chain_snippet_reports_the_first_broken_event_like_verify_chain(
    tmp_path: Path, sql: str, params: tuple[Any, ...], broken_id: int
) -> None:
    original = tmp_path / "memory.db"
    build_memory(original)
    tampered = copy_memory(original, tmp_path / "tampered.db")
    tamper(tampered, sql, params)

    result = run_snippet("verify-chain", records_of(tampered))

    assert result.returncode == 1
    assert result.stderr.strip() == f"BROKEN at event {broken_id}"
    verdict = server_verdict(tampered)
    assert (verdict["ok"], verdict["first_broken_id"]) == (False, broken_id)
    assert (
        run_snippet("verify-chain", records_of(original)).returncode == 0
    )  # the copy was tampered only


# -- the witness ----------------------------------------------------------------------------
def test_witness_snippet_accepts_an_untouched_database(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    status = build_memory(db)
    result = run_snippet("verify-witness", records_of(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"witness OK: event {status['head_id']} has hash {status['head_hash']}"
    )


def test_witness_file_names_the_head_and_the_verified_position(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    status = build_memory(db)
    witness = json.loads(witness_of(db).read_text(encoding="utf-8"))
    assert witness == {
        "format": 1,
        "head_id": status["head_id"],
        "head_hash": status["head_hash"],
        "verified_id": status["head_id"],
        "verified_hash": status["head_hash"],
    }


def test_rewrite_with_rehash_passes_the_chain_snippet_but_not_the_witness(
    tmp_path: Path,
) -> None:
    db = build_memory_copy(tmp_path)
    rewrite_and_rehash(db, 2, "history, rewritten")

    assert run_snippet("verify-chain", records_of(db)).returncode == 0  # a whole, different chain
    result = run_snippet("verify-witness", records_of(db))
    assert result.returncode == 1
    assert result.stderr.strip() == f"WITNESS MISMATCH at event {len(EVENTS)}"
    verdict = server_verdict(db)
    assert verdict["ok"] is False
    assert verdict["reason"].startswith("witness mismatch")


def test_removing_the_last_event_passes_the_chain_snippet_but_not_the_witness(
    tmp_path: Path,
) -> None:
    db = build_memory_copy(tmp_path)
    tamper(db, "DELETE FROM memory_events WHERE id = ?", (len(EVENTS),))

    chain = run_snippet("verify-chain", records_of(db))
    assert chain.returncode == 0
    assert chain.stdout.startswith(f"OK: {len(EVENTS) - 1} events")
    result = run_snippet("verify-witness", records_of(db))
    assert result.returncode == 1
    assert result.stderr.strip() == f"WITNESS MISMATCH at event {len(EVENTS)}"
    assert server_verdict(db)["first_broken_id"] == len(EVENTS)


def test_a_kept_copy_of_the_witness_catches_a_rewrite_of_both_files(tmp_path: Path) -> None:
    db = build_memory_copy(tmp_path)
    kept = tmp_path / "kept-witness.json"
    kept.write_bytes(witness_of(db).read_bytes())
    rewrite_and_rehash(db, 1, "history, rewritten")
    with sqlite3.connect(records_of(db)) as conn:  # the forger rewrites the witness too
        head_id, head_hash = conn.execute(
            "SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1"
        ).fetchone()
    conn.close()
    forged = {"format": 1, "head_id": head_id, "head_hash": head_hash}
    witness_of(db).write_text(json.dumps(forged), encoding="utf-8")

    assert run_snippet("verify-witness", records_of(db)).returncode == 0  # both files agree: forged
    result = run_snippet("verify-witness", records_of(db), kept)
    assert result.returncode == 1
    assert result.stderr.strip() == f"WITNESS MISMATCH at event {len(EVENTS)}"


# -- every chain the server writes passes the standalone snippet --------------------------
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\n\t\r"),
    min_size=1,
    max_size=40,
).filter(lambda text: bool(text.strip()))
_TAG = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Z")), min_size=1, max_size=8)
_EVENT = st.tuples(
    _TEXT, st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True), st.lists(_TAG, max_size=3)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(_EVENT, min_size=1, max_size=6))
def test_any_chain_the_server_writes_passes_the_chain_snippet(events: list[Event]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        status = build_memory(db, events)
        result = run_snippet("verify-chain", records_of(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"OK: {status['events']} events, head {status['head_hash']}"
