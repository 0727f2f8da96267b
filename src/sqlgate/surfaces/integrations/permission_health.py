"""`sqlgate doctor`'s `permissions` check: does Claude Code still ask before each destructive
tool of a sqlgate entry (the second lock, beside sqlgate's own confirmation)?

`sqlgate install claude-code` puts `mcp__<name>__destructive_query` and `..__undo_call` in
`permissions.ask` (permissions.py). Claude Code merges the rules of the user's settings, the
project's and the project's local ones, and decides a tool by the first kind of rule that
matches it: deny, then ask, then allow (code.claude.com/docs/en/permissions). A rule matches
a tool when it names it (`mcp__sqlgate__undo_call`), names its server (`mcp__sqlgate`), or is
a wildcard over its name (`mcp__sqlgate__*`, `mcp__*`).

    a deny or ask rule matches      ok: Claude Code asks (or never runs it)
    only an allow rule matches      warn: the second lock is gone; runs without asking
    no rule matches                 warn: Claude Code asks by default, but one "don't ask
                                    again" answer allows it for good

`permission_facts` reads the files; `judge_permissions` decides, a pure function of them.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.client_paths import Where, settings_path
from sqlgate.surfaces.integrations.config_files import load_json, read_config, section
from sqlgate.surfaces.integrations.permissions import RULE_LISTS, rule_for
from sqlgate.surfaces.mcp.tool_tiers import tools_of_tier

__all__ = ["PermissionFacts", "RuleSeen", "judge_permissions", "permission_facts"]

OK, WARN = "ok", "warn"


@dataclass(frozen=True)
class RuleSeen:
    """A rule of one of Claude Code's settings files that matches a tool."""

    kind: str  # allow, ask or deny
    rule: str
    file: Path


@dataclass(frozen=True)
class PermissionFacts:
    """For each destructive tool of the entry (by its rule name), the rules that match it;
    the settings file install writes the rules to; files that could not be read."""

    matching: dict[str, tuple[RuleSeen, ...]]
    settings: Path
    unreadable: tuple[str, ...] = ()


def matches(rule: str, server: str, tool: str) -> bool:
    """Whether a Claude Code permission rule matches the MCP tool `tool` of `server`."""
    name = rule_for(server, tool)
    if rule in (name, f"mcp__{server}"):
        return True
    return "*" in rule and fnmatch.fnmatchcase(name, rule)


def _settings_files(where: Where) -> tuple[Path, ...]:
    project = settings_path("project", where)
    return (settings_path("user", where), project, project.with_name("settings.local.json"))


def permission_facts(server: str, scope: str | None, where: Where) -> PermissionFacts:
    """The rules of every settings file Claude Code reads here that match a destructive tool
    of `server`."""
    seen: list[RuleSeen] = []
    unreadable: list[str] = []
    for path in _settings_files(where):
        try:
            permissions = section(load_json(path, read_config(path)), "permissions", path)
        except InvalidArgument as exc:
            unreadable.append(str(exc))
            continue
        for kind in RULE_LISTS:
            rules = permissions.get(kind)
            for rule in rules if isinstance(rules, list) else []:
                if isinstance(rule, str):
                    seen.append(RuleSeen(kind, rule, path))
    matching = {
        rule_for(server, tool): tuple(r for r in seen if matches(r.rule, server, tool))
        for tool in tools_of_tier("destructive")
    }
    target = settings_path("project" if scope == "project" else "user", where)
    return PermissionFacts(matching, target, tuple(unreadable))


def _decided(rules: tuple[RuleSeen, ...]) -> RuleSeen | None:
    """The rule Claude Code goes by: the first deny, else the first ask, else the first
    allow; None when none matches."""
    for kind in ("deny", "ask", "allow"):
        for seen in rules:
            if seen.kind == kind:
                return seen
    return None


def judge_permissions(facts: PermissionFacts) -> tuple[str, str, str | None]:
    """(status, detail, fix) of the `permissions` check."""
    loose: list[str] = []
    put_back: list[str] = []
    for tool, rules in facts.matching.items():
        decided = _decided(rules)
        if decided is None:
            loose.append(f"no rule asks before {tool} (Claude Code asks by default, but one "
                         "\"don't ask again\" answer allows it for good)")  # fmt: skip
        elif decided.kind == "allow":
            loose.append(f"{tool} runs without asking: allowed by {json.dumps(decided.rule)} "
                         f"in {decided.file}")  # fmt: skip
        else:
            continue
        put_back.append(tool)
    said = "; ".join(loose)
    unread = "; ".join(facts.unreadable)
    if not put_back:
        detail = f"Claude Code asks before {', '.join(facts.matching)}"
        return (WARN, f"{detail}; but {unread}", "fix that file by hand") if unread else (
            OK, detail, None)  # fmt: skip
    named = ", ".join(json.dumps(tool) for tool in put_back)
    fix = (f'put {named} back in "permissions": {{"ask": [...]}} of {facts.settings} (an ask '
           "rule beats an allow rule)")  # fmt: skip
    detail = f"the second lock is gone: {said}"
    return WARN, detail + (f"; {unread}" if unread else ""), fix
