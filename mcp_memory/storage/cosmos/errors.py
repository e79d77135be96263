"""The one place Azure Cosmos DB and transport errors become mcp-memory errors, worded for the model.

Messages name the problem and what to change; they never carry keys or tokens (Cosmos error text
holds activity ids and resource paths, and only its first line is kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
import anyio
from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError, ServiceResponseError
from azure.cosmos.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosHttpResponseError,
    CosmosResourceExistsError,
)

from mcp_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    ConflictError,
    MemoryServerError,
    PermissionDeniedError,
)

FEATURES_HINT = (
    "enable 'Vector Search for NoSQL API' and 'Full Text & Hybrid Search for NoSQL API' on the account "
    "(Azure portal > the Cosmos DB account > Settings > Features) and restart"
)


@contextmanager
def cosmos_errors(what: str, timeout_seconds: float) -> Iterator[None]:
    """Bound one Cosmos DB operation in time and translate what can go wrong. `what` completes
    "while ..." in the message, e.g. "searching long-term memory"."""
    try:
        with anyio.fail_after(timeout_seconds):
            yield
    except TimeoutError as e:
        raise BackendUnavailableError(
            f"Azure Cosmos DB did not answer within {timeout_seconds:g}s while {what}; try again later",
            backend="cosmos",
        ) from e
    except CosmosAccessConditionFailedError as e:
        raise ConflictError(
            f"another writer changed this memory first while {what}; read it again and retry"
        ) from e
    except CosmosResourceExistsError as e:
        raise ConflictError(
            f"another writer created this memory first while {what}; read it again and retry"
        ) from e
    except CosmosHttpResponseError as e:
        raise translate(e, what) from e
    except ClientAuthenticationError as e:
        raise ConfigError(
            f"no Microsoft Entra ID token for Azure Cosmos DB while {what}: sign in (az login), use a "
            "managed identity, or set MCP_MEMORY_LONG_TERM__COSMOS__KEY to use the account key"
        ) from e
    except (ServiceRequestError, ServiceResponseError, aiohttp.ClientError, OSError) as e:
        raise BackendUnavailableError(
            f"Azure Cosmos DB is unreachable while {what}; try again later", backend="cosmos"
        ) from e


def translate(e: CosmosHttpResponseError, what: str) -> MemoryServerError:
    status = e.status_code or 0
    reason = _first_line(e)
    if status == 401:
        return ConfigError(
            f"Azure Cosmos DB refused the credentials (401) while {what}: check the account key "
            "(MCP_MEMORY_LONG_TERM__COSMOS__KEY) or the Microsoft Entra ID identity"
        )
    if status == 403:
        return PermissionDeniedError(
            f"Azure Cosmos DB denied access (403) while {what}: give the identity a data-plane role such as "
            "'Cosmos DB Built-in Data Contributor', or check that key auth is not disabled on the account"
        )
    if status == 429:
        return BackendUnavailableError(
            f"Azure Cosmos DB is throttling (429, request rate too large) while {what}, even after "
            "retrying as the service asked; raise the throughput (RU/s) or try again later",
            backend="cosmos",
        )
    if status == 400 and _mentions_search_feature(reason):
        return ConfigError(
            f"Azure Cosmos DB rejected a vector or full-text feature while {what}: {FEATURES_HINT}"
        )
    if status in (404, 410):
        return BackendUnavailableError(
            f"the Azure Cosmos DB database or container is gone ({status}) while {what}; restart the server "
            "to recreate it",
            backend="cosmos",
        )
    if status >= 500 or status in (408, 449):
        return BackendUnavailableError(
            f"Azure Cosmos DB failed ({status}) while {what}; try again later", backend="cosmos"
        )
    return MemoryServerError(f"Azure Cosmos DB rejected the request ({status}) while {what}: {reason}")


def _first_line(e: CosmosHttpResponseError) -> str:
    text = str(e.message or "").strip().splitlines()
    return text[0][:300] if text else ""


def _mentions_search_feature(reason: str) -> bool:
    lowered = reason.casefold()
    return any(word in lowered for word in ("vector", "fulltext", "full text", "full-text"))
