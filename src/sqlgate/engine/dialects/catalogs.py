"""Other databases' catalogs (information_schema, pg_tables, sys.tables) as SQLite queries.

A query over `information_schema.tables` or `.columns` keeps its WHERE, ORDER BY and joins:
only the catalog table becomes a subquery of the same name and columns, read from
`sqlite_schema` and `pragma_table_info`. SQLite has one schema here, `main`; the subquery
names it as the dialect would (`public` for PostgreSQL, `dbo` for SQL Server, `main` for
MySQL, whose `DATABASE()` reads as 'main'), so a filter on the schema keeps its rows.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["catalog_tables"]

_SCHEMA = {"postgres": "public", "tsql": "dbo", "duckdb": "main", "mysql": "main"}
_USER_OBJECTS = "m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
_TABLES = (
    "SELECT 'main' AS table_catalog, {schema} AS table_schema, m.name AS table_name, "
    "CASE m.type WHEN 'view' THEN 'VIEW' ELSE 'BASE TABLE' END AS table_type "
    f"FROM sqlite_schema AS m WHERE {_USER_OBJECTS}"
)
_VIEWS = (
    "SELECT 'main' AS table_catalog, {schema} AS table_schema, m.name AS table_name, "
    "m.sql AS view_definition FROM sqlite_schema AS m WHERE m.type = 'view'"
)
_COLUMNS = (
    "SELECT 'main' AS table_catalog, {schema} AS table_schema, m.name AS table_name, "
    "p.name AS column_name, p.cid + 1 AS ordinal_position, p.dflt_value AS column_default, "
    "CASE WHEN p.\"notnull\" OR p.pk THEN 'NO' ELSE 'YES' END AS is_nullable, "
    "lower(p.type) AS data_type FROM sqlite_schema AS m, pragma_table_info(m.name) AS p "
    f"WHERE {_USER_OBJECTS}"
)
_PG_TABLES = (
    "SELECT {schema} AS schemaname, m.name AS tablename FROM sqlite_schema AS m "
    "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
)
_SYS_TABLES = (
    "SELECT m.name AS name, m.type AS type FROM sqlite_schema AS m "
    "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
)
# (schema, table) as written, folded: the SQLite query standing in for it
CATALOGS = {
    ("information_schema", "tables"): _TABLES,
    ("information_schema", "views"): _VIEWS,
    ("information_schema", "columns"): _COLUMNS,
    ("pg_catalog", "pg_tables"): _PG_TABLES,
    ("", "pg_tables"): _PG_TABLES,
    ("sys", "tables"): _SYS_TABLES,
}
NOTE = "SQLite has no information_schema: list_tables and describe_table show the same"


def catalog_tables(tree: exp.Expr, dialect: str, notes: list[str]) -> exp.Expr:
    """`tree` with each catalog table it reads replaced by its SQLite subquery."""
    from sqlgate.engine.dialects.trees import from_sqlite

    for table in list(tree.find_all(exp.Table)):
        key = (table.db.lower(), table.name.lower())
        template = CATALOGS.get(key)
        if template is None or table.catalog:
            continue
        schema = "'" + _SCHEMA.get(dialect, "main") + "'"
        query = from_sqlite(template.format(schema=schema))
        alias = table.alias or table.name.lower()
        table.replace(exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias))))
        if NOTE not in notes:
            notes.append(NOTE)
    return tree
