"""What every Redis-backed part shares: one way to connect, and one way Redis errors read.

Messages name the role ("working memory", "the learning counters") and the address, never the password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript

from mcp_memory.config import WorkingSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError

RedisClient = aioredis.Redis | RedisCluster
ScriptArg = str | int | float

BACKOFF_BASE = 0.05  # seconds; doubles per retry
BACKOFF_CAP = 1.0
_HEALTH_CHECK_SECONDS = 15  # PING a pooled connection idle this long before reusing it


def redis_location(url: str) -> str:
    """host:port (or the socket path) of a Redis URL, never its credentials."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


def connect(settings: WorkingSettings) -> RedisClient:
    """A pooled client with timeouts and retries; it connects lazily, on the first command."""
    if settings.redis_url is None:
        raise ConfigError("working memory on Redis needs working.redis_url (MCP_MEMORY_WORKING__REDIS_URL)")
    url = settings.redis_url.get_secret_value()
    # Retry only connection errors (a restarted server, a dropped pooled connection): they fail fast.
    # A server that let a call time out is not retried, so an outage costs one timeout, not several.
    retry = Retry(
        ExponentialBackoff(cap=BACKOFF_CAP, base=BACKOFF_BASE),
        settings.retries,
        supported_errors=(redis.exceptions.ConnectionError,),
    )
    options: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": settings.timeout_seconds,
        "socket_connect_timeout": settings.timeout_seconds,
        "health_check_interval": _HEALTH_CHECK_SECONDS,
        "retry": retry,
    }
    try:
        if settings.cluster:
            return RedisCluster.from_url(url, **options)
        return aioredis.Redis.from_url(url, **options)
    except ValueError as e:
        raise ConfigError(f"working.redis_url is not a Redis URL: {e}") from None


def load_script(client: RedisClient, name: str, *, prelude: bool = False) -> AsyncScript:
    """scripts/<name>.lua registered on the client (sent by SHA, loaded on first use), after the
    shared helpers of _prelude.lua when asked."""
    scripts = resources.files(__package__) / "scripts"
    source = (scripts / f"{name}.lua").read_text()
    if prelude:
        source = (scripts / "_prelude.lua").read_text() + source
    return client.register_script(source)


def location_of(settings: WorkingSettings) -> str:
    return redis_location(settings.redis_url.get_secret_value()) if settings.redis_url else "?"


def call_deadline(settings: WorkingSettings) -> float:
    """The hard ceiling of one call: every attempt timing out plus every backoff in between."""
    return settings.timeout_seconds * (settings.retries + 1) + BACKOFF_CAP * settings.retries


@contextmanager
def translated_errors(what: str, location: str, deadline: float, *, plural: bool = False) -> Iterator[None]:
    """Redis errors as errors the model can read, within the call's deadline."""
    verb = "are" if plural else "is"
    try:
        with anyio.fail_after(deadline):
            yield
    except redis.exceptions.AuthenticationError as e:
        raise BackendUnavailableError(
            f"{what} (Redis) at {location} refused our credentials; check working.redis_url", backend="redis"
        ) from e
    except redis.exceptions.ConnectionError as e:
        raise BackendUnavailableError(
            f"{what} (Redis) {verb} unreachable at {location}; retry later", backend="redis"
        ) from e
    except (redis.exceptions.TimeoutError, TimeoutError) as e:
        raise BackendUnavailableError(
            f"{what} (Redis) at {location} did not answer in time; retry later", backend="redis"
        ) from e
    except redis.exceptions.RedisError as e:
        raise BackendUnavailableError(f"{what} (Redis) at {location} failed: {e}", backend="redis") from e
