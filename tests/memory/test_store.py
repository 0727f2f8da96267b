"""The memory facade through the service: settings, answers, and the audit trail it leaves."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.errors import InvalidArgument, SqlgateError
from sqlgate.memory.store import redactor_for
from sqlgate.service import Service
from tests.memory.conftest import OpenMemory, append_many
from tests.records import connect_both


def audit_rows(db: Path) -> list[dict[str, Any]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute("SELECT tool, ok, rows, error, detail, session FROM query_log")
        return [
            {"tool": t, "ok": ok, "rows": n, "error": e, "detail": json.loads(d or "{}"), "s": s}
            for t, ok, n, e, d, s in found
        ]
    finally:
        conn.close()


def test_redactor_follows_the_settings(tmp_path: Path) -> None:
    patterns = tmp_path / "p.txt"
    patterns.write_text("ticket TCK-[0-9]+\n")
    assert redactor_for(Settings(db=tmp_path / "a.db")).enabled is True
    assert redactor_for(Settings(db=tmp_path / "a.db", redact="off")).enabled is False
    extra = redactor_for(Settings(db=tmp_path / "a.db", redact_patterns=patterns))
    assert extra.redact("TCK-1").text == "[REDACTED:ticket]"


def test_redactor_refuses_a_missing_patterns_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot read redaction patterns"):
        redactor_for(Settings(db=tmp_path / "a.db", redact_patterns=tmp_path / "none.txt"))


def test_append_answers_id_and_hash_only_when_nothing_was_redacted(memory: Service) -> None:
    answer = json.loads(memory.append_event("plain words", kind="decision", tags=["a"]))
    assert set(answer) == {"id", "hash"}
    assert answer["id"] == 1
    assert len(answer["hash"]) == 64


Call = Callable[[Service], str]

TOOLS: list[Any] = [
    pytest.param("append_event", lambda s: s.append_event("more"), 1, id="append_event"),
    pytest.param("verify_chain", lambda s: s.verify_chain(), 2, id="verify_chain"),
    pytest.param("checkpoint", lambda s: s.checkpoint("so far"), 1, id="checkpoint"),
    pytest.param("get_resume_context", lambda s: s.get_resume_context(), 2,
                 id="get_resume_context"),
    pytest.param("memory_search", lambda s: s.memory_search("event"), 2, id="memory_search"),
    pytest.param("memory_timeline", lambda s: s.memory_timeline([1], window=1), 2,
                 id="memory_timeline"),
    pytest.param("memory_details", lambda s: s.memory_details([1, 2]), 2, id="memory_details"),
    pytest.param("memory_stats", lambda s: s.memory_stats(), 2, id="memory_stats"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "call", "count"), TOOLS)
def test_every_memory_tool_is_audited_once(
    memory: Service, db_path: Path, tool: str, call: Call, count: int
) -> None:
    append_many(memory, 2)
    before = len(audit_rows(db_path))
    call(memory)
    (entry,) = audit_rows(db_path)[before:]
    assert (entry["tool"], entry["ok"], entry["rows"], entry["s"]) == (tool, 1, count, "s-test")


def test_a_failed_memory_tool_is_audited_with_its_error(memory: Service, db_path: Path) -> None:
    with pytest.raises(SqlgateError):
        memory.memory_details([5])
    (entry,) = audit_rows(db_path)
    assert (entry["tool"], entry["ok"]) == ("memory_details", 0)
    assert "no event 5" in entry["error"]


def test_the_audit_trail_never_holds_the_secret(memory: Service, db_path: Path) -> None:
    memory.append_event("login with password=hunter2", tags=["auth"])
    memory.checkpoint("deploy key AKIAIOSFODNN7EXAMPLE rotated")  # publish-gate: allow
    memory.memory_search("password=hunter2 AKIAIOSFODNN7EXAMPLE")  # publish-gate: allow
    (append, checkpoint, search) = audit_rows(db_path)
    assert append["detail"] == {"kind": "note", "event": 1, "redacted": {"secret": 1}}
    assert checkpoint["detail"] == {"checkpoint": 1}
    assert search["detail"] == {"query": "password=[REDACTED:secret] [REDACTED:aws-key]"}
    conn = connect_both(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for table in ("query_log", "memory_events", "memory_checkpoints"):
            dump = json.dumps(conn.execute(f"SELECT * FROM {table}").fetchall())
            assert "hunter2" not in dump
            assert "AKIAIOSFODNN7EXAMPLE" not in dump  # publish-gate: allow
    finally:
        conn.close()


def test_memory_tables_are_append_only_for_agents(memory: Service) -> None:
    append_many(memory, 1)
    with pytest.raises(SqlgateError):
        memory.destructive_query("DELETE FROM memory_events", reason="tidy up")
    assert json.loads(memory.verify_chain())["ok"] is True


def test_two_servers_share_one_memory(open_memory: OpenMemory) -> None:
    first, second = open_memory(session="s-a"), open_memory(session="s-b")
    first.append_event("from a")
    second.append_event("from b")
    first.append_event("from a again")
    assert json.loads(second.verify_chain())["events"] == 3
    assert json.loads(first.memory_stats())["sessions_total"] == 2
