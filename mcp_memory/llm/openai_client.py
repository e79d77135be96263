"""What chat and embeddings share about the openai SDK: building the client (OpenAI, Azure OpenAI with
a key or Microsoft Entra ID, any OpenAI-compatible base URL) and translating its errors, once.

Messages name the provider and never a key or the provider's error text (401 bodies echo part of the key).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from typing import Any, Literal
from urllib.parse import urlsplit

import openai

from mcp_memory.config import EmbeddingSettings, LLMSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError, InvalidInputError

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
# Local servers (Ollama, vLLM) ignore the key, but the SDK insists on one.
UNUSED_KEY = "unused"
Section = Literal["llm", "embedding"]


def where(url: str | None) -> str:
    """' at scheme://host:port' only: a URL may carry credentials or tokens in its path or query."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f" at {parts.scheme}://{host}{port}" if host else ""


def label(settings: LLMSettings | EmbeddingSettings, section: Section, model: str) -> str:
    role = "LLM" if section == "llm" else "embedding"
    if settings.provider == "azure":
        return f"the {role} provider (Azure OpenAI{where(settings.azure_endpoint)}, deployment {model})"
    at = where(settings.base_url) or " at api.openai.com"
    return f"the {role} provider (OpenAI-compatible{at}, model {model})"


async def make_client(
    settings: LLMSettings | EmbeddingSettings, section: Section, name: str, stack: AsyncExitStack
) -> openai.AsyncOpenAI:
    """The SDK client for these settings; closes (with any Entra ID credential) when `stack` closes."""
    key = settings.api_key.get_secret_value() if settings.api_key else None
    common: dict[str, Any] = {"timeout": settings.timeout_seconds, "max_retries": settings.max_retries}
    env = f"MCP_MEMORY_{section.upper()}__"
    try:
        if settings.provider == "azure":
            if not settings.azure_endpoint:
                raise ConfigError(
                    f"{section}.provider is azure but {section}.azure_endpoint "
                    f"({env}AZURE_ENDPOINT) is not set"
                )
            auth: dict[str, Any] = (
                {"api_key": key}
                if key is not None
                else {"azure_ad_token_provider": await _entra_token_provider(stack, env)}
            )
            client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
                azure_endpoint=settings.azure_endpoint, api_version=settings.api_version, **auth, **common
            )
        else:
            if key is None and settings.base_url is not None:
                key = UNUSED_KEY
            # key None and no base_url: the SDK reads OPENAI_API_KEY, as users of OpenAI expect.
            client = openai.AsyncOpenAI(api_key=key, base_url=settings.base_url, **common)
    except openai.OpenAIError as e:  # raised at construction when no credential is found
        raise ConfigError(f"{name} has no API key: set {env}API_KEY (or OPENAI_API_KEY)") from e
    stack.push_async_callback(client.close)
    return client


def deadline(settings: LLMSettings | EmbeddingSettings) -> float:
    """A bound on one whole call, retries and back-off included, so the SDK's own timeout fires first."""
    return settings.timeout_seconds * (settings.max_retries + 1) + 10.0 * settings.max_retries + 1.0


@contextmanager
def translated_errors(name: str, section: Section, deadline_seconds: float, model: str) -> Iterator[None]:
    """Every SDK failure as a mcp_memory error: unavailable (retry later) or configuration (fix it)."""
    try:
        yield
    except TimeoutError as e:  # our overall deadline (anyio.fail_after)
        raise BackendUnavailableError(
            f"{name} did not answer within {deadline_seconds:g}s", backend=section
        ) from e
    except openai.APITimeoutError as e:
        raise BackendUnavailableError(f"{name} timed out", backend=section) from e
    except openai.APIConnectionError as e:
        raise BackendUnavailableError(f"{name} is unreachable", backend=section) from e
    except openai.RateLimitError as e:
        raise BackendUnavailableError(f"{name} is rate limiting requests (HTTP 429)", backend=section) from e
    except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
        role = "LLM" if section == "llm" else "embedding"
        raise ConfigError(
            f"{name} refused the credentials (HTTP {e.status_code}); check the {role} API key "
            "or the Azure identity's role on the resource"
        ) from e
    except openai.NotFoundError as e:
        raise ConfigError(
            f"{name} has no model or deployment named {model!r} (HTTP 404), "
            "or the base URL / API version is wrong"
        ) from e
    except openai.APIStatusError as e:
        if e.status_code >= 500 or e.status_code in (408, 409):
            raise BackendUnavailableError(f"{name} failed with HTTP {e.status_code}", backend=section) from e
        code = f", code {e.code}" if isinstance(getattr(e, "code", None), str) else ""
        raise InvalidInputError(f"{name} refused the request (HTTP {e.status_code}{code})") from e
    except openai.APIResponseValidationError as e:
        raise ConfigError(f"{name} sent a response that is not OpenAI-compatible") from e
    except json.JSONDecodeError as e:  # the SDK parses a 200 body with json() unguarded
        raise ConfigError(f"{name} sent a body that is not valid JSON; is it OpenAI-compatible?") from e
    except openai.OpenAIError as e:
        raise BackendUnavailableError(f"{name} failed: {type(e).__name__}", backend=section) from e


async def _entra_token_provider(stack: AsyncExitStack, env: str) -> Callable[[], Awaitable[str]]:
    try:
        # The aio credential refreshes tokens without blocking the event loop.
        from azure.identity.aio import DefaultAzureCredential, get_bearer_token_provider
    except ImportError as e:
        raise ConfigError(
            "Azure OpenAI without an API key uses Microsoft Entra ID, which needs the azure-identity "
            f"package: pip install azure-identity, or set {env}API_KEY"
        ) from e
    credential = DefaultAzureCredential()
    stack.push_async_callback(credential.close)
    provider: Callable[[], Awaitable[str]] = get_bearer_token_provider(credential, AZURE_SCOPE)
    return provider
