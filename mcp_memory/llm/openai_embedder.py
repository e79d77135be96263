"""Embeddings through the official openai SDK: OpenAI, Azure OpenAI and OpenAI-compatible servers
(Ollama, vLLM, ...).

Every SDK failure is translated here, at one boundary, into mcp_memory.errors with a message naming
the embedding provider and never a key or the provider's error text (401 bodies echo part of the key).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, AsyncExitStack

import anyio
import numpy as np
import openai

from mcp_memory.config import EmbeddingSettings
from mcp_memory.errors import ConfigError, EmbeddingMismatchError
from mcp_memory.llm.embedder import normalize_rows
from mcp_memory.llm.openai_client import deadline, label, make_client, translated_errors
from mcp_memory.models import EmbeddingSpec

DEFAULT_MODEL = "text-embedding-3-small"
# Models whose size we know; any other model (or Azure deployment name) needs embedding.dimension.
NATIVE_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


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
        name = label(settings, "embedding", spec.model)
        stack = AsyncExitStack()
        try:
            client = await make_client(settings, "embedding", name, stack)
        except BaseException:
            await stack.aclose()
            raise
        return cls(
            client,
            spec,
            label=name,
            batch_size=settings.batch_size,
            deadline_seconds=deadline(settings),
            stack=stack,
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

    def _errors(self) -> AbstractContextManager[None]:
        return translated_errors(self._label, "embedding", self._deadline, self._spec.model)
