"""Arguments a client adds to every call for itself (`arguments.CLIENT_ARGUMENTS`, e.g. Gemini
CLI's `wait_for_previous`) are dropped before the tool sees them, on every tool: the call answers
as it would without them, and nothing of them is stored. A misspelt argument of the tool, or of
the client's, is still refused with the names the tool takes."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from sqlgate.service import Service
from sqlgate.surfaces.mcp.arguments import CLIENT_ARGUMENTS, without_client_arguments
from sqlgate.surfaces.mcp.server import build_server
from tests.records import records_path
from tests.surfaces.mcp.test_arguments import JSON_VALUES, VALID, refused

pytestmark = pytest.mark.anyio

WAIT = "wait_for_previous"  # Gemini CLI's, on every tool it lists


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


def prepared(service: Service) -> Service:
    service.write_query("CREATE TABLE t (x INTEGER, y TEXT)")
    service.write_query("INSERT INTO t VALUES (1, 'a')")
    service.append_event("the first event")
    service.claim_add("e", "fact", "c")
    return service


@pytest.fixture
def twins(make_service: Callable[..., Service], tmp_path: Path) -> tuple[Service, ...]:
    """Two databases made the same way: one called plainly, one with the client's argument."""
    return tuple(prepared(make_service(db=tmp_path / f"{name}.db")) for name in ("plain", "with"))


async def called(service: Service, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async with Client(build_server(service)) as client:
        return await client.call_tool(tool, arguments)


# what differs between two databases made alike: hashes and tokens, times, the file's path
VARYING = re.compile(r"[0-9a-f]{8,}|\d{4}-\d\d-\d\dT[\d:.]+Z?|\S+/(plain|with)\.db")


def alike(said: str) -> str:
    return VARYING.sub("~", said)


def stored(service: Service) -> list[str]:
    """What the audit log keeps of each call, less its id, time and duration."""
    with closing(sqlite3.connect(records_path(service.settings.db))) as db:
        rows = db.execute(
            "SELECT session, tool, query, ok, rows, error, detail FROM query_log ORDER BY id"
        ).fetchall()
    return [alike(repr(row)) for row in rows]


def typo(name: str) -> str:
    return name[0] + name[2:]  # query -> qery, ids -> is, id -> i


def first_argument(tool: str) -> str | None:
    return next(iter(VALID[tool]), None)


def test_the_list_holds_what_clients_are_known_to_add() -> None:
    assert WAIT in CLIENT_ARGUMENTS
    for name, who in CLIENT_ARGUMENTS.items():
        assert name.isidentifier()
        assert who  # each says which client adds it, and where that is written down


@pytest.mark.parametrize(
    ("arguments", "accepted", "kept"),
    [
        pytest.param({WAIT: True, "query": "q"}, ["query"], {"query": "q"}, id="dropped"),
        pytest.param({WAIT: True}, [WAIT], {WAIT: True}, id="a-tool-that-takes-it-keeps-it"),
        pytest.param({"wait_for_previus": 1}, ["query"], {"wait_for_previus": 1}, id="typo-kept"),
        pytest.param({}, [], {}, id="nothing"),
    ],
)
def test_without_client_arguments(
    arguments: dict[str, Any], accepted: list[str], kept: dict[str, Any]
) -> None:
    assert without_client_arguments(arguments, accepted) == kept


@pytest.mark.parametrize("tool", sorted(VALID))
async def test_a_client_argument_changes_nothing_in_the_answer_or_the_log(
    twins: tuple[Service, Service], tool: str
) -> None:
    plain, with_it = twins
    without = await called(plain, tool, VALID[tool])
    added = await called(with_it, tool, {**VALID[tool], WAIT: True})
    assert added.is_error == without.is_error
    assert alike(text(added)) == alike(text(without))
    assert WAIT not in text(added)
    assert stored(with_it) == stored(plain)
    assert not any(WAIT in str(row) for row in stored(with_it))


@pytest.mark.parametrize("tool", sorted(VALID))
async def test_a_misspelt_argument_beside_a_client_argument_is_still_refused_helpfully(
    service: Service, tool: str
) -> None:
    prepared(service)
    real = first_argument(tool)
    wrong = typo(real) if real is not None else "bogus"
    arguments = {key: value for key, value in VALID[tool].items() if key != real}
    arguments[wrong] = VALID[tool].get(real or "", 1)
    plain = refused(await called(service, tool, arguments), tool)
    added = refused(await called(service, tool, {**arguments, WAIT: False}), tool)
    assert added == plain
    assert WAIT not in added
    assert f'unknown argument "{wrong}"' in added
    if real is not None:
        assert f'(did you mean "{real}"?)' in added


@pytest.mark.parametrize("tool", sorted(VALID))
async def test_a_misspelt_client_argument_is_an_unknown_argument(
    service: Service, tool: str
) -> None:
    prepared(service)
    async with Client(build_server(service)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(tool, {**VALID[tool], "wait_for_previus": True})
    takes = ", ".join(listed[tool].input_schema["properties"]) or "no arguments"
    assert refused(result, tool) == f'unknown argument "wait_for_previus"; {tool} takes {takes}'


@pytest.mark.parametrize(
    "value",
    [True, False, None, "yes", 1, [1], {"after": "all"}],
    ids=["true", "false", "null", "string", "number", "list", "object"],
)
async def test_a_client_arguments_value_is_not_looked_at(
    twins: tuple[Service, Service], value: object
) -> None:
    # the server has no use for it: a value the client's own schema would refuse still runs
    plain, with_it = twins
    arguments = {"query": "SELECT x, y FROM t"}
    without = await called(plain, "read_query", arguments)
    added = await called(with_it, "read_query", {**arguments, WAIT: value})
    assert not added.is_error
    assert alike(text(added)) == alike(text(without))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_an_argument_error_reads_the_same_with_a_client_argument(
    service: Service, data: st.DataObject
) -> None:
    tool = data.draw(st.sampled_from(sorted(VALID)))
    names = [*VALID[tool], "limit", "ids", "query", "bogus", "wait_for_previus"]
    arguments = data.draw(st.dictionaries(st.sampled_from(names), JSON_VALUES, max_size=4))
    value = data.draw(JSON_VALUES)

    async def call(given: dict[str, Any]) -> CallToolResult:
        async with Client(build_server(service)) as connected:
            return await connected.call_tool(tool, given)

    added = anyio.run(call, {**VALID[tool], **arguments, WAIT: value})
    assert WAIT not in text(added)
    if added.is_error and "argument " in text(added):  # refused before anything ran
        assert text(anyio.run(call, {**VALID[tool], **arguments})) == text(added)
