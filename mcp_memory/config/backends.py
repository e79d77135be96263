"""Where memory is kept and which models it calls: the working and long-term stores (SQLite, Redis,
Cosmos DB), the embedder and the chat model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class WorkingSettings(BaseModel):
    backend: Literal["sqlite", "redis"] | None = Field(
        default=None, description="Working-memory store; default: redis when redis_url is set, else sqlite."
    )
    redis_url: SecretStr | None = Field(default=None, description="Redis URL, e.g. redis://localhost:6379/0.")
    ttl_seconds: int | None = Field(
        default=None, ge=1, description="Sliding expiry of an idle thread's working memory; none by default."
    )
    key_prefix: str = Field(default="mm", description="Prefix of every Redis key.")
    timeout_seconds: float = Field(default=2.0, gt=0, description="Per-call Redis timeout.")
    retries: int = Field(
        default=3, ge=0, description="Retries (exponential backoff) of a Redis call after a connection error."
    )
    cluster: bool = Field(
        default=False, description="redis_url names a Redis Cluster node (client follows slots)."
    )

    @property
    def resolved_backend(self) -> Literal["sqlite", "redis"]:
        if self.backend is not None:
            return self.backend
        return "redis" if self.redis_url else "sqlite"


class CosmosSettings(BaseModel):
    endpoint: str | None = Field(
        default=None, description="Account URI, https://<account>.documents.azure.com:443/."
    )
    key: SecretStr | None = Field(default=None, description="Account key; unset = Microsoft Entra ID.")
    database: str = Field(default="mcp_memory", description="Database name; created if missing.")
    turns_container: str = Field(
        default="turns", description="Container of turns (append-only, optional TTL)."
    )
    memories_container: str = Field(
        default="memories", description="Container of summaries, facts and user profiles."
    )
    throughput: Literal["serverless", "autoscale"] = Field(
        default="serverless", description="How new containers are provisioned."
    )
    autoscale_max_ru: int = Field(
        default=1000, ge=1000, description="Autoscale ceiling in RU/s per container."
    )
    vector_index: Literal["quantizedFlat", "diskANN", "flat"] = Field(
        default="quantizedFlat", description="Vector index type of new containers (diskANN for large ones)."
    )
    vector_index_shard_key: str | None = Field(
        default=None, description="Optional vectorIndexShardKey path, e.g. /user_id."
    )
    turn_ttl_seconds: int | None = Field(
        default=None, ge=1, description="Turns expire after this; none by default."
    )
    verify_tls: bool = Field(default=True, description="Verify the endpoint's TLS certificate.")
    endpoint_discovery: bool = Field(
        default=True, description="Discover regional endpoints (off for local emulators)."
    )
    timeout_seconds: float = Field(default=10.0, gt=0, description="Per-request Cosmos DB timeout.")


class LongTermSettings(BaseModel):
    backend: Literal["sqlite", "cosmos"] | None = Field(
        default=None, description="Long-term store; default: cosmos when cosmos.endpoint is set, else sqlite."
    )
    cosmos: CosmosSettings = Field(default_factory=CosmosSettings)
    warm_on_start: bool = Field(
        default=True,
        description="sqlite: load the configured users' search indexes at start-up, in the background"
        " (else on each user's first search).",
    )
    index_memory_mb: int = Field(
        default=512,
        ge=16,
        description="sqlite: memory for the in-memory search indexes of one process, in MB (least"
        " recently used users' are dropped past it; ~3 MB per 1,000 memories).",
    )
    ann_min_memories: int = Field(
        default=50_000,
        ge=0,
        description="sqlite: from this many memories with vectors, a user's vector search uses an "
        "approximate (HNSW) index beside the exact one; searches whose filters leave few memories stay "
        "exact. 0 = always exact.",
    )
    ann_expansion: int = Field(
        default=2048,
        ge=8,
        description="sqlite: candidates the approximate index weighs per search (more: better recall, "
        "slower).",
    )

    @property
    def resolved_backend(self) -> Literal["sqlite", "cosmos"]:
        if self.backend is not None:
            return self.backend
        return "cosmos" if self.cosmos.endpoint else "sqlite"


class EmbeddingSettings(BaseModel):
    provider: Literal["local", "openai", "azure", "hash"] = Field(
        default="local",
        description="local = all-MiniLM-L6-v2 int8 ONNX, offline; hash = deterministic test embedder.",
    )
    model: str = Field(
        default="", description="Model or Azure deployment name (openai default: text-embedding-3-small)."
    )
    dimension: int | None = Field(
        default=None, ge=1, description="Vector size; required for openai models other than the defaults."
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (Ollama, vLLM, ...).")
    api_key: SecretStr | None = Field(default=None, description="API key; Azure without one uses Entra ID.")
    azure_endpoint: str | None = Field(default=None, description="Azure OpenAI endpoint (provider azure).")
    api_version: str = Field(default="2024-10-21", description="Azure OpenAI API version.")
    threads: int = Field(default=1, ge=1, description="ONNX intra-op threads for the local model.")
    parallel: int | None = Field(
        default=None,
        ge=1,
        description="Local model inferences at once, each on `threads` cores (default: the machine's cores "
        "but one, divided by threads), plus one lane for background work.",
    )
    batch_size: int = Field(
        default=32,
        ge=1,
        description="Texts per embedding request (OpenAI; the local model runs one text at a time).",
    )
    timeout_seconds: float = Field(default=30.0, gt=0, description="Per-call embedding timeout.")
    max_retries: int = Field(default=2, ge=0, description="SDK retries of a failed remote embedding call.")


class LLMSettings(BaseModel):
    provider: Literal["none", "openai", "azure"] = Field(
        default="none", description="Who writes summaries: none = offline extractive summarizer."
    )
    model: str = Field(default="gpt-4o-mini", description="Chat model or Azure deployment name.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (Ollama, vLLM, ...).")
    api_key: SecretStr | None = Field(default=None, description="API key; Azure without one uses Entra ID.")
    azure_endpoint: str | None = Field(default=None, description="Azure OpenAI endpoint (provider azure).")
    api_version: str = Field(default="2024-10-21", description="Azure OpenAI API version.")
    timeout_seconds: float = Field(default=30.0, gt=0, description="Per-call LLM timeout.")
    max_retries: int = Field(default=2, ge=0, description="SDK retries of a failed LLM call.")
