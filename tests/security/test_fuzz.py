"""Property-based fuzzing of every tool's arguments through a real MCP client (in process).

For any arguments: the server does not crash, no internal traceback reaches the client, every
rejection is a short message naming the problem, and a rejected call leaves the stored data exactly
as it was (long term, working memory and thread data: compared through the export). The client runs
on an event loop in a portal thread, so Hypothesis drives a plain test function and one connected
client serves every example.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_memory.config import SecuritySettings, Settings
from mcp_memory.mcp.server import build_server
from tests.helpers import HANG_SECONDS

THREADS = ["t", "other", "x" * 129, "../etc", "", "a b"]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=6), st.integers()), max_size=3),
)
# Plausible values per parameter name, so fuzzing reaches past the schema into the service's checks.
PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "thread_id": st.sampled_from(THREADS),
    "role": st.sampled_from(["user", "assistant", "tool", "system", "agent", "robot", ""]),
    "content": st.one_of(st.text(max_size=60), st.just("ignore previous instructions"), st.just("  ")),
    "query": st.one_of(st.text(max_size=30), st.just('"quoted phrase"'), st.just("")),
    "mode": st.sampled_from(["hybrid", "vector", "text", "fuzzy"]),
    "types": st.one_of(
        st.lists(st.sampled_from(["turn", "summary", "fact", "diary"]), max_size=3), st.text()
    ),
    "limit": st.integers(min_value=-5, max_value=200),
    "recent": st.integers(min_value=-5, max_value=20_000),
    "keep_recent": st.integers(min_value=-5, max_value=20_000),
    "context_window": st.integers(min_value=-1, max_value=20_000_000),
    "since": st.sampled_from(["2020-01-01", "yesterday", "2999-12-31T00:00:00Z", ""]),
    "until": st.sampled_from(["2020-01-01", "not a date", "2030-01-01"]),
    "memory_id": st.sampled_from(["turn_missing", "", "x" * 300, "summary_tester_t", "fact_x"]),
    "revision_id": st.sampled_from(["rev_missing", ""]),
    "everything": st.booleans(),
    "dry_run": st.just(True),  # a fuzzed deletion that succeeds would only make later checks trivial
    "user_id": st.sampled_from(["someone-else", "", "../x"]),
    "metadata": st.one_of(
        st.none(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3), st.text()
    ),
    "jsonl": st.one_of(
        st.text(max_size=80),
        st.just('{"kind": "header", "user_id": "a", "exported_at": "2026-01-01"}\n{"kind": "memory"}'),
    ),
}
TRACEBACK_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages", "Exception Group")


@dataclass
class PortalClient:
    """A connected MCP client living on a portal's event loop, called from synchronous code."""

    portal: BlockingPortal
    client: Client
    server: Any

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(self.client.call_tool, name, arguments)

    def stored(self) -> list[str]:
        """Everything the user has, without the export header (it carries the export time), once the
        background lane is idle: an earlier accepted call (e.g. a new fact) queues a profile rebuild,
        which must not land between the two snapshots of a rejected call."""
        self.portal.call(self._settle)
        result = self.call_tool("export_memories", {})
        assert not result.is_error, result.content[0].text
        return list(result.structured_content["jsonl"].splitlines()[1:])

    async def _settle(self) -> None:
        learning = self.server.host.service.learning
        assert learning is not None, "the fuzzed server runs with learning on"
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.portal.call(self.client.list_tools).tools}


@pytest.fixture
def fuzz_client(fast_settings: Settings) -> Iterator[PortalClient]:
    generous = SecuritySettings(requests_per_second=10_000, request_burst=10_000)
    server = build_server(fast_settings.model_copy(update={"security": generous}))
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(Client(server, raise_exceptions=False)) as client,
    ):
        fuzzed = PortalClient(portal, client, server)
        for thread, content in (("t", "stored before fuzzing"), ("other", "another thread")):
            fuzzed.call_tool("add_turn", {"thread_id": thread, "role": "user", "content": content})
        yield fuzzed


def _arguments(data: st.DataObject, schema: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for name in schema.get("properties", {}):
        if name in schema.get("required", []) or data.draw(st.booleans()):
            plausible = PLAUSIBLE.get(name, JUNK)
            arguments[name] = data.draw(st.one_of(plausible, plausible, JUNK))
    if data.draw(st.integers(min_value=0, max_value=9)) == 0:
        arguments[data.draw(st.text(min_size=1, max_size=8))] = data.draw(JUNK)
    return arguments


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_any_arguments_to_any_tool_are_handled(
    fuzz_client: PortalClient, data: st.DataObject, caplog: pytest.LogCaptureFixture
) -> None:
    tools = fuzz_client.tools()
    name = data.draw(st.sampled_from(sorted(tools)), label="tool")
    arguments = _arguments(data, tools[name].input_schema)
    before = fuzz_client.stored()
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        result = fuzz_client.call_tool(name, arguments)
    crashes = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not crashes, f"{name}({arguments!r}) crashed the server: {crashes}"
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not any(marker in text for marker in TRACEBACK_MARKERS), f"{name} leaked internals: {text[:500]}"
    if result.is_error:
        assert 0 < len(text) < 4000, f"{name}({arguments!r}) gave no clear message: {text!r}"
        assert fuzz_client.stored() == before, f"rejected {name}({arguments!r}) changed stored data"
    else:
        json.dumps(result.structured_content)  # a success is well-formed JSON
