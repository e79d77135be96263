"""Settings: environment variables prefixed MCP_MEMORY_ (nested with __) and an optional .env file.

Built once in cli.main() and passed down; never constructed at import time.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, Field, SecretStr, TypeAdapter, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcp_memory.errors import ConfigError
from mcp_memory.models import GROUP_MEMBER, SPACE_NAME_PATTERN, THREAD_ID_PATTERN, SpaceRole

# A character's longest JSON spelling, \uXXXX (outside the BMP, a pair of them: 12 bytes for one).
JSON_BYTES_PER_CHAR = 6

# The reference memory server's (@modelcontextprotocol/server-memory) one setting, the file of its graph.
# A client entry written for it and kept when only the command became `mcp-memory serve` still sets it.
REFERENCE_FILE_VARIABLE = "MEMORY_FILE_PATH"


def _default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "default"


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


def reference_memory_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The file MEMORY_FILE_PATH names (the reference memory server's setting, not one of ours), None
    when it is unset or empty. `environ`: this process's environment unless given."""
    value = (os.environ if environ is None else environ).get(REFERENCE_FILE_VARIABLE)
    return Path(value) if value else None


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


class SummarySettings(BaseModel):
    default_context_window: int = Field(default=8000, ge=256, description="Used when the client names none.")
    threshold: float = Field(
        default=0.7, gt=0.0, lt=1.0, description="Summarize past this fraction of the window."
    )
    keep_recent_fraction: float = Field(
        default=0.3, gt=0.0, lt=1.0, description="Share of the threshold kept as verbatim recent messages."
    )
    summary_fraction: float = Field(
        default=0.2, gt=0.0, lt=1.0, description="Largest summary, as a share of the threshold."
    )
    lease_seconds: float = Field(default=60.0, gt=0, description="How long one summarizer holds a thread.")
    inline_seconds: float = Field(
        default=0.01,
        ge=0,
        description="How long add_turn waits for the summary its turn started; a longer one finishes after "
        "the reply.",
    )


class SearchSettings(BaseModel):
    fusion: Literal["score", "rrf"] = Field(
        default="score",
        description="How hybrid search fuses BM25 and vectors: normalized score sum, or Reciprocal Rank Fusion.",
    )
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal Rank Fusion constant k.")
    vector_wait_ms: int = Field(
        default=100,
        ge=0,
        description="How long a search by meaning waits for the user's turns still being embedded; then it "
        "answers, finding those by their words only, and says the meaning side was incomplete.",
    )
    text_weight: float = Field(default=1.0, ge=0, description="Fusion weight of the BM25 side.")
    vector_weight: float = Field(default=1.0, ge=0, description="Fusion weight of the vector side.")
    context_turns: int = Field(
        default=2, ge=0, le=10, description="Earlier turns of its thread indexed (for BM25) with each turn."
    )
    context_turns_after: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Later turns of its thread indexed (for BM25) with each turn, as they arrive.",
    )
    context_weight: float = Field(
        default=0.4,
        ge=0,
        description="BM25 weight of that context (both sides) relative to the turn's own words.",
    )
    max_limit: int = Field(default=100, ge=1, description="Largest `limit` search_memory accepts.")
    max_query_chars: int = Field(
        default=10_000, ge=1, description="Longest search query accepted, in characters."
    )
    cached_queries: int = Field(
        default=4096, ge=0, description="Recent search queries whose vectors are kept for reuse (0: none)."
    )


class AdmissionSettings(BaseModel):
    """How the streamable-HTTP endpoint takes requests in under load (mcp/middleware/admission.py)."""

    concurrent_requests: int | None = Field(
        default=None,
        ge=1,
        description="Requests in progress at once; the rest wait their turn, round-robin across users. "
        "Unset: two per core.",
    )
    max_wait_seconds: float = Field(
        default=1.0,
        gt=0,
        description="Longest a read waits for its turn; past it (or expected past it) it is answered 503 "
        "with Retry-After. Writes are never refused for load.",
    )


