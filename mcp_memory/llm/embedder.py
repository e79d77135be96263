"""The Embedder role and the factory that opens the configured one.

Every embedder returns float32 rows of unit length, so a dot product is the cosine similarity.
Providers are imported only when chosen: the local model pulls in onnxruntime, the remote ones the
openai SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
import numpy as np

from mcp_memory.config import EmbeddingSettings
from mcp_memory.models import EmbeddingSpec


class Embedder(Protocol):
    """Turns texts into vectors. The spec is stored with the vectors it made."""

    @property
    def spec(self) -> EmbeddingSpec: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), spec.dimension), float32, L2-normalized rows, in input order."""
        ...

    async def aclose(self) -> None: ...


@asynccontextmanager
async def open_embedder(settings: EmbeddingSettings) -> AsyncIterator[Embedder]:
    embedder: Embedder
    match settings.provider:
        case "local":
            from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder

            # Loading hashes and maps ~23 MB: keep it off the event loop.
            embedder = await anyio.to_thread.run_sync(LocalMiniLMEmbedder.load, settings)
        case "hash":
            from mcp_memory.llm.hash_embedder import HashingEmbedder

            embedder = HashingEmbedder(settings.dimension or HashingEmbedder.DEFAULT_DIMENSION)
        case "openai" | "azure":
            from mcp_memory.llm.openai_embedder import OpenAIEmbedder

            embedder = await OpenAIEmbedder.open(settings)
    try:
        yield embedder
    finally:
        await embedder.aclose()


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length; an all-zero row stays zero rather than becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalized
