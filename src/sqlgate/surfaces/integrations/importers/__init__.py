"""Importers: memory and claims from other tools' SQLite files into a sqlgate database.

    mycorrhiza          a hash chain (`chain` table) -> memory events (kind note)
    mcp-sqlite-memory   memory_events / memory_checkpoints -> memory events and checkpoints
    claims-mcp          its claims table -> claims (through the claims store)

Each import opens the source read-only, verifies it completely (a broken chain is refused
with the first broken seq or id), cleans and redacts every item like memory content,
and only then has the memory or claims room write it, in ONE transaction with its
provenance event: a chain's events and checkpoints (`land_chain`), or all the claims
(`land_claims`). Nothing is ever half imported. A claim sqlgate cannot hold refuses the
whole import, listing every such claim, unless `skip_bad` leaves them out and lists them in
the report (claim_plan.py).
Re-running imports only what is new (landing.py says how that is known). `dry_run` reads
the target database without opening it for writing, and writes nothing anywhere.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from sqlgate.config import Settings, creates_parent
from sqlgate.errors import InvalidArgument, StartupError
from sqlgate.service import (
    IMPORT_KIND,
    IMPORT_SESSION_PREFIX,
    Outcome,
    Prepared,
    Redactor,
    existing_claims,
    land_chain,
    land_claims,
    prior_imports,
    redactor_for,
)
from sqlgate.surfaces.integrations.importers.claim_plan import plan_claims
from sqlgate.surfaces.integrations.importers.landing import (
    ImportReport,
    guard_source_is_not_target,
    plan_chain,
    raced,
    resume_point,
)
from sqlgate.surfaces.integrations.importers.readers import (
    read_claims_mcp,
    read_mycorrhiza,
    read_sqlite_memory,
)
from sqlgate.surfaces.integrations.importers.sources import BrokenSource, ChainSource, SourceClaim

if TYPE_CHECKING:  # the service is imported when an import runs, not at start-up
    from sqlgate.service import Service

__all__ = ["IMPORT_KIND", "SOURCES", "BrokenSource", "ImportReport", "run_import"]

SOURCES = ("mycorrhiza", "mcp-sqlite-memory", "claims-mcp")
_CHAIN_READERS: dict[str, Callable[[Path], ChainSource]] = {
    "mycorrhiza": read_mycorrhiza,
    "mcp-sqlite-memory": read_sqlite_memory,
}


@contextmanager
def _target_reader(db: Path) -> Iterator[apsw.Connection | None]:
    """The target database read-only, in one read transaction, or None when it does not
    exist yet (planning and --dry-run never open it for writing)."""
    if not db.is_file():
        yield None
        return
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(5000)
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
    except apsw.Error as exc:
        raise StartupError(f"cannot read the database {db}: {exc}; nothing was imported") from None
    try:
        yield conn
    finally:
        conn.close()


def run_import(
    settings: Settings,
    source: str,
    path: Path,
    *,
    dry_run: bool = False,
    skip_bad: bool = False,
    wall_clock: Callable[[], float] = time.time,
) -> ImportReport:
    """Import `path` (a `source` file) into `settings.db`; see the module docstring."""
    path = path.expanduser().absolute()
    guard_source_is_not_target(path, settings.db)
    redactor = redactor_for(settings)
    if source in _CHAIN_READERS:
        chain = _CHAIN_READERS[source](path)  # verified before the target is even opened
        report = ImportReport(source, str(path), chain.head_hash, dry_run=dry_run)
        return _import_chain(settings, chain, report, redactor, wall_clock)
    if source == "claims-mcp":
        claims, digest = read_claims_mcp(path)
        report = ImportReport(source, str(path), digest, dry_run=dry_run)
        return _import_claims(settings, claims, report, redactor, wall_clock, skip_bad)
    raise InvalidArgument(f"unknown source {source!r}; choose one of: {', '.join(SOURCES)}")


def _open_service(settings: Settings, wall_clock: Callable[[], float]) -> Service:
    from sqlgate.service import Service, new_session_id

    return Service.open(
        settings,
        wall_clock=wall_clock,
        session=new_session_id().replace("s-", IMPORT_SESSION_PREFIX, 1),
        create_parent=creates_parent(settings.db),
        actor="cli",
    )


def _import_chain(
    settings: Settings, chain: ChainSource, report: ImportReport, redactor: Redactor,
    wall_clock: Callable[[], float],
) -> ImportReport:  # fmt: skip
    def plan_from(conn: apsw.Connection | None) -> tuple[int, int, list[Prepared]]:
        records = [] if conn is None else prior_imports(conn, chain.importer)
        after, after_checkpoint = resume_point(chain, records)
        report.skipped.clear()
        report.redacted.clear()
        plan = plan_chain(chain, after, after_checkpoint, redactor, settings.max_event_chars,
                          report)  # fmt: skip
        return after, after_checkpoint, plan

    def finish(after: int, plan: list[Prepared]) -> ImportReport:
        report.after = after or None
        report.events = sum(1 for item in plan if not item.checkpoint)
        report.checkpoints = sum(1 for item in plan if item.checkpoint)
        if plan:
            report.status = "would import" if report.dry_run else "imported"
        elif after > 0 and after == chain.head_ref:
            report.status = "already imported"
        else:
            report.status = "nothing new"
        return report

    # planned on the target read-only first: a source item sqlgate cannot take stops the
    # import before the database is even opened for writing
    with _target_reader(settings.records.records) as conn:  # sqlgate's memory and claims
        after, after_checkpoint, plan = plan_from(conn)
    finish(after, plan)
    if report.dry_run or not plan:
        return report

    service = _open_service(settings, wall_clock)
    try:

        def provenance(events: int, checkpoints: int, first: int | None) -> dict[str, Any]:
            return {
                "source": chain.importer, "path": report.path, "head_hash": chain.head_hash,
                "last_ref": chain.head_ref, "last_checkpoint": chain.last_checkpoint,
                "after": after, "events": events, "checkpoints": checkpoints,
                "first_event_id": first, "skipped": report.skipped,
                "redacted": report.redacted,
            }  # fmt: skip

        def unchanged(records: list[dict[str, Any]]) -> None:
            # decided again under the write lock: a concurrent import must not double up
            if resume_point(chain, records) != (after, after_checkpoint):
                raise raced()

        def work(_: Any) -> Outcome:
            report.provenance_event = land_chain(
                service.memory.chain, chain.importer, plan, provenance, unchanged
            )
            return Outcome(json.dumps(report.as_dict()), len(plan), {"source": chain.importer})

        service.call("import", work, detail={"path": report.path})
        return report
    finally:
        service.close()


def _import_claims(
    settings: Settings, claims: list[SourceClaim], report: ImportReport, redactor: Redactor,
    wall_clock: Callable[[], float], skip_bad: bool,
) -> ImportReport:  # fmt: skip
    now = datetime.fromtimestamp(wall_clock(), tz=timezone.utc)

    def status(count: int) -> None:
        report.claims = count
        if count == 0:
            report.status = (
                "already imported" if report.skipped.get("already_here") else ("nothing new")
            )
        else:
            report.status = "would import" if report.dry_run else "imported"

    with _target_reader(settings.records.records) as conn:  # sqlgate's memory and claims
        present = {} if conn is None else existing_claims(conn)
        recorded = [] if conn is None else prior_imports(conn, "claims-mcp")
    if any(r.get("head_hash") == report.head_hash for r in recorded):
        report.status = "already imported"
        return report
    plan = plan_claims(claims, present, redactor, now, report, skip_bad)
    status(len(plan))
    if report.dry_run or not plan:
        return report

    service = _open_service(settings, wall_clock)
    try:

        def work(_: Any) -> Outcome:
            record = {
                "source": "claims-mcp", "path": report.path, "head_hash": report.head_hash,
                "claims": len(plan), "skipped": report.skipped, "redacted": report.redacted,
                "bad": [item["ref"] for item in report.bad],
            }  # fmt: skip
            # one transaction: every claim and the provenance event land together, or none
            report.provenance_event = land_claims(service.claims, plan, record)
            return Outcome(json.dumps(report.as_dict()), len(plan), {"source": "claims-mcp"})

        service.call("import", work, detail={"path": report.path})
        return report
    finally:
        service.close()
