"""Who may do what: bearer tokens, OAuth, shared spaces, quotas and the audit trail; and the token and
spaces files, read as they are now.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, TypeAdapter, ValidationError, field_validator

from mcp_memory.errors import ConfigError
from mcp_memory.models import GROUP_MEMBER, SPACE_NAME_PATTERN, THREAD_ID_PATTERN, SpaceRole


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
