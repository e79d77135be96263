"""A deterministic, dependency-free embedder for fast tests: feature hashing, no model.

Words and character trigrams are hashed (blake2b, so vectors are equal across processes, unlike
hash()) into signed buckets. Texts sharing words or spellings land close; it is not semantic.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from mcp_memory.llm.embedder import normalize_rows
from mcp_memory.models import EmbeddingSpec

_WORD = re.compile(r"\w+")
_TRIGRAM_WEIGHT = 0.5  # words carry more meaning than spellings
_EMPTY_FEATURE = "\x00empty"  # gives the empty text a unit vector too


class HashingEmbedder:
    DEFAULT_DIMENSION = 384

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be at least 1, got {dimension}")
        self._spec = EmbeddingSpec(model=f"hash-{dimension}", dimension=dimension)

    @property
    def spec(self) -> EmbeddingSpec:
        return self._spec

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Cheap enough (hashing words and trigrams, no model) to run on the event loop.
        return self.embed_now(texts)

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self._spec.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                bucket, sign = self._bucket(feature)
                vectors[row, bucket] += sign * weight
        return normalize_rows(vectors)

    async def aclose(self) -> None:
        return None

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return (value >> 1) % self._spec.dimension, 1.0 if value & 1 else -1.0


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        return [(_EMPTY_FEATURE, 1.0)]
    features = [("w:" + word, 1.0) for word in words]
    for word in words:
        padded = f"#{word}#"
        features.extend(("c:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return features
