"""Client, database and containers for the Cosmos DB long-term store: created with their policies when
missing, checked against them when present (most of a container's policies cannot change after creation,
so a mismatch is a startup error that lists every difference).

Policy shapes follow https://learn.microsoft.com/azure/cosmos-db/nosql/vector-search (vector embedding
policy, vector index, excluding the vector from the range index), https://learn.microsoft.com/azure/
cosmos-db/gen-ai/full-text-search (full-text policy and index) and
https://learn.microsoft.com/azure/cosmos-db/gen-ai/sharded-diskann (vectorIndexShardKey).
"""

from __future__ import annotations

import urllib.request
from typing import Any

from azure.core.pipeline.transport import AioHttpTransport
from azure.cosmos import PartitionKey, ThroughputProperties
from azure.cosmos.aio import ContainerProxy, CosmosClient, DatabaseProxy

from mcp_memory.config import CosmosSettings
from mcp_memory.errors import ConfigError
from mcp_memory.models import EmbeddingSpec

PARTITION_PATHS = ["/user_id", "/thread_id"]
FULL_TEXT_PATH = "/index_text"
VECTOR_PATH = "/embedding"
LANGUAGE = "en-US"

# 9 throttle retries, each waiting what the service's x-ms-retry-after-ms asks, up to 30 s in all (the
# SDK's documented defaults, spelled out); 503s are retried by the SDK's own policy.
_RETRY_TOTAL = 9
_RETRY_BACKOFF_MAX_SECONDS = 30


def make_transport() -> AioHttpTransport | None:
    """The HTTP transport: None (the SDK's default) when the environment names a proxy, else one that
    does not read the environment. The default's aiohttp session trusts it, and so looks up ~/.netrc and
    the proxy variables on a worker thread for every request: two thread hops each, for settings that
    cannot change while the server runs (and a netrc login could never be used: the SDK signs its own
    Authorization header)."""
    return None if urllib.request.getproxies() else AioHttpTransport(use_env_settings=False)


def make_client(settings: CosmosSettings) -> tuple[CosmosClient, Any]:
    """The async client, and the credential object to close with it (None for a key)."""
    if not settings.endpoint:
        raise ConfigError(
            "the Cosmos DB long-term store needs MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT "
            "(https://<account>.documents.azure.com:443/)"
        )
    credential: Any
    closable: Any = None
    if settings.key is not None:
        credential = settings.key.get_secret_value()
    else:
        try:
            from azure.identity.aio import DefaultAzureCredential  # only when Entra ID is used
        except ImportError as e:
            raise ConfigError(
                "Microsoft Entra ID sign-in needs azure-identity: pip install 'mcp-memory[cosmos]', "
                "or set MCP_MEMORY_LONG_TERM__COSMOS__KEY"
            ) from e
        credential = closable = DefaultAzureCredential()
    client = CosmosClient(
        settings.endpoint,
        credential,
        connection_verify=settings.verify_tls,
        enable_endpoint_discovery=settings.endpoint_discovery,
        connection_timeout=settings.timeout_seconds,
        read_timeout=settings.timeout_seconds,
        user_agent_suffix="mcp-memory",
        retry_total=_RETRY_TOTAL,
        retry_backoff_max=_RETRY_BACKOFF_MAX_SECONDS,
        transport=make_transport(),
    )
    return client, closable


def vector_embedding_policy(embedding: EmbeddingSpec) -> dict[str, Any]:
    return {
        "vectorEmbeddings": [
            {
                "path": VECTOR_PATH,
                "dataType": "float32",
                "distanceFunction": "cosine",
                "dimensions": embedding.dimension,
            }
        ]
    }


def full_text_policy() -> dict[str, Any]:
    return {"defaultLanguage": LANGUAGE, "fullTextPaths": [{"path": FULL_TEXT_PATH, "language": LANGUAGE}]}


def indexing_policy(settings: CosmosSettings) -> dict[str, Any]:
    vector_index: dict[str, Any] = {"path": VECTOR_PATH, "type": settings.vector_index}
    if settings.vector_index_shard_key:
        vector_index["vectorIndexShardKey"] = [settings.vector_index_shard_key]
    return {
        "indexingMode": "consistent",
        "automatic": True,
        # /* keeps /created_at/? (recent, time filters), the key fields, type and superseded_by indexed.
        "includedPaths": [{"path": "/*"}],
        # Range-indexing a vector or long text costs RU on every write and serves no query here.
        "excludedPaths": [
            {"path": '/"_etag"/?'},
            {"path": f"{VECTOR_PATH}/*"},
            {"path": "/content/?"},
            {"path": f"{FULL_TEXT_PATH}/?"},
            {"path": "/metadata/*"},
            # A long memory's passage offsets (cosmos/passages.py): read back, never filtered on.
            {"path": "/passage_spans/*"},
        ],
        "vectorIndexes": [vector_index],
        "fullTextIndexes": [{"path": FULL_TEXT_PATH}],
    }


