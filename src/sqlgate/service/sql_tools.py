"""The SQL tools of the Service: read, write and destructive statements, the schema, views
and text search, each an audited call (`calls.Calls.call`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlgate.engine.limits import CallControl
from sqlgate.engine.running import Outcome
from sqlgate.service.calls import Call, Calls

if TYPE_CHECKING:
    from sqlgate.engine.running import Bindings, SearchRequest

__all__ = ["SqlTools"]


def _params_detail(params: object) -> dict[str, Any] | None:
    """The bound parameters as the audit row keeps them: JSON text (cut and redacted like
    every detail value), or nothing when the call had none."""
    if params is None:
        return None
    return {"params": json.dumps(params, ensure_ascii=False, default=str)}


def _bindings(params: object) -> Bindings:
    """`engine.running.normalize_params`, imported with the SQL engine when a statement runs."""
    from sqlgate.engine.running import normalize_params

    return normalize_params(params)


class SqlTools(Calls):
    """The tools that run the caller's SQL and read the schema."""

    def read_query(
        self,
        query: str,
        limit: int | None = None,
        params: object = None,
        control: CallControl | None = None,
    ) -> str:
        return self.call(
            "read_query",
            lambda c: self.sql.read(query, limit, _bindings(params), c.control),
            query=query,
            control=control,
            detail=_params_detail(params),
        )

    def write_query(
        self, query: str, params: object = None, control: CallControl | None = None
    ) -> str:
        return self.call(
            "write_query",
            lambda c: self.sql.write(query, _bindings(params), c.control),
            query=query,
            control=control,
            detail=_params_detail(params),
        )

    def destructive_query(
        self,
        query: str,
        reason: str,
        params: object = None,
        control: CallControl | None = None,
        confirm: Callable[[], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
        *,
        confirmed: bool = False,
    ) -> str:
        """`confirmed`: the person behind the caller's session approved it when asked (its
        row's detail says who: `confirmed_by`)."""
        return self.call(
            "destructive_query",
            lambda c: self.sql.destructive(
                query, reason, _bindings(params), c.control, confirm, progress
            ),
            query=query,
            control=control,
            detail={
                "reason": reason,
                **(_params_detail(params) or {}),
                **self._confirmed_by(confirmed),
            },
        )

    def list_tables(
        self, include_row_counts: bool = True, control: CallControl | None = None
    ) -> str:
        def work(c: Call) -> Outcome:
            text, count = self.introspection.list_tables(include_row_counts, c.control)
            return Outcome(text, count)

        return self.call("list_tables", work, control=control)

    def describe_table(self, table: str) -> str:
        def work(_: Call) -> Outcome:
            text, count = self.introspection.describe_table(table)
            return Outcome(text, count)

        return self.call("describe_table", work, detail={"table": table})

    def get_schema(self, include_system: bool = False) -> str:
        def work(_: Call) -> Outcome:
            text, count = self.introspection.get_schema(include_system)
            return Outcome(text, count)

        return self.call("get_schema", work)

    def create_view(
        self,
        name: str,
        select_sql: str,
        description: str = "",
        replace: bool = False,
        control: CallControl | None = None,
    ) -> str:
        def work(c: Call) -> Outcome:
            text, undo_id = self.views.create_view(
                name, select_sql, description, replace, c.control
            )
            if undo_id is None:
                return Outcome(text, 0, {"view": name})
            finish = self.sql.undo_text(text, undo_id)
            return Outcome(finish(None), 0, {"view": name, "undo": undo_id}, finish=finish)

        return self.call("create_view", work, query=select_sql, control=control)

    def search_text(
        self,
        request: SearchRequest,
        params: object = None,
        control: CallControl | None = None,
    ) -> str:
        return self.call(
            "search_text",
            lambda c: self.text_search.search(request, _bindings(params), c.control),
            query=request.where,
            control=control,
            detail={"pattern": request.pattern, "table": request.table},
        )
