"""Claude Code permission rules for sqlgate's tools (surfaces/integrations/permissions.py):
merged into the person's own rules, and taken out exactly as they were added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.surfaces.integrations.config_files import ConfigMalformed
from sqlgate.surfaces.integrations.permissions import (
    add_rules,
    remove_rules,
    rule_for,
    wanted_rules,
)
from sqlgate.surfaces.mcp.tool_tiers import TOOL_TIERS, tools_of_tier

PATH = Path("/fake/home/.claude/settings.json")


def test_rules_are_claude_codes_mcp_tool_names() -> None:
    assert rule_for("sqlgate", "read_query") == "mcp__sqlgate__read_query"
    assert rule_for("team-db", "undo_call") == "mcp__team-db__undo_call"


def test_read_and_write_tools_are_allowed_and_the_destructive_ones_asked() -> None:
    wanted = wanted_rules("sqlgate")
    allow = [rule for where, rule in wanted if where == "allow"]
    ask = [rule for where, rule in wanted if where == "ask"]
    assert ask == ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]
    assert allow == [f"mcp__sqlgate__{tool}" for tool in tools_of_tier("read", "write")]
    assert len(allow) + len(ask) == len(TOOL_TIERS) == 23


ASK = ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]


@pytest.mark.parametrize(
    ("before", "after_allow_head", "after_ask", "added_ask"),
    [
        pytest.param({}, [], ASK, ASK, id="none-before"),
        pytest.param({"allow": ["Bash(ls)"], "ask": ["Bash(rm:*)"]}, ["Bash(ls)"],
                     ["Bash(rm:*)", *ASK], ASK, id="theirs-first-in-their-order"),
        pytest.param({"ask": ["mcp__sqlgate__undo_call"]}, [], ASK[1:] + ASK[:1], ASK[:1],
                     id="one-of-ours-already-there-is-not-added-twice"),
        pytest.param({"allow": ["mcp__sqlgate__destructive_query"]},
                     ["mcp__sqlgate__destructive_query"], ASK[1:], ASK[1:],
                     id="moved-to-allow-by-the-person-stays-theirs"),
        pytest.param({"deny": ["mcp__sqlgate__destructive_query"]}, [], ASK[1:], ASK[1:],
                     id="denied-by-the-person-is-not-asked-too"),
    ],
)  # fmt: skip
def test_add_rules_merges_into_the_persons_own(
    before: dict[str, Any], after_allow_head: list[str], after_ask: list[str], added_ask: list[str]
) -> None:
    merged, added = add_rules(before, wanted_rules("sqlgate"), PATH)
    assert merged["allow"][: len(after_allow_head)] == after_allow_head
    assert merged["ask"] == after_ask
    assert [rule for where, rule in added if where == "ask"] == added_ask
    for name in ("allow", "ask", "deny"):
        values = merged.get(name, [])
        assert len(values) == len(set(values)), name
    assert before.get("deny", []) == merged.get("deny", [])


def test_other_permission_settings_stay() -> None:
    before = {"defaultMode": "acceptEdits", "additionalDirectories": ["../lib"], "allow": []}
    merged, _ = add_rules(before, wanted_rules("sqlgate"), PATH)
    assert merged["defaultMode"] == "acceptEdits"
    assert merged["additionalDirectories"] == ["../lib"]
    assert list(merged) == ["defaultMode", "additionalDirectories", "allow", "ask"]


def test_adding_twice_adds_nothing_the_second_time() -> None:
    once, _ = add_rules({}, wanted_rules("sqlgate"), PATH)
    twice, added = add_rules(once, wanted_rules("sqlgate"), PATH)
    assert (twice, added) == (once, ())


@pytest.mark.parametrize(
    "permissions",
    [
        pytest.param({"allow": "mcp__sqlgate__read_query"}, id="allow-not-a-list"),
        pytest.param({"ask": {"a": 1}}, id="ask-not-a-list"),
        pytest.param({"deny": 3}, id="deny-not-a-list"),
    ],
)
def test_a_rule_list_that_is_not_a_list_is_refused(permissions: dict[str, Any]) -> None:
    with pytest.raises(ConfigMalformed, match="is not a list; the file was left untouched"):
        add_rules(permissions, wanted_rules("sqlgate"), PATH)


def test_remove_takes_out_only_what_was_recorded_from_where_it_was_put() -> None:
    mine = {"allow": ["Bash(ls)", "mcp__sqlgate__read_query"], "ask": ["Bash(rm:*)"]}
    merged, added = add_rules(mine, wanted_rules("sqlgate"), PATH)
    assert ("allow", "mcp__sqlgate__read_query") not in added  # it was the person's
    # the person then moves one of ours from ask to allow: theirs now
    merged["ask"].remove("mcp__sqlgate__undo_call")
    merged["allow"].append("mcp__sqlgate__undo_call")

    left, removed = remove_rules(merged, added, "sqlgate")

    assert left == {
        "allow": ["Bash(ls)", "mcp__sqlgate__read_query", "mcp__sqlgate__undo_call"],
        "ask": ["Bash(rm:*)"],
    }
    assert ("ask", "mcp__sqlgate__undo_call") in removed  # gone from the record either way


def test_remove_keeps_the_rules_of_another_server_name() -> None:
    both, first = add_rules({}, wanted_rules("sqlgate"), PATH)
    both, second = add_rules(both, wanted_rules("memory"), PATH)
    left, _ = remove_rules(both, first + second, "memory")
    again, _ = add_rules({}, wanted_rules("sqlgate"), PATH)
    assert left == again


rule_lists = st.dictionaries(
    st.sampled_from(["allow", "ask", "deny"]),
    st.lists(st.sampled_from(["Bash(ls)", "Read", *ASK, "mcp__sqlgate__read_query",
                              "mcp__other__x"]), unique=True, max_size=6),
)  # fmt: skip


@given(rule_lists)
def test_add_then_remove_gives_back_the_persons_rules(before: dict[str, list[str]]) -> None:
    merged, added = add_rules(before, wanted_rules("sqlgate"), PATH)
    left, _ = remove_rules(merged, added, "sqlgate")
    assert {k: v for k, v in left.items() if v} == {k: v for k, v in before.items() if v}
