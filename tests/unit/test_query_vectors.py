"""A search query's vector is reused when the query is asked again (llm/query_vectors.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from mcp_memory.llm.hash_embedder import HashingEmbedder
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.models import EmbeddingSpec

pytestmark = pytest.mark.anyio


class Counting:
    """The shipped hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.texts: list[str] = []

    @property
    def spec(self) -> EmbeddingSpec:
        return self.inner.spec

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_query_asked_again_is_not_embedded_again() -> None:
    embedder = Counting()
    queries = QueryVectors(embedder, capacity=4096)
    first = await queries.vector("when does my sprint end?")
    again = await queries.vector("when does my sprint end?")
    other = await queries.vector("When is the sprint review?")  # another text: its own vector
    assert first == again == (await embedder.inner.embed(["when does my sprint end?"]))[0].tolist()
    assert embedder.texts == ["when does my sprint end?", "When is the sprint review?"]
    assert (queries.hits, queries.misses) == (1, 2) and other != first
    again.append(1.0)  # a caller's copy: what is kept does not change
    assert len(await queries.vector("when does my sprint end?")) == 64


async def test_only_the_most_recent_queries_are_kept() -> None:
    embedder = Counting()
    queries = QueryVectors(embedder, capacity=2)
    for text in ("a", "b", "a", "c", "a", "b"):  # "b" was least recent when "c" came
        await queries.vector(text)
    assert embedder.texts == ["a", "b", "c", "b"]
    assert len(queries) == 2


async def test_none_are_kept_when_the_setting_is_zero() -> None:
    embedder = Counting()
    queries = QueryVectors(embedder, capacity=0)
    for _ in range(3):
        await queries.vector("a")
    assert embedder.texts == ["a", "a", "a"] and len(queries) == 0
