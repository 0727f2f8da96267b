"""`sqlgate ui`: serve the console on 127.0.0.1 until stopped.

Host and token follow `serve --transport http` (`web.access.token_for`): a loopback host
without a token gets a generated one, printed in the URL to open; any other host needs a
token you chose (--token or SQLGATE_TOKEN). Nothing is opened when that check or the bind
fails. The database is opened read-only (`Console.open`). Ctrl-C and SIGTERM stop it as
they stop `serve` (`surfaces.stops`).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from sqlgate.errors import NotFound
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.stops import Stops, stop_signals
from sqlgate.surfaces.web.access import Token, token_for
from sqlgate.surfaces.web.listen import DEFAULT_HOST, listen_socket, serve_on, shown_host

__all__ = ["DEFAULT_UI_PORT", "serve_ui", "ui"]

DEFAULT_UI_PORT = 8766  # beside the MCP transport's 8765: both can run at once
UI_OPTIONS = ("db", "busy_timeout", "query_timeout", "max_rows", "max_result_bytes",
              "max_cell_chars")  # fmt: skip


def console_url(host: str, port: int, token: Token) -> str:
    base = f"http://{shown_host(host)}:{port}/"
    return f"{base}?token={token.value}" if token.generated else base


def _announce(url: str, token: Token) -> None:
    say = sys.stderr.write
    say(f"sqlgate: the web console (read-only) is at {url}\n")
    if token.generated:
        say("sqlgate: that token is valid until the console stops; opening the URL signs "
            "this browser in (a cookie), then the token leaves the address bar\n")  # fmt: skip
    else:
        say("sqlgate: open it once with ?token=<your --token or SQLGATE_TOKEN> at the end\n")
    sys.stderr.flush()


def serve_ui(
    values: dict[str, Any], *, host: str, port: int, token: str | None, stops: Stops | None = None
) -> None:
    """Check, listen, open the console read-only, serve until stopped (`surfaces.stops`)."""
    from sqlgate.surfaces.ui.app import build_ui_app
    from sqlgate.surfaces.ui.console import Console

    settings = settings_from(values)
    required = token_for(host, token)
    if not settings.db.is_file():
        raise NotFound(f"no database at {settings.db}; give its path with --db or SQLGATE_DB")
    sock = listen_socket(host, port)
    console: Console | None = None
    try:
        console = Console.open(settings)  # a refused file ends here: one error line, no more
        url = console_url(host, int(sock.getsockname()[1]), required)
        app = build_ui_app(console, required.value, host)
        serve_on(sock, app, lambda: _announce(url, required), stops, graceful_seconds=2)
    finally:
        sock.close()
        if console is not None:
            sys.stderr.write("sqlgate: the web console stopped\n")


@click.command("ui")
@settings_options(UI_OPTIONS, existing_db=True)
@click.option(
    "--host",
    envvar="SQLGATE_UI_HOST",
    default=DEFAULT_HOST,
    show_default=True,
    help="address to listen on; not loopback needs --token [env SQLGATE_UI_HOST]",
)
@click.option(
    "--port",
    envvar="SQLGATE_UI_PORT",
    type=click.IntRange(0, 65535),
    default=DEFAULT_UI_PORT,
    show_default=True,
    help="port to listen on (0: any free port) [env SQLGATE_UI_PORT]",
)
@click.option("--token", envvar="SQLGATE_TOKEN", default=None,
              help="token the first URL carries; generated on loopback if absent, required "
                   "elsewhere [env SQLGATE_TOKEN]")  # fmt: skip
@reports_errors
def ui(host: str, port: int, token: str | None, **values: Any) -> None:
    """A local, read-only web console: activity, destructive calls, memory, claims, tables.

    Opens the database read-only (works while a server writes it) and prints the URL to
    open, with a token valid until the console stops (opening it signs a browser in with a
    cookie). Stop it with Ctrl-C (exit 130) or SIGTERM (exit 0).
    """
    with stop_signals() as stops:
        serve_ui(values, host=host, port=port, token=token, stops=stops)
