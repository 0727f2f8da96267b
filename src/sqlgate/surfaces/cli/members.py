"""`sqlgate members …`: the members of an HTTP team server, their tiers and tokens.

The store is engine/records/members.py (tables `members` and `member_tokens` in the database
itself, tokens kept as their SHA-256). The server reads those tables at every request, so
these commands work while `sqlgate serve --transport http` runs on the same file: a revoke
ends the member's next request, in an open session too.

Each change is an audited call like an agent's: a `query_log` row of tool `members add`,
`members revoke`, ... with actor `cli`, the member's name and tier in its detail, never a
token. `add` and `rotate` print the token once; piped (or with `--json`) stdout holds the
token alone (or one JSON object), so `TOKEN=$(sqlgate members add bob --tier write)` works.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sqlgate.service import TIERS, db_option, shell_word
from sqlgate.surfaces.cli.listing import Column, is_terminal, print_listing
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    existing_service,
    reports_errors,
    settings_options,
)
from sqlgate.surfaces.mcp.http_options import DEFAULT_HOST, DEFAULT_PORT
from sqlgate.surfaces.terminal import json_dumps, visible

if TYPE_CHECKING:  # imported when a command runs, not at start-up
    from sqlgate.service import Member, Members, Service

__all__ = ["members"]

T = TypeVar("T")

DB_OPTIONS = ("db", "busy_timeout")
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp"
FIRST_MEMBERS_SCHEMA = 9  # the migration that made the members tables

TIER_OPTION = click.option(
    "--tier", required=True, type=click.Choice(TIERS),
    help="the highest tier of tools the member may use: read, write or destructive",
)  # fmt: skip
NAME_ARGUMENT = click.argument("name")


def _change(
    service: Service, verb: str, name: str, change: Callable[[Members], T],
    detail: Callable[[T], dict[str, Any]],
) -> T:  # fmt: skip
    """Run `change` on the members tables as the audited call `members VERB`: its row says
    which member (and `detail` of the result: never a token), or the error that ended it."""
    from sqlgate.service import Members, Outcome

    done: list[T] = []

    def work(_: object) -> Outcome:
        with service.db.server_lock:
            result = change(Members(service.db.server, service.wall_clock, db=service.settings.db))
        done.append(result)
        return Outcome(f"members {verb} {name}", 1, detail(result))

    service.call(f"members {verb}", work, detail={"member": name})
    return done[0]


def _named(store: Members, name: str) -> str:
    """The name as the member was added (`Bob` for `bob`), or `name` when there is none."""
    return next((m.name for m in store.listed() if m.name.lower() == name.lower()), name)


def _print_token(member: Member, token: str, verb: str, url: str, as_json: bool, db: Path) -> None:
    """The token, once: one JSON object, the token alone in a pipe (a reminder on stderr),
    or on a terminal how to send it and the line that connects Claude Code."""
    record = {"name": member.name, "tier": member.tier, "state": member.state,
              "created": member.created, "token": token}  # fmt: skip
    if as_json:
        click.echo(json_dumps(record))
        return
    name = visible(member.name)
    if not is_terminal():
        click.echo(token)
        click.echo(
            f"sqlgate: {verb} member {name!r} (tier {member.tier}); its token is on stdout, "
            "shown once: only its SHA-256 is kept",
            err=True,
        )
        return
    claude = (
        f'claude mcp add --transport http sqlgate {visible(url)} --header "Authorization: '
        f'Bearer {token}"'
    )
    click.echo(
        f"{verb} member {name!r} (tier {member.tier}). Its token is shown once (sqlgate keeps "
        f"only its SHA-256); give it to {name} privately:\n\n"
        f"    {token}\n\n"
        "Its client sends it on every request as `Authorization: Bearer <token>`. "
        "For Claude Code (`--url` puts the server's own URL in this line):\n\n"
        f"    {claude}\n\n"
        f"Lost or leaked: `{visible(_command('rotate', member.name, db))}` makes a new one and "
        "ends this one."
    )


def _command(verb: str, name: str, db: Path) -> str:
    """`sqlgate members VERB NAME --db PATH`, as it runs from any folder."""
    return f"sqlgate members {verb} {shell_word(name)} {db_option(db)}"


@click.group()
def members() -> None:
    """Members of an HTTP team server, each with a token and a tier."""


URL_OPTION = click.option(
    "--url", default=DEFAULT_URL, show_default=True, metavar="URL",
    help="the server's MCP URL, for the `claude mcp add` line shown on a terminal",
)  # fmt: skip


@members.command("add")
@NAME_ARGUMENT
@TIER_OPTION
@URL_OPTION
@JSON_OPTION
@settings_options(DB_OPTIONS, db_help="SQLite database file the server serves (created if "
                  "missing)")  # fmt: skip
@reports_errors
def members_add(name: str, tier: str, url: str, as_json: bool, **values: Any) -> None:
    """Add member NAME with a tier, and print its token once.

    NAME is 1 to 64 letters, digits and . _ @ + : | - (starting with a letter or digit),
    not a name sqlgate uses itself (admin, local, cli, anonymous), and not the name of a
    current member in any case. On a terminal the token comes with how to send it; in a
    pipe stdout is the token alone: `TOKEN=$(sqlgate members add bob --tier write)`.
    """
    from sqlgate.service import check_name

    check_name(name)  # before the database is opened, or created
    with existing_service(values, create=True) as service:
        member, token = _change(
            service, "add", name, lambda store: store.add(name, tier),
            lambda made: {"tier": made[0].tier},
        )  # fmt: skip
    _print_token(member, token, "added", url, as_json, service.db.path)


_MEMBER_TABLE = (
    Column("name", "name"),
    Column("tier", "tier", keep_whole=True),
    Column("state", "state", keep_whole=True),
    Column("created", "created (UTC)", keep_whole=True),
    Column("last_used", "last used (UTC)", keep_whole=True),
)


@members.command("list")
@click.option("--all", "include_removed", is_flag=True,
              help="removed members too (their names may have been given again)")  # fmt: skip
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def members_list(include_removed: bool, as_json: bool, **values: Any) -> None:
    """Members by name: tier, state (active, revoked, removed), created and last used.

    Never a token nor its digest. Last used is the member's newest call in the audit log.
    """
    from sqlgate.service import Members

    with existing_service(values, read_only=True) as service:
        found = []
        if service.db.schema_version >= FIRST_MEMBERS_SCHEMA:
            found = Members(service.db.server).listed(include_removed=include_removed)
    records = [{"name": m.name, "tier": m.tier, "state": m.state, "created": m.created,
                "last_used": m.last_used} for m in found]  # fmt: skip
    print_listing(
        records, _MEMBER_TABLE, as_json=as_json,
        title="members" + (", removed ones too" if include_removed else ""),
        empty=f"no members; `sqlgate members add NAME --tier read {db_option(service.db.path)}` "
        "adds one",
    )  # fmt: skip


@members.command("revoke")
@NAME_ARGUMENT
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def members_revoke(name: str, as_json: bool, **values: Any) -> None:
    """End every token of member NAME at once; the member stays, with no working token.

    A running server refuses the token from its next request, in an open session too.
    `sqlgate members rotate NAME` gives the member a new token.
    """
    with existing_service(values) as service:
        name, ended = _change(service, "revoke", name,
                              lambda store: (_named(store, name), store.revoke(name)),
                              lambda done: {"tokens_revoked": done[1]})  # fmt: skip
    if as_json:
        click.echo(json_dumps({"name": name, "tokens_revoked": ended}))
        return
    shown = visible(name)
    what = "its token no longer works" if ended else "it had no working token"
    rotate = visible(_command("rotate", name, service.db.path))
    click.echo(f"revoked member {shown!r}: {what}; `{rotate}` gives it a new one")


@members.command("remove")
@NAME_ARGUMENT
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def members_remove(name: str, as_json: bool, **values: Any) -> None:
    """Remove member NAME: its tokens end at once and the name is free for a new member.

    Its audit rows keep its name; `members list --all` still shows it, as removed.
    """

    def remove(store: Members) -> str:
        named = _named(store, name)
        store.remove(name)
        return named

    with existing_service(values) as service:
        name = _change(service, "remove", name, remove, lambda _: {})
    if as_json:
        click.echo(json_dumps({"name": name, "state": "removed"}))
        return
    click.echo(f"removed member {visible(name)!r}: its tokens no longer work, and the "
               "name may be given to a new member")  # fmt: skip


@members.command("set")
@NAME_ARGUMENT
@TIER_OPTION
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def members_set(name: str, tier: str, as_json: bool, **values: Any) -> None:
    """Change member NAME's tier; a running server applies it from the next request."""
    with existing_service(values) as service:
        name, (before, after) = _change(
            service, "set", name, lambda store: (_named(store, name), store.set_tier(name, tier)),
            lambda done: {"from": done[1][0], "to": done[1][1]},
        )  # fmt: skip
    if as_json:
        click.echo(json_dumps({"name": name, "from": before, "to": after}))
        return
    click.echo(f"member {visible(name)!r}: tier {before} -> {after}, from its next request")


@members.command("rotate")
@NAME_ARGUMENT
@URL_OPTION
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def members_rotate(name: str, url: str, as_json: bool, **values: Any) -> None:
    """Give member NAME a new token (printed once, as `add` does); its old tokens end."""
    with existing_service(values) as service:
        member, token = _change(service, "rotate", name, lambda store: store.rotate(name),
                                lambda made: {"tier": made[0].tier})  # fmt: skip
    _print_token(member, token, "rotated", url, as_json, service.db.path)
