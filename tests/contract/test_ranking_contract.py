"""Every backend ranks alike: the same candidates give the same ranking (search/ranking.py).

The SQLite store finds its candidates in its own indexes. Cosmos DB's search runs here through its
`Queries` seam (storage/cosmos/search.py), answered as the database would answer for the same memories:
the local Cosmos-protocol server cannot run FullTextScore or VectorDistance. Its full-text engine ranks
the memories as SQLite's BM25 did (the same candidates), ranks only, as Cosmos DB does; its vector query
returns each memory's cosine. Both then go through the one ranking, for each fusion rule and mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_memory.models import Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import SearchesBy
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.documents import to_document
from mcp_memory.storage.cosmos.search import CosmosSearch
from tests.contract.conftest_long_term import embed, memory, open_sqlite

pytestmark = pytest.mark.anyio
USER = "ann"
CONTENTS = [
    "The telescope showed the Orion nebula clearly last night",
    "I cleaned the telescope lens before the trip",
    "A nebula is a cloud of gas and dust in space",
    "We watched the stars from the mountain cabin",
    "My sister bought a new camera for astrophotography",
    "The weather forecast says clear skies on Friday",
    "Dinner was pasta with tomato sauce",
    "Saturn's rings were visible through the small telescope",
]


class CosmosAnswers:
    """What Cosmos DB would answer for these memories: full text in `text_order`, by rank only; the
    vector query with each memory item's cosine; no passage items (every memory is one passage)."""

    def __init__(self, memories: Sequence[Memory], text_order: Sequence[str]) -> None:
        self.docs = {m.id: to_document(m, turn_ttl_seconds=None) for m in memories}
        self.text_order = list(text_order)

    async def __call__(
        self, container: object, queries: Sequence[sql.CosmosQuery]
    ) -> list[list[dict[str, Any]]]:
        return [self._answer(q) for q in queries]

    def _answer(self, query: sql.CosmosQuery) -> list[dict[str, Any]]:
        params = {p["name"]: p["value"] for p in query.parameters}
        limit = int(params.get("@limit", len(self.docs)))
        if "c.memory_id, c.passage_version" in query.sql:
            return []  # passage items
        if "ORDER BY RANK FullTextScore" in query.sql:
            return [dict(self.docs[i]) for i in self.text_order][:limit]
        if "AS score" in query.sql:
            vector = np.asarray(params["@vector"])
            scored = [{**d, "score": float(np.dot(vector, d["embedding"]))} for d in self.docs.values()]
            return sorted(scored, key=lambda d: -d["score"])[:limit]
        raise AssertionError(f"not a search query: {query.sql}")


class CosmosSide(SearchesBy):
    """The Cosmos DB store's search steps, on the search object it delegates them to."""

    def __init__(self, search: CosmosSearch) -> None:
        self._search = search


@pytest.mark.parametrize(
    ("mode", "fusion"), [("hybrid", "score"), ("hybrid", "rrf"), ("text", "score"), ("vector", "score")]
)
@pytest.mark.parametrize("text", ["telescope nebula", "Orion nebula telescope lens", "clear skies tonight"])
async def test_the_same_candidates_rank_the_same_on_every_backend(
    tmp_path: Path, mode: str, fusion: str, text: str
) -> None:
    memories = [memory(USER, f"m{i}", content, minutes=i) for i, content in enumerate(CONTENTS)]
    query = SearchQuery.model_validate({"text": text, "mode": mode, "fusion": fusion, "limit": 10})
    vector = None if mode == "text" else embed(text)
    async with open_sqlite(tmp_path / "memory.db") as store:
        await store.put(memories)
        by_words = await store.search(USER, query.model_copy(update={"mode": "text"}), None)
        on_sqlite = await store.search(USER, query, vector)
    cosmos = CosmosSearch(
        lambda types: [(object(), list(types))], CosmosAnswers(memories, [h.memory.id for h in by_words])
    )  # type: ignore[arg-type,list-item]

    on_cosmos = await CosmosSide(cosmos).search(USER, query, vector)

    assert on_sqlite, "the case finds something"
    assert [h.memory.id for h in on_cosmos] == [h.memory.id for h in on_sqlite]
    assert [h.cosine for h in on_cosmos] == pytest.approx([h.cosine for h in on_sqlite], abs=1e-5)
