"""The console's ASGI app: one route per page, static files from the package, errors as
pages; `build_ui_app` puts `ConsoleGate` in front.

Pages are plain functions of (Console, query) run in Starlette's thread pool: each reads
through the read-only service, so a slow page never blocks the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sqlgate.errors import InvalidArgument, SqlgateError
from sqlgate.surfaces.ui.access import ConsoleGate
from sqlgate.surfaces.ui.activity import activity_page, errors_page, patterns_page
from sqlgate.surfaces.ui.claims import claims_page
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.destructive import destructive_page
from sqlgate.surfaces.ui.html import el
from sqlgate.surfaces.ui.layout import Page, page
from sqlgate.surfaces.ui.memory import event_page, memory_page
from sqlgate.surfaces.ui.tables import rows_page, tables_page
from sqlgate.surfaces.web.asgi import ASGIApp

__all__ = ["STATIC_DIR", "build_ui_app", "build_unguarded_app"]

log = logging.getLogger("sqlgate.ui")
STATIC_DIR = Path(__file__).with_name("static")
MAX_PARAM_CHARS = 2000  # a longer query value is cut: filters and search words are short
PageFn = Callable[[Console, Mapping[str, str]], "Page | None"]


def _params(request: Request) -> dict[str, str]:
    return {k: v[:MAX_PARAM_CHARS] for k, v in request.query_params.items()}


def _html(console: Console, view: Page, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page(view, console.settings.db.name), status_code=status)


def _problem(console: Console, status: int, title: str, text: str) -> HTMLResponse:
    return _html(console, Page(title, "", el("p", {"class": "problem"}, text)), status)


def _endpoint(console: Console, build: PageFn) -> Callable[[Request], Response]:
    def endpoint(request: Request) -> Response:
        try:
            view = build(console, _params(request))
        except InvalidArgument as exc:
            return _problem(console, 400, "Bad filter", str(exc))
        except SqlgateError as exc:
            return _problem(console, 500, "Could not read the database", str(exc))
        if view is None:
            return _problem(console, 404, "Not found", "nothing by that name or id")
        return _html(console, view)

    return endpoint


def _event(console: Console) -> Callable[[Request], Response]:
    def endpoint(request: Request) -> Response:
        view = event_page(console, int(request.path_params["event_id"]))
        if view is None:
            return _problem(console, 404, "Not found", "no memory event with that id")
        return _html(console, view)

    return endpoint


def build_unguarded_app(console: Console) -> Starlette:
    """The pages without the gate: for tests of rendering; serve `build_ui_app`."""
    pages: dict[str, PageFn] = {
        "/": activity_page,
        "/errors": errors_page,
        "/patterns": patterns_page,
        "/destructive": destructive_page,
        "/memory": memory_page,
        "/claims": claims_page,
        "/tables": tables_page,
        "/tables/rows": rows_page,
    }
    routes: list[Any] = [
        Route(path, _endpoint(console, build), methods=["GET", "HEAD"])
        for path, build in pages.items()
    ]
    routes.append(Route("/memory/event/{event_id:int}", _event(console), methods=["GET", "HEAD"]))
    routes.append(Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        yield
        console.close()

    return Starlette(routes=routes, lifespan=lifespan)


def build_ui_app(console: Console, token: str, host: str) -> ASGIApp:
    """The console behind its gate: token cookie, Host check, security headers."""
    return ConsoleGate(build_unguarded_app(console), token, host)
