"""Asking the person behind the agent before a destructive statement runs (`--confirm`).

| --confirm | client can ask (elicitation) | client cannot ask            |
|-----------|------------------------------|------------------------------|
| auto      | ask; run only if approved    | run                          |
| always    | ask; run only if approved    | refuse, saying why           |
| never     | run                          | run                          |

The question is asked by the SDK's resolver machinery (`Resolve(...)`) before the tool body
runs, which works on both protocol eras: a standalone `elicitation/create` request up to
2025-11-25, an `InputRequiredResult` round trip from 2026-07-28. A call that the service's
checks before the snapshot refuse (no reason, not one destructive statement, bad params, or
the policy on a dry prepare) is not put to the person: the service refuses it, audited, as
it would anyway; nor is a DROP ... IF EXISTS of an object that does not exist, which the
service answers without running anything. The answer reaches the worker as a `Verdict`,
whose `enforce` the service calls after its dry-run policy check and before anything runs
(or is snapshotted): a declined, cancelled or unaskable call is an audited error, with
nothing changed and no snapshot taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from weakref import WeakKeyDictionary

import apsw
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from sqlgate.errors import PolicyDenied, SqlgateError
from sqlgate.service import CallControl, Service, counted, normalize_params
from sqlgate.surfaces.terminal import json_dumps, visible, visible_lines

__all__ = [
    "CANCELLED",
    "CANNOT_ASK",
    "DECLINED",
    "Approval",
    "Confirmation",
    "UndoConfirmation",
    "Verdict",
    "can_ask",
    "confirmation_message",
    "guard_destructive_calls",
    "undo_message",
]

DECLINED = (
    "the user declined this destructive_query when asked to confirm it: nothing was run and no "
    "snapshot was taken. Do not retry it; ask the user how to go on"
)
CANCELLED = (
    "the user closed the confirmation of this destructive_query without answering: nothing "
    "was run and no snapshot was taken. Retry only if the user asks you to"
)
CANNOT_ASK = (
    "destructive_query is refused: sqlgate runs with --confirm always, and this MCP client "
    "cannot ask its user to confirm (it does not support elicitation), so nothing was run. "
    "Tell the user: they can run it from a client that supports elicitation, or restart "
    "sqlgate with --confirm auto"
)
# the first protocol revision that elicits through InputRequiredResult, not a request
_INPUT_REQUIRED_VERSION = "2026-07-28"
_KEEPS_ROWS = (
    "sqlgate keeps what undoes it: the rows it changes (`sqlgate undo`), or a snapshot of the "
    "whole database for a schema change. Run it?"
)
_KEEPS_FILE = (
    "sqlgate keeps what undoes it: a snapshot of the whole database, taken first (--undo "
    "file). Run it?"
)
# how much of each part the question shows; a longer part says how much is not shown
_SHOWN_CHARS = {"statement": 4000, "values": 1000, "reason": 1000}


class Approval(BaseModel):
    """The form the person answers."""

    approve: bool = Field(
        default=True,
        title="Run this statement",
        description="Run it now (sqlgate keeps what undoes it first)",
    )


@dataclass(frozen=True)
class Verdict:
    """What the worker does about confirmation: go on (`refusal` None) or refuse."""

    refusal: str | None = None
    asked: bool = False

    @property
    def approved(self) -> bool:
        """The person was asked and said run it (the audit row's `confirmed_by`)."""
        return self.asked and self.refusal is None

    def enforce(self) -> None:
        """Called by the service after its policy dry run, before the snapshot."""
        if self.refusal is not None:
            raise PolicyDenied(self.refusal)


@dataclass(frozen=True)
class _Gate:
    mode: str
    service: Service

    def would_refuse(self, query: object, reason: object, params: object) -> bool:
        """True when there is nothing to ask: the service refuses the call before its
        snapshot anyway (no reason, not one destructive statement, bad params, or the
        policy, checked on a dry prepare), or the call changes nothing (a DROP ... IF
        EXISTS of an object that does not exist, a CREATE ... IF NOT EXISTS of one that does)."""
        try:
            bindings = normalize_params(params)
            return not self.service.sql.check_destructive(query, reason, bindings, CallControl())
        except SqlgateError:
            return True
        except apsw.BusyError:
            return False  # another writer holds the lock: ask; the run reports what it finds


# the confirmation policy of each server that announces destructive_query
_GATES: WeakKeyDictionary[MCPServer[Any], _Gate] = WeakKeyDictionary()


def guard_destructive_calls(server: MCPServer[Any], service: Service) -> None:
    """Make `server`'s destructive_query follow `service`'s --confirm setting."""
    _GATES[server] = _Gate(service.settings.confirm, service)


def can_ask(ctx: Context[Any, Any]) -> bool:
    """Whether the client declared form elicitation and this connection can carry it."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # a bare `elicitation: {}` (from before modes existed) means form; url-only does not
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, _INPUT_REQUIRED_VERSION):
        return True
    return bool(ctx.session.can_send_request)  # older eras need a back channel to ask


def _shown(label: str, text: str) -> str:
    limit = _SHOWN_CHARS[label]
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({counted(len(text) - limit, 'more character')} not shown)"


def _indented(text: str, first: str = "    ") -> str:
    """The agent's text as a block: control characters shown as escapes (a terminal shows
    this question), and every line but the first (after `first`) indented, so no line the
    agent wrote can pass for one of sqlgate's own."""
    head, *rest = visible_lines(text).split("\n")
    return "\n".join([first + head, *(("    " + line).rstrip() for line in rest)])


