"""What `sqlgate serve` runs: the server on stdio or HTTP, replication beside it, and the
clean-up of a normal end after every stop.

Ctrl-C and SIGTERM follow `surfaces.stops`: a stop while starting closes what was opened;
a stop while serving cancels the stdio server's tasks (a running statement is interrupted)
or tells uvicorn to exit; then the Service closes (its queued audit rows written) and only
then replication stops, so Litestream's last sync has the final rows. Ctrl-C ends with 130,
SIGTERM with 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlgate.config import creates_parent
from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.migrate import report_move
from sqlgate.surfaces.cli.options import settings_from
from sqlgate.surfaces.cli.replicate import replica_target, start_replication
from sqlgate.surfaces.stops import serve_until_stopped, stop_signals

if TYPE_CHECKING:
    from sqlgate.surfaces.mcp.http_options import OAuthOptions

__all__ = ["run_server"]


def run_server(
    values: dict[str, Any],
    *,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    insecure_no_token: bool,
    oauth: OAuthOptions | None = None,
) -> None:
    """Serve until stdin ends (stdio) or a stop signal; raises SystemExit(130) after Ctrl-C."""
    if oauth is not None and transport != "http":
        raise InvalidArgument(
            "--oauth-issuer applies to --transport http only; add --transport http, or drop "
            "--oauth-issuer (a stdio client is the local agent, with no token)"
        )
    with stop_signals() as stops:
        settings = settings_from(values, find_home=False)  # a client's server: its own db
        replica = replica_target(settings)  # a bad --replicate URL stops here, before any file
        if transport == "http":
            from sqlgate.surfaces.mcp.http import serve_http

            def replicating() -> Callable[[], None] | None:
                replication = start_replication(settings, replica, prepare=True)
                return None if replication is None else replication.stop

            serve_http(settings, host=host, port=port, token=token, stops=stops,
                       insecure_no_token=insecure_no_token, beside=replicating,
                       oauth=oauth)  # fmt: skip
            return
        import anyio

        from sqlgate.service import Service

        service = Service.open(settings, create_parent=creates_parent(settings.db), serving=True)
        report_move(service)  # a 0.1.0 file's tables moved out on this start: say so
        say_binding(service.db.binding_note, settings.db)
        try:
            replication = start_replication(settings, replica)
        except BaseException:
            service.close()
            raise
        try:
            # imported after the database opened: a start-up error does not pay for the SDK
            from sqlgate.surfaces.mcp.server import build_server

            server = build_server(service)
            anyio.run(serve_until_stopped, stops, server.run_stdio_async)
        finally:
            service.close()
            if replication is not None:  # after close: its last sync has the final audit rows
                replication.stop()


def say_binding(note: str | None, db: object) -> None:
    """One stderr line when the records bound the file anew for a reason a person should
    know: the project moved, or the database file was replaced."""
    if note is None or note == "first open":
        return
    import click

    from sqlgate.surfaces import terminal

    click.echo(
        f"sqlgate: note: {terminal.visible(str(db))}: {terminal.visible(note)}; its "
        "history goes on in the same records",
        err=True,
    )
