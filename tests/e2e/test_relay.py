"""`mcp-memory serve` over stdio relays each client's session to the user's resident server
(mcp_memory/relay/): one process holds the model and the indexes, whatever the number of sessions.

Real processes throughout: the console script a client launches, the resident server it starts
(`serve --socket`), a real MCP client over stdio. Sampling (extract_memories with no model configured
asks the client's model inside the call) is the request a test can hold open: the server waits on the
client while the test pings, kills the resident server, or lets the answer go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_memory.mcp.app import CAPTURED_INSTRUCTIONS, INSTRUCTIONS
from tests.helpers import HANG_SECONDS
from tests.services.mcp_client import call
from tests.services.resident import resident_pids, stop_resident
from tests.services.server_process import StdioServer, mcp_memory_command, server_env

pytestmark = pytest.mark.anyio

WAIT_SECONDS = HANG_SECONDS  # for a resident server to start on a loaded machine: a bound against a hang
LEARNING = {
    "MCP_MEMORY_LEARNING__EXTRACT_EVERY_TURNS": "0",  # only extract_memories asks the client's model
    "MCP_MEMORY_LEARNING__RECONCILE_EVERY_EXTRACTIONS": "0",
    "MCP_MEMORY_LEARNING__PROFILE": "false",
    "MCP_MEMORY_LEARNING__MAX_LLM_CALLS_PER_HOUR": "100000",
}


class HeldModel:
    """The client's model (sampling): answers with one fact, once the test lets it."""

    def __init__(self, fact: str) -> None:
        self.fact = fact
        self.asked = anyio.Event()
        self.release = anyio.Event()

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked.set()
        await self.release.wait()
        answer = json.dumps(
            {"facts": [{"text": self.fact, "type": "semantic", "confidence": 0.9, "source": ["T1"]}]}
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model="client-model"
        )


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[StdioServer]:
    server = StdioServer(tmp_path / "work", server_env(tmp_path / "data", LEARNING))
    try:
        yield server
    finally:
        server.close()
        stop_resident(tmp_path / "data")


def relay_pids(data_dir: Path) -> list[int]:
    """The relays (`mcp-memory serve` without --socket) running on this data dir."""
    found = []
    marker = f"MCP_MEMORY_DATA_DIR={data_dir}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in cmdline and b"--socket" not in cmdline and marker in environ:
            found.append(int(pid))
    return found


def user_of(pid: int) -> str:
    for variable in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if variable.startswith(b"MCP_MEMORY_USER_ID="):
            return variable.split(b"=", 1)[1].decode()
    return ""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


async def wait_until(condition: Any) -> None:
    """Poll a process's state (no event to wait on): fails after WAIT_SECONDS."""
    with anyio.fail_after(WAIT_SECONDS):
        while not condition():  # noqa: ASYNC110
            await anyio.sleep(0.05)


async def test_sessions_share_one_resident_server_holding_the_model(stdio: StdioServer) -> None:
    async with stdio.connect(mode="legacy") as first, stdio.connect() as second:
        remembered = await call(first, "remember", content="The relay carries sessions to one server")
        found = await call(second, "search_memory", query="relay carries sessions")
        assert remembered["id"] in json.dumps(found)
        [resident] = resident_pids(stdio.data_dir)
        relays = relay_pids(stdio.data_dir)
        assert len(relays) == 2
        # The relays are standard-library processes; the resident holds the service (a generous bound:
        # an in-process server with the hashing embedder alone is ~200 MB).
        assert all(rss_mb(pid) < 60 for pid in relays), [rss_mb(pid) for pid in relays]
        assert rss_mb(resident) > max(rss_mb(pid) for pid in relays)


async def test_sampling_and_a_ping_while_a_call_waits(stdio: StdioServer) -> None:
    model = HeldModel("The user keeps bees on the roof")
    async with stdio.connect(mode="legacy", sampling_callback=model) as client:
        await call(client, "add_turn", thread_id="life", role="user", content="I keep bees on the roof.")
        report: dict[str, Any] = {}

        async def extract() -> None:
            report.update(await call(client, "extract_memories", thread_id="life"))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(extract)
            with anyio.fail_after(WAIT_SECONDS):
                await model.asked.wait()
            await client.send_ping()  # answered while the call waits for the client's model
            assert not report
            model.release.set()
        assert report, "extract_memories answered"
        found = await call(client, "search_memory", query="bees roof")
        assert "bees" in json.dumps(found)


