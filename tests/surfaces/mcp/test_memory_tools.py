"""The memory tool group end to end, through the SDK's in-memory `Client`.

What the server announces (tools, annotations, instructions) for each `--tools` choice, the
eight tools doing their work, bad input refused with advice and nothing written, and every
call recorded in query_log.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from mcp import Client
from mcp.types import CallToolResult

from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import (
    CLAIMS_TOOLS,
    INSTRUCTIONS,
    MEMORY_INSTRUCTIONS,
    MEMORY_TOOLS,
    SQL_TOOLS,
    build_server,
)
from tests.conftest import FakeClock
from tests.records import connect_both
from tests.surfaces.conftest import OpenService

pytestmark = pytest.mark.anyio

SESSION = "s-tools"
START = 1767225600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0
READ_TOOLS = (
    "verify_chain",
    "get_resume_context",
    "memory_search",
    "memory_timeline",
    "memory_details",
    "memory_stats",
)
WRITE_TOOLS = ("append_event", "checkpoint")
SECRET = "ghp_" + "Zx81" * 9  # a GitHub token shape the default patterns know


def text(result: CallToolResult) -> str:
    assert result.content, "a tool result carries text content"
    first = result.content[0]
    assert first.type == "text"
    return first.text


def ok(result: CallToolResult) -> str:
    assert not result.is_error, text(result)
    return text(result)


def csv_body(output: str) -> list[dict[str, str]]:
    """The CSV rows of a tool's answer: from its `id,...` header on, `#` lines left out."""
    lines = output.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("id,")), len(lines))
    body = [line for line in lines[start:] if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(body))))


@pytest.fixture
def memory_service(open_service: OpenService) -> Service:
    return open_service(max_event_chars=300)


@pytest.fixture
async def client(memory_service: Service) -> AsyncIterator[Client]:
    async with Client(build_server(memory_service)) as connected:
        yield connected


