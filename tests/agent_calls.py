"""Sending a statement to a SQL tool by its name, as an agent would (for tests that follow an
answer's advice to another tool)."""

from __future__ import annotations

import re

from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.service import Service

__all__ = ["call"]


def call(service: Service, tool: str, sql: str) -> str:
    """Send `sql` to `tool` (create_view takes the SELECT alone, search_text a condition)."""
    if tool == "read_query":
        return service.read_query(sql)
    if tool == "write_query":
        return service.write_query(sql)
    if tool == "destructive_query":
        return service.destructive_query(sql, reason="a test following an answer's advice")
    if tool == "create_view":
        match = re.fullmatch(r"CREATE VIEW \w+ AS (.*)", sql, re.S)
        return service.create_view("advised_view", match[1] if match else sql)
    if tool == "search_text":
        return service.search_text(SearchRequest("hello", "docs", where=sql))
    raise AssertionError(tool)
