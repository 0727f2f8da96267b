"""The undo tools of the Service: take back one earlier call by its audit id or changeset,
describe it for a person asked to confirm, and list what can still be undone."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlgate.engine.commands import list_calls
from sqlgate.engine.records import AGENT_FINDS_CALLS, LIST_CALLS, parse_call_ref
from sqlgate.engine.running import Outcome
from sqlgate.errors import InvalidArgument
from sqlgate.service.calls import Call, Calls

if TYPE_CHECKING:
    from sqlgate.engine.undo import UndoTarget

__all__ = ["UndoTools", "undo_target"]


def undo_target(
    audit_id: int | str | None,
    changeset: int | str | None,
    *,
    by_agent: bool = False,
    listing: str = LIST_CALLS,
) -> UndoTarget:
    """What `undo` was asked for: numbers as given, texts as `15` or `15@3f9a1c07`
    (`listing`: the command that lists the ids, for a person's malformed one)."""
    from sqlgate.engine.undo import UndoTarget

    if (audit_id is None) == (changeset is None):
        raise InvalidArgument(
            "name the call to undo: its audit id (as the undo hint shows it, e.g. 15@3f9a1c07),"
            " or --changeset N"
        )
    given = audit_id if audit_id is not None else changeset
    if isinstance(given, str):
        ref = parse_call_ref(given, AGENT_FINDS_CALLS if by_agent else listing)
        number, database = ref.audit_id, ref.database
    else:
        number, database = given, None  # type: ignore[assignment]
    if audit_id is not None:
        return UndoTarget(audit_id=number, database=database, by_agent=by_agent)
    return UndoTarget(changeset=number, database=database, by_agent=by_agent)


class UndoTools(Calls):
    """The tools that take back what an earlier call changed."""

    def undo(
        self,
        audit_id: int | str | None = None,
        changeset: int | str | None = None,
        *,
        tool: str = "undo",
        reason: str | None = None,
        confirm: Callable[[], None] | None = None,
        confirmed: bool = False,
    ) -> str:
        """Restore the rows one earlier call changed, named by its audit id or its changeset
        id, either as a number (of this database) or as `15@3f9a1c07` (refused when the id
        after `@` is another database's). `tool` is how the audit log names this undo."""
        target = undo_target(
            audit_id, changeset, by_agent=tool == "undo_call", listing=list_calls(self.db.path)
        )

        def work(_: Call) -> Outcome:
            if confirm is not None:
                confirm()
            text, rows, detail = self.undoing.undo(target)
            return Outcome(text, rows, detail)

        asked: dict[str, Any] = {"undoes": target.audit_id, "changeset": target.changeset}
        if target.database is not None:
            asked["database"] = target.database
        if reason is not None:
            asked["reason"] = reason
        asked.update(self._confirmed_by(confirmed))
        return self.call(tool, work, detail={k: v for k, v in asked.items() if v is not None})

    def undo_call(
        self,
        audit_id: int | str,
        reason: str,
        confirm: Callable[[], None] | None = None,
        *,
        confirmed: bool = False,
    ) -> str:
        """The agent takes back one of this database's earlier calls (the undo_call tool)."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgument(
                "reason is required: say in a sentence why this call should be taken back"
            )
        return self.undo(
            audit_id, tool="undo_call", reason=reason, confirm=confirm, confirmed=confirmed
        )

    def describe_undo(self, audit_id: int | str) -> str:
        """One line naming the call an undo_call would take back (for the person asked to
        confirm it); raises what the agent's undo_call would raise for a call it cannot find."""
        return self.undoing.describe(undo_target(audit_id, None, by_agent=True))

    def undoable(self) -> list[dict[str, Any]]:
        """Calls that can still be undone, newest first (not audited: a listing)."""
        found = self.undoing.undoable()
        for item in found:
            for key in ("audit_id", "changeset"):
                if item[key] is not None:
                    item[key] = self.sql.call_ref(int(item[key]))
        return found
