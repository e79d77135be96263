"""The generated parts of docs/: the settings table and the MCP reference, so docs and code never disagree.

Each generated part sits between two markers in a hand-written page (`<!-- NAME:start -->` and
`<!-- NAME:end -->`); the prose around it is the page's own. `scripts/update-docs` (this module's
`main`) rewrites every part; `tests/unit/test_docs_current.py` fails, naming the page, when one is not
what the code produces now (`stale`).

- docs/configuration.md, `settings-table`: every setting with its default (`settings_table.markdown`).
- docs/tools.md, `tools-reference`: the tools, resources, resource templates and prompt exactly as a
  client lists them: the server is built in process and listed through the MCP SDK's own client
  (`tools_markdown`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from mcp_memory.cli import settings_table, tool_profiles
from mcp_memory.config import EmbeddingSettings, Settings

# The one import of the server: if build_server moves, change this line only.
from mcp_memory.mcp.server import build_server

ROOT = Path(__file__).resolve().parents[2]

# The reference documents every tool, whichever profile is the default: `tools` is the tool profile
# (MCP_MEMORY_TOOLS, issue 38); until the setting exists, Settings ignores the unknown name.
EVERY_TOOL: dict[str, Any] = {"tools": "all"}


@dataclass(frozen=True)
class Generated:
    """One generated part: the page (relative to the repository) and its marker name."""

    page: str
    marker: str
    produce: Callable[[], str]

    @property
    def start(self) -> str:
        return f"<!-- {self.marker}:start -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.marker}:end -->"


class _DefaultSettings(Settings):
    """Settings from their defaults and the arguments only: no environment, no .env file.

    The reference documents what every installation gets, not what this machine has configured.
    """

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


@dataclass(frozen=True)
class Listing:
    """What a client lists: the server's instructions, tools, resources, templates and prompts (as JSON)."""

    instructions: str
    tools: list[dict[str, Any]]
    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    prompts: list[dict[str, Any]]


def list_server(data_dir: Path) -> Listing:
    """Build the server on default settings (a private data dir, the hashing embedder) and list it."""

    async def listed() -> Listing:
        settings = _DefaultSettings(
            user_id="docs", data_dir=data_dir, embedding=EmbeddingSettings(provider="hash"), **EVERY_TOOL
        )
        async with Client(build_server(settings)) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            prompts = (await client.list_prompts()).prompts
            return Listing(
                instructions=client.instructions or "",
                tools=[_json(item) for item in tools],
                resources=[_json(item) for item in resources],
                templates=[_json(item) for item in templates],
                prompts=[_json(item) for item in prompts],
            )

    quiet = logging.root.manager.disable
    logging.disable(logging.INFO)  # the service's start-up lines are not the reference's business
    try:
        return anyio.run(listed)
    finally:
        logging.disable(quiet)