class TokenEntry(BaseModel):
    """One bearer token, stored as its SHA-256 hash only, and the principal it stands for."""

    model_config = {"extra": "forbid"}

    sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$", description="Hex SHA-256 of the token (the token itself is never stored)."
    )
    user_id: str = Field(description="Whose memories this token reads and writes.")
    name: str = Field(default="", description="A label for logs and session binding, e.g. ann-laptop.")
    scopes: list[Literal["read", "write", "admin", "metrics"]] = Field(
        default_factory=lambda: ["read", "write"],  # type: ignore[arg-type]  # mypy widens the literals
        description="read = read-only; read + write = own memories; admin = may also forget any user; "
        "metrics = may read /metrics (and nothing else).",
    )
    expires_at: datetime | None = Field(default=None, description="After this time the token is refused.")
    groups: list[str] = Field(
        default_factory=list,
        description='Groups the holder belongs to, matched by "group:<id>" space members (as a token\'s groups claim).',
    )


class SpaceSettings(BaseModel):
    """One shared space: its name, who may use it with what role, and its own limits."""

    model_config = {"extra": "forbid"}

    name: str = Field(description="1-64 letters, digits and . _ - (starting with a letter or digit).")
    members: dict[str, SpaceRole] = Field(
        description='User id or "group:<group id>" -> reader, writer or owner.'
    )
    max_stored_bytes: int | None = Field(
        default=None,
        ge=1,
        description="The space's own storage quota (UTF-8 bytes of its memories and revisions); "
        "unset: security.max_stored_bytes, as a user's.",
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not SPACE_NAME_PATTERN.match(name):
            raise ValueError(
                f"space name {name!r} must be 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit"
            )
        return name

    @field_validator("members")
    @classmethod
    def _check_members(cls, members: dict[str, SpaceRole]) -> dict[str, SpaceRole]:
        for member in members:
            user = member.removeprefix(GROUP_MEMBER)
            if not user or (member == user and not THREAD_ID_PATTERN.match(user)):
                raise ValueError(f'space member {member!r} must be a user id or "group:<group id>"')
        return members


class AuditSettings(BaseModel):
    """The audit trail (docs/security.md): who changed or read which memories, hash-chained."""

    enabled: bool = Field(default=True, description="Keep the audit trail (with long-term memory).")
    retention_days: float = Field(
        default=365.0, gt=0, description="Records older than this are dropped; the chain verifies from there."
    )
    reads: bool = Field(
        default=True, description="Record reads of a space (the ids a search or read returned)."
    )


class SecuritySettings(BaseModel):
    tokens: list[TokenEntry] = Field(
        default_factory=list,
        description="Bearer tokens for SSE/HTTP as a JSON list of {sha256, user_id, ...}.",
    )
    tokens_file: Path | None = Field(
        default=None, description='JSON file of bearer tokens ({"tokens": [...]}), read at startup.'
    )
    allow_unauthenticated_network: bool = Field(
        default=False,
        description="Serve SSE/HTTP on a non-loopback address without tokens (only behind an auth proxy).",
    )
    resource_url: str | None = Field(
        default=None,
        description="This server's public MCP endpoint URL (e.g. https://memory.example.com/mcp): the OAuth resource.",
    )
    authorization_server: str | None = Field(
        default=None,
        description="Issuer URL of the identity provider whose JWT access tokens are accepted (OAuth 2.1).",
    )
    jwks_uri: str | None = Field(
        default=None, description="The issuer's JWKS URL; default: from its OAuth or OpenID metadata."
    )
    audiences: list[str] = Field(
        default_factory=list,
        description="Token audiences accepted besides resource_url (Entra ID v2: the API's client id).",
    )
    issuers: list[str] = Field(
        default_factory=list,
        description="Token iss values accepted; default: the issuer named in the authorization server's metadata.",
    )
    algorithms: list[
        Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
    ] = Field(
        default_factory=lambda: ["RS256", "PS256", "ES256"],  # type: ignore[arg-type]  # literals widened
        min_length=1,
        description="JWT signature algorithms accepted (asymmetric only: never none, never HMAC).",
    )
    clock_skew_seconds: int = Field(
        default=60, ge=0, le=600, description="Leeway for a token's exp, nbf and iat, in seconds."
    )
    jwks_cache_seconds: int = Field(
        default=3600,
        ge=60,
        description="How long the issuer's signing keys are used before they are re-read.",
    )
    jwks_refetch_seconds: float = Field(
        default=30.0,
        ge=0,
        description="Least time between two key fetches that an unknown kid triggers (rotation, floods).",
    )
    user_claims: list[str] = Field(
        default_factory=lambda: ["sub"],
        min_length=1,
        description='Claims whose values, joined by ":", are the user id (Entra ID: ["tid", "oid"]).',
    )
    scope_claims: list[str] = Field(
        default_factory=lambda: ["scope", "scp"],
        min_length=1,
        description='Claims holding granted scopes, a space-separated string or a list (Entra app roles: "roles").',
    )
    spaces: list[SpaceSettings] = Field(
        default_factory=list,
        description='Shared spaces as a JSON list of {"name": ..., "members": {"<user id>" or "group:<id>": "reader"|"writer"|"owner"}}.',
    )

    spaces_file: Path | None = Field(
        default=None,
        description='JSON file of more spaces ({"spaces": [...]}), re-read when it changes: edits apply to the next request.',
    )

    @field_validator("spaces")
    @classmethod
    def _unique_spaces(cls, spaces: list[SpaceSettings]) -> list[SpaceSettings]:
        _refuse_twice(spaces)
        return spaces

    group_claims: list[str] = Field(
        default_factory=lambda: ["groups"],
        description='Token claims whose values are the groups "group:<id>" members match (Entra ID app roles: "roles").',
    )
    scope_prefix: str = Field(
        default="", description='Prefix of read/write/admin in the token\'s scope values, e.g. "memory.".'
    )
    scope_request_prefix: str = Field(
        default="",
        description="Prefix clients must put before a scope when they request it (Entra ID: the App ID URI and /).",
    )
    introspection_endpoint: str | None = Field(
        default=None,
        description="RFC 7662 endpoint for opaque (non-JWT) tokens; default: from the issuer's metadata.",
    )
    introspection_client_id: str | None = Field(
        default=None, description="Client id this server introspects with; introspection is off without it."
    )
    introspection_client_secret: SecretStr | None = Field(
        default=None, description="Client secret for introspection (HTTP Basic)."
    )
    explorer_client_id: str | None = Field(
        default=None,
        description="OIDC client id of the explorer (/ui), which then signs in at authorization_server.",
    )
    explorer_client_secret: SecretStr | None = Field(
        default=None, description="Its client secret; none for a public client (PKCE only)."
    )
    requests_per_second: float = Field(
        default=20.0,
        gt=0,
        description="Sustained MCP requests per token holder; one bucket for all replicas when redis_url is set.",
    )
    request_burst: int = Field(
        default=40, ge=1, description="Requests a principal may make at once above the rate."
    )
    max_stored_bytes: int | None = Field(
        default=100_000_000,
        ge=1,
        description="Stored text per user and per space (long-term memories and revisions), in bytes; none = unlimited.",
    )
    llm_calls_per_hour: int | None = Field(
        default=120,
        ge=1,
        description="Model calls (summary, extract, reconcile, profile) per user per hour; none = unlimited.",
    )
    max_request_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="Largest HTTP request body accepted; none = room for a turn of max_content_chars "
        "characters, each JSON-escaped (6 bytes), plus 1 MiB.",
    )
    flag_instructions: bool = Field(
        default=True,
        description="Flag instruction-like memory text (prompt-injection defence) at write and read.",
    )
    redact_secrets: bool = Field(
        default=True,
        description="Replace credentials (private keys, API tokens, passwords in URLs and assignments) and "
        "`<private>` spans with a marker before anything is written (docs/security.md).",
    )


