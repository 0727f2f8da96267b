"""How a session id reads where a list shows it short (`sqlgate log`, the web console).

sqlgate names a session `s-20261202T035830Z-471d28` (a server's; `cli-…` a command's):
its start time repeats the times of its own calls, its random part tells it from the
others. An HTTP caller's session goes on with its actor and, when the protocol revision has
sessions, its connection (`…/alice/5c91b6bf`, engine.records.actors). Shown short, the start time
is left out and the rest is kept, so the actor stays readable: `s-…471d28/alice/5c91b6bf`.
Any other session text is shown as it is.
"""

from __future__ import annotations

import re

__all__ = ["short_session"]

_SESSION_ID = re.compile(r"([a-z]+)-\d{8}T\d{6}Z-([0-9a-f]+)(/.+)?")


def short_session(session: object, actor: object = None) -> str:
    """`session` without its start time (this module's docstring). `actor`, when it is the
    session's own and shown beside it (a table's actor column), is left out in turn:
    `s-…471d28/…/5c91b6bf`."""
    text = "" if session is None else str(session)
    found = _SESSION_ID.fullmatch(text)
    if found is None:
        return text
    short = f"{found.group(1)}-…{found.group(2)}"
    rest = found.group(3)
    if rest is None:
        return short
    who, _, connection = rest[1:].partition("/")
    if actor is None or who != actor:
        return short + rest
    return f"{short}/…" + (f"/{connection}" if connection else "")
