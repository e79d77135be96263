"""Tool profiles (MCP_MEMORY_TOOLS): which tools a client sees, what each profile costs it in tokens,
that a tool left out of a profile cannot be called either, and that a reference memory server's client
entry (MEMORY_FILE_PATH, no profile) gets the knowledge graph's tools beside the default profile's."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from mcp import Client

from mcp_memory.cli.tool_profiles import cost_of, tool_costs
from mcp_memory.config import EmbeddingSettings, Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.mcp.tools import (
    ALL_TOOLS,
    CORE,
    GRAPH_TOOLS,
    PROFILES,
    STANDARD,
    graph_for_reference,
    listed_tools,
)

pytestmark = pytest.mark.anyio
NAMED_IN_THE_DESIGN = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}
DEFINITIONS_BUDGET = 3_000  # issue 58, item 10: the default profile's tools/list, timeline included


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
    assert len(ALL_TOOLS) == 26


async def test_each_profile_lists_its_tools_and_costs_fewer_tokens_than_the_next(tmp_path: Path) -> None:
    costs = [await cost_of(profile, tmp_path / profile) for profile in ("core", "standard", "all")]
    for cost in costs:
        assert set(cost.tools) == PROFILES[cost.profile]
    core, standard, everything = costs
    assert 0 < core.definition_tokens < standard.definition_tokens < everything.definition_tokens
    # The whole surface costs a client thousands of tokens in every conversation; core far fewer.
    assert everything.definition_tokens > 2 * core.definition_tokens


async def test_the_default_profile_definitions_fit_the_budget_timeline_included(tmp_path: Path) -> None:
    """What a client sends its model in every conversation, within budget counted every way (o200k_base):
    compact JSON of every field but the output schema (the README's table), the same as json.dumps writes
    it by default, and {name, description, input_schema}; the public contract kept through the cuts."""
    assert Settings(data_dir=tmp_path).tools == "standard" and "timeline" in PROFILES["standard"]
    costs = await tool_costs("standard", tmp_path / "standard")
    assert {cost.name for cost in costs} == PROFILES["standard"]
    compact, spaced, sent = (sum(getattr(c, f) for c in costs) for f in ("compact", "spaced", "anthropic"))
    assert compact == (await cost_of("standard", tmp_path / "table")).definition_tokens
    assert 0 < compact < spaced <= DEFINITIONS_BUDGET and sent <= DEFINITIONS_BUDGET, (compact, spaced, sent)
    settings = Settings(
        user_id="contract", data_dir=tmp_path / "data", embedding=EmbeddingSettings(provider="hash")
    )
    async with Client(build_server(settings)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    search = tools["search_memory"].input_schema["properties"]
    assert {name: (p["type"], p.get("default")) for name, p in search.items() if "default" in p} == {
        "limit": ("integer", 10),
        "mode": ("string", "hybrid"),
        "full_content": ("boolean", False),
    }
    assert tools["timeline"].input_schema["properties"]["max_tokens"] == {
        "default": 4000,
        "description": "Whole answer, 200-32000.",
        "type": "integer",
    }


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


def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **variables: str | None) -> None:
    """This process's environment without MCP_MEMORY_* and MEMORY_FILE_PATH, plus `variables`; no .env."""
    for name in list(os.environ):
        if name.startswith("MCP_MEMORY_") or name == "MEMORY_FILE_PATH":
            monkeypatch.delenv(name)
    for name, value in variables.items():
        if value is not None:
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("graph_tools", [True, False])
@pytest.mark.parametrize("profile", [None, "standard", "core", "all"])
@pytest.mark.parametrize("memory_file", [None, "/home/me/memory.jsonl"])
def test_memory_file_path_adds_the_graph_to_the_default_profile_only(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    memory_file: str | None,
    profile: str | None,
    graph_tools: bool,
) -> None:
    """A client entry written for the reference server (MEMORY_FILE_PATH, no MCP_MEMORY_TOOLS) lists the
    default profile and the graph's nine; an explicit profile, even `standard`, is listed exactly, and
    graph.tools=false hides the graph whatever the rest says."""
    _environment(
        monkeypatch,
        tmp_path,
        MEMORY_FILE_PATH=memory_file,
        MCP_MEMORY_TOOLS=profile,
        MCP_MEMORY_GRAPH__TOOLS=None if graph_tools else "false",
    )
    settings = Settings()
    expected = set(PROFILES[settings.tools])
    added = memory_file is not None and profile is None and graph_tools
    if added:
        expected |= GRAPH_TOOLS
    if not graph_tools:
        expected -= GRAPH_TOOLS
    listed = [spec.name for spec in listed_tools(settings)]
    assert set(listed) == expected
    assert listed == [spec.name for spec in ALL_TOOLS if spec.name in expected]  # the clients' order
    assert graph_for_reference(settings) is added
    if profile is None and memory_file is not None and graph_tools:
        assert set(listed) == STANDARD | GRAPH_TOOLS and "forget_user" not in listed


def test_an_empty_memory_file_path_is_unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _environment(monkeypatch, tmp_path, MEMORY_FILE_PATH="")
    assert {spec.name for spec in listed_tools(Settings())} == STANDARD


def test_a_profile_in_the_env_file_or_an_argument_is_explicit_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _environment(monkeypatch, tmp_path)
    environ = {"MEMORY_FILE_PATH": "memory.jsonl"}
    assert {spec.name for spec in listed_tools(Settings(), environ)} == STANDARD | GRAPH_TOOLS
    assert {spec.name for spec in listed_tools(Settings(tools="standard"), environ)} == STANDARD
    (tmp_path / ".env").write_text("MCP_MEMORY_TOOLS=core\n")
    assert {spec.name for spec in listed_tools(Settings(), environ)} == CORE


async def test_the_server_lists_them_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _environment(monkeypatch, tmp_path, MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))
    with caplog.at_level(logging.INFO, logger="mcp_memory.mcp.server"):
        server = build_server(Settings(user_id="tester", data_dir=tmp_path / "data"))
    listed = {tool.name for tool in await server.list_tools()}
    assert listed == STANDARD | GRAPH_TOOLS
    assert "because MEMORY_FILE_PATH is set" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mcp_memory.mcp.server"):
        server = build_server(Settings(user_id="tester", data_dir=tmp_path / "data", tools="standard"))
    assert {tool.name for tool in await server.list_tools()} == STANDARD
    assert "MEMORY_FILE_PATH" not in caplog.text
