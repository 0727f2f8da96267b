"""Checking what agents pass to the memory tools, with errors that say how to fix it."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone

from sqlgate.engine.framing import counted
from sqlgate.engine.limits import SQLITE_INT_MAX
from sqlgate.errors import InvalidArgument

__all__ = [
    "MAX_ID",
    "MAX_IDS",
    "MAX_KINDS",
    "MAX_TAGS",
    "event_ids",
    "event_kind",
    "event_kinds",
    "event_tags",
    "moment",
    "text_field",
    "word_list",
]

MAX_IDS = 50
MAX_ID = SQLITE_INT_MAX  # a bigger id could not even be looked up
MAX_TAGS = 20
MAX_KINDS = 50
MAX_TAG_CHARS = 64
_KIND = re.compile(r"[a-z][a-z0-9_.-]{0,31}")
# control bytes, and lone surrogates (valid in a Python str, not encodable as UTF-8)
_UNSAFE = frozenset({"Cc", "Cs"})  # control characters and lone surrogates
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def text_field(value: object, name: str, limit: int) -> str:
    """Non-empty text of at most `limit` characters, without NUL or other control bytes."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be text, not {type(value).__name__}")
    if not value.strip():
        raise InvalidArgument(f"{name} is empty: pass some text")
    if len(value) > limit:
        raise InvalidArgument(
            f"{name} is {counted(len(value), 'character')}, over the limit of {limit} "
            "(--max-event-chars); "
            "split it into several events or summarise it"
        )
    if _CONTROL.search(value):
        raise InvalidArgument(
            f"{name} contains control characters or unpaired surrogates; send plain text"
        )
    return value


def event_kind(value: object) -> str:
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidArgument(
            f"kind {value!r} is invalid: use a short lower-case word such as note, decision, "
            "todo (letters, digits, _ . -; at most 32 characters)"
        )
    return value


def word_list(values: object, name: str, what: str, example: tuple[str, str]) -> list[object]:
    """A list of words as given, or one text of them separated by commas (`"prompt,
    compaction"`, as mcp-sqlite-memory takes it): spaces around each are trimmed and empty
    items dropped. Text with no word in it is refused; None is an empty list. The items
    are checked by the caller."""
    if values is None:
        return []
    first, second = example
    if isinstance(values, str):
        words = [word.strip() for word in values.split(",")]
        if not any(words):
            raise InvalidArgument(
                f'{name} is empty: name at least one {what}, e.g. "{first}, {second}", '
                "or leave it out"
            )
        return [word for word in words if word]
    if not isinstance(values, Sequence):
        raise InvalidArgument(
            f"{name} must be a list of {what}s or one text of them separated by commas, "
            f'e.g. ["{first}", "{second}"] or "{first}, {second}"'
        )
    return list(values)


def event_kinds(values: object, name: str) -> tuple[str, ...]:
    """Kinds from a list or comma-separated text (`word_list`), each checked."""
    kinds = word_list(values, name, "kind", ("prompt", "compaction"))
    if len(kinds) > MAX_KINDS:
        raise InvalidArgument(f"{name}: at most {counted(MAX_KINDS, 'kind')}")
    return tuple(event_kind(value) for value in kinds)


def event_tags(values: object) -> list[str]:
    """Tags as the chain stores them, sorted and unique, from a list or comma-separated
    text (`word_list`)."""
    values = word_list(values, "tags", "tag", ("auth", "bug"))
    if len(values) > MAX_TAGS:
        raise InvalidArgument(f"at most {counted(MAX_TAGS, 'tag')} per event")
    tags: set[str] = set()
    for value in values:
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TAG_CHARS:
            raise InvalidArgument(
                f"tag {value!r} is invalid: tags are non-empty text of at most "
                f"{counted(MAX_TAG_CHARS, 'character')}"
            )
        if any(char.isspace() or unicodedata.category(char) in _UNSAFE for char in value):
            raise InvalidArgument(
                f"tag {value!r} has spaces or control characters: use one word per tag, "
                "e.g. auth-bug"
            )
        tags.add(value)
    return sorted(tags)


def event_ids(values: object, limit: int = MAX_IDS) -> list[int]:
    if isinstance(values, int) and not isinstance(values, bool):
        values = [values]
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise InvalidArgument("ids must be a non-empty list of event ids, e.g. [12, 15]")
    if len(values) > limit:
        raise InvalidArgument(f"at most {counted(limit, 'id')} per call")
    ids: list[int] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
            raise InvalidArgument(
                f"id {value!r} is not an event id (a whole number from 1 to {MAX_ID})"
            )
        if value not in ids:
            ids.append(value)
    return ids


def _utc_text(m: datetime) -> str:
    # formatted by hand: strftime("%Y") does not pad years before 1000 on every platform
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}."
        f"{m.microsecond // 1000:03d}Z"
    )


def moment(value: object, name: str, *, end_of_day: bool = False) -> str | None:
    """An ISO-8601 date or date-time as the stored timestamp text (UTC, milliseconds, Z).

    A date alone means its first moment, or with `end_of_day` the first moment of the next
    day (so `until="2026-11-30"` includes all of that day when compared with `<`).
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{name} must be an ISO-8601 date or date-time, e.g. 2026-11-30")
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
            return _utc_text(start + timedelta(days=1) if end_of_day else start)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        utc = parsed.astimezone(timezone.utc)
        # an exact `until` includes its own millisecond
        return _utc_text(utc + timedelta(milliseconds=1) if end_of_day else utc)
    except ValueError:
        raise InvalidArgument(
            f"{name}={value!r} is not an ISO-8601 date or date-time; use e.g. 2026-11-30 or "
            "2026-11-30T07:42:00Z"
        ) from None
    except OverflowError:
        raise InvalidArgument(
            f"{name}={value!r} is at the edge of the calendar (year 1 or 9999); "
            "leave it out for no limit"
        ) from None
