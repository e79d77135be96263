"""Embeddings through the official openai SDK: OpenAI, Azure OpenAI and OpenAI-compatible servers
(Ollama, vLLM, ...).

Every SDK failure is translated here, at one boundary, into mcp_memory.errors with a message naming
the embedding provider and never a key or the provider's error text (401 bodies echo part of the key).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import numpy as np
import openai

from ..config import EmbeddingSettings
from ..errors import BackendUnavailableError, ConfigError, EmbeddingMismatchError, InvalidInputError
from ..storage.base import EmbeddingSpec
from .embedder import normalize_rows

DEFAULT_MODEL = "text-embedding-3-small"
# Models whose size we know; any other model (or Azure deployment name) needs embedding.dimension.
NATIVE_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
_UNUSED_KEY = "unused"  # local servers (Ollama, vLLM) ignore the key, but the SDK insists on one


def resolve_spec(settings: EmbeddingSettings) -> EmbeddingSpec:
    """The model name and vector size this configuration produces, or a ConfigError saying what is missing."""
    model = settings.model or DEFAULT_MODEL
    native = NATIVE_DIMENSIONS.get(model)
    if settings.dimension is not None:
        if native is not None and settings.dimension != native and not model.startswith("text-embedding-3-"):
            raise ConfigError(
                f"embedding model {model} always returns {native} dimensions; unset embedding.dimension "
                f"(it is {settings.dimension}) or choose a text-embedding-3 model"
            )
        return EmbeddingSpec(model=model, dimension=settings.dimension)
    if native is None:
        raise ConfigError(
            f"embedding.dimension must be set for embedding model {model!r}: its vector size is not known "
            "(set MCP_MEMORY_EMBEDDING__DIMENSION to the size the model returns)"
        )
    return EmbeddingSpec(model=model, dimension=native)


def _where(url: str | None) -> str:
    """scheme://host:port only: a URL may carry credentials or tokens in its path or query."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f" at {parts.scheme}://{host}{port}" if host else ""


def _label(settings: EmbeddingSettings, model: str) -> str:
    if settings.provider == "azure":
        return f"the embedding provider (Azure OpenAI{_where(settings.azure_endpoint)}, deployment {model})"
    where = _where(settings.base_url) or " at api.openai.com"
    return f"the embedding provider (OpenAI-compatible{where}, model {model})"


