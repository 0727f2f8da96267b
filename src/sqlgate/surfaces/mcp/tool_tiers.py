"""Each MCP tool's tier, as data that needs no MCP SDK: `read` (changes nothing), `write`,
or `destructive` (what the person is asked about: sqlgate's confirmation, and Claude Code's
`permissions.ask` rules that `sqlgate install claude-code` writes).

The tools announce the same tiers in their annotations (read_only_hint, destructive_hint);
tests/surfaces/mcp/test_tool_tiers.py holds the two equal, so a new tool or a changed tier
cannot leave this table behind. Kept apart from the tool modules so that `sqlgate install`
does not import the SDK to learn them.
"""

from __future__ import annotations

__all__ = ["TIERS", "TOOL_TIERS", "tools_of_tier"]

TIERS = ("read", "write", "destructive")

# in the order the server announces them: the sql, memory and claims groups
TOOL_TIERS: dict[str, str] = {
    "read_query": "read",
    "write_query": "write",
    "destructive_query": "destructive",
    "undo_call": "destructive",
    "list_tables": "read",
    "describe_table": "read",
    "get_schema": "read",
    "create_view": "write",
    "search_text": "read",
    "append_event": "write",
    "verify_chain": "read",
    "checkpoint": "write",
    "get_resume_context": "read",
    "memory_search": "read",
    "memory_timeline": "read",
    "memory_details": "read",
    "memory_stats": "read",
    "claim_add": "write",
    "claim_search": "read",
    "claim_confirm": "write",
    "claim_retract": "write",
    "claims_contradictions": "write",  # marks what it finds: a write
    "claims_decayed": "write",  # marks decayed claims stale: a write
}


def tools_of_tier(*tiers: str) -> tuple[str, ...]:
    """The tools of the given tiers, in the announced order."""
    unknown = [tier for tier in tiers if tier not in TIERS]
    if unknown:
        raise ValueError(f"unknown tier {unknown[0]!r}; the tiers are {', '.join(TIERS)}")
    return tuple(name for name, tier in TOOL_TIERS.items() if tier in tiers)
