"""Checkpoints anchored to the head, and the resume context a new session starts from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlgate.service import Service
from tests.memory.conftest import OpenMemory, append_many, rows, tampered, verify, witness_of


def body(context: str) -> list[str]:
    """The event rows of a resume context (CSV lines after the header)."""
    lines = context.splitlines()
    if "id,date,kind,tags,content" not in lines:
        return []
    start = lines.index("id,date,kind,tags,content") + 1
    return [line for line in lines[start:] if not line.startswith("#")]


def event_ids(context: str) -> list[int]:
    return [int(line.split(",", 1)[0]) for line in body(context)]


def test_checkpoint_is_anchored_to_the_current_head(memory: Service, db_path: Path) -> None:
    assert json.loads(memory.checkpoint("nothing yet")) == {
        "id": 1,
        "last_event_id": 0,
        "head_hash": "0" * 64,
    }
    append_many(memory, 3)
    assert json.loads(memory.checkpoint("three in")) == {
        "id": 2,
        "last_event_id": 3,
        "head_hash": rows(db_path)[-1]["hash"],
    }


def test_resume_without_a_checkpoint_shows_the_memory(memory: Service) -> None:
    append_many(memory, 2)
    context = memory.get_resume_context()
    lines = context.splitlines()
    assert lines[0].startswith("# chain: ok, 2 events, head 2 (")
    assert lines[1].startswith("# no checkpoint yet")
    assert lines[2] == "# 2 events in the memory"
    assert event_ids(context) == [1, 2]
    assert lines[-1].startswith("# next: memory_search")


def test_resume_shows_the_latest_checkpoint_and_the_events_since(
    memory: Service,
) -> None:
    append_many(memory, 2)
    memory.checkpoint("first milestone")
    append_many(memory, 2)
    memory.checkpoint("second milestone:\nauth works, tests pass")
    append_many(memory, 3)
    context = memory.get_resume_context()
    assert "# checkpoint 2 · 2026-01-01T00:00:11.000Z · session s-test · after event 4" in context
    assert "second milestone:\nauth works, tests pass\n" in context
    assert "first milestone" not in context
    assert "# 3 events since the checkpoint\n" in context
    assert event_ids(context) == [5, 6, 7]


def test_a_checkpoint_at_the_head_leaves_no_events_to_show(memory: Service) -> None:
    append_many(memory, 2)
    memory.checkpoint("all caught up")
    context = memory.get_resume_context()
    assert "# 0 events since the checkpoint\n" in context
    assert event_ids(context) == []


def test_resume_drops_the_oldest_events_over_the_limit(memory: Service) -> None:
    append_many(memory, 8)
    context = memory.get_resume_context(max_events=3)
    assert event_ids(context) == [6, 7, 8]
    assert "# 8 events in the memory (the newest 3 shown)" in context


def test_resume_leaves_out_excluded_kinds(memory: Service) -> None:
    memory.append_event("ran the tests", kind="tool")
    memory.append_event("auth uses JWT", kind="decision")
    memory.append_event("ran the linter", kind="tool")
    context = memory.get_resume_context(exclude_kinds=["tool"])
    assert event_ids(context) == [2]
    assert "# 1 event in the memory, not counting kinds tool" in context


def test_resume_shows_long_content_cut_to_the_cell_limit(open_memory: OpenMemory) -> None:
    service = open_memory(max_cell_chars=50)
    service.append_event("z" * 80)
    (line,) = body(service.get_resume_context())
    assert "z" * 80 not in line
    assert line.endswith("…")


def test_resume_reports_a_broken_chain_first(memory: Service, db_path: Path) -> None:
    append_many(memory, 3)
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'edited' WHERE id = 2")
    first = memory.get_resume_context().splitlines()[0]
    assert first.startswith("# chain: BROKEN at event 2: content changed")
    assert "Tell the user" in first


def test_resume_verifies_incrementally_from_the_witnessed_position(
    memory: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_many(memory, 30)
    assert verify(memory)["ok"] is True
    append_many(memory, 2)
    chain = memory.memory.chain
    checked: list[int] = []
    real_verify = chain.verify

    def counting(*, incremental: bool = False) -> object:
        status = real_verify(incremental=incremental)
        checked.append(status.checked)
        return status

    monkeypatch.setattr(chain, "verify", counting)
    memory.get_resume_context()
    memory.get_resume_context()
    assert checked == [2, 0]
    assert witness_of(db_path).read().verified_id == 32  # type: ignore[union-attr]


def test_every_server_run_stamps_its_own_session(open_memory: OpenMemory, db_path: Path) -> None:
    first = open_memory(session="s-first")
    first.append_event("from the first run")
    first.checkpoint("first run done")
    first.close()
    second = open_memory(session="s-second")
    second.append_event("from the second run")
    second.checkpoint("second run done")
    assert [row["session"] for row in rows(db_path)] == ["s-first", "s-second"]
    assert "session s-second · after event 2" in second.get_resume_context()
    sessions = json.loads(second.memory_stats())["sessions"]
    assert [entry["session"] for entry in sessions] == ["s-second", "s-first"]