async def test_a_waiting_call_can_be_cancelled_and_the_session_goes_on(stdio: StdioServer) -> None:
    model = HeldModel("The user sails on Sundays")
    async with stdio.connect(mode="legacy", sampling_callback=model) as client:
        await call(client, "add_turn", thread_id="sea", role="user", content="I sail on Sundays.")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(client.call_tool, "extract_memories", {"thread_id": "sea"})
            with anyio.fail_after(WAIT_SECONDS):
                await model.asked.wait()
            tasks.cancel_scope.cancel()  # the client sends notifications/cancelled through the relay
        model.release.set()
        assert (await call(client, "remember", content="after a cancelled call"))["id"]
    # The server's handler was cancelled (it would have logged outcome=ok once the model answered).
    log = (stdio.data_dir / "hooks" / "hooks.log").read_text()
    assert "method=tools/call target=extract_memories principal=local outcome=error" in log
    assert "target=extract_memories principal=local outcome=ok" not in log


async def test_a_2025_subscription_hears_other_sessions_and_outlives_the_resident(stdio: StdioServer) -> None:
    uri = "memory://threads/relayed-thread"
    updated = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == uri:
            updated.set()

    async with stdio.connect(mode="legacy", message_handler=on_message) as listener:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026 clients
            await listener.subscribe_resource(uri)
        async with stdio.connect(mode="legacy") as writer:
            await call(writer, "add_turn", thread_id="relayed-thread", role="user", content="news")
            with anyio.fail_after(WAIT_SECONDS):
                await updated.wait()
        # The resident server goes away; the listener's relay opens its session again, subscription included.
        [first] = resident_pids(stdio.data_dir)
        os.kill(first, signal.SIGKILL)
        updated = anyio.Event()
        await wait_until(lambda: resident_pids(stdio.data_dir) not in ([], [first]))  # started again
        await call(listener, "remember", content="the listener is served again")
        async with stdio.connect(mode="legacy") as writer:
            await call(writer, "add_turn", thread_id="relayed-thread", role="user", content="more news")
            with anyio.fail_after(WAIT_SECONDS):
                await updated.wait()


async def test_a_killed_resident_answers_the_pending_call_and_is_started_again(stdio: StdioServer) -> None:
    model = HeldModel("The user plays the cello")
    async with stdio.connect(mode="legacy", sampling_callback=model) as client:
        await call(client, "add_turn", thread_id="music", role="user", content="I play the cello on Sundays.")
        failure: list[str] = []

        async def extract() -> None:
            try:
                await client.call_tool("extract_memories", {"thread_id": "music"})
            except MCPError as e:
                failure.append(str(e))

        [first] = resident_pids(stdio.data_dir)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(extract)
            with anyio.fail_after(WAIT_SECONDS):
                await model.asked.wait()
            os.kill(first, signal.SIGKILL)
        assert failure and "stopped before answering" in failure[0], failure
        # The same client session goes on, on a resident server started again.
        remembered = await call(client, "remember", content="Sessions outlive the resident server")
        assert remembered["id"]
        assert resident_pids(stdio.data_dir) not in ([], [first])


async def test_no_idle_exit_while_a_session_is_open(tmp_path: Path) -> None:
    env = server_env(tmp_path / "data", {"MCP_MEMORY_HOOKS__IDLE_EXIT_SECONDS": "10"})
    server = StdioServer(tmp_path / "work", env)
    try:
        async with server.connect(mode="legacy") as client:
            [resident] = resident_pids(server.data_dir)
            with anyio.fail_after(WAIT_SECONDS):
                # Held open past the idle time (two of the server's idle checks): the server stays.
                await anyio.sleep(16)
            await call(client, "remember", content="still here")
            assert resident_pids(server.data_dir) == [resident]
        await wait_until(lambda: not resident_pids(server.data_dir))  # idle, with no session open: it exits
    finally:
        server.close()
        stop_resident(tmp_path / "data")


async def test_a_cold_start_answers_initialize_as_the_server_does(stdio: StdioServer) -> None:
    async with stdio.connect(mode="legacy") as client:
        served = (
            client.protocol_version,
            client.server_info,
            client.server_capabilities,
            client.instructions,
        )
    assert (stdio.data_dir / "hooks" / "handshakes.json").is_file()
    stop_resident(stdio.data_dir)
    async with stdio.connect(mode="legacy") as client:  # answered from the kept answer, then served
        kept = (client.protocol_version, client.server_info, client.server_capabilities, client.instructions)
        assert await call(client, "remember", content="after a cold start")
    assert kept == served


