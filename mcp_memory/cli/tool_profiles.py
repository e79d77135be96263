"""What each tool profile (MCP_MEMORY_TOOLS) costs a client: the tokens of its tool definitions, which a
client sends its model in every conversation. Read from the server's own tools/list, through an MCP
client in process; the README's "Tool profiles" table is this module's `markdown()`.

`python -m mcp_memory.cli.tool_profiles [core|standard|all]` prints each tool's cost three ways: compact
JSON of every field but the output schema (what the table counts), the same as `json.dumps` writes it by
default (", " and ": "), and `{name, description, input_schema}` as Anthropic's API receives it. The
default profile is held to DEFINITIONS_BUDGET tokens in every count (tests/unit/test_tool_profiles.py)."""

from __future__ import annotations

import json
import sys
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


DEFINITIONS_BUDGET = 3_000  # the default profile's definitions, timeline included (issue 58, item 10)


@dataclass(frozen=True)
class ToolCost:
    name: str
    compact: int  # every field but outputSchema, compact JSON
    spaced: int  # the same, json.dumps's default separators
    anthropic: int  # {name, description, input_schema}, json.dumps's default separators


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


async def tool_costs(profile: Profile, data_dir: Path) -> list[ToolCost]:
    """Each listed tool's definition tokens, counted three ways (see the module's docstring)."""
    settings = Settings(
        user_id="profiles", data_dir=data_dir, tools=profile, embedding=EmbeddingSettings(provider="hash")
    )
    async with Client(build_server(settings)) as client:
        listed = (await client.list_tools()).tools
    counter = TokenCounter.load(ENCODING, cache_dir=data_dir / "tiktoken")
    costs = []
    for tool in listed:
        shown = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        definition = {k: v for k, v in shown.items() if k != "outputSchema"}
        sent = {
            "name": tool.name,
            "description": tool.description or "",
            "input_schema": shown["inputSchema"],
        }
        costs.append(
            ToolCost(
                tool.name,
                counter.count(json.dumps(definition, separators=(",", ":"))),
                counter.count(json.dumps(definition)),
                counter.count(json.dumps(sent)),
            )
        )
    return costs


def per_tool_table(profile: Profile) -> str:
    with TemporaryDirectory() as tmp:
        costs = anyio.run(tool_costs, profile, Path(tmp))
    rows = [
        f"`{profile}` profile, tokens ({ENCODING}); budget {DEFINITIONS_BUDGET:,} for the default",
        "| tool | compact | json.dumps | {name, description, input_schema} |",
        "|---|---:|---:|---:|",
    ]
    rows += [f"| {c.name} | {c.compact:,} | {c.spaced:,} | {c.anthropic:,} |" for c in costs]
    total = [sum(getattr(c, field) for c in costs) for field in ("compact", "spaced", "anthropic")]
    rows.append("| **all {}** | {:,} | {:,} | {:,} |".format(len(costs), *total))
    return "\n".join(rows)


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


if __name__ == "__main__":
    chosen = sys.argv[1] if len(sys.argv) > 1 else "standard"
    if chosen not in get_args(Profile):
        sys.exit(f"a profile is one of {', '.join(get_args(Profile))}; got {chosen[:40]!r}")
    print(per_tool_table(chosen))  # type: ignore[arg-type]