def _json(item: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def tools_markdown() -> str:
    """docs/tools.md's reference: every tool, resource, resource template and prompt a client lists."""
    with tempfile.TemporaryDirectory() as data_dir:
        listing = list_server(Path(data_dir))
    return render(listing)


def render(listing: Listing) -> str:
    counts = [(len(listing.tools), "tool"), (len(listing.resources), "resource")]
    counts += [(len(listing.templates), "resource template"), (len(listing.prompts), "prompt")]
    named = [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in counts]
    lines = [f"What a client lists: {', '.join(named[:-1])} and {named[-1]}."]
    lines += ["", "### Tools", ""]
    lines += [f"- [`{tool['name']}`](#{tool['name']}): {_title(tool)}" for tool in listing.tools]
    for tool in listing.tools:
        lines += ["", *_tool(tool)]
    lines += ["", "### Resources", "", "| URI | name | type | what |", "|---|---|---|---|"]
    lines += [_resource_row(item, item["uri"]) for item in listing.resources]
    lines += ["", "### Resource templates", "", "| URI template | name | type | what |", "|---|---|---|---|"]
    lines += [_resource_row(item, item["uriTemplate"]) for item in listing.templates]
    lines += ["", "### Prompts"]
    for prompt in listing.prompts:
        lines += ["", f"#### `{prompt['name']}`", "", _text(prompt.get("description", ""))]
        arguments = prompt.get("arguments", [])
        if arguments:
            lines += ["", "| argument | required | what |", "|---|---|---|"]
            lines += [
                f"| `{a['name']}` | {'yes' if a.get('required') else 'no'} | {_cell(a.get('description', ''))} |"
                for a in arguments
            ]
    lines += ["", "### Server instructions", "", "What the server tells a model when it connects:", ""]
    lines += ["```text", listing.instructions.strip(), "```"]
    return "\n".join(lines)


def _title(tool: Mapping[str, Any]) -> str:
    """The tool's title, else its description's first clause (the listed tools carry no title: a model
    never reads one, and each costs tokens in every conversation)."""
    title = tool.get("title") or tool.get("annotations", {}).get("title")
    if title:
        return str(title)
    clause = re.split(r"[;(]|\. ", str(tool.get("description") or tool["name"]), maxsplit=1)[0]
    return clause.strip().rstrip(".,")


def _tool(tool: Mapping[str, Any]) -> Iterator[str]:
    yield f"#### `{tool['name']}`"
    yield ""
    title = tool.get("title") or tool.get("annotations", {}).get("title")
    hints = _hints(tool.get("annotations", {}))
    yield f"**{title}** ({hints})" if title else f"*{hints[0].upper()}{hints[1:]}.*"
    yield ""
    yield _text(tool.get("description", ""))
    schema = tool.get("inputSchema", {})
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    yield ""
    if properties:
        yield "| argument | type | required / default | what |"
        yield "|---|---|---|---|"
        for name, prop in properties.items():
            need = "required" if name in required else _default(prop)
            yield f"| `{name}` | {_type(prop, schema)} | {need} | {_cell(prop.get('description', ''))} |"
    else:
        yield "No arguments."
    returned = list(tool.get("outputSchema", {}).get("properties", {}))
    if returned:
        yield ""
        yield "Returns `{" + ", ".join(returned) + "}`."


def _hints(annotations: Mapping[str, Any]) -> str:
    if annotations.get("readOnlyHint"):
        said = ["read-only"]
    elif annotations.get("destructiveHint", True):  # the protocol's default for a tool that writes
        said = ["writes, **destructive** (may remove or overwrite)"]
    else:
        said = ["writes, adds only"]
    if annotations.get("idempotentHint"):
        said.append("idempotent")
    return ", ".join(said)


def _default(prop: Mapping[str, Any]) -> str:
    if "default" not in prop:
        return "optional"
    if prop["default"] is None:
        return "optional"
    return f"`{json.dumps(prop['default'])}`"


def _type(prop: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    kinds = [_kind(option, schema) for option in prop.get("anyOf", [prop])]
    named = [kind for kind in kinds if kind != "null"] or ["null"]
    return _cell(" or ".join(named))


def _kind(prop: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        fields = schema.get("$defs", {}).get(name, {}).get("properties", {})
        return "{" + ", ".join(fields) + "}" if fields else name
    if "enum" in prop:
        return " or ".join(f'"{value}"' for value in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return _kind(prop.get("items", {}), schema) + "[]"
    return str(kind)


def _text(text: str) -> str:
    """A docstring-like description as Markdown: common indentation removed, lines kept."""
    return inspect.cleandoc(text)


def _cell(text: str) -> str:
    return " ".join(inspect.cleandoc(text).split()).replace("|", "\\|")


def _resource_row(item: Mapping[str, Any], uri: str) -> str:
    kind = item.get("mimeType", "")
    return f"| `{uri}` | {item['name']} | {kind} | {_cell(item.get('description', ''))} |"


GENERATED = (
    Generated("docs/configuration.md", "settings-table", settings_table.markdown),
    Generated("docs/tools.md", "tools-reference", tools_markdown),
    Generated("README.md", "tool-profiles", tool_profiles.markdown),
)


def with_part(text: str, part: Generated, body: str) -> str:
    """`text` with the part between its markers replaced by `body`."""
    if part.start not in text or part.end not in text:
        raise ValueError(f"{part.page} has no {part.start} ... {part.end} markers")
    head, rest = text.split(part.start, 1)
    _, tail = rest.split(part.end, 1)
    return f"{head}{part.start}\n{body}\n{part.end}{tail}"


def regenerated(root: Path = ROOT) -> dict[str, str]:
    """Each generated page's text as the code makes it now, keyed by its path relative to `root`."""
    pages: dict[str, str] = {}
    for part in GENERATED:
        text = pages.get(part.page) or (root / part.page).read_text(encoding="utf-8")
        pages[part.page] = with_part(text, part, part.produce())
    return pages


def stale(root: Path = ROOT) -> list[str]:
    """The generated pages whose text differs from what the code makes now."""
    return [
        page for page, text in regenerated(root).items() if (root / page).read_text(encoding="utf-8") != text
    ]


def update(root: Path = ROOT) -> list[str]:
    """Rewrite every generated part; return the pages that changed."""
    changed = []
    for page, text in regenerated(root).items():
        path = root / page
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the generated parts of docs/.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    args = parser.parse_args(argv)
    if args.check:
        pages = stale()
        for page in pages:
            print(f"{page} is stale: run scripts/update-docs")
        return 1 if pages else 0
    for page in update():
        print(f"updated {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
