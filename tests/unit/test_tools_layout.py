"""Every tool, resource and prompt is a module-level function a newcomer finds by its name: the
function `def <tool name>` in mcp/tools/<family>.py is what the server registers."""

from __future__ import annotations

import importlib
import inspect

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp import resources as resource_families
from mcp_memory.mcp.server import build_server
from mcp_memory.mcp.tools import ALL_TOOLS

pytestmark = pytest.mark.anyio


def test_each_tool_is_the_module_level_function_of_its_name() -> None:
    for spec in ALL_TOOLS:
        module = importlib.import_module(spec.fn.__module__)
        assert module.__name__.startswith("mcp_memory.mcp.tools."), spec.name
        assert getattr(module, spec.name) is spec.fn, f"{spec.name} is not {module.__name__}.{spec.name}"
        assert f"def {spec.name}(" in inspect.getsource(module)


async def test_the_server_lists_exactly_the_declared_tools_and_resources(settings: Settings) -> None:
    families = [
        resource_families.threads.family,
        resource_families.memories.family,
        resource_families.learning.family,
        resource_families.graph.family,
        resource_families.audit.family,
    ]
    declared = {spec.name for family in families for spec in family.resources}
    async with Client(build_server(settings.model_copy(update={"tools": "all"}))) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        fixed = {r.name for r in (await client.list_resources()).resources}
        templates = {t.name for t in (await client.list_resource_templates()).resource_templates}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert tools == {spec.name for spec in ALL_TOOLS}
    assert fixed | templates == declared
    assert prompts == {"recall"}
