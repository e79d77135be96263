"""The README's set-up for VS Code, Cursor and Claude Code works as written: each example (a fenced
block after a `<!-- client-config: NAME -->` marker) is read out of README.md, and the server is started
exactly as that client would start it (the command found on PATH, its args, its env) over stdio, with a
real MCP client that adds a turn and finds it again."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services.mcp_client import call
from tests.services.server_process import StdioServer

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parents[2] / "README.md"
CLIENTS = ("vscode", "cursor", "claude-code")
EXAMPLE = re.compile(r"<!-- client-config: (?P<client>[\w-]+) -->\n```\w*\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Launch:
    command: str
    args: list[str]
    env: dict[str, str]


def examples() -> dict[str, str]:
    found = {m["client"]: m["body"] for m in EXAMPLE.finditer(README.read_text())}
    assert set(found) == set(CLIENTS), f"README.md has client-config examples for {sorted(found)}"
    return found


def vscode(body: str) -> Launch:
    entry = json.loads(body)["servers"]["memory"]
    assert entry["type"] == "stdio"
    return Launch(entry["command"], entry["args"], entry.get("env", {}))


def cursor(body: str) -> Launch:
    entry = json.loads(body)["mcpServers"]["memory"]
    return Launch(entry["command"], entry["args"], entry.get("env", {}))


def claude_code(body: str) -> Launch:
    """`claude mcp add [options] <name> -- <command> [args...]`, options: -s/--scope, -t/--transport,
    -e/--env KEY=value (which takes several values: the name must not follow it)."""
    words = shlex.split(body)
    assert words[:3] == ["claude", "mcp", "add"] and "--" in words, body
    split = words.index("--")
    options, (command, *args) = words[3:split], words[split + 1 :]
    names, env, i = [], {}, 0
    while i < len(options):
        word = options[i]
        if word in ("-s", "--scope", "-t", "--transport"):
            assert word not in ("-t", "--transport") or options[i + 1] == "stdio", body
            i += 2
        elif word in ("-e", "--env"):
            i += 1
            while i < len(options) and not options[i].startswith("-"):
                key, sep, value = options[i].partition("=")
                assert sep, f"claude would refuse {options[i]!r} as an environment variable: {body}"
                env[key] = value
                i += 1
        else:
            names.append(word)
            i += 1
    assert names == ["memory"], body
    return Launch(command, args, env)


PARSERS = {"vscode": vscode, "cursor": cursor, "claude-code": claude_code}


def resolve(command: str) -> str:
    """The command as found on PATH after `pip install mcp-memory`: here, in this venv's bin."""
    bin_dir = Path(sys.executable).parent
    found = shutil.which(command, path=str(bin_dir))
    assert found is not None, f"{command!r} from README.md is not installed in {bin_dir}"
    return found


@pytest.fixture(params=CLIENTS)
def configured_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StdioServer]:
    launch = PARSERS[request.param](examples()[request.param])
    assert all(name.startswith("MCP_MEMORY_") for name in launch.env)
    # The example's env as written, plus a data dir and home of the test's own (not the developer's memories).
    env = launch.env | {"MCP_MEMORY_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    server = StdioServer(tmp_path, env, command=resolve(launch.command), args=launch.args)
    try:
        yield server
    finally:
        server.close()


def test_the_readme_has_an_example_for_each_client() -> None:
    launches = {client: PARSERS[client](body) for client, body in examples().items()}
    assert {(launch.command, tuple(launch.args)) for launch in launches.values()} == {
        ("mcp-memory", ("serve",))
    }


async def test_the_configured_server_remembers_and_finds_a_turn(
    configured_server: StdioServer, tmp_path: Path
) -> None:
    async with configured_server.connect() as client:
        added = await call(
            client, "add_turn", thread_id="setup", role="user", content="My cat is called Pixel"
        )
        found = await call(client, "search_memory", query="what is my cat called")
        assert found["results"][0]["id"] == added["id"], configured_server.stderr()
        assert found["results"][0]["content"] == "My cat is called Pixel"
    assert (tmp_path / "data" / "memory.db").is_file()
