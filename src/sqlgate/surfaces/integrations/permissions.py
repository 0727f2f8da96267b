"""Claude Code permission rules for sqlgate's tools, written by `sqlgate install claude-code`
into the settings file that also holds the capture hooks.

Claude Code names an MCP tool `mcp__<server>__<tool>` and matches permission rules by that
name (code.claude.com/docs/en/permissions; its settings schema: `permissions.allow`, `ask`,
`deny`, each a list of rules; deny beats ask beats allow). The read and write tools go in
`allow`, the destructive ones (`destructive_query`, `undo_call`) in `ask`, so the person
is asked before those even where the client shows no elicitation (the tiers:
surfaces/mcp/tool_tiers.py).

The person's rules are theirs: ours are appended after them, once, and a rule already in any
of allow/ask/deny is left where it is (a rule of ours that they moved from ask to allow stays
allowed: install does not fight them). What was added is returned so that it can be recorded
(install_records.py) and taken out exactly by `uninstall`: only recorded rules, and only from
the list they were put in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlgate.surfaces.integrations.config_files import ConfigMalformed
from sqlgate.surfaces.mcp.tool_tiers import tools_of_tier

__all__ = ["RULE_LISTS", "Rule", "add_rules", "remove_rules", "rule_for", "wanted_rules"]

RULE_LISTS = ("allow", "ask", "deny")
Rule = tuple[str, str]  # (the list it goes in, the rule)


def rule_for(server: str, tool: str) -> str:
    """Claude Code's name of an MCP tool; our server names need none of its escaping
    (they are letters, digits, '-' and '_' already)."""
    return f"mcp__{server}__{tool}"


def wanted_rules(server: str) -> tuple[Rule, ...]:
    """allow for the read and write tools, ask for the destructive ones, in tool order."""
    allow = [("allow", rule_for(server, tool)) for tool in tools_of_tier("read", "write")]
    ask = [("ask", rule_for(server, tool)) for tool in tools_of_tier("destructive")]
    return (*allow, *ask)


def _lists(permissions: dict[str, Any], path: Path) -> dict[str, list[Any]]:
    found = {}
    for name in RULE_LISTS:
        value = permissions.get(name, [])
        if not isinstance(value, list):
            raise ConfigMalformed(
                f"{path}: permissions.{name} is not a list; the file was left untouched"
            )
        found[name] = value
    return found


def add_rules(
    permissions: dict[str, Any], wanted: tuple[Rule, ...], path: Path
) -> tuple[dict[str, Any], tuple[Rule, ...]]:
    """`permissions` with each wanted rule appended to its list, unless it is in one of the
    lists already; the rules added."""
    lists = _lists(permissions, path)
    present = {rule for values in lists.values() for rule in values if isinstance(rule, str)}
    added = tuple((where, rule) for where, rule in wanted if rule not in present)
    merged = dict(permissions)
    for where in RULE_LISTS:
        extra = [rule for to, rule in added if to == where]
        if extra:
            merged[where] = [*lists[where], *extra]
    return merged, added


def remove_rules(
    permissions: dict[str, Any], recorded: tuple[Rule, ...], server: str
) -> tuple[dict[str, Any], tuple[Rule, ...]]:
    """`permissions` without the recorded rules of `server` that are still in the list they
    were added to (a list emptied stays, as an empty list); the recorded rules of `server`,
    which the record no longer needs whether or not they were still there."""
    prefix = rule_for(server, "")
    mine = tuple((where, rule) for where, rule in recorded if rule.startswith(prefix))
    left = dict(permissions)
    for where in RULE_LISTS:
        values = permissions.get(where)
        gone = {rule for to, rule in mine if to == where}
        if isinstance(values, list) and gone & {v for v in values if isinstance(v, str)}:
            left[where] = [value for value in values if value not in gone]
    return left, mine