class LearningSettings(BaseModel):
    """Learning: facts extracted from turns, deduplicated, reconciled, profiled and revisioned."""

    extract_every_turns: int = Field(
        default=10, ge=0, description="Extract facts from a thread every N new turns; 0 = not by count."
    )
    extract_on_summary: bool = Field(
        default=True, description="Also extract facts whenever a thread is summarized."
    )
    max_turns_per_extraction: int = Field(
        default=30, ge=1, description="Newest not-yet-extracted turns one extraction reads, at most."
    )
    max_facts_per_extraction: int = Field(
        default=20, ge=1, description="Facts kept from one extraction answer, at most (the most confident)."
    )
    min_confidence: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Extracted facts below this confidence are not stored."
    )
    near_duplicate_similarity: float = Field(
        default=0.9,
        gt=0.0,
        le=1.0,
        description="A new fact this similar (cosine) to an active one updates it instead of adding one.",
    )
    reconcile_every_extractions: int = Field(
        default=5,
        ge=0,
        description="Reconcile facts and refresh the profile every K extractions; 0 = on demand only.",
    )
    reconcile_max_facts: int = Field(
        default=60, ge=2, description="Newest active facts one reconciliation pass reviews."
    )
    profile: bool = Field(default=True, description="Keep a cross-thread user profile (user_summary_<user>).")
    profile_max_tokens: int = Field(default=400, ge=32, description="Longest user profile, in tokens.")
    max_llm_calls_per_hour: int = Field(
        default=60,
        ge=0,
        description="Background share of security.llm_calls_per_hour (extract, reconcile, profile).",
    )
    sampling: bool = Field(
        default=True,
        description="With no LLM configured, ask the connected client's model (MCP sampling) if it can.",
    )
    max_answer_tokens: int = Field(
        default=1500, ge=64, description="max_tokens of one extraction, reconcile or profile request."
    )
    revision_retention_days: int = Field(
        default=365, ge=1, description="Revisions older than this are deleted (at start and daily)."
    )
    recall_min_similarity: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        description="Cosine floor for memories the recall prompt returns; default: per embedder.",
    )
    queue_size: int = Field(
        default=1000,
        ge=1,
        description="Background jobs waiting, at most; past it, work is deferred (once per thread), not dropped.",
    )
    concurrency: int = Field(
        default=4, ge=1, description="Background jobs running at once, each for a different user."
    )
    shutdown_grace_seconds: float = Field(
        default=10.0, ge=0, description="On shutdown, how long running background jobs may finish."
    )


