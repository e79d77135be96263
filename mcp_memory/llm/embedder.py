"""The Embedder role: every embedder returns float32 rows of unit length, so a dot product is the
cosine similarity. `mcp_memory.llm.open_embedder` opens the configured one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from mcp_memory.models import EmbeddingSpec
from mcp_memory.search.passages import passages


class Embedder(Protocol):
    """Turns texts into vectors. The spec is stored with the vectors it made."""

    @property
    def spec(self) -> EmbeddingSpec: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), spec.dimension), float32, L2-normalized rows, in input order."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class BackgroundEmbedder(Protocol):
    """An embedder with a lane of its own for work nobody waits for (a long turn's later passages), so a
    search's query is never queued behind it (the local model: one more inference on the other core)."""

    async def embed_background(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder with a lane of its own for a search's query, so it is never queued behind the turns
    being embedded (an import added flat out queues hundreds): the local model, one more inference at
    once. llm/query_vectors.py uses it when the embedder has one."""

    async def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length; an all-zero row stays zero rather than becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalized


EMBED_CALL = 32  # passages embedded per call to the embedder


async def embed_passages(embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray]:
    """Each text's passage vectors (search/passages.py), shape (passages, dimension), in one call to the
    embedder: a text of one passage gets one row, the vector of its whole content."""
    spans = [passages(text) for text in texts]
    pieces = [text[start:end] for text, cut in zip(texts, spans, strict=True) for start, end in cut]
    # In calls of at most EMBED_CALL pieces: a pasted file of a thousand passages does not hold the
    # embedder for seconds while a search waits to embed its query.
    parts = [await embedder.embed(pieces[at : at + EMBED_CALL]) for at in range(0, len(pieces), EMBED_CALL)]
    vectors = np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.zeros((0, 0))
    out, at = [], 0
    for cut in spans:
        out.append(vectors[at : at + len(cut)])
        at += len(cut)
    return out


def memory_vectors(vectors: np.ndarray) -> tuple[list[float], list[list[float]] | None]:
    """A memory's `embedding` and `passage_embeddings` from its passage vectors."""
    first: list[float] = vectors[0].tolist()
    return first, (vectors.tolist() if len(vectors) > 1 else None)