async def test_each_session_gets_its_own_instructions(tmp_path: Path) -> None:
    captured_env = server_env(tmp_path / "data", {"MCP_MEMORY_HOOKS__CAPTURE": "true"})
    plain = StdioServer(tmp_path / "plain", server_env(tmp_path / "data"))
    captured = StdioServer(tmp_path / "captured", captured_env)
    try:
        async with plain.connect(mode="legacy") as first, captured.connect(mode="legacy") as second:
            assert first.instructions == INSTRUCTIONS
            assert second.instructions == CAPTURED_INSTRUCTIONS
            assert len(resident_pids(tmp_path / "data")) == 1
    finally:
        stop_resident(tmp_path / "data")


async def test_other_settings_are_served_in_process(tmp_path: Path) -> None:
    ann = StdioServer(tmp_path / "ann", server_env(tmp_path / "data"))
    bob = StdioServer(tmp_path / "bob", server_env(tmp_path / "data", {"MCP_MEMORY_USER_ID": "bob"}))
    try:
        async with ann.connect(mode="legacy"):
            [resident] = resident_pids(tmp_path / "data")
            async with bob.connect(mode="legacy") as client:
                await call(client, "remember", content="bob's own")
                assert "other settings" in bob.stderr()
                [bob_pid] = [pid for pid in relay_pids(tmp_path / "data") if user_of(pid) == "bob"]
                assert rss_mb(bob_pid) > 60  # it holds a service of its own
            assert resident_pids(tmp_path / "data") == [resident]
    finally:
        stop_resident(tmp_path / "data")


@pytest.mark.parametrize("opt_out", ["flag", "variable"])
async def test_opting_out_serves_in_process(tmp_path: Path, opt_out: str) -> None:
    overrides = {"MCP_MEMORY_IN_PROCESS": "1"} if opt_out == "variable" else {}
    server = StdioServer(tmp_path, server_env(tmp_path / "data", overrides), in_process=opt_out == "flag")
    async with server.connect(mode="legacy") as client:
        await call(client, "remember", content="served in process")
    assert not resident_pids(tmp_path / "data")
    assert not (tmp_path / "data" / "hooks").exists()
    if opt_out == "variable":
        assert "serving in this process (MCP_MEMORY_IN_PROCESS is set)" in server.stderr()


def test_an_invalid_setting_reaches_the_client_as_before(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    result = subprocess.run(
        [mcp_memory_command(), "serve"],
        input=json.dumps(initialize) + "\n",
        env=server_env(tmp_path / "data", {"MCP_MEMORY_SUMMARY__THRESHOLD": "2"}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "mcp-memory: invalid settings:\n  MCP_MEMORY_SUMMARY__THRESHOLD" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert not resident_pids(tmp_path / "data")


def exchange(tmp_path: Path, lines: list[str], answers: int, *args: str) -> list[str]:
    """The command's first `answers` lines for `lines` on stdin, sorted (concurrent answers may come in
    any order); stdin is closed once they came, as a client closes it."""
    process = subprocess.Popen(
        [mcp_memory_command(), "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path / "data"),
        cwd=tmp_path,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write("".join(line + "\n" for line in lines))
        process.stdin.flush()
        got = [process.stdout.readline().strip() for _ in range(answers)]  # the pytest timeout bounds it
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        assert process.stdout.read() == "", "nothing more"
    finally:
        if process.poll() is None:
            process.kill()
    return sorted(got)


def test_the_same_lines_get_the_same_answers_relayed_and_in_process(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    lines = [
        "this is not JSON",
        json.dumps(initialize),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"ping"}',
        "[1, 2]",
        '{"jsonrpc":"2.0","id":"three","method":"no/such/method"}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remember","arguments":{}}}',
        '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"memory://nowhere"}}',
    ]
    try:
        relayed = exchange(tmp_path, lines, 7)
        assert resident_pids(tmp_path / "data"), "served by the resident server"
    finally:
        stop_resident(tmp_path / "data")
    # Every request answered: the line that is not JSON (-32700) and the array (-32600) too, with
    # initialize, ping, the unknown method, the tool's error and the read's error; the notification not.
    in_process = exchange(tmp_path, lines, 7, "--in-process")
    assert relayed == in_process
