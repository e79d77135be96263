"""The Embedder role: every embedder returns float32 rows of unit length, so a dot product is the
cosine similarity. `mcp_memory.llm.open_embedder` opens the configured one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mcp_memory.models import EmbeddingSpec


class Embedder(Protocol):
    """Turns texts into vectors. The spec is stored with the vectors it made."""

    @property
    def spec(self) -> EmbeddingSpec: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), spec.dimension), float32, L2-normalized rows, in input order."""
        ...

    async def aclose(self) -> None: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length; an all-zero row stays zero rather than becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalized
