"""Planning an import: what is new since the last import of the same source, cleaned and
redacted like any memory content. The memory room lands it (memory/landing.py).

Provenance: every import that writes anything appends one event of kind `import` (in a
session `import-…`, which no agent can have) whose content is JSON: source kind, absolute
path, the source's head hash and last seq/id, and counts. Before importing, these records
(`prior_imports`) say what was taken already: a chain source that still holds an imported
head (same hash at the same seq) is imported only after it, and not at all when that head
is its head. Claims need no such cursor (claim_plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument, SqlgateError
from sqlgate.service import (
    MAX_TAGS,
    Prepared,
    Redactor,
    event_tags,
    imported_kind,
    moment,
    parse_timestamp,
    text_field,
)
from sqlgate.surfaces.integrations.importers.sources import ChainSource

__all__ = [
    "ImportReport",
    "epoch_seconds",
    "plan_chain",
    "redacted_text",
    "resume_point",
]

MAX_SESSION_CHARS = 128
CLOCK_SKEW = timedelta(minutes=1)


@dataclass
class ImportReport:
    """What an import did (or, with --dry-run, would do)."""

    source: str
    path: str
    head_hash: str | None
    status: str = "imported"  # imported · would import · already imported · nothing new
    dry_run: bool = False
    events: int = 0
    checkpoints: int = 0
    claims: int = 0
    after: int | None = None  # a chain source: imported only after this seq/id
    skipped: dict[str, int] = field(default_factory=dict)
    redacted: dict[str, int] = field(default_factory=dict)
    provenance_event: int | None = None
    # claims sqlgate cannot hold, skipped with --skip-bad: {"ref": ..., "problem": ...}
    bad: list[dict[str, str]] = field(default_factory=list)

    def count(self, table: dict[str, int], key: str, by: int = 1) -> None:
        table[key] = table.get(key, 0) + by

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if value not in (None, {}, [])}


# -- what was imported before -------------------------------------------------------------
def resume_point(chain: ChainSource, records: list[dict[str, Any]]) -> tuple[int, int]:
    """(last seq/id already imported, last checkpoint id already imported) for this chain:
    from the records whose imported head this chain still holds, unchanged."""
    after, checkpoint = 0, 0
    for record in records:
        ref, head = record.get("last_ref"), record.get("head_hash")
        if isinstance(ref, bool) or not isinstance(ref, int):
            continue
        if (ref == 0 and head is None) or (head is not None and chain.hashes.get(ref) == head):
            after = max(after, ref)
            last = record.get("last_checkpoint", 0)
            if isinstance(last, int) and not isinstance(last, bool):
                checkpoint = max(checkpoint, last)
    return after, checkpoint


# -- cleaning -------------------------------------------------------------------------------
def epoch_seconds(value: object, where: str) -> float:
    """A source timestamp (ISO-8601 text, or seconds since the epoch) as epoch seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc).timestamp()
        except (OverflowError, OSError, ValueError):
            pass
    elif isinstance(value, str):
        try:
            text = moment(value, "ts")
        except InvalidArgument:
            text = None
        if text is not None:
            return parse_timestamp(text).timestamp()
    raise InvalidArgument(
        f"{where} has the timestamp {value!r}, which is neither ISO-8601 text nor epoch "
        "seconds; nothing was imported"
    )


def _clean_tags(tags: tuple[str, ...], redactor: Redactor, report: ImportReport) -> list[str]:
    """The source's tags that are valid sqlgate tags and do not look like secrets."""
    kept: list[str] = []
    for tag in tags:
        try:
            event_tags([tag])
        except InvalidArgument:
            report.count(report.skipped, "tags_invalid")
            continue
        if redactor.redact(tag).counts:
            report.count(report.skipped, "tags_secret")
            continue
        kept.append(tag)
    unique = sorted(set(kept))
    if len(unique) > MAX_TAGS:
        report.count(report.skipped, "tags_over_limit", len(unique) - MAX_TAGS)
    return unique[:MAX_TAGS]


def redacted_text(
    value: object, where: str, limit: int, redactor: Redactor, report: ImportReport
) -> str | None:
    """The text as memory stores it, or None when nothing is left once private parts go."""
    text = text_field(value, where, limit)
    redaction = redactor.redact(text)
    for name, count in redaction.counts.items():
        report.count(report.redacted, name, count)
    if not redaction.text.strip():
        report.count(report.skipped, "private")
        return None
    return redaction.text


def _session(value: str | None) -> str | None:
    if value is None or len(value) > MAX_SESSION_CHARS or not value.isprintable():
        return None
    return value


def plan_chain(
    chain: ChainSource,
    after: int,
    after_checkpoint: int,
    redactor: Redactor,
    max_chars: int,
    report: ImportReport,
) -> list[Prepared]:
    """Events after `after` and checkpoints after `after_checkpoint`, in chain order
    (a checkpoint right after the event it was taken at), cleaned and redacted."""
    unit = "seq" if chain.importer == "mycorrhiza" else "event"
    pending = [c for c in chain.checkpoints if c.ref > after_checkpoint]
    plan: list[Prepared] = []

    def checkpoints_up_to(ref: int) -> None:
        while pending and pending[0].anchor <= ref:
            found = pending.pop(0)
            where = f"checkpoint {found.ref} summary"
            text = redacted_text(found.summary, where, max_chars, redactor, report)
            if text is not None:
                epoch = epoch_seconds(found.ts, f"checkpoint {found.ref}")
                plan.append(Prepared(found.ref, text, epoch, session=_session(found.session),
                                     checkpoint=True))  # fmt: skip

    pending.sort(key=lambda c: (c.anchor, c.ref))
    checkpoints_up_to(after)
    for event in chain.events:
        if event.ref <= after:
            continue
        where = f"{chain.importer} {unit} {event.ref}"
        text = redacted_text(event.content, f"{where} content", max_chars, redactor, report)
        if text is not None:
            plan.append(
                Prepared(
                    event.ref, text, epoch_seconds(event.ts, where), imported_kind(event.kind),
                    tuple(_clean_tags(event.tags, redactor, report)), _session(event.session),
                )
            )  # fmt: skip
        checkpoints_up_to(event.ref)
    checkpoints_up_to(chain.head_ref)
    return plan


def guard_source_is_not_target(source: Path, target: Path) -> None:
    try:
        same = source.resolve() == target.resolve()
    except OSError:
        same = False
    if same:
        raise InvalidArgument(
            f"{source} is the database being imported into; import from another file"
        )


def raced() -> SqlgateError:
    return SqlgateError(
        "another import of this source finished while this one was planned; nothing was "
        "written, run the import again"
    )
