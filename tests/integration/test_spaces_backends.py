"""A shared space on each production combination of stores, through real MCP clients of two members:
the embedded default, working memory on a real Redis with long term on SQLite, and long term on the local
Cosmos-protocol server (which has no hybrid search: search runs on the first two only). A space's
thread is one thread for all its members, apart from a personal thread of the same id; forgetting the
space leaves nothing of it in any store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
from mcp import Client

from mcp_memory.audit import AuditQuery
from mcp_memory.config import LongTermSettings, Settings, SpaceSettings
from mcp_memory.mcp.server import MemoryServer, build_server
from tests.contract.conftest_long_term import local_cosmos_settings
from tests.services.cosmos_server import CosmosServer
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio

TEAM = SpaceSettings(name="team", members={"ann": "writer", "bob": "owner"})


@pytest.fixture(params=["sqlite", "redis+sqlite", "cosmos"])
async def members(
    request: pytest.FixtureRequest, fast_settings: Settings
) -> AsyncIterator[tuple[str, dict[str, Client], MemoryServer]]:
    """Two users' MCP clients on the same stores: each an in-process server configured as that user."""
    update: dict[str, Any] = {"security": fast_settings.security.model_copy(update={"spaces": [TEAM]})}
    if request.param == "redis+sqlite":
        update["working"] = request.getfixturevalue("redis_working_settings")
    if request.param == "cosmos":
        server: CosmosServer = request.getfixturevalue("cosmos_server")
        update["long_term"] = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(server))
    base = fast_settings.model_copy(update=update)
    async with AsyncExitStack() as stack:
        clients, servers = {}, {}
        for user in ("ann", "bob"):
            servers[user] = build_server(base.model_copy(update={"user_id": user}))
            clients[user] = await stack.enter_async_context(Client(servers[user], raise_exceptions=False))
        yield request.param, clients, servers["bob"]


async def test_a_space_thread_is_one_thread_for_its_members_and_forgetting_the_space_leaves_nothing(
    members: tuple[str, dict[str, Client], MemoryServer],
) -> None:
    backend, clients, bob_server = members
    ann, bob = clients["ann"], clients["bob"]
    first = await call(
        ann, "add_turn", thread_id="plan", role="user", content="staging listens on 5439", space="team"
    )
    await call(
        ann, "add_turn", thread_id="plan", role="user", content="we chose Postgres for its JSON", space="team"
    )
    await call(bob, "add_turn", thread_id="plan", role="assistant", content="noted, thanks", space="team")
    await call(ann, "add_turn", thread_id="plan", role="user", content="my own plan, not the team's")

    shared = await call(bob, "get_working_memory", thread_id="plan", space="team")
    assert [(m["author"], m["content"]) for m in shared["messages"]] == [
        ("ann", "staging listens on 5439"),
        ("ann", "we chose Postgres for its JSON"),
        ("bob", "noted, thanks"),
    ]
    own = await call(ann, "get_working_memory", thread_id="plan")
    assert [m["content"] for m in own["messages"]] == ["my own plan, not the team's"]
    listed = await call(bob, "list_memories", space="team", order="oldest")
    assert [(m["author"], m["space"]) for m in listed["memories"]] == [("ann", "team")] * 2 + [
        ("bob", "team")
    ]

    # One summary for every member.
    await call(bob, "summarize_thread", thread_id="plan", space="team", keep_recent=0)
    summary_ann = (await call(ann, "get_working_memory", thread_id="plan", space="team"))["summary"]
    summary_bob = (await call(bob, "get_working_memory", thread_id="plan", space="team"))["summary"]
    assert summary_ann and summary_ann == summary_bob
    if backend != "cosmos":  # the local Cosmos-protocol server cannot run hybrid search
        found = await call(bob, "search_memory", query="which port does staging listen on")
        top = found["results"][0]
        assert (top["id"], top["space"], top["author"]) == (first["id"], "team", "ann")

    # A writer's "everything" is her own part: what Bob wrote stays.
    own = await call(ann, "forget", everything=True, space="team", dry_run=True)
    assert own["dry_run"] and own["long_term"]["by_type"]["turn"] == 2 and own["left_by_others"]["turn"] == 1
    receipt = await call(bob, "forget", everything=True, space="team")
    assert receipt["long_term"]["by_type"]["turn"] == 3
    service = bob_server.host.service
    assert await service.stores.long_term.memories_of("@team") == []
    assert await service.stores.working.list_threads("@team") == []
    assert await service.stores.working.get("@team", "plan") is None
    assert await service.stores.long_term.stored_bytes("@team") == 0
    # Both members' servers wrote one audit chain, one record a change, with the change (audit/).
    assert service.audit.log is not None
    trail = list(reversed(await service.audit.log.page(AuditQuery(ledger="@team"))))
    assert [(r.actor, r.action, r.tool) for r in trail if r.action not in ("read", "membership")] == [
        ("ann", "add", "add_turn"),
        ("ann", "add", "add_turn"),
        ("bob", "add", "add_turn"),
        ("bob", "summarize", "summarize_thread"),
        ("bob", "forget", "forget"),
    ]
    assert trail[-1].counts["turn"] == 3 and (await service.audit.log.verify()).ok
    # Ann's own thread of the same id is another thread, untouched.
    assert [m["content"] for m in (await call(ann, "get_working_memory", thread_id="plan"))["messages"]] == [
        "my own plan, not the team's"
    ]