def stored(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows read straight from the file, on a connection of the test's own (no audit row)."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


def memory_counts(db: Path) -> tuple[int, int]:
    (row,) = stored(
        db, "SELECT (SELECT count(*) FROM memory_events), (SELECT count(*) FROM memory_checkpoints)"
    )
    return int(row[0]), int(row[1])


def audit_rows(db: Path) -> list[tuple[str, int, str | None, str | None]]:
    return [
        (str(tool), int(ok_), error, detail)
        for tool, ok_, error, detail in stored(
            db, "SELECT tool, ok, error, detail FROM query_log ORDER BY id"
        )
    ]


async def append(client: Client, content: str, kind: str = "note", **extra: Any) -> int:
    answer = json.loads(
        ok(await client.call_tool("append_event", {"content": content, "kind": kind, **extra}))
    )
    return int(answer["id"])


# -- what the server announces for each --tools choice ------------------------------------------


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        pytest.param(("memory",), MEMORY_TOOLS, id="memory-only-8"),
        pytest.param(("sql",), SQL_TOOLS, id="sql-only-8"),
        pytest.param(("sql", "memory"), SQL_TOOLS + MEMORY_TOOLS, id="both-16"),
        pytest.param(("memory", "sql"), SQL_TOOLS + MEMORY_TOOLS, id="both-any-order-16"),
        pytest.param(("claims",), CLAIMS_TOOLS, id="claims-only-6"),
        pytest.param(("memory", "claims"), MEMORY_TOOLS + CLAIMS_TOOLS, id="memory-claims-14"),
        pytest.param(
            ("sql", "memory", "claims"), SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS, id="default-22"
        ),
    ],
)
async def test_tools_selection_announces_exactly_the_chosen_groups(
    open_service: OpenService, tools: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    async with Client(build_server(open_service(tools=tools))) as connected:
        names = [tool.name for tool in (await connected.list_tools()).tools]
    assert sorted(names) == sorted(expected)
    assert len(names) == len(set(names)) == len(expected)


async def test_memory_group_has_eight_tools() -> None:
    assert len(MEMORY_TOOLS) == len(set(MEMORY_TOOLS)) == 8
    assert set(MEMORY_TOOLS) == set(READ_TOOLS) | set(WRITE_TOOLS)


@pytest.mark.parametrize(
    ("tool", "read_only"),
    [
        *[pytest.param(tool, True, id=f"{tool}-read-only") for tool in READ_TOOLS],
        *[pytest.param(tool, False, id=f"{tool}-writes") for tool in WRITE_TOOLS],
    ],
)
async def test_memory_tool_annotations(client: Client, tool: str, read_only: bool) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    annotations = listed[tool].annotations
    assert annotations is not None
    assert annotations.read_only_hint is read_only
    assert annotations.destructive_hint is False  # appends never remove or rewrite anything
    assert annotations.open_world_hint is False
    if read_only:
        assert annotations.idempotent_hint is True


@pytest.mark.parametrize(
    ("tool", "required"),
    [
        pytest.param("append_event", ["content"], id="append_event"),
        pytest.param("checkpoint", ["summary"], id="checkpoint"),
        pytest.param("memory_search", ["query"], id="memory_search"),
        pytest.param("memory_timeline", ["ids"], id="memory_timeline"),
        pytest.param("memory_details", ["ids"], id="memory_details"),
        pytest.param("verify_chain", [], id="verify_chain"),
        pytest.param("get_resume_context", [], id="get_resume_context"),
        pytest.param("memory_stats", [], id="memory_stats"),
    ],
)
async def test_required_arguments_are_declared(
    client: Client, tool: str, required: list[str]
) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(listed[tool].input_schema.get("required", [])) == sorted(required)
    assert listed[tool].output_schema is None  # text only, no structured copy


async def test_instructions_with_memory_say_resume_first_then_search_timeline_details(
    client: Client,
) -> None:
    sent = client.instructions
    assert sent is not None
    assert INSTRUCTIONS in sent
    assert MEMORY_INSTRUCTIONS in sent
    assert "call get_resume_context first" in sent
    path = [sent.index(name) for name in ("memory_search", "memory_timeline", "memory_details")]
    assert path == sorted(path)


@pytest.mark.parametrize(
    ("tools", "has_sql", "has_memory"),
    [
        pytest.param(("sql",), True, False, id="sql-only"),
        pytest.param(("memory",), False, True, id="memory-only"),
        pytest.param(("sql", "memory"), True, True, id="both"),
    ],
)
async def test_instructions_cover_only_the_announced_groups(
    open_service: OpenService, tools: tuple[str, ...], has_sql: bool, has_memory: bool
) -> None:
    async with Client(build_server(open_service(tools=tools))) as connected:
        sent = connected.instructions
    assert sent is not None
    assert ("read_query" in sent) is has_sql
    for name in ("get_resume_context", "memory_search", "memory_timeline", "memory_details"):
        assert (name in sent) is has_memory


# -- the eight tools end to end -----------------------------------------------------------------


async def test_append_event_answers_id_and_the_hash_of_the_contract(
    client: Client, memory_service: Service
) -> None:
    first = json.loads(
        ok(
            await client.call_tool(
                "append_event", {"content": "héllo, chain", "tags": ["beta", "alpha", "beta"]}
            )
        )
    )
    assert first["id"] == 1
    second = json.loads(
        ok(await client.call_tool("append_event", {"content": "next", "kind": "decision"}))
    )
    assert second["id"] == 2
    rows = stored(
        memory_service.db.path,
        "SELECT id, ts, session, kind, content, tags, prev_hash, hash FROM memory_events "
        "ORDER BY id",
    )
    (_, ts1, session, kind1, content1, tags1, prev1, hash1), two = rows
    assert (session, kind1, content1, tags1, prev1) == (
        SESSION,
        "note",
        "héllo, chain",
        '["alpha","beta"]',
        GENESIS,
    )
    assert ts1 == "2026-01-01T00:00:00.000Z"
    assert (
        hash1
        == first["hash"]
        == event_hash(1, ts1, SESSION, "note", "héllo, chain", ["alpha", "beta"], GENESIS)
    )
    assert two[6] == hash1  # each event links to the one before
    assert two[7] == second["hash"] == event_hash(2, two[1], SESSION, "decision", "next", [], hash1)


async def test_verify_chain_reports_the_head(client: Client) -> None:
    assert json.loads(ok(await client.call_tool("verify_chain", {}))) == {
        "ok": True,
        "events": 0,
        "head_id": None,
        "head_hash": None,
    }
    await append(client, "one")
    await append(client, "two")
    answer = json.loads(ok(await client.call_tool("verify_chain", {})))
    head = json.loads(ok(await client.call_tool("memory_stats", {})))["chain"]
    assert answer == {"ok": True, "events": 2, "head_id": 2, "head_hash": head["head_hash"]}


async def test_checkpoint_anchors_a_summary_to_the_head(
    client: Client, memory_service: Service
) -> None:
    await append(client, "one")
    head = json.loads(ok(await client.call_tool("append_event", {"content": "two"})))
    answer = json.loads(
        ok(await client.call_tool("checkpoint", {"summary": "auth refactor half done"}))
    )
    assert answer == {"id": 1, "last_event_id": 2, "head_hash": head["hash"]}
    assert stored(
        memory_service.db.path, "SELECT summary, last_event_id FROM memory_checkpoints"
    ) == [("auth refactor half done", 2)]


async def test_get_resume_context_on_an_empty_memory_says_there_is_no_checkpoint(
    client: Client,
) -> None:
    context = ok(await client.call_tool("get_resume_context", {}))
    assert context.startswith("# chain: ok, 0 events\n")
    assert "# no checkpoint yet" in context
    assert "# 0 events in the memory" in context


async def test_get_resume_context_gives_the_checkpoint_and_the_events_since(
    client: Client, wall: FakeClock
) -> None:
    await append(client, "before the checkpoint")
    ok(await client.call_tool("checkpoint", {"summary": "login works; next: tokens"}))
    wall.advance(DAY)
    await append(client, "token refresh wired", "progress", tags=["auth"])
    await append(client, "ran the linter", "tool")
    context = ok(await client.call_tool("get_resume_context", {}))
    lines = context.splitlines()
    assert lines[0].startswith("# chain: ok, 3 events, head 3 (")
    assert (
        lines[1] == f"# checkpoint 1 · 2026-01-01T00:00:00.000Z · session {SESSION} · after event 1"
    )
    assert lines[2] == "login works; next: tokens"
    assert lines[3] == "# 2 events since the checkpoint"
    rows = csv_body(context)
    assert [(r["id"], r["date"], r["kind"], r["tags"], r["content"]) for r in rows] == [
        ("2", "2026-01-02 00:00", "progress", "auth", "token refresh wired"),
        ("3", "2026-01-02 00:00", "tool", "", "ran the linter"),
    ]
    assert "before the checkpoint" not in context
    assert "memory_search" in lines[-1]

    narrowed = ok(
        await client.call_tool("get_resume_context", {"max_events": 5, "exclude_kinds": ["tool"]})
    )
    assert [r["id"] for r in csv_body(narrowed)] == ["2"]
    assert "not counting kinds tool" in narrowed
    # the same as one text, as mcp-sqlite-memory takes it
    as_text = {"max_events": 5, "exclude_kinds": "tool, compaction"}
    assert [
        r["id"] for r in csv_body(ok(await client.call_tool("get_resume_context", as_text)))
    ] == ["2"]
    newest = ok(await client.call_tool("get_resume_context", {"max_events": 1}))
    assert [r["id"] for r in csv_body(newest)] == ["3"]
    assert "(the newest 1 shown)" in newest


async def test_memory_search_ranks_and_filters(client: Client, wall: FakeClock) -> None:
    await append(
        client, "deploy failed: the cache key ignored the region", "error", tags=["deploy"]
    )
    wall.advance(DAY)
    await append(client, "lunch order for the team", "note")
    wall.advance(DAY)
    await append(
        client, "deploy fixed: cache key includes the region", "decision", tags=["deploy", "cache"]
    )
    found = ok(await client.call_tool("memory_search", {"query": "cache region"}))
    rows = csv_body(found)
    assert {r["id"] for r in rows} == {"1", "3"}
    assert list(rows[0]) == ["id", "score", "kind", "date", "tags", "preview"]
    assert "memory_timeline(ids=[" in found
    assert "memory_details(ids=[" in found

    async def ids(**arguments: Any) -> list[str]:
        answer = ok(await client.call_tool("memory_search", {"query": "deploy", **arguments}))
        return sorted(r["id"] for r in csv_body(answer))

    assert await ids() == ["1", "3"]
    assert await ids(kind="decision") == ["3"]
    assert await ids(tags=["cache"]) == ["3"]
    assert await ids(tags=["deploy", "cache"]) == ["3"]
    assert await ids(since="2026-01-02") == ["3"]
    assert await ids(until="2026-01-02") == ["1"]
    assert await ids(since="2026-01-01T00:00:00Z", until="2026-01-01") == ["1"]
    assert await ids(session=SESSION) == ["1", "3"]
    assert await ids(session="s-someone-else") == []
    assert await ids(top_k=1) in (["1"], ["3"])
    prefix = ok(await client.call_tool("memory_search", {"query": "lun*"}))
    assert [r["id"] for r in csv_body(prefix)] == ["2"]
    nothing = ok(await client.call_tool("memory_search", {"query": "kubernetes"}))
    assert csv_body(nothing) == []
    assert "# 0 results" in nothing


async def test_search_timeline_details_discloses_progressively(client: Client) -> None:
    long_text = "deploy checklist: " + " ".join(f"step{n}" for n in range(30))
    for n in range(1, 8):
        await append(client, long_text if n == 4 else f"routine note {n}")
    found = csv_body(ok(await client.call_tool("memory_search", {"query": "checklist"})))
    assert [r["id"] for r in found] == ["4"]
    preview = found[0]["preview"]
    assert preview.endswith("…")
    assert len(preview) <= 100 < len(long_text)

    timeline = ok(await client.call_tool("memory_timeline", {"ids": [4], "window": 2}))
    rows = csv_body(timeline)
    assert [r["id"] for r in rows] == ["2", "3", "4", "5", "6"]
    assert [r["asked"] for r in rows] == ["", "", "*", "", ""]
    assert all(len(r["preview"]) <= 100 for r in rows)

    details = ok(await client.call_tool("memory_details", {"ids": [4]}))
    assert details.startswith(f"## event 4 · 2026-01-01T00:00:00.000Z · note · session {SESSION}")
    assert long_text in details  # the full text, only here
    assert "hash " in details
    assert " · prev " in details


async def test_memory_details_keeps_the_order_asked(client: Client) -> None:
    for n in range(1, 4):
        await append(client, f"event number {n}")
    details = ok(await client.call_tool("memory_details", {"ids": [3, 1]}))
    assert details.index("## event 3") < details.index("## event 1")
    assert "## event 2" not in details


async def test_memory_stats_counts_events_kinds_sessions_and_checkpoints(client: Client) -> None:
    await append(client, "one", "note")
    await append(client, "two", "note")
    await append(client, "three", "decision")
    ok(await client.call_tool("checkpoint", {"summary": "three events in"}))
    stats = json.loads(ok(await client.call_tool("memory_stats", {})))
    assert stats["events"] == 3
    assert stats["checkpoints"] == 1
    assert stats["kinds"] == {"note": 2, "decision": 1}
    assert stats["sessions_total"] == 1
    assert stats["sessions"][0]["session"] == SESSION
    assert stats["sessions"][0]["events"] == 3
    assert stats["first"] == stats["last"] == "2026-01-01T00:00:00.000Z"
    assert stats["db_bytes"] > 0
    assert stats["chain"]["ok"] is True
    assert stats["chain"]["events"] == 3


async def test_memory_only_server_works_without_the_sql_tools(open_service: OpenService) -> None:
    async with Client(build_server(open_service(tools=("memory",)))) as connected:
        await append(connected, "remember this")
        found = ok(await connected.call_tool("memory_search", {"query": "remember"}))
        refused = await connected.call_tool("read_query", {"query": "SELECT 1"})
    assert [r["id"] for r in csv_body(found)] == ["1"]
    assert refused.is_error


# -- redaction through the tool ---------------------------------------------------------------


async def test_a_secret_is_redacted_before_it_is_stored(
    client: Client, memory_service: Service
) -> None:
    answer = json.loads(
        ok(await client.call_tool("append_event", {"content": f"pushed with {SECRET} today"}))
    )
    assert answer["redacted"] == {"github-token": 1}
    details = ok(await client.call_tool("memory_details", {"ids": [answer["id"]]}))
    assert "pushed with [REDACTED:github-token] today" in details
    assert SECRET not in details
    memory_service.close()  # every page reaches the files
    for path in memory_service.db.path.parent.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name


async def test_redaction_off_stores_the_text_as_given(open_service: OpenService) -> None:
    service = open_service(redact="off")
    async with Client(build_server(service)) as connected:
        answer = json.loads(
            ok(await connected.call_tool("append_event", {"content": f"pushed with {SECRET}"}))
        )
        details = ok(await connected.call_tool("memory_details", {"ids": [answer["id"]]}))
    assert "redacted" not in answer
    assert SECRET in details


# -- bad input: a tool error with advice, and nothing written ----------------------------------

BAD_INPUT = [
    pytest.param("append_event", {"content": ""}, "content is empty", id="empty-content"),
    pytest.param("append_event", {"content": "   \n"}, "content is empty", id="blank-content"),
    pytest.param("append_event", {"content": "x" * 301}, "--max-event-chars", id="too-long"),
    pytest.param("append_event", {"content": "a\x00b"}, "control characters", id="nul"),
    pytest.param(
        "append_event",
        {"content": "<private>only private</private>"},
        "content is empty",
        id="only-private",
    ),
    pytest.param(
        "append_event", {"content": "x", "kind": "Big Kind"}, "lower-case word", id="bad-kind"
    ),
    pytest.param("append_event", {"content": "x", "kind": ""}, "lower-case word", id="empty-kind"),
    pytest.param(
        "append_event", {"content": "x", "tags": [""]}, "tags are non-empty", id="empty-tag"
    ),
    pytest.param("append_event", {"content": "x", "tags": [" pad "]}, "spaces", id="padded-tag"),
    pytest.param("append_event", {"content": "x", "tags": ["t" * 65]}, "at most 64", id="long-tag"),
    pytest.param(
        "append_event",
        {"content": "x", "tags": [f"t{n}" for n in range(21)]},
        "at most 20",
        id="too-many-tags",
    ),
    pytest.param("append_event", {"kind": "note"}, "content", id="content-missing"),
    pytest.param("checkpoint", {"summary": ""}, "summary is empty", id="empty-summary"),
    pytest.param("checkpoint", {"summary": "s" * 301}, "--max-event-chars", id="long-summary"),
    pytest.param(
        "memory_details", {"ids": [99]}, "no event 99; ids run from 1 to 2", id="unknown-id"
    ),
    pytest.param("memory_details", {"ids": [1, 42]}, "memory_search finds ids", id="one-unknown"),
    pytest.param("memory_details", {"ids": []}, "non-empty list", id="no-ids"),
    pytest.param("memory_details", {"ids": [0]}, "not an event id", id="id-zero"),
    pytest.param("memory_timeline", {"ids": [7]}, "no event 7", id="timeline-unknown-id"),
    pytest.param("memory_timeline", {"ids": [1], "window": 21}, "window", id="window-too-big"),
    pytest.param(
        "memory_search", {"query": "x", "since": "last week"}, "ISO-8601", id="since-words"
    ),
    pytest.param(
        "memory_search", {"query": "x", "until": "2026-02-30"}, "2026-11-30", id="no-such-day"
    ),
    pytest.param("memory_search", {"query": "x", "since": "2026/01/01"}, "ISO-8601", id="slashes"),
    pytest.param(
        "memory_search", {"query": "x", "kind": "Not A Kind"}, "lower-case word", id="search-kind"
    ),
    pytest.param(
        "memory_search", {"query": "x", "tags": [""]}, "tags are non-empty", id="search-tag"
    ),
    pytest.param("memory_search", {"query": "(*)"}, "no words", id="no-words"),
    pytest.param("memory_search", {"query": "x", "top_k": 0}, "top_k", id="top-k-zero"),
    pytest.param("get_resume_context", {"max_events": 0}, "max_events", id="max-events-zero"),
    pytest.param(
        "get_resume_context", {"exclude_kinds": ""}, '"exclude_kinds" is empty', id="exclude-empty"
    ),
    pytest.param(
        "get_resume_context",
        {"exclude_kinds": [1]},
        'argument "exclude_kinds[0]" must be a string',
        id="exclude-not-text",
    ),
    pytest.param("append_event", {"content": "x", "tags": ","}, '"tags" is empty', id="tags-empty"),
    pytest.param(
        "get_resume_context", {"exclude_kinds": ["Tool Call"]}, "lower-case word", id="exclude-kind"
    ),
]


@pytest.mark.parametrize(
    ("tool", "argument"),
    [
        pytest.param("get_resume_context", "exclude_kinds", id="exclude_kinds"),
        pytest.param("append_event", "tags", id="append_event-tags"),
        pytest.param("memory_search", "tags", id="memory_search-tags"),
    ],
)
async def test_word_lists_announce_a_list_or_comma_separated_text(
    client: Client, tool: str, argument: str
) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    schema = listed[tool].input_schema["properties"][argument]
    assert [option["type"] for option in schema["anyOf"]] == ["array", "string"]
    assert re.search(r'a list or "\w+, \w+"', schema["description"])


async def test_tags_as_comma_separated_text_are_stored_as_a_list(client: Client) -> None:
    await append(client, "deploy failed", "error", tags="db, deploy ,")
    details = ok(await client.call_tool("memory_details", {"ids": [1]}))
    assert "tags: db deploy" in details
    found = ok(await client.call_tool("memory_search", {"query": "deploy", "tags": "deploy"}))
    assert [r["id"] for r in csv_body(found)] == ["1"]


@pytest.mark.parametrize(("tool", "arguments", "advice"), BAD_INPUT)
async def test_bad_input_is_a_tool_error_with_advice_and_writes_nothing(
    client: Client, memory_service: Service, tool: str, arguments: dict[str, Any], advice: str
) -> None:
    await append(client, "first")
    await append(client, "second")
    db = memory_service.db.path
    before = memory_counts(db)
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert advice in text(result)
    assert memory_counts(db) == before
    assert '"ok": true' in ok(await client.call_tool("verify_chain", {}))


async def test_refused_memory_calls_are_audited_as_failures(
    client: Client, memory_service: Service
) -> None:
    await client.call_tool("append_event", {"content": ""})
    await client.call_tool("memory_details", {"ids": [5]})
    await client.call_tool("memory_search", {"query": "x", "since": "soon"})
    failures = [
        (tool, error) for tool, ok_, error, _ in audit_rows(memory_service.db.path) if not ok_
    ]
    assert [tool for tool, _ in failures] == ["append_event", "memory_details", "memory_search"]
    assert "content is empty" in str(failures[0][1])
    assert "no event 5" in str(failures[1][1])
    assert "ISO-8601" in str(failures[2][1])


# -- every call is audited -------------------------------------------------------------------


async def test_every_memory_tool_call_is_recorded_in_query_log(
    client: Client, memory_service: Service
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("append_event", {"content": "audited event", "kind": "decision", "tags": ["a"]}),
        ("verify_chain", {}),
        ("checkpoint", {"summary": "audited checkpoint"}),
        ("get_resume_context", {}),
        ("memory_search", {"query": "audited"}),
        ("memory_timeline", {"ids": [1]}),
        ("memory_details", {"ids": [1]}),
        ("memory_stats", {}),
    ]
    for tool, arguments in calls:
        ok(await client.call_tool(tool, arguments))
    rows = audit_rows(memory_service.db.path)
    assert [(tool, ok_) for tool, ok_, _, _ in rows] == [(tool, 1) for tool, _ in calls]
    assert sorted(tool for tool, _ in calls) == sorted(MEMORY_TOOLS)
    sessions = stored(memory_service.db.path, "SELECT DISTINCT session FROM query_log")
    assert sessions == [(SESSION,)]
    append_detail = json.loads(str(rows[0][3]))
    assert append_detail["event"] == 1
    assert append_detail["kind"] == "decision"
    # the audit keeps what was done, not the text remembered
    assert "audited event" not in json.dumps([row[3] for row in rows[:1]])


async def test_an_unexpected_failure_does_not_leak_its_text(
    client: Client, memory_service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*_: object, **__: object) -> str:
        raise RuntimeError("secret path /srv/alice/.ssh/id_ed25519")

    monkeypatch.setattr(memory_service.memory, "append_event", explode)
    result = await client.call_tool("append_event", {"content": "x"})
    assert result.is_error
    assert "id_ed25519" not in text(result)
    assert "internal error" in text(result)
    (row,) = audit_rows(memory_service.db.path)
    assert row[:3] == ("append_event", 0, "internal error: RuntimeError")
