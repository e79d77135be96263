"""The knowledge graph against the real reference server (@modelcontextprotocol/server-memory from npm):
the same tools, schemas and annotations; the same sequence of calls gives the same results, text and
structured content alike; its memory.jsonl imports into `mcp-memory` and exports back byte for byte; and
a client entry written for it works with only the command changed (README "Knowledge graph").

Both servers run as real processes over stdio, launched the way Claude Desktop launches them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import platformdirs
import pytest
from mcp import Client

from mcp_memory.mcp.tools import STANDARD
from tests.helpers import HANG_SECONDS
from tests.services.reference_memory import reference_server
from tests.services.server_process import StdioServer, mcp_memory_command, server_env

GRAPH_TOOLS = (
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
)
pytestmark = pytest.mark.anyio

# Optional arguments we add; a reference client never sends them.
OUR_EXTRAS = {"space", "limit", "cursor", "max_tokens"}

# A session as a model using the reference server makes one: creates, repeats (skipped), relations to
# entities that do not exist and to themselves, observations already there, a missing entity, deletions
# of what is and is not there, searches and opens, in between reads.
SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}),
    (
        "create_entities",
        {
            "entities": [
                {
                    "name": "Ada Lovelace",
                    "entityType": "person",
                    "observations": ["wrote the first program", "born 1815"],
                },
                {
                    "name": "Analytical Engine",
                    "entityType": "machine",
                    "observations": ["designed by Babbage"],
                },
                {"name": "Charles Babbage", "entityType": "person", "observations": []},
                {
                    "name": 'Zoë "Z" Ng',
                    "entityType": "person 🙂",
                    "observations": ["likes 日本語\nand\ttabs", "quote \\ slash"],
                },
            ]
        },
    ),
    (
        "create_entities",
        {
            "entities": [
                {
                    "name": "Ada Lovelace",
                    "entityType": "mathematician",
                    "observations": ["ignored: the name exists"],
                },
                {"name": "London", "entityType": "city", "observations": ["capital of England"]},
            ]
        },
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote programs for"},
                {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
                {"from": "Ada Lovelace", "to": "London", "relationType": "lived in"},
                {"from": "Ada Lovelace", "to": "Nobody Yet", "relationType": "corresponded with"},
                {"from": "London", "to": "London", "relationType": "is"},
            ]
        },
    ),
    (
        "create_relations",
        {"relations": [{"from": "Ada Lovelace", "to": "London", "relationType": "lived in"}]},
    ),
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "Ada Lovelace", "contents": ["born 1815", "died 1852"]},
                {"entityName": "Charles Babbage", "contents": ["mathematician"]},
            ]
        },
    ),
    ("add_observations", {"observations": [{"entityName": "Ghost", "contents": ["never stored"]}]}),
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "London", "contents": ["on the Thames"]},
                {"entityName": "Ghost", "contents": ["x"]},
            ]
        },
    ),
    ("read_graph", {}),
    ("search_nodes", {"query": "MATHEMATICIAN"}),
    ("search_nodes", {"query": "engine"}),
    ("search_nodes", {"query": "日本"}),
    ("search_nodes", {"query": "no such words anywhere"}),
    ("open_nodes", {"names": ["London", "Ada Lovelace", "Nobody Yet"]}),
    ("open_nodes", {"names": []}),
    (
        "delete_observations",
        {
            "deletions": [
                {"entityName": "Ada Lovelace", "observations": ["born 1815", "not there"]},
                {"entityName": "Ghost", "observations": ["x"]},
            ]
        },
    ),
    (
        "delete_relations",
        {
            "relations": [
                {"from": "London", "to": "London", "relationType": "is"},
                {"from": "a", "to": "b", "relationType": "c"},
            ]
        },
    ),
    ("delete_entities", {"entityNames": ["Charles Babbage", "Ghost"]}),
    ("read_graph", {}),
    (
        "create_entities",
        {"entities": [{"name": "Charles Babbage", "entityType": "person", "observations": ["back again"]}]},
    ),
    ("read_graph", {}),
]


def shown(result: mcp_types.CallToolResult) -> dict[str, Any]:
    return {
        "is_error": bool(result.is_error),
        "text": [block.text for block in result.content if isinstance(block, mcp_types.TextContent)],
        "structured": result.structured_content,
    }


def resolved(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """A JSON schema with $refs inlined and what only says how it was written (titles, $schema, ...)
    dropped: the shape a client validates against."""
    if isinstance(schema, dict):
        defs = {**(defs or {}), **schema.get("$defs", {})}
        if "$ref" in schema:
            return resolved(defs[schema["$ref"].split("/")[-1]], defs)
        skip = {"title", "$schema", "$defs", "additionalProperties", "default"}
        return {key: resolved(value, defs) for key, value in schema.items() if key not in skip}
    if isinstance(schema, list):
        return [resolved(item, defs) for item in schema]
    return schema


def without_extras(schema: dict[str, Any], output: bool = False) -> dict[str, Any]:
    extras = {"nextCursor"} if output else OUR_EXTRAS
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in extras}
    return {**schema, "properties": props}


@pytest.fixture
def reference(tmp_path: Path) -> StdioServer:
    return reference_server(tmp_path / "reference", tmp_path / "reference" / "memory.jsonl")


@pytest.fixture
def ours(tmp_path: Path) -> StdioServer:
    return StdioServer(tmp_path / "ours", server_env(tmp_path / "ours" / "data"))


async def run(client: Client) -> list[dict[str, Any]]:
    return [shown(await client.call_tool(tool, arguments)) for tool, arguments in SEQUENCE]


def assert_same_results(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    """SEQUENCE's results, ours against the reference's, call by call."""
    for (tool, arguments), want, have in zip(SEQUENCE, expected, got, strict=True):
        if tool == "search_nodes":
            # Ours finds what the reference finds, first and in its order; entities whose observations the
            # hybrid search also finds may follow, with their relations.
            theirs, mine = want["structured"], have["structured"]
            assert mine["entities"][: len(theirs["entities"])] == theirs["entities"], arguments
            assert all(r in mine["relations"] for r in theirs["relations"]), arguments
            continue
        assert have == want, f"{tool}({arguments})"


async def test_the_nine_tools_and_the_resource_are_the_reference_s(
    reference: StdioServer, ours: StdioServer
) -> None:
    async with reference.connect() as theirs_client, ours.connect() as ours_client:
        theirs = {t.name: t for t in (await theirs_client.list_tools()).tools}
        mine = {t.name: t for t in (await ours_client.list_tools()).tools}
        their_resources = (await theirs_client.list_resources()).resources
        my_resources = {r.uri: r for r in (await ours_client.list_resources()).resources}
    assert set(theirs) == set(GRAPH_TOOLS)
    for name in GRAPH_TOOLS:
        reference_tool, tool = theirs[name], mine[name]
        assert (tool.title, tool.description) == (reference_tool.title, reference_tool.description), name
        assert tool.annotations == reference_tool.annotations, name
        ours_in = resolved(tool.input_schema)
        assert without_extras(ours_in) == resolved(reference_tool.input_schema) | {
            "properties": resolved(reference_tool.input_schema).get("properties", {})
        }, name
        assert not set(ours_in.get("required", [])) & OUR_EXTRAS, f"{name}: our extras must be optional"
        ours_out = resolved(tool.output_schema)
        assert without_extras(ours_out, output=True) == resolved(reference_tool.output_schema), name
    [graph] = their_resources
    mine_graph = my_resources[graph.uri]
    assert (mine_graph.name, mine_graph.title, mine_graph.description, mine_graph.mime_type) == (
        graph.name,
        graph.title,
        graph.description,
        graph.mime_type,
    )


async def test_the_same_calls_give_the_reference_s_results(reference: StdioServer, ours: StdioServer) -> None:
    async with reference.connect() as client:
        expected = await run(client)
        expected_resource = (await client.read_resource("memory://knowledge-graph")).contents[0]
    async with ours.connect() as client:
        got = await run(client)
        resource = (await client.read_resource("memory://knowledge-graph")).contents[0]
    assert_same_results(expected, got)
    assert resource.text == expected_resource.text  # type: ignore[union-attr]
    assert expected[6]["is_error"] and expected[6]["text"] == ["Entity with name Ghost not found"]


def mcp_memory(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [mcp_memory_command(), *args],
        env=server_env(data_dir),
        cwd=data_dir.parent,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_its_memory_jsonl_imports_and_exports_back_unchanged(
    reference: StdioServer, tmp_path: Path
) -> None:
    async with reference.connect() as client:
        await run(client)
    memory_file = tmp_path / "reference" / "memory.jsonl"
    written = memory_file.read_text()
    data = tmp_path / "imported" / "data"
    data.mkdir(parents=True)
    imported = mcp_memory(data, "import", "--format", "memory-jsonl", str(memory_file))
    assert imported.returncode == 0, imported.stderr
    assert '"new_entities": 5' in imported.stderr
    again = mcp_memory(data, "import", "--format", "memory-jsonl", str(memory_file))
    assert '"new_entities": 0, "new_relations": 0' in again.stderr  # a second import stores nothing twice
    exported = mcp_memory(data, "export", "--format", "memory-jsonl")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == written

    # The imported graph is the one the tools read, and its observations are memories search finds.
    server = StdioServer(tmp_path / "imported", server_env(data))
    async with server.connect() as client:
        graph = await client.call_tool("read_graph", {})
        assert [e["name"] for e in graph.structured_content["entities"]][:2] == [
            "Ada Lovelace",
            "Analytical Engine",
        ]  # type: ignore[index]
        hits = await client.call_tool("search_memory", {"query": "capital", "mode": "text"})
        assert [h["content"] for h in hits.structured_content["results"]] == ["capital of England"]  # type: ignore[index]


async def test_a_claude_desktop_config_for_the_reference_works_after_changing_the_command(
    reference: StdioServer, ours: StdioServer
) -> None:
    """A client's prompt and habits built on the reference: the same calls, subscriptions included, with
    only the server command changed (ours.connect() is `mcp-memory serve`, nothing else differs)."""
    for server in (reference, ours):
        heard: list[str] = []

        async def on_message(message: object) -> None:
            if isinstance(message, mcp_types.ResourceUpdatedNotification):
                heard.append(str(message.params.uri))  # noqa: B023

        async with server.connect(mode="legacy", message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026
                await client.subscribe_resource("memory://knowledge-graph")
            await client.call_tool(
                "create_entities",
                {"entities": [{"name": "Desk", "entityType": "thing", "observations": ["oak"]}]},
            )
            with anyio.fail_after(HANG_SECONDS):
                while not heard:  # noqa: ASYNC110 (the handler appends from the client's reader task)
                    await anyio.sleep(0.05)
        assert heard[0] == "memory://knowledge-graph"


async def test_its_memory_file_comes_along_when_only_the_command_changes(
    reference: StdioServer, tmp_path: Path
) -> None:
    """The config keeps its env (MEMORY_FILE_PATH): the first start imports that file, once."""
    async with reference.connect() as client:
        await run(client)
        theirs = shown(await client.call_tool("read_graph", {}))
    env = server_env(tmp_path / "switched" / "data") | {"MEMORY_FILE_PATH": reference.env["MEMORY_FILE_PATH"]}
    switched = StdioServer(tmp_path / "switched", env)
    async with switched.connect() as client:
        assert shown(await client.call_tool("read_graph", {})) == theirs
        await client.call_tool("delete_entities", {"entityNames": ["London"]})
    async with switched.connect() as client:  # not imported again: London stays deleted
        names = [e["name"] for e in (await client.call_tool("read_graph", {})).structured_content["entities"]]  # type: ignore[index]
    assert "London" not in names and "Ada Lovelace" in names


def reference_client_env(home: Path, memory_file: Path) -> dict[str, str]:
    """What a client entry written for the reference server gives `mcp-memory serve` once only its command
    changed: MEMORY_FILE_PATH over the inherited environment, no MCP_MEMORY_* variable at all (so the
    default profile, the local embedder, the OS user). HOME and XDG_DATA_HOME point at `home`, so the
    default data dir (platformdirs' user data dir) is the test's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    return env | {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "MEMORY_FILE_PATH": str(memory_file),
    }


def default_data_dir(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `mcp-memory` keeps its data with that environment (config/settings.py's default data dir)."""
    with monkeypatch.context() as patched:
        patched.setenv("HOME", str(home))
        patched.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        data_dir = Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))
    # The test isolates the server's default data dir through HOME / XDG_DATA_HOME (Linux and macOS);
    # where the platform keeps it elsewhere, it fails here rather than touch the developer's own data.
    assert data_dir.is_relative_to(home), (
        f"this platform's user data dir ({data_dir}) does not follow HOME / XDG_DATA_HOME: the test cannot "
        "isolate the server's default data dir"
    )
    return data_dir


async def test_the_readme_s_drop_in_lists_the_graph_and_gives_the_reference_s_results(
    reference: StdioServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README "Knowledge graph": change only the command to `mcp-memory serve`, keep MEMORY_FILE_PATH.
    With nothing else set, the default profile's tools and the graph's nine are listed, the reference's
    own sequence of calls gives its results, and the memory.jsonl it wrote is adopted on the first start."""
    async with reference.connect() as client:
        expected = await run(client)
    theirs_graph = expected[-1]  # SEQUENCE ends with read_graph

    home = tmp_path / "home"
    data_dir = default_data_dir(home, monkeypatch)  # before a start could write outside tmp_path
    ours = StdioServer(tmp_path / "ours", reference_client_env(home, tmp_path / "ours" / "memory.jsonl"))
    async with ours.connect() as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        got = await run(client)
    assert listed >= {*GRAPH_TOOLS, *STANDARD} and "forget_user" not in listed
    assert listed == STANDARD | set(GRAPH_TOOLS)
    assert "because MEMORY_FILE_PATH is set" in ours.stderr()
    assert (data_dir / "memory.db").is_file()  # its own store, in the default data dir under HOME
    assert_same_results(expected, got)

    # The file the reference wrote, kept where the entry's MEMORY_FILE_PATH says: adopted on the first start.
    kept = tmp_path / "switched" / "memory.jsonl"
    kept.parent.mkdir(parents=True)
    shutil.copyfile(tmp_path / "reference" / "memory.jsonl", kept)
    switched = StdioServer(tmp_path / "switched", reference_client_env(tmp_path / "switched-home", kept))
    async with switched.connect() as client:
        assert shown(await client.call_tool("read_graph", {})) == theirs_graph
    assert f"imported the reference memory server's file {kept}" in switched.stderr()
