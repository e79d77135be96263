"""How the server serves: admission under load, observability, and the coding agents' hooks."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
        default=1000,
        ge=50,
        le=1500,
        description="Tokens of recalled memory injected for a prompt: its memories, best first, and at a "
        "session's first prompt the project's brief in what they leave (a resumed session, or a client that "
        "injects only at session start, gets the brief there); always inside the client's own cap "
        "(bench/hooks.py measured the default).",
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Projects (git remote, e.g. github.com/acme/secret) or directories (and everything under "
        "them) whose sessions are neither captured nor given recall.",
    )
    spaces: dict[str, str] = Field(
        default_factory=dict,
        description='A project\'s shared space: {project: space}, e.g. {"github.com/acme/api": "team"}; its '
        "sessions are stored there and recalled from there, when the repository's .mcp-memory.toml names no "
        "space (a writer's sessions go there; a reader's and a non-member's stay personal, and only members "
        "recall from it).",
    )
    idle_exit_seconds: int = Field(
        default=900,
        ge=10,
        description="The resident server the hooks start (`serve --socket`) exits after this long without a request.",
    )
