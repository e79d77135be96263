"""Each observation is also a long-term memory (type "observation", id observation_id(owner, entity,
text)) that search_memory finds, with a revision per change like facts. This module keeps the two in
step: the memories written before the graph stores an observation (so a call refused over quota stores
nothing), their revisions, the memories dropped when the graph did not keep their observation, and the
hybrid side of search_nodes, which finds entities by their observations' memories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mcp_memory.learning.writer import revision_of
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import (
    GraphEntity,
    GraphObservation,
    Memory,
    Scope,
    author_of,
    observation_id,
)
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.graph_base import GraphStore
from mcp_memory.storage.learning_base import RevisionStore

# Observations the hybrid side of search_nodes looks at, beyond the substring matches.
_HYBRID_HITS = 20


def observed(owner: str, name: str, text: str, at: datetime) -> GraphObservation:
    """A new observation of the owner's entity, with the id of the memory that mirrors it."""
    return GraphObservation(
        content=text, memory_id=observation_id(owner, name, text), created_at=at, author=author_of(owner)
    )


@dataclass(frozen=True)
class ObservationMemories:
    store: GraphStore
    long_term: LongTermStore
    embedder: Embedder
    tokens: TokenCounter
    revisions: RevisionStore | None = None

    async def memories(
        self, owner: str, pairs: Sequence[tuple[GraphEntity, GraphObservation]]
    ) -> list[Memory]:
        """The memories of these observations, embedded, not yet stored."""
        if not pairs:
            return []
        vectors = [
            memory_vectors(v) for v in await embed_passages(self.embedder, [o.content for _, o in pairs])
        ]
        return [
            Memory(
                id=o.memory_id,
                user_id=owner,
                type="observation",
                content=o.content,
                embedding=vector,
                passage_embeddings=passage_vectors,
                # Found by the entity's name too: "what do I know about Alice" reaches her observations.
                index_context=f"{entity.name} ({entity.entity_type})",
                metadata={"entity": entity.name, "entity_type": entity.entity_type},
                created_at=o.created_at,
                token_count=self.tokens.count(o.content),
                author=o.author,
            )
            for (entity, o), (vector, passage_vectors) in zip(pairs, vectors, strict=True)
        ]

    async def record(self, memories: Sequence[Memory], stored: set[str]) -> None:
        """One revision for each observation this call stored (not those another writer stored first)."""
        if self.revisions is None:
            return
        for memory in memories:
            if memory.id in stored:
                shown = memory.model_copy(update={"embedding": None})
                await self.revisions.append(
                    revision_of(shown, "create", "graph", source_text=memory.metadata["entity"])
                )

    async def drop_unheld(self, owner: str, lost: Sequence[GraphEntity]) -> None:
        """Memories written for entities another writer created first, whose words the graph does not hold."""
        held = {
            o.memory_id
            for e in await self.store.entities(owner, names=[e.name for e in lost])
            for o in e.observations
        }
        await self.forget(
            owner,
            [o.memory_id for e in lost for o in e.observations if o.memory_id not in held],
            revisions=False,
        )

    async def forget(self, owner: str, memory_ids: Sequence[str], *, revisions: bool = True) -> None:
        for memory_id in memory_ids:
            await self.long_term.forget(Scope(user_id=owner, memory_id=memory_id))
            if revisions and self.revisions is not None:
                await self.revisions.forget(Scope(user_id=owner, memory_id=memory_id))

    async def entities_found(
        self, owner: str, query: str, entities: Sequence[GraphEntity], matched: set[str], floor: float
    ) -> list[GraphEntity]:
        """Entities whose observations the hybrid search finds (by meaning as well as words), best first,
        after the substring matches: those at least `floor` close to the query (cosine)."""
        vector = [float(x) for x in (await self.embedder.embed([query]))[0]]
        hits = await self.long_term.search(
            owner, SearchQuery(text=query, types=["observation"], limit=_HYBRID_HITS), vector
        )
        # Close enough in meaning (the store's cosine): the recall prompt's floor for this embedder.
        by_name = {e.name: e for e in entities}
        found: list[GraphEntity] = []
        for hit in hits:
            name = hit.memory.metadata.get("entity")
            near = hit.cosine is not None and hit.cosine >= floor
            if near and name in by_name and name not in matched:
                matched.add(name)
                found.append(by_name[name])
        return found
