"""What each tool profile (MCP_MEMORY_TOOLS) costs a client: the tokens of its tool definitions, which a
client sends its model in every conversation. Read from the server's own tools/list, through an MCP
client in process; the README's "Tool profiles" table is this module's `markdown()`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, Literal, get_args

import anyio
from mcp import Client

from mcp_memory.config import EmbeddingSettings, Settings
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.mcp.server import build_server
from mcp_memory.mcp.tools import Profile

ENCODING: Literal["o200k_base"] = (
    "o200k_base"  # the tokenizer of current OpenAI models; Claude's counts are close
)


@dataclass(frozen=True)
class ProfileCost:
    profile: Profile
    tools: list[str]
    definition_tokens: int  # name, title, description, input schema, annotations: what a model reads
    output_schema_tokens: int  # the output schemas, which clients may also send


async def cost_of(profile: Profile, data_dir: Path) -> ProfileCost:
    settings = Settings(
        user_id="profiles", data_dir=data_dir, tools=profile, embedding=EmbeddingSettings(provider="hash")
    )
    async with Client(build_server(settings)) as client:
        listed = (await client.list_tools()).tools
    shown = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    definitions = [{k: v for k, v in tool.items() if k != "outputSchema"} for tool in shown]
    outputs = [tool["outputSchema"] for tool in shown if "outputSchema" in tool]
    counter = TokenCounter.load(ENCODING, cache_dir=data_dir / "tiktoken")

    def tokens(values: list[Any]) -> int:
        return sum(counter.count(json.dumps(value, separators=(",", ":"))) for value in values)

    return ProfileCost(profile, [tool.name for tool in listed], tokens(definitions), tokens(outputs))


async def costs() -> list[ProfileCost]:
    with TemporaryDirectory() as tmp:
        return [await cost_of(profile, Path(tmp) / profile) for profile in get_args(Profile)]


def markdown() -> str:
    rows = [
        "| `MCP_MEMORY_TOOLS` | tools | tokens of tool definitions | + output schemas | the tools |",
        "|---|---:|---:|---:|---|",
    ]
    shown: list[str] = []
    for cost in anyio.run(costs):
        added = [name for name in cost.tools if name not in shown]
        what = ", ".join(added) if not shown else "+ " + ", ".join(added)
        rows.append(
            f"| `{cost.profile}` | {len(cost.tools)} | {cost.definition_tokens:,} | "
            f"{cost.output_schema_tokens:,} | {what} |"
        )
        shown = cost.tools
    return "\n".join(rows)