class GraphSettings(BaseModel):
    """The knowledge graph: the reference MCP memory server's entities, relations and observations."""

    tools: bool = Field(
        default=True,
        description="Offer the nine knowledge-graph tools and the memory://knowledge-graph resource; false "
        "hides them (the graph stays stored).",
    )
    max_items_per_call: int = Field(
        default=1000,
        ge=1,
        description="Most entities, relations, observations or names one graph tool call takes; more is "
        "refused whole (the CLI's import has no limit).",
    )
    max_name_chars: int = Field(
        default=1000, ge=1, description="Longest entity name, entity type or relation type."
    )
    link_memories: bool = Field(
        default=True,
        description="Link each new turn and fact to the entities it names (by name, case-insensitive).",
    )
    link_weight: float = Field(
        default=0.5,
        ge=0,
        description="With follow_links: how much a link to an entity the query names lifts a hit's score.",
    )
    follow_links: bool = Field(
        default=False,
        description="search_memory also reaches the turns linked to an entity the query names and to its "
        "neighbours (measured in bench/locomo.py; see the README).",
    )


class ObservabilitySettings(BaseModel):
    """What an operator watches: Prometheus metrics and OpenTelemetry traces."""

    metrics: bool = Field(
        default=True,
        description="Serve Prometheus metrics at /metrics on SSE/HTTP (with tokens configured: a token with "
        "the metrics or admin scope).",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Also serve /metrics, without a token, on this port of 127.0.0.1 only (with metrics on); none = off.",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces): a span per MCP request; "
        "needs the otel extra. Default: OTEL_EXPORTER_OTLP_ENDPOINT, if set.",
    )


