"""Building adversarial cases and checking them: one call, refused (or harmless), no change.

A case is `pytest.param(tool, args, expected, phrase, id=...)`: `expected` is the exact
`SqlgateError` class the call must raise, or `HARMLESS` when it must succeed; `phrase`, when
given, must appear in the error message. `@OUTSIDE@` in a string argument becomes the watched
folder that file-writing attacks point at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from tests.security.conftest import World
from tests.security.fingerprint import (
    appended_log_rows,
    assert_records_unchanged,
    assert_unchanged,
)

__all__ = [
    "HARMLESS",
    "Expected",
    "call",
    "case",
    "check_records_unchanged",
    "check_refused_and_unchanged",
    "destructive",
    "placed",
    "read",
    "write",
]

HARMLESS = None
Expected = type[SqlgateError] | None
OUTSIDE = "@OUTSIDE@"


def case(
    tool: str,
    args: Mapping[str, Any],
    expected: Expected,
    id: str,
    phrase: str = "",
    xfail: str = "",
) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(tool, dict(args), expected, phrase, id=f"{tool}-{id}", marks=marks)


def read(query: str, expected: Expected, id: str, **kw: Any) -> Any:
    return case("read_query", {"query": query}, expected, id, **kw)


def write(query: str, expected: Expected, id: str, **kw: Any) -> Any:
    params = kw.pop("params", None)
    args: dict[str, Any] = {"query": query} | ({"params": params} if params is not None else {})
    return case("write_query", args, expected, id, **kw)


def destructive(query: str, expected: Expected, id: str, **kw: Any) -> Any:
    return case("destructive_query", {"query": query}, expected, id, **kw)


def _placed(value: Any, world: World) -> Any:
    if isinstance(value, str):
        return value.replace(OUTSIDE, str(world.outside))
    return value


def placed(args: Mapping[str, Any], world: World) -> dict[str, Any]:
    """`args` with OUTSIDE in its strings made the watched folder."""
    return {key: _placed(value, world) for key, value in args.items()}


def call(service: Service, tool: str, args: Mapping[str, Any]) -> str:
    """Call one tool through its Service method, as a surface would."""
    kwargs = dict(args)
    if tool == "search_text":
        params = kwargs.pop("params", None)
        return service.search_text(SearchRequest(**kwargs), params=params)
    if tool == "destructive_query":
        kwargs.setdefault("reason", "security suite: this must be refused")
    result = getattr(service, tool)(**kwargs)
    assert isinstance(result, str)
    return result


def check_refused_and_unchanged(
    world: World, tool: str, args: Mapping[str, Any], expected: Expected, phrase: str
) -> None:
    sent = placed(args, world)
    before = world.state()
    if expected is HARMLESS:
        call(world.service, tool, sent)
    else:
        with pytest.raises(SqlgateError) as caught:
            call(world.service, tool, sent)
        assert type(caught.value) is expected, f"{type(caught.value).__name__}: {caught.value}"
        assert phrase in str(caught.value)
    after = world.state()
    if tool == "destructive_query" and expected is HARMLESS:
        # a destructive call that succeeds leaves its snapshot (none when it changed nothing,
        # a DROP ... IF EXISTS of a name main lacks), and nothing else
        settings = world.service.settings
        folder = "records" / settings.snapshot_dir.relative_to(settings.records.folder)
        snapshots = after.files - before.files
        assert len(snapshots) <= 1
        assert all(Path(snapshot).parent == folder for snapshot in snapshots)
        after = dataclasses.replace(after, files=before.files)
    assert_unchanged(before, after)
    (audit,) = appended_log_rows(before, after)
    assert audit["tool"] == tool
    assert audit["ok"] == (expected is HARMLESS)


def check_records_unchanged(world: World, tool: str, args: Mapping[str, Any]) -> None:
    """Whatever the call does to the user's file, sqlgate's records stay as they were; a call
    that fails changes neither file."""
    before = world.state()
    try:
        call(world.service, tool, placed(args, world))
    except SqlgateError:
        after = world.state()
        assert_unchanged(before, after)
    else:
        after = world.state()
    assert_records_unchanged(before, after)