class OpenAIEmbedder:
    """An Embedder on one AsyncOpenAI or AsyncAzureOpenAI client; texts go in batches of batch_size."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        spec: EmbeddingSpec,
        *,
        label: str,
        batch_size: int,
        deadline_seconds: float,
        stack: AsyncExitStack,
    ) -> None:
        self._client = client
        self._spec = spec
        self._label = label
        self._batch_size = batch_size
        self._deadline = deadline_seconds
        self._stack = stack
        native = NATIVE_DIMENSIONS.get(spec.model)
        # Only text-embedding-3 models can shorten their vectors; others reject the parameter.
        self._dimensions: int | openai.Omit = (
            spec.dimension
            if spec.model.startswith("text-embedding-3-") and spec.dimension != native
            else openai.omit
        )

    @classmethod
    async def open(cls, settings: EmbeddingSettings) -> OpenAIEmbedder:
        spec = resolve_spec(settings)
        label = _label(settings, spec.model)
        stack = AsyncExitStack()
        try:
            client = await _make_client(settings, label, stack)
        except BaseException:
            await stack.aclose()
            raise
        stack.push_async_callback(client.close)
        # The SDK's timeout bounds each attempt; this bounds the whole call, retries included.
        deadline = settings.timeout_seconds * (settings.max_retries + 1) + 10.0 * settings.max_retries
        return cls(
            client, spec, label=label, batch_size=settings.batch_size, deadline_seconds=deadline, stack=stack
        )

    @property
    def spec(self) -> EmbeddingSpec:
        return self._spec

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        result = np.zeros((len(texts), self._spec.dimension), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            result[start : start + len(batch)] = await self._embed_batch(batch)
        return normalize_rows(result)

    async def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        # The API rejects empty strings; a single space embeds as "nothing said".
        inputs = [text if text.strip() else " " for text in texts]
        with self._errors():
            with anyio.fail_after(self._deadline):
                response = await self._client.embeddings.create(
                    input=inputs, model=self._spec.model, dimensions=self._dimensions
                )
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(inputs):
            got = len(data) if isinstance(data, list) else "no"
            raise ConfigError(f"{self._label} returned {got} embeddings for {len(inputs)} texts")
        rows = np.zeros((len(inputs), self._spec.dimension), dtype=np.float32)
        for position, item in enumerate(sorted(data, key=lambda d: d.index)):
            vector = item.embedding
            if len(vector) != self._spec.dimension:
                raise EmbeddingMismatchError(
                    f"{self._label} returned {len(vector)}-dimensional vectors, but embedding.dimension "
                    f"is {self._spec.dimension}; set it to {len(vector)} (stored vectors must match)"
                )
            rows[position] = vector
        return rows

    async def aclose(self) -> None:
        await self._stack.aclose()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        label = self._label
        try:
            yield
        except TimeoutError as e:  # our overall deadline (anyio.fail_after)
            raise BackendUnavailableError(f"{label} did not answer within {self._deadline:g}s") from e
        except openai.APITimeoutError as e:
            raise BackendUnavailableError(f"{label} timed out") from e
        except openai.APIConnectionError as e:
            raise BackendUnavailableError(f"{label} is unreachable") from e
        except openai.RateLimitError as e:
            raise BackendUnavailableError(f"{label} is rate limiting requests (HTTP 429)") from e
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise ConfigError(
                f"{label} refused the credentials (HTTP {e.status_code}); check the embedding API key "
                "or the Azure identity's role on the resource"
            ) from e
        except openai.NotFoundError as e:
            raise ConfigError(
                f"{label} has no model or deployment by that name (HTTP 404), "
                "or the base URL / API version is wrong"
            ) from e
        except openai.APIStatusError as e:
            if e.status_code >= 500 or e.status_code in (408, 409):
                raise BackendUnavailableError(f"{label} failed with HTTP {e.status_code}") from e
            code = f", code {e.code}" if isinstance(getattr(e, "code", None), str) else ""
            raise InvalidInputError(f"{label} refused the request (HTTP {e.status_code}{code})") from e
        except openai.APIResponseValidationError as e:
            raise ConfigError(f"{label} sent a response that is not OpenAI-compatible") from e
        except json.JSONDecodeError as e:  # the SDK parses a 200 body with json() unguarded
            raise ConfigError(f"{label} sent a body that is not valid JSON; is it OpenAI-compatible?") from e
        except openai.OpenAIError as e:
            raise BackendUnavailableError(f"{label} failed: {type(e).__name__}") from e


async def _make_client(settings: EmbeddingSettings, label: str, stack: AsyncExitStack) -> openai.AsyncOpenAI:
    key = settings.api_key.get_secret_value() if settings.api_key else None
    common: dict[str, Any] = {"timeout": settings.timeout_seconds, "max_retries": settings.max_retries}
    try:
        if settings.provider == "azure":
            if not settings.azure_endpoint:
                raise ConfigError("embedding.provider is azure but embedding.azure_endpoint is not set")
            if key is None:
                return openai.AsyncAzureOpenAI(
                    azure_endpoint=settings.azure_endpoint,
                    api_version=settings.api_version,
                    azure_ad_token_provider=await _entra_token_provider(stack),
                    **common,
                )
            return openai.AsyncAzureOpenAI(
                azure_endpoint=settings.azure_endpoint,
                api_version=settings.api_version,
                api_key=key,
                **common,
            )
        if key is None and settings.base_url is not None:
            key = _UNUSED_KEY
        # key None and no base_url: the SDK reads OPENAI_API_KEY, as users of OpenAI expect.
        return openai.AsyncOpenAI(api_key=key, base_url=settings.base_url, **common)
    except openai.OpenAIError as e:  # raised at construction when no credential is found
        raise ConfigError(
            f"{label} has no API key: set MCP_MEMORY_EMBEDDING__API_KEY (or OPENAI_API_KEY)"
        ) from e


async def _entra_token_provider(stack: AsyncExitStack) -> Callable[[], Awaitable[str]]:
    try:
        # The aio credential refreshes tokens without blocking the event loop.
        from azure.identity.aio import DefaultAzureCredential, get_bearer_token_provider
    except ImportError as e:
        raise ConfigError(
            "Azure OpenAI embeddings without an API key use Microsoft Entra ID, which needs the "
            "azure-identity package: pip install azure-identity, or set MCP_MEMORY_EMBEDDING__API_KEY"
        ) from e
    credential = DefaultAzureCredential()
    stack.push_async_callback(credential.close)
    provider: Callable[[], Awaitable[str]] = get_bearer_token_provider(credential, _AZURE_SCOPE)
    return provider