class HooksSettings(BaseModel):
    """The coding agents' lifecycle hooks (`mcp-memory hook <client>`, `mcp-memory install`): docs/hooks.md."""

    capture: bool = Field(
        default=False,
        description="The client's hooks capture the conversation (set by `mcp-memory install` in the server "
        "entry it writes): the server's instructions stop asking the model to call add_turn.",
    )
    budget_tokens: int = Field(
        default=700,
        ge=50,
        le=1500,
        description="Tokens of recalled memory injected per hook event (SessionStart, each prompt): a new "
        "session's first prompt gets both, within 1,500; always inside the client's own cap (bench/hooks.py "
        "measured the default).",
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Projects (git remote, e.g. github.com/acme/secret) or directories (and everything under "
        "them) whose sessions are neither captured nor given recall.",
    )
    spaces: dict[str, str] = Field(
        default_factory=dict,
        description='A project\'s shared space: {project: space}, e.g. {"github.com/acme/api": "team"}; its '
        "sessions are stored there and recalled from there (the user must be a writer).",
    )
    idle_exit_seconds: int = Field(
        default=900,
        ge=10,
        description="The resident server the hooks start (`serve --socket`) exits after this long without a request.",
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MCP_MEMORY_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    user_id: str = Field(default_factory=_default_user, description="Whose memories these are (stdio).")
    data_dir: Path = Field(default_factory=_default_data_dir, description="Where the SQLite file lives.")
    sqlite_file: str = Field(default="memory.db", description="File name inside data_dir.")
    token_encoding: Literal["o200k_base", "cl100k_base"] = Field(
        default="o200k_base", description="tiktoken encoding for token counts (shipped, offline)."
    )
    max_content_chars: int = Field(
        default=1_000_000,
        ge=1,
        description="Longest turn (or remembered fact) accepted, in characters; longer is refused whole.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level (logs go to stderr)."
    )
    prompts_dir: Path | None = Field(
        default=None, description="Your own prompt templates; default: shipped ones."
    )
    tools: Literal["core", "standard", "all"] = Field(
        default="standard",
        description="Which tools clients see (each costs tokens in every conversation): core (8 daily "
        "tools), standard (15: also revisions, export/import, extraction), all (25: also forget_user and "
        "the knowledge graph's nine). Left unset with MEMORY_FILE_PATH set (the reference memory server's "
        "setting): standard plus the knowledge graph's nine. README: Tool profiles.",
    )

    working: WorkingSettings = Field(default_factory=WorkingSettings)
    long_term: LongTermSettings = Field(default_factory=LongTermSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    summary: SummarySettings = Field(default_factory=SummarySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    admission: AdmissionSettings = Field(default_factory=AdmissionSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / self.sqlite_file

    @property
    def request_body_limit(self) -> int:
        """The HTTP body limit: security.max_request_bytes, or what a longest turn needs as JSON."""
        if self.security.max_request_bytes is not None:
            return self.security.max_request_bytes
        # \uXXXX is the longest JSON spelling of a character a client may send (some escape all
        # non-ASCII); the MiB is the rest of the request: metadata (16 KiB at most), ids, the envelope.
        return self.max_content_chars * JSON_BYTES_PER_CHAR + 1024 * 1024

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, user_id: str) -> str:
        if not THREAD_ID_PATTERN.match(user_id):
            raise ValueError(f"user_id {user_id!r} must be 1-128 characters of A-Z a-z 0-9 . _ : -")
        return user_id


def _listed_in(path: Path, setting: str, key: str) -> object:
    """What a settings file lists: {key: [...]}, or the bare list. ConfigError naming the file otherwise."""
    try:
        raw = json.loads(path.read_text())
    except OSError as e:
        raise ConfigError(f"cannot read security.{setting} {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(f"security.{setting} {path} is not JSON: {e}") from e
    return raw.get(key) if isinstance(raw, dict) else raw


def _refuse_twice(spaces: list[SpaceSettings]) -> None:
    names = [s.name for s in spaces]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"space {twice[0]!r} is configured twice: give each space one entry")


def load_spaces(security: SecuritySettings) -> list[SpaceSettings]:
    """Every configured space: the inline ones plus those in spaces_file as it is now. Fails on a bad one."""
    spaces = list(security.spaces)
    path = security.spaces_file
    if path is None:
        return spaces
    listed = _listed_in(path, "spaces_file", "spaces")
    try:
        spaces += TypeAdapter(list[SpaceSettings]).validate_python(listed)
        _refuse_twice(spaces)
    except (ValidationError, ValueError) as e:
        problem = str(e.errors()[0]["msg"]) if isinstance(e, ValidationError) else str(e)
        raise ConfigError(
            f'security.spaces_file {path} must hold {{"spaces": [{{"name": ..., "members": {{...}}}}]}}: {problem}'
        ) from e
    return spaces


def load_tokens(security: SecuritySettings) -> list[TokenEntry]:
    """Every configured token: the inline ones plus those in tokens_file. Fails on a bad entry."""
    entries = list(security.tokens)
    if security.tokens_file is not None:
        listed = _listed_in(security.tokens_file, "tokens_file", "tokens")
        try:
            entries += TypeAdapter(list[TokenEntry]).validate_python(listed)
        except ValidationError as e:
            raise ConfigError(
                f'security.tokens_file {security.tokens_file} must hold {{"tokens": [{{"sha256": ..., '
                f'"user_id": ...}}]}}: {e.errors()[0]["msg"]} at {e.errors()[0]["loc"]}'
            ) from e
    seen: set[str] = set()
    for entry in entries:
        if not THREAD_ID_PATTERN.match(entry.user_id):
            raise ConfigError(
                f"token {entry.name or entry.sha256[:8]}: user_id {entry.user_id!r} is not valid"
            )
        if entry.sha256 in seen:
            raise ConfigError(f"token hash {entry.sha256[:8]}... is configured twice")
        seen.add(entry.sha256)
    return entries
