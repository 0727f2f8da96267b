"""The SQL tool group: nine tools, each a few lines over the service."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from sqlgate.service import Service
from sqlgate.surfaces.mcp.confirm import Confirmation, UndoConfirmation, guard_destructive_calls
from sqlgate.surfaces.mcp.progress import relay_progress
from sqlgate.surfaces.mcp.tooling import (
    DESTRUCTIVE,
    READ_ONLY,
    WRITES,
    Params,
    at_most,
    run_tool,
    sql_text,
)

__all__ = ["SQL_TOOLS", "announce_limits", "register_sql_tools"]

MAX_COLUMNS = 2000  # SQLITE_LIMIT_COLUMN (engine/connect.py): no table has more
Columns = Annotated[
    Annotated[list[str], Field(max_length=MAX_COLUMNS)] | None, at_most(MAX_COLUMNS, "column")
]

SQL_TOOLS = (
    "read_query",
    "write_query",
    "destructive_query",
    "undo_call",
    "list_tables",
    "describe_table",
    "get_schema",
    "create_view",
    "search_text",
)


SEARCH_LIMIT = 100  # search_text's default limit, when --max-rows allows it


def announce_limits(server: MCPServer, service: Service) -> None:
    """Write this server's numbers into each `limit`'s announced schema.

    The agent cannot read `--max-rows` or `--default-limit`, so the schema says them: the
    default a call without `limit` gets, and the most a call gets (a larger one is lowered).
    Like `compact_tools`, this edits the announced schema the SDK keeps on each tool
    (`Tool.parameters`); validation stays with the tool's pydantic model. It runs after
    `compact_tools`, which reads a default of null as "optional".
    """
    max_rows = service.settings.max_rows
    defaults = {
        "read_query": ("rows", min(service.settings.default_limit, max_rows)),
        "search_text": ("matches", min(SEARCH_LIMIT, max_rows)),
    }
    manager = getattr(server, "_tool_manager", None)
    for tool in manager.list_tools() if manager is not None else []:
        if tool.name in defaults:
            what, default = defaults[tool.name]
            limit = tool.parameters["properties"]["limit"]
            limit["description"] = f"{what}: default {default}, max {max_rows} (larger is lowered)"
            limit["default"] = default


def register_sql_tools(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def read_query(
        query: Annotated[
            str,
            sql_text("query"),
            Field(description="one SELECT/WITH/EXPLAIN/PRAGMA statement; text in 'single quotes'"),
        ],
        limit: Annotated[
            int | None,
            Field(
                ge=1,
                description="rows to return at most (larger is lowered)",
            ),
        ] = None,
        params: Params = None,
    ) -> str:
        """Run a read-only query; returns CSV and a `# N rows` trailer."""
        return await run_tool(lambda c: service.read_query(query, limit, params, c))

    @server.tool(annotations=WRITES, structured_output=False)
    async def write_query(
        query: Annotated[
            str,
            sql_text("query"),
            Field(
                description="one INSERT/UPDATE…WHERE/upsert/CREATE statement; "
                "text in 'single quotes'"
            ),
        ],
        params: Params = None,
    ) -> str:
        """Insert or update rows, or create tables and indexes. Returns rows affected."""
        return await run_tool(lambda c: service.write_query(query, params, c))

    guard_destructive_calls(server, service)

    @server.tool(annotations=DESTRUCTIVE, structured_output=False)
    async def destructive_query(
        ctx: Context,  # filled by the SDK, like `confirmation` (the user's answer, if asked)
        confirmation: Confirmation,
        query: Annotated[
            str,
            sql_text("query"),
            Field(
                description="one DELETE/DROP/ALTER/trigger/UPDATE statement; "
                "text in 'single quotes'"
            ),
        ],
        reason: Annotated[str, Field(description="why this change is needed, in a sentence")],
        params: Params = None,
    ) -> str:
        """Delete, drop or alter; the server keeps what undoes it (rows, or a file snapshot)."""
        progress = relay_progress(ctx, "pages copied to the snapshot")
        return await run_tool(
            lambda c: service.destructive_query(
                query,
                reason,
                params,
                c,
                confirmation.enforce,
                progress,
                confirmed=confirmation.approved,
            )
        )

    @server.tool(annotations=DESTRUCTIVE, structured_output=False)
    async def undo_call(
        confirmation: UndoConfirmation,
        audit_id: Annotated[
            str | int,
            Field(
                description="the call to take back, as its answer's undo hint names it: 15@3f9a1c07"
            ),
        ],
        reason: Annotated[str, Field(description="why this call should be taken back")],
    ) -> str:
        """Take back one earlier call of this database exactly (rows, or what a CREATE made);
        refused, changing nothing, when anything changed those rows since."""
        return await run_tool(
            lambda c: service.undo_call(
                audit_id, reason, confirmation.enforce, confirmed=confirmation.approved
            )
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def list_tables(include_row_counts: bool = True) -> str:
        """Tables and views as CSV: name,type,system,rows."""
        return await run_tool(lambda c: service.list_tables(include_row_counts, c))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def describe_table(table: str) -> str:
        """Columns, foreign keys and indexes of one table or view, as CSV sections."""
        return await run_tool(lambda c: service.describe_table(table))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def get_schema(include_system: bool = False) -> str:
        """Every CREATE statement; saved views carry their descriptions as comments."""
        return await run_tool(lambda c: service.get_schema(include_system))

    @server.tool(annotations=WRITES, structured_output=False)
    async def create_view(
        name: Annotated[str, Field(description="letters, digits and _")],
        select_sql: Annotated[str, sql_text("select_sql"), Field(description="one SELECT to save")],
        description: Annotated[str, Field(description="what the view answers")] = "",
        replace: bool = False,
    ) -> str:
        """Save a SELECT as a view with a description, to reuse instead of repeating it."""
        return await run_tool(
            lambda c: service.create_view(name, select_sql, description, replace, c)
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def search_text(
        pattern: Annotated[str, Field(description="RE2 regular expression (or text)")],
        table: str,
        columns: Columns = None,
        where: Annotated[
            str | None, sql_text("where"), Field(description="SQL condition narrowing rows")
        ] = None,
        key_column: Annotated[str | None, Field(description="column naming a row")] = None,
        limit: Annotated[
            int,
            Field(
                ge=1,
                description="matches to show at most (larger is lowered)",
            ),
        ] = SEARCH_LIMIT,
        ignore_case: bool = False,
        fixed_strings: Annotated[bool, Field(description="pattern is plain text")] = False,
        context_chars: Annotated[int, Field(ge=0, le=1000)] = 80,
    ) -> str:
        """Find text in a table's columns; returns CSV key,column,snippet and totals."""
        from sqlgate.service import SearchRequest  # the SQL engine: not at start

        request = SearchRequest(
            pattern, table, columns, where, key_column, limit, ignore_case, fixed_strings,
            context_chars,
        )  # fmt: skip
        return await run_tool(lambda c: service.search_text(request, None, c))