def check_settings(settings: CosmosSettings) -> None:
    if settings.vector_index_shard_key and settings.vector_index == "flat":
        raise ConfigError(
            "vector_index_shard_key applies to the quantizedFlat and diskANN vector indexes, not flat"
        )
    if settings.vector_index_shard_key and not settings.vector_index_shard_key.startswith("/"):
        raise ConfigError(
            "vector_index_shard_key must be a document path like /user_id, not "
            f"{settings.vector_index_shard_key!r}"
        )


async def open_database(client: CosmosClient, settings: CosmosSettings) -> DatabaseProxy:
    return await client.create_database_if_not_exists(settings.database)


def new_container_throughput(settings: CosmosSettings) -> ThroughputProperties | None:
    """Autoscale up to the configured RU/s, or nothing (serverless accounts take no throughput)."""
    if settings.throughput == "autoscale":
        return ThroughputProperties(auto_scale_max_throughput=settings.autoscale_max_ru)
    return None


async def open_container(
    database: DatabaseProxy, name: str, settings: CosmosSettings, embedding: EmbeddingSpec
) -> tuple[ContainerProxy, dict[str, Any]]:
    """The container (created with the policies if missing) and its stored properties."""
    throughput = new_container_throughput(settings)
    container = await database.create_container_if_not_exists(
        name,
        partition_key=PartitionKey(path=PARTITION_PATHS, kind="MultiHash"),
        indexing_policy=indexing_policy(settings),
        vector_embedding_policy=vector_embedding_policy(embedding),
        full_text_policy=full_text_policy(),
        # TTL on, nothing expires unless an item carries its own ttl (turns, when configured).
        default_ttl=-1,
        offer_throughput=throughput,
    )
    return container, await container.read()


# -- the learning container: revisions and trigger counters --------------------------------------------

# (/user_id, /group_id): `group_id` is the memory id for a memory's revisions (its history is one logical
# partition, and a revision's seq is unique there) and COUNTERS_GROUP for the user's trigger counters.
LEARNING_PARTITION_PATHS = ["/user_id", "/group_id"]


def learning_container_name(settings: CosmosSettings) -> str:
    """Named after the memories container, so deployments that keep their memories apart in one database
    keep their revisions and counters apart too."""
    return f"{settings.memories_container}-learning"


def learning_indexing_policy() -> dict[str, Any]:
    return {
        "indexingMode": "consistent",
        "automatic": True,
        "includedPaths": [{"path": "/*"}],
        # Revision text is read back whole, never filtered on: indexing it only costs RU on every write.
        "excludedPaths": [
            {"path": '/"_etag"/?'},
            {"path": "/content/?"},
            {"path": "/source_text/?"},
            {"path": "/metadata/*"},
            {"path": "/labels/*"},
        ],
    }


async def open_learning_container(database: DatabaseProxy, settings: CosmosSettings) -> ContainerProxy:
    """The learning container, created if missing (no vector or full-text policy: nothing searches it);
    an existing one with another partition key or TTL off is a startup error."""
    name = learning_container_name(settings)
    throughput = new_container_throughput(settings)
    container = await database.create_container_if_not_exists(
        name,
        partition_key=PartitionKey(path=LEARNING_PARTITION_PATHS, kind="MultiHash"),
        indexing_policy=learning_indexing_policy(),
        # TTL on: rate-window counters carry their window as their ttl (and revisions written before
        # stored bytes counted them, their retention; newer ones are deleted by prune, cosmos/revisions.py).
        default_ttl=-1,
        offer_throughput=throughput,
    )
    properties = await container.read()
    diffs = partition_key_differences(properties, LEARNING_PARTITION_PATHS)
    if properties.get("defaultTtl") is None:
        diffs.append("time-to-live is off (defaultTtl unset), needs -1 so rate windows expire")
    raise_on_differences(name, diffs)
    return container


