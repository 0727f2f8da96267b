"""`sqlgate claims …`: the claims, for humans, on the same database as the server."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.service import STATES
from sqlgate.surfaces.cli.listing import Column, is_terminal, print_listing
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    existing_service,
    reports_errors,
    settings_options,
)
from sqlgate.surfaces.terminal import json_dumps, json_text, one_line, visible

__all__ = ["claims"]

DB_OPTIONS = ("db", "busy_timeout", "redact", "redact_patterns")
# commands that may write the database also take the consent to adopt another program's file
WRITE_OPTIONS = (*DB_OPTIONS, "adopt_db")
AS_OF_OPTION = click.option(
    "--as-of", default=None, help="ISO date or date-time; nothing is written"
)

if TYPE_CHECKING:  # the service is imported when a command runs, not at start-up
    pass


_CLAIM_TABLE = (
    Column("id", "id", keep_whole=True),
    Column("entity", "entity"),
    Column("kind", "kind", keep_whole=True),
    Column("claim", "claim"),
    Column("rank", "rank", keep_whole=True),
    Column("effective_confidence", "confidence", keep_whole=True),
    Column("state", "state", keep_whole=True),
    Column("last_confirmed", "last confirmed (UTC)", keep_whole=True),
)


def _print_claims(rows: Sequence[dict[str, Any]], as_json: bool, title: str) -> None:
    print_listing(rows, _CLAIM_TABLE, as_json=as_json, title=title, empty=f"{title}: none")


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    row["effective_confidence"] = round(float(row["effective_confidence"]), 2)
    return row


@click.group()
def claims() -> None:
    """Beliefs about entities that decay over time, and their contradictions."""


@claims.command("add")
@click.argument("entity")
@click.argument("kind")
@click.argument("volatility")
@click.argument("confidence", type=float)
@click.argument("text")
@click.option("--rank", type=int, default=None, help="priority rank (priority claims only)")
@JSON_OPTION
@settings_options(WRITE_OPTIONS)
@reports_errors
def claims_add(
    entity: str, kind: str, volatility: str, confidence: float, text: str, rank: int | None,
    as_json: bool, **values: Any,
) -> None:  # fmt: skip
    """Add a claim (or update the same ENTITY, KIND and TEXT)."""
    with existing_service(values, create=True) as service:
        claim, created = service.claims.add(entity, kind, text, volatility, confidence, rank)
        row = _rounded(claim.as_dict(service.claims.now()))
        if as_json:
            click.echo(json_dumps({"created": created, **row}))
        else:
            verb = "added" if created else "updated"
            click.echo(f"{verb} claim {claim.id}: {visible(claim.claim)}")


@claims.command("list")
@click.option("--state", type=click.Choice(STATES), default=None,
              help="only claims in this recorded state")  # fmt: skip
@click.option("--entity", default=None, help="only claims about this entity (any case)")
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def claims_list(state: str | None, entity: str | None, as_json: bool, **values: Any) -> None:
    """Every claim, oldest first, with its effective confidence now.

    The state is the one last recorded (by `stale`, `contradictions`, a confirmation or a
    retraction); `stale` and `contradictions` re-evaluate it.
    """
    with existing_service(values, read_only=True) as service:
        now = service.claims.now()
        rows = [_rounded(c.as_dict(now)) for c in service.claims.listing(state, entity)]
        filters = [f"state {state}"] * (state is not None) + [f"entity {entity!r}"] * (
            entity is not None
        )
        _print_claims(rows, as_json, "claims" + (f" ({', '.join(filters)})" if filters else ""))


@claims.command("search")
@click.argument("text")
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def claims_search(text: str, as_json: bool, **values: Any) -> None:
    """Claims whose text or entity contains TEXT (any case)."""
    with existing_service(values, read_only=True) as service:
        now = service.claims.now()
        rows = [_rounded(c.as_dict(now)) for c in service.claims.search(text)]
        _print_claims(rows, as_json, f"claims matching {text!r}")


@claims.command("stale")
@click.argument("threshold", type=float, default=0.5, required=False)
@AS_OF_OPTION
@JSON_OPTION
@settings_options(WRITE_OPTIONS, existing_db=True)
@reports_errors
def claims_stale(threshold: float, as_of: str | None, as_json: bool, **values: Any) -> None:
    """Claims below THRESHOLD (default 0.5) not retired, oldest confirmation first.

    Marks the active and contradicted ones stale; those already stale are listed again
    until confirmed or retracted.
    """
    with existing_service(values, read_only=as_of is not None) as service:
        items, changes = service.claims.decayed(threshold, as_of)
        rows = []
        for item in items:
            row = _rounded(item.claim.as_dict(service.claims.now()))
            row["effective_confidence"] = round(item.effective, 2)
            rows.append(row)
        _print_claims(rows, as_json, f"claims below {threshold:g}")
        marked = [change["id"] for change in changes]
        already = [item.claim.id for item in items
                   if item.claim.state == "stale" and item.claim.id not in marked]  # fmt: skip
        for words, ids in (("marked stale", marked), ("already stale", already)):
            if ids and not as_json:  # beside the listing, not in it: stderr in a pipe
                click.echo(f"{words}: {', '.join(map(str, ids))}", err=not is_terminal())


@claims.command("contradictions")
@click.option("--observed", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON file: {\"signals\": [...], \"validPeriods\": [...]}")  # fmt: skip
@AS_OF_OPTION
@JSON_OPTION
@settings_options(WRITE_OPTIONS, existing_db=True)
@reports_errors
def claims_contradictions(
    observed: Path | None, as_of: str | None, as_json: bool, **values: Any
) -> None:
    """Findings by rule among live claims: duplicate-rank, status-conflict, rank-drop."""
    signals = None
    if observed is not None:
        try:
            signals = json.loads(observed.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"cannot read {observed} as JSON: {exc}") from None
    with existing_service(values, read_only=as_of is not None) as service:
        evaluation = service.claims.contradictions(signals, as_of)
        if as_json:  # one object, as the MCP tool answers: findings and state changes
            from sqlgate.service import evaluation_json

            click.echo(json_text(evaluation_json(evaluation, as_of)))
            return
        if not evaluation.findings:
            click.echo("no contradictions among live claims")
        for finding in evaluation.findings:
            ids = ", ".join(map(str, finding.claim_ids))
            entities = visible(", ".join(finding.entities))
            click.echo(f"{finding.rule}: {entities} (claims {ids}): {one_line(finding.detail)}")
        for change in evaluation.state_changes:
            click.echo(visible(f"claim {change['id']}: {change['from']} -> {change['to']}"))


@claims.command("confirm")
@click.argument("claim_id", type=int)
@click.option("--confidence", type=float, default=None,
              help="a new confidence, 0 to 1 [default: the claim's own]")  # fmt: skip
@JSON_OPTION
@settings_options(WRITE_OPTIONS, existing_db=True)
@reports_errors
def claims_confirm(claim_id: int, confidence: float | None, as_json: bool, **values: Any) -> None:
    """Confirm claim CLAIM_ID still holds (resets its decay)."""
    with existing_service(values) as service:
        claim = service.claims.confirm(claim_id, confidence)
        row = _rounded(claim.as_dict(service.claims.now()))
        click.echo(json_dumps(row) if as_json else f"confirmed claim {claim.id}")


@claims.command("retract")
@click.argument("claim_id", type=int)
@JSON_OPTION
@settings_options(WRITE_OPTIONS, existing_db=True)
@reports_errors
def claims_retract(claim_id: int, as_json: bool, **values: Any) -> None:
    """Retract claim CLAIM_ID for good."""
    with existing_service(values) as service:
        claim = service.claims.retract(claim_id)
        row = _rounded(claim.as_dict(service.claims.now()))
        click.echo(json_dumps(row) if as_json else f"retracted claim {claim.id}")
