"""What agents pass to the memory tools: clear errors for bad input, and nothing half-written."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.memory.inputs import (
    MAX_IDS,
    MAX_TAGS,
    event_ids,
    event_kind,
    event_kinds,
    event_tags,
    moment,
    text_field,
)
from sqlgate.service import Service
from tests.memory.conftest import OpenMemory, append_many, count_rows, witness_of


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param("", "is empty", id="empty"),
        pytest.param("  \n\t ", "is empty", id="blank"),
        pytest.param(None, "must be text", id="none"),
        pytest.param(42, "must be text", id="not-text"),
        pytest.param("x" * 11, "over the limit of 10", id="too-long"),
        pytest.param("bell\x07", "control characters", id="control-byte"),
        pytest.param("nul\x00", "control characters", id="nul"),
        pytest.param("a\ud800b", "unpaired surrogates", id="lone-surrogate"),
    ],
)
def test_text_field_refuses_with_the_reason(value: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        text_field(value, "content", 10)


@pytest.mark.parametrize(
    "value", ["x" * 20, "tab\tand\nnewline\r\n", "émoji 😀", " padded "], ids=repr
)
def test_text_field_keeps_ordinary_text_as_is(value: str) -> None:
    assert text_field(value, "content", 20) == value


@pytest.mark.parametrize("value", ["note", "decision", "tool.call", "a", "x" * 32, "todo-2"])
def test_event_kind_accepts_short_lower_case_words(value: str) -> None:
    assert event_kind(value) == value


@pytest.mark.parametrize(
    "value", ["", "Note", "2fa", "has space", "x" * 33, None, 3, "ünï"], ids=repr
)
def test_event_kind_refuses_anything_else(value: object) -> None:
    with pytest.raises(InvalidArgument, match="kind"):
        event_kind(value)


@pytest.mark.parametrize(
    ("value", "kinds"),
    [
        pytest.param(None, (), id="none"),
        pytest.param(["tool", "note"], ("tool", "note"), id="list"),
        pytest.param("prompt, compaction", ("prompt", "compaction"), id="comma-text"),
        pytest.param("prompt,compaction", ("prompt", "compaction"), id="no-spaces"),
        pytest.param(
            " prompt ,, compaction , ", ("prompt", "compaction"), id="empty-items-dropped"
        ),
        pytest.param("tool", ("tool",), id="one-word"),
    ],
)
def test_event_kinds_are_a_list_or_comma_separated_text(value: object, kinds: tuple[str]) -> None:
    assert event_kinds(value, "exclude_kinds") == kinds


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param("", "exclude_kinds is empty", id="empty-text"),
        pytest.param(" , ,", "exclude_kinds is empty", id="only-commas"),
        pytest.param([1], "kind 1 is invalid", id="not-text-item"),
        pytest.param(["prompt, compaction"], "is invalid", id="comma-inside-a-list-item"),
        pytest.param("prompt; compaction", "is invalid", id="other-separator"),
        pytest.param(7, "list of kinds", id="a-number"),
        pytest.param({"a": 1}, "list of kinds", id="an-object"),
        pytest.param(",".join(["k"] * 51), "at most 50 kinds", id="too-many-in-text"),
    ],
)
def test_event_kinds_refuses_with_what_to_send(value: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase) as refused:
        event_kinds(value, "exclude_kinds")
    if "list of kinds" in phrase or "empty" in phrase:
        assert '"prompt, compaction"' in str(refused.value)


@pytest.mark.parametrize(
    ("value", "tags"),
    [
        pytest.param(None, [], id="none"),
        pytest.param(["b", "a", "b"], ["a", "b"], id="sorted-unique"),
        pytest.param("deploy, db", ["db", "deploy"], id="comma-text"),
        pytest.param("auth", ["auth"], id="one-word"),
        pytest.param(" auth ,, bug ,", ["auth", "bug"], id="empty-items-dropped"),
    ],
)
def test_event_tags_are_a_list_or_comma_separated_text(value: object, tags: list[str]) -> None:
    assert event_tags(value) == tags


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty-text"),
        pytest.param("auth bug", id="text-with-a-space"),
        pytest.param(7, id="a-number"),
        pytest.param(["ok", ""], id="empty-tag"),
        pytest.param([" edge"], id="edge-space"),
        pytest.param(["x" * 65], id="too-long"),
        pytest.param([1], id="not-text"),
        pytest.param(["a\x01"], id="control"),
        pytest.param([f"t{n}" for n in range(MAX_TAGS + 1)], id="too-many"),
    ],
)
def test_event_tags_refuses_malformed_tags(value: object) -> None:
    with pytest.raises(InvalidArgument, match="tag"):
        event_tags(value)


def test_event_ids_accepts_one_id_or_a_list_and_drops_repeats() -> None:
    assert event_ids(7) == [7]
    assert event_ids([3, 1, 3]) == [3, 1]
    assert event_ids([2**63 - 1]) == [2**63 - 1]  # the largest id SQLite can hold


def test_event_ids_counts_a_long_list_before_looking_at_its_items() -> None:
    class Endless(list[object]):
        def __iter__(self) -> Iterator[object]:
            raise AssertionError("the items of a list over the limit were read")

    with pytest.raises(InvalidArgument, match=f"at most {MAX_IDS} ids"):
        event_ids(Endless([1] * 3_000_000))


@pytest.mark.parametrize(
    "value",
    [[], "1", [0], [-2], [1.5], [True], None, list(range(1, MAX_IDS + 2)), [2**63], [10**30]],
    ids=repr,
)
def test_event_ids_refuses_what_is_not_a_list_of_ids(value: object) -> None:
    with pytest.raises(InvalidArgument, match="id"):
        event_ids(value)


@pytest.mark.parametrize(
    ("value", "end_of_day", "stored"),
    [
        pytest.param("2026-11-30", False, "2026-11-30T00:00:00.000Z", id="date"),
        pytest.param("2026-11-30", True, "2026-12-01T00:00:00.000Z", id="date-until"),
        pytest.param("2026-11-30T07:42:00Z", False, "2026-11-30T07:42:00.000Z", id="zulu"),
        pytest.param("2026-11-30T07:42:00Z", True, "2026-11-30T07:42:00.001Z", id="zulu-until"),
        pytest.param("2026-11-30T07:42", False, "2026-11-30T07:42:00.000Z", id="naive-is-utc"),
        pytest.param("2026-11-30T09:42:00+02:00", False, "2026-11-30T07:42:00.000Z", id="offset"),
        pytest.param(" 2026-11-30 ", False, "2026-11-30T00:00:00.000Z", id="spaces"),
        pytest.param("0999-01-01", False, "0999-01-01T00:00:00.000Z", id="padded-year"),
        pytest.param(None, False, None, id="none"),
    ],
)
def test_moment_is_stored_timestamp_text(
    value: str | None, end_of_day: bool, stored: str | None
) -> None:
    assert moment(value, "until", end_of_day=end_of_day) == stored


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param("yesterday", "not an ISO-8601", id="word"),
        pytest.param("2026-13-01", "not an ISO-8601", id="month-13"),
        pytest.param("2026-02-30", "not an ISO-8601", id="feb-30"),
        pytest.param("30/11/2026", "not an ISO-8601", id="slashes"),
        pytest.param("", "ISO-8601", id="empty"),
        pytest.param(20261130, "ISO-8601", id="a-number"),
        pytest.param("9999-12-31", "edge of the calendar", id="last-day-until"),
        pytest.param("0001-01-01T00:00:00+01:00", "edge of the calendar", id="before-year-1"),
    ],
)
def test_moment_refuses_malformed_dates(value: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        moment(value, "until", end_of_day=True)


# -- through the service: nothing half-written ------------------------------------------
Call = Callable[[Service], str]

BAD_CALLS: list[Any] = [
    pytest.param(lambda s: s.append_event(""), InvalidArgument, "empty", id="empty-content"),
    pytest.param(lambda s: s.append_event("x" * 101), InvalidArgument, "over the limit",
                 id="content-too-long"),
    pytest.param(lambda s: s.append_event("ok", kind="Bad Kind"), InvalidArgument, "kind",
                 id="bad-kind"),
    pytest.param(lambda s: s.append_event("ok", tags=7), InvalidArgument, "tags",
                 id="tags-not-a-list"),
    pytest.param(lambda s: s.append_event("x\ud800"), InvalidArgument, "surrogates",
                 id="lone-surrogate"),
    pytest.param(lambda s: s.checkpoint(""), InvalidArgument, "summary is empty",
                 id="empty-summary"),
    pytest.param(lambda s: s.checkpoint("y" * 101), InvalidArgument, "over the limit",
                 id="summary-too-long"),
    pytest.param(lambda s: s.memory_details([99]), NotFound, "no event 99", id="unknown-id"),
    pytest.param(lambda s: s.memory_timeline([2, 98, 99]), NotFound, "no event 98, 99",
                 id="unknown-ids-timeline"),
    pytest.param(lambda s: s.memory_details(["one"]), InvalidArgument, "not an event id",
                 id="id-not-a-number"),
    pytest.param(lambda s: s.memory_search("x", since="last week"), InvalidArgument,
                 "since='last week'", id="malformed-since"),
    pytest.param(lambda s: s.memory_search("x", until="2026-02-30"), InvalidArgument,
                 "until='2026-02-30'", id="malformed-until"),
    pytest.param(lambda s: s.memory_search("x", top_k=0), InvalidArgument, "top_k",
                 id="top-k-zero"),
    pytest.param(lambda s: s.memory_search("x", session=7), InvalidArgument, "session",
                 id="session-not-text"),
    pytest.param(lambda s: s.memory_timeline([1], window=21), InvalidArgument, "window",
                 id="window-too-wide"),
    pytest.param(lambda s: s.get_resume_context(max_events=0), InvalidArgument, "max_events",
                 id="max-events-zero"),
    pytest.param(lambda s: s.get_resume_context(exclude_kinds=""), InvalidArgument,
                 "exclude_kinds", id="exclude-kinds-empty-text"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "phrase"), BAD_CALLS)
def test_bad_input_is_a_clear_error_and_writes_nothing(
    open_memory: OpenMemory, db_path: Path, call: Call, error: type[Exception], phrase: str
) -> None:
    service = open_memory(max_event_chars=100)
    append_many(service, 2)
    witness = witness_of(db_path).read_raw()
    with pytest.raises(error, match=phrase):
        call(service)
    assert count_rows(db_path, "memory_events") == 2
    assert count_rows(db_path, "memory_checkpoints") == 0
    assert witness_of(db_path).read_raw() == witness


def test_unknown_ids_on_an_empty_memory_say_so(memory: Service) -> None:
    with pytest.raises(NotFound, match="the memory is empty"):
        memory.memory_details([1])


def test_content_at_the_limit_is_accepted(open_memory: OpenMemory) -> None:
    service = open_memory(max_event_chars=100)
    assert json.loads(service.append_event("x" * 100))["id"] == 1