def policy_differences(
    properties: dict[str, Any], settings: CosmosSettings, embedding: EmbeddingSpec
) -> list[str]:
    """Every way an existing container differs from what this configuration needs; [] when it fits."""
    policy = properties.get("indexingPolicy") or {}
    diffs = [
        *partition_key_differences(properties, PARTITION_PATHS),
        *_vector_embedding_differences(properties, embedding),
        *_vector_index_differences(policy, settings),
        *_range_index_differences(policy),
        *_full_text_differences(properties, policy),
    ]
    if properties.get("defaultTtl") is None and settings.turn_ttl_seconds is not None:
        diffs.append("time-to-live is off (defaultTtl unset), needs -1 so turns can expire")
    return diffs


def partition_key_differences(properties: dict[str, Any], paths: list[str]) -> list[str]:
    """The container's partition key, which must be hierarchical (MultiHash) on these paths."""
    key = properties.get("partitionKey") or {}
    if key.get("paths") != paths or str(key.get("kind", "")).lower() != "multihash":
        return [f"partition key is {key.get('paths')} ({key.get('kind')}), needs {paths} (MultiHash)"]
    return []


def _vector_embedding_differences(properties: dict[str, Any], embedding: EmbeddingSpec) -> list[str]:
    """The vector embedding policy of VECTOR_PATH: this embedder's data type, distance and dimensions."""
    vectors = (properties.get("vectorEmbeddingPolicy") or {}).get("vectorEmbeddings") or []
    vector = next((v for v in vectors if v.get("path") == VECTOR_PATH), None)
    if vector is None:
        return [f"no vector embedding policy for {VECTOR_PATH}"]
    wanted = vector_embedding_policy(embedding)["vectorEmbeddings"][0]
    return [
        f"vector {name} is {vector.get(name)}, needs {wanted[name]}"
        for name in ("dataType", "distanceFunction", "dimensions")
        if str(vector.get(name)).lower() != str(wanted[name]).lower()
    ]


def _vector_index_differences(policy: dict[str, Any], settings: CosmosSettings) -> list[str]:
    """The vector index on VECTOR_PATH: its type and shard key as configured."""
    index = next((v for v in policy.get("vectorIndexes") or [] if v.get("path") == VECTOR_PATH), None)
    if index is None:
        return [f"no vector index on {VECTOR_PATH}"]
    diffs = []
    if str(index.get("type", "")).lower() != settings.vector_index.lower():
        diffs.append(f"vector index type is {index.get('type')}, needs {settings.vector_index}")
    shard = index.get("vectorIndexShardKey") or []
    wanted_shard = [settings.vector_index_shard_key] if settings.vector_index_shard_key else []
    if list(shard) != wanted_shard:
        diffs.append(f"vectorIndexShardKey is {shard or 'unset'}, needs {wanted_shard or 'unset'}")
    return diffs


def _range_index_differences(policy: dict[str, Any]) -> list[str]:
    """The range index: the vectors left out of it, created_at in it (time filters and ordering)."""
    diffs = []
    excluded = {p.get("path") for p in policy.get("excludedPaths") or []}
    if f"{VECTOR_PATH}/*" not in excluded and "/*" not in excluded:
        diffs.append(f"{VECTOR_PATH}/* is not excluded from the range index")
    included = {p.get("path") for p in policy.get("includedPaths") or []}
    if not ({"/*", "/created_at/?"} & included) or "/created_at/?" in excluded or "/created_at/*" in excluded:
        diffs.append("/created_at/? is not range-indexed")
    return diffs


def _full_text_differences(properties: dict[str, Any], policy: dict[str, Any]) -> list[str]:
    """The full-text policy and index on FULL_TEXT_PATH."""
    diffs = []
    full_text = (properties.get("fullTextPolicy") or {}).get("fullTextPaths") or []
    if not any(p.get("path") == FULL_TEXT_PATH for p in full_text):
        diffs.append(f"no full-text policy path {FULL_TEXT_PATH}")
    if not any(p.get("path") == FULL_TEXT_PATH for p in policy.get("fullTextIndexes") or []):
        diffs.append(f"no full-text index on {FULL_TEXT_PATH}")
    return diffs


def raise_on_differences(name: str, diffs: list[str]) -> None:
    if diffs:
        raise ConfigError(
            f"the existing Cosmos DB container {name!r} does not match this configuration: "
            + "; ".join(diffs)
            + ". These policies cannot all be changed in place: point the server at a new container "
            "(MCP_MEMORY_LONG_TERM__COSMOS__TURNS_CONTAINER / __MEMORIES_CONTAINER) or change the "
            "configuration back."
        )
