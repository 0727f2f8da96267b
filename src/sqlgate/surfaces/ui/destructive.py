"""Destructive calls: every destructive_query with who asked for it (its actor) and who
confirmed it (the audit detail `confirmed_by`, when the person behind the client was asked:
`--confirm`), its reason, rows affected and undo state, and the exact command that undoes
it; the whole-file snapshots with size and time. `-` where no one is recorded.

    undoable        its row-level changeset is kept: `sqlgate undo ID --db PATH`
    undone          its changeset was applied back (when, by which session)
    expired         its changeset was rotated out (--snapshots-keep)
    snapshot only   it took a whole-file snapshot: `sqlgate snapshots restore NAME`
                    (server stopped; every later change is lost too)
    refused         the server said no: nothing ran, nothing to undo
    failed          it failed: nothing changed, nothing to undo
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlgate.service import (
    AuditFilter,
    call_outcome,
    changeset_states,
    database_id,
    list_snapshots,
)
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.html import Markup, el
from sqlgate.surfaces.ui.layout import (
    NOT_RECORDED,
    Page,
    actor_link,
    copy_button,
    long_text,
    pager,
    session_text,
    short_text,
    table,
    when,
)

__all__ = ["UndoState", "confirmer", "destructive_page", "undo_state"]

PAGE_ROWS = 50
_COLUMNS = ("id", "ts", "actor", "session", "query", "ok", "rows", "error", "detail")


class UndoState:
    """One call's undo state and the command that goes back, if any."""

    def __init__(self, state: str, command: str | None = None, note: str = "") -> None:
        self.state = state
        self.command = command
        self.note = note


def _detail(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def confirmer(detail: Mapping[str, Any]) -> str:
    """Who confirmed a call, from its audit detail: `confirmed_by` (a name, or an object
    naming its `actor`), `-` when the detail names no one."""
    found = detail.get("confirmed_by")
    if isinstance(found, Mapping):
        found = found.get("actor")
    if found is None or found == "":
        return NOT_RECORDED
    return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)


def undo_state(
    audit_id: int, ok: int, detail: dict[str, Any], changesets: Mapping[int, tuple[Any, Any]],
    db: Path, snapshots: frozenset[str], identity: str | None = None,
) -> UndoState:  # fmt: skip
    """The state of destructive call `audit_id` (`changesets`: id -> (undone_at, undone_by))."""
    if not ok:
        return UndoState("refused" if call_outcome(False, detail) == "refused" else "failed")
    where = f" --db {shlex.quote(str(db.absolute()))}"
    call = f"{audit_id}@{identity}" if identity else str(audit_id)
    changeset = detail.get("undo")
    if isinstance(changeset, int):
        if changeset not in changesets:
            return UndoState("expired", note="its changeset was rotated out (--snapshots-keep)")
        undone_at, undone_by = changesets[changeset]
        if undone_at is not None:
            return UndoState("undone", note=f"at {undone_at} by {undone_by}")
        return UndoState("undoable", f"sqlgate undo {call}{where}")
    snapshot = detail.get("snapshot")
    if isinstance(snapshot, str) and snapshot:
        name = Path(snapshot).name
        if name not in snapshots:
            return UndoState("expired", note=f"snapshot {name} was rotated out")
        return UndoState(
            "snapshot only", f"sqlgate snapshots restore {shlex.quote(name)}{where}",
            "restores the WHOLE file: stop the server first; later changes are lost",
        )  # fmt: skip
    return UndoState("no undo data")


def destructive_page(console: Console, query: Mapping[str, str]) -> Page:
    before = query.get("before", "")
    filters = AuditFilter(
        tool="destructive_query", before=int(before) if before.isdigit() else None
    )
    db = console.settings.db
    snapshots = list_snapshots(console.settings.snapshot_dir)
    names = frozenset(info.name for info in snapshots)
    with console.reading() as conn:
        identity = database_id(conn)
        rows = console.audit.rows(conn, filters, _COLUMNS, PAGE_ROWS + 1)
        details = {int(row[0]): _detail(row[8]) for row in rows}
        wanted = [d["undo"] for d in details.values() if isinstance(d.get("undo"), int)]
        changesets = changeset_states(conn, wanted)
    more = len(rows) > PAGE_ROWS
    rows = rows[:PAGE_ROWS]
    shown = []
    for call_id, ts, actor, session, text, ok, count, error, _ in rows:
        detail = details[int(call_id)]
        state = undo_state(int(call_id), ok, detail, changesets, db, names, identity)
        how: list[object] = [el("span", {"class": f"state {state.state.replace(' ', '-')}"},
                                state.state)]  # fmt: skip
        if state.note:
            how.append(el("div", {"class": "note"}, state.note))
        if state.command:
            how.append(el("div", {"class": "copy"}, el("code", None, state.command),
                          copy_button(state.command)))  # fmt: skip
        shown.append([
            call_id, when(ts), actor_link(actor), short_text(confirmer(detail), 80),
            session_text(session),
            el("details", None, el("summary", None, short_text(text)), long_text(text),
               long_text(error) if error else None),
            short_text(detail.get("reason"), 200), count if ok else None, how,
        ])  # fmt: skip
    body = [
        table(("id", "time (UTC)", "asked by", "confirmed by", "session", "statement", "reason",
               "rows", "undo"), shown, empty="no destructive_query calls yet"),
        pager("/destructive", {"before": before} if before else {}, "before",
              rows[-1][0] if more and rows else None),
        el("h2", None, "Snapshots"),
        el("p", None, f"Whole-file copies in {console.settings.snapshot_dir}, newest first."),
        table(("name", "created (UTC)", "size"),
              ([info.name, when(info.created), _size(info.size)] for info in snapshots),
              empty="no snapshots"),
    ]  # fmt: skip
    return Page("Destructive calls", "/destructive", Markup("".join(body)))


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