def confirmation_message(
    db: str, query: str, reason: str, params: object, undo: str = "rows"
) -> str:
    """The question the person sees: the statement, its values and the agent's reason;
    `undo` (--undo) says what sqlgate keeps to undo it."""
    lines = [
        f"The agent wants to run a destructive statement on {visible(db)}:",
        "",
        _indented(_shown("statement", query.strip())),
    ]
    if params is not None:
        values = json_dumps(params, default=str)
        lines.append(f"with values: {_shown('values', values)}")
    lines += [
        "",
        _indented(_shown("reason", reason.strip()), "The agent's reason: "),
        "",
        _KEEPS_FILE if undo == "file" else _KEEPS_ROWS,
    ]
    return "\n".join(lines)


def _ask(
    ctx: Context[Any, Any], query: object, reason: object, params: object
) -> Elicit[Approval] | Verdict:
    """Resolver: the question to put to the person, or the verdict when none is needed."""
    gate = _GATES[ctx.mcp_server]
    if gate.mode == "never":
        return Verdict()
    if not can_ask(ctx):
        # a call the service refuses anyway fails with its own error before this one
        return Verdict(CANNOT_ASK) if gate.mode == "always" else Verdict()
    if gate.would_refuse(query, reason, params):
        return Verdict()
    # would_refuse checked both
    assert isinstance(query, str)
    assert isinstance(reason, str)
    settings = gate.service.settings
    message = confirmation_message(str(settings.db), query, reason, params, settings.undo)
    return Elicit(message, Approval)


def _verdict(answer: Annotated[ElicitationResult[Approval], Resolve(_ask)]) -> Verdict:
    """Resolver: the person's answer (or the lack of a question) as a Verdict."""
    if isinstance(answer, AcceptedElicitation):
        data: object = answer.data
        if isinstance(data, Verdict):
            return data
        if isinstance(data, Approval) and data.approve:
            return Verdict(asked=True)
        return Verdict(DECLINED, asked=True)  # accepted the form but unticked "run"
    if isinstance(answer, CancelledElicitation):
        return Verdict(CANCELLED, asked=True)
    return Verdict(DECLINED, asked=True)


# the destructive_query parameter the SDK fills by asking (never part of the tool's schema)
Confirmation = Annotated[Verdict, Resolve(_verdict)]


class UndoApproval(BaseModel):
    """The form the person answers before an undo_call."""

    approve: bool = Field(
        default=True,
        title="Undo this call",
        description="Put back what the call changed (refused if anything changed it since)",
    )


def undo_message(db: str, audit_id: object, reason: str, call: str) -> str:
    """The question the person sees before an undo_call: which call, and the agent's reason."""
    return "\n".join(
        [
            f"The agent wants to take back call {visible(str(audit_id))} on {visible(db)}:",
            "",
            _indented(_shown("statement", call.strip())),
            "",
            _indented(_shown("reason", reason.strip()), "The agent's reason: "),
            "",
            "The undo is refused, changing nothing, if anything changed those rows since. Undo it?",
        ]
    )


def _ask_undo(
    ctx: Context[Any, Any], audit_id: object, reason: object
) -> Elicit[UndoApproval] | Verdict:
    """Resolver for undo_call: the question, or the verdict when none is needed (the mode
    says never, the client cannot ask, or the undo is refused before anything is asked)."""
    gate = _GATES[ctx.mcp_server]
    if gate.mode == "never":
        return Verdict()
    if not can_ask(ctx):
        refusal = CANNOT_ASK.replace("destructive_query", "undo_call")
        return Verdict(refusal) if gate.mode == "always" else Verdict()
    if not isinstance(reason, str) or not reason.strip():
        return Verdict()  # the service refuses it for its missing reason
    if not isinstance(audit_id, (int, str)) or isinstance(audit_id, bool):
        return Verdict()  # the service refuses the malformed id
    try:
        call = gate.service.describe_undo(audit_id)
    except SqlgateError:
        return Verdict()  # refused anyway, with its own error
    except apsw.BusyError:
        call = f"call {audit_id}"
    message = undo_message(str(gate.service.settings.db), audit_id, reason, call)
    return Elicit(message, UndoApproval)


def _undo_verdict(
    answer: Annotated[ElicitationResult[UndoApproval], Resolve(_ask_undo)],
) -> Verdict:
    if isinstance(answer, AcceptedElicitation):
        data: object = answer.data
        if isinstance(data, Verdict):
            return data
        if isinstance(data, UndoApproval) and data.approve:
            return Verdict(asked=True)
    if isinstance(answer, CancelledElicitation):
        return Verdict(CANCELLED.replace("destructive_query", "undo_call"), asked=True)
    return Verdict(
        "the user declined this undo_call when asked to confirm it: nothing was undone. Do not "
        "retry it; ask the user how to go on",
        asked=True,
    )


# the undo_call parameter the SDK fills by asking (never part of the tool's schema)
UndoConfirmation = Annotated[Verdict, Resolve(_undo_verdict)]
