"""What only the Cosmos DB store has, on the local Cosmos-protocol server: container creation and policy
checks, the embedding-model record, the document layout (partition keys, TTL), ETag conflicts, errors.
TTL expiry itself cannot be observed here (the local server never expires items); see test_cosmos_live.py.
"""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest
from azure.core import MatchConditions

from mcp_memory.config import CosmosSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError, ConflictError, EmbeddingMismatchError
from mcp_memory.models import EmbeddingSpec, Memory, Scope
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from tests.contract.conftest_long_term import EMBEDDING, embed, local_cosmos_settings
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio


async def raw(store: CosmosLongTermStore, user_id: str) -> list[dict[str, Any]]:
    """Every document of the user in both containers, as stored."""
    found = []
    for container in (store._turns, store._memories):
        found += [
            d
            async for d in container.query_items(
                "SELECT * FROM c WHERE c.user_id = @u", parameters=[{"name": "@u", "value": user_id}]
            )
        ]
    return found


async def test_open_creates_containers_with_hierarchical_keys_and_policies(
    cosmos_server: CosmosServer,
) -> None:
    settings = local_cosmos_settings(cosmos_server, vector_index="diskANN", vector_index_shard_key="/user_id")

    async with CosmosLongTermStore.open(settings, EMBEDDING) as store:
        for container in (store._turns, store._memories):
            props = await container.read()
            assert props["partitionKey"]["paths"] == ["/user_id", "/thread_id"]
            assert props["partitionKey"]["kind"] == "MultiHash"
            assert props["vectorEmbeddingPolicy"]["vectorEmbeddings"][0]["dimensions"] == EMBEDDING.dimension
            assert props["indexingPolicy"]["vectorIndexes"] == [
                {"path": "/embedding", "type": "diskANN", "vectorIndexShardKey": ["/user_id"]}
            ]
            assert props["defaultTtl"] == -1

    async with CosmosLongTermStore.open(settings, EMBEDDING):
        pass  # reopening the same containers validates cleanly


async def test_open_names_every_policy_difference(cosmos_server: CosmosServer) -> None:
    settings = local_cosmos_settings(cosmos_server)
    async with CosmosLongTermStore.open(settings, EMBEDDING):
        pass

    changed = settings.model_copy(update={"vector_index": "diskANN", "vector_index_shard_key": "/thread_id"})
    with pytest.raises(ConfigError) as raised:
        async with CosmosLongTermStore.open(changed, EMBEDDING):
            pass

    message = str(raised.value)
    assert "'turns'" in message
    assert "vector index type is quantizedFlat, needs diskANN" in message
    assert "vectorIndexShardKey is unset, needs ['/thread_id']" in message


async def test_open_refuses_another_embedding_model(cosmos_server: CosmosServer) -> None:
    settings = local_cosmos_settings(cosmos_server)
    async with CosmosLongTermStore.open(settings, EMBEDDING):
        pass

    with pytest.raises(EmbeddingMismatchError, match="configure the original embedder"):
        async with CosmosLongTermStore.open(
            settings, EmbeddingSpec(model="other-model", dimension=EMBEDDING.dimension)
        ):
            pass


async def test_documents_use_the_partition_layout_and_turn_ttl(cosmos_server: CosmosServer) -> None:
    settings = local_cosmos_settings(cosmos_server, turn_ttl_seconds=3600)
    user = f"u-{uuid.uuid4().hex[:8]}"
    async with CosmosLongTermStore.open(settings, EMBEDDING) as store:
        await store.put(
            [
                Memory(
                    id="turn1", user_id=user, thread_id="t1", role="user", content="hi", embedding=embed("hi")
                ),
                Memory(id="fact1", user_id=user, type="fact", content="likes tea"),
            ]
        )
        docs = {d["id"]: d for d in await raw(store, user)}

    assert docs["turn1"]["thread_id"] == "t1" and docs["turn1"]["ttl"] == 3600
    assert docs["fact1"]["thread_id"] == "~user" and "ttl" not in docs["fact1"]  # facts never expire
    assert docs["thread_entry:t1"]["type"] == "thread_entry"


async def test_unchanged_summary_is_not_rewritten(cosmos_server: CosmosServer) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    summary = Memory(id="s1", user_id=user, thread_id="t1", type="summary", content="so far: tea")
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as store:
        await store.put([summary])
        etag = {d["id"]: d["_etag"] for d in await raw(store, user)}["s1"]
        await store.put([summary])
        assert {d["id"]: d["_etag"] for d in await raw(store, user)}["s1"] == etag

        await store.put([summary.model_copy(update={"content": "so far: coffee"})])
        assert {d["id"]: d["_etag"] for d in await raw(store, user)}["s1"] != etag


async def test_a_stale_etag_is_a_conflict(cosmos_server: CosmosServer) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as store:
        await store.put([Memory(id="s1", user_id=user, thread_id="t1", type="summary", content="v1")])
        doc = next(d for d in await raw(store, user) if d["id"] == "s1")
        await store.put([Memory(id="s1", user_id=user, thread_id="t1", type="summary", content="v2")])

        with pytest.raises(ConflictError), cosmos_errors("rewriting a summary", 10):
            await store._memories.replace_item(
                "s1",
                {**doc, "content": "v3"},
                etag=doc["_etag"],
                match_condition=MatchConditions.IfNotModified,
            )


async def test_forgetting_a_user_leaves_no_document_behind(cosmos_server: CosmosServer) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as store:
        await store.put(
            [
                Memory(id="turn1", user_id=user, thread_id="t1", role="user", content="hi"),
                Memory(id="sum1", user_id=user, thread_id="t1", type="summary", content="greeting"),
                Memory(id="fact1", user_id=user, type="fact", content="likes tea"),
            ]
        )
        # Three memories, the thread entry and the user's stored-bytes count.
        assert len(await raw(store, user)) == 5
        assert await store.stored_bytes(user) == len("hi") + len("greeting") + len("likes tea")

        await store.forget(Scope(user_id=user, everything=True))

        assert await raw(store, user) == []


async def test_unreachable_account_is_backend_unavailable(cosmos_server: CosmosServer) -> None:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = local_cosmos_settings(cosmos_server, endpoint=f"http://127.0.0.1:{port}", timeout_seconds=2.0)

    with pytest.raises(BackendUnavailableError, match="Azure Cosmos DB"):
        async with CosmosLongTermStore.open(settings, EMBEDDING):
            pass


async def test_configuration_errors_are_named() -> None:
    with pytest.raises(ConfigError, match="ENDPOINT"):
        async with CosmosLongTermStore.open(CosmosSettings(), EMBEDDING):
            pass
    flat_sharded = CosmosSettings(
        endpoint="http://127.0.0.1:9", vector_index="flat", vector_index_shard_key="/user_id"
    )
    with pytest.raises(ConfigError, match="quantizedFlat and diskANN"):
        async with CosmosLongTermStore.open(flat_sharded, EMBEDDING):
            pass
