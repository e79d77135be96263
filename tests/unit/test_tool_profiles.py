"""Tool profiles (MCP_MEMORY_TOOLS): which tools a client sees, what each profile costs it in tokens,
and that a tool left out of a profile cannot be called either."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from mcp_memory.cli.tool_profiles import cost_of
from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.mcp.tools import ALL_TOOLS, CORE, PROFILES

pytestmark = pytest.mark.anyio
NAMED_IN_THE_DESIGN = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}


def test_the_default_profile_is_standard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MCP_MEMORY_TOOLS",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    assert Settings().tools == "standard"
    monkeypatch.setenv("MCP_MEMORY_TOOLS", "core")
    assert Settings().tools == "core"


def test_profiles_nest_and_core_holds_the_five_named_tools() -> None:
    assert NAMED_IN_THE_DESIGN <= CORE
    assert PROFILES["core"] < PROFILES["standard"] < PROFILES["all"]
    assert PROFILES["all"] == {spec.name for spec in ALL_TOOLS}
    assert len(ALL_TOOLS) == 25


async def test_each_profile_lists_its_tools_and_costs_fewer_tokens_than_the_next(tmp_path: Path) -> None:
    costs = [await cost_of(profile, tmp_path / profile) for profile in ("core", "standard", "all")]
    for cost in costs:
        assert set(cost.tools) == PROFILES[cost.profile]
    core, standard, everything = costs
    assert 0 < core.definition_tokens < standard.definition_tokens < everything.definition_tokens
    # The whole surface costs a client thousands of tokens in every conversation; core far fewer.
    assert everything.definition_tokens > 2 * core.definition_tokens


async def test_a_tool_outside_the_profile_is_unknown(settings: Settings) -> None:
    core = settings.model_copy(update={"tools": "core"})
    async with Client(build_server(core), raise_exceptions=False) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert listed == CORE
        result = await client.call_tool("read_graph", {})
        assert result.is_error
        assert "read_graph" in result.content[0].text  # type: ignore[union-attr]


async def test_graph_tools_false_removes_the_graph_from_every_profile(settings: Settings) -> None:
    hidden = settings.model_copy(
        update={"graph": settings.graph.model_copy(update={"tools": False}), "tools": "all"}
    )
    async with Client(build_server(hidden), raise_exceptions=False) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
    assert "read_graph" not in listed and "forget_user" in listed
