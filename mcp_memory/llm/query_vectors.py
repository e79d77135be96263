"""Query vectors, the last few thousand distinct queries kept: an agent asking again, a client retrying
or a team asking the same thing gets its vector without an inference (the local model's one costs
several ms of a core, a remote one a round trip). Keyed by the embedder's model and the query's text,
so a vector is the one the embedder would give (the local model embeds each text alone: its vector
never depends on what else was embedded)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from mcp_memory.llm.embedder import Embedder, QueryEmbedder


class QueryVectors:
    """The vectors of the last `capacity` distinct queries (search.cached_queries: 4,096 by default,
    ~7 MB of 384 floats each at most); 0 keeps none."""

    def __init__(
        self, embedder: Embedder, capacity: int, counted: Callable[[bool], None] | None = None
    ) -> None:
        self._embedder = embedder
        self._capacity = capacity
        self._counted = counted  # told of each vector: True when reused
        self._kept: OrderedDict[tuple[str, str], tuple[float, ...]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def vector(self, text: str) -> list[float]:
        key = (self._embedder.spec.model, text)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            self.hits += 1
            if self._counted is not None:
                self._counted(True)
            return list(kept)
        self.misses += 1
        if self._counted is not None:
            self._counted(False)
        # On the queries' own lane where the embedder has one: never behind the turns being embedded.
        embed = (
            self._embedder.embed_query if isinstance(self._embedder, QueryEmbedder) else self._embedder.embed
        )
        vector: list[float] = (await embed([text]))[0].tolist()
        if self._capacity:
            self._kept[key] = tuple(vector)
            if len(self._kept) > self._capacity:
                self._kept.popitem(last=False)
        return vector

    def __len__(self) -> int:
        return len(self._kept)
