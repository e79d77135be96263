"""Entity links: which memories (turns and facts) name which entities, and what search does with them.

A new turn or fact links to the graph's entities it names (their names, any case) and to the names,
places and titles the offline extractor finds (learning/entities.py); a new entity links back to the
turns and facts already in memory that name it. With graph.follow_links, search's ranking moves toward
the memories linked to the entities a query names and to their neighbours.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from mcp_memory.config import GraphSettings
from mcp_memory.learning.entities import EntityMatcher, key, mentions
from mcp_memory.llm.tokens import OFF_LOOP_CHARS
from mcp_memory.models import Hit, Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.graph_base import GraphStore

# How long this process trusts its list of an owner's entity names (another process may add some).
_NAMES_SECONDS = 30.0
# Memories a new entity is linked to right away: those its name finds in a text search.
_BACKLINKS = 200
# Creating more entities than this in one call (an import) leaves older memories unlinked.
_BACKLINK_ENTITIES = 100


@dataclass
class EntityLinks:
    settings: GraphSettings
    store: GraphStore
    long_term: LongTermStore
    # Per owner: a matcher of its entities' names and when it was read.
    _names: dict[str, tuple[float, EntityMatcher]] = field(default_factory=dict, repr=False)

    async def link_memory(self, memory: Memory) -> int:
        """Link a new turn or fact to the entities it names: the graph's entities (their names, any
        case) and the names, places and titles the offline extractor finds (learning/entities.py),
        which need not be entities of the graph yet. Returns how many links are new."""
        if not self.settings.link_memories or memory.type not in ("turn", "fact"):
            return 0
        names = await self.linked_names(memory.user_id, memory.content)
        links = [(name, memory.id, memory.thread_id) for name in names]
        return await self.store.link(memory.user_id, links) if links else 0

    async def linked_names(self, owner: str, text: str) -> list[str]:
        """The names a text links to: the graph's own spelling of an entity it names, else as written."""
        matcher = await self._matcher(owner)
        if len(text) <= OFF_LOOP_CHARS:
            return _names_in(matcher, text)
        return await anyio.to_thread.run_sync(_names_in, matcher, text)

    def changed(self, owner: str) -> None:
        """The owner's graph changed: read its names again next time."""
        self._names.pop(owner, None)

    async def _matcher(self, owner: str) -> EntityMatcher:
        cached = self._names.get(owner)
        if cached is not None and time.monotonic() - cached[0] < _NAMES_SECONDS:
            return cached[1]
        matcher = EntityMatcher(await self.store.names(owner))
        self._names[owner] = (time.monotonic(), matcher)
        return matcher

    async def follow_links(
        self, owner: str, query: str, hits: list[Hit], limit: int, weight: float
    ) -> list[Hit]:
        """Search's ranking, moved by links (graph.follow_links): a hit linked to an entity the query
        names gains, and one linked to a neighbour of it (a relation's other end) gains half as much;
        an entity linked to many memories says less about each, so its gain is divided by how many."""
        named = await self.linked_names(owner, query)
        if not named or not hits:
            return hits[:limit]
        weights = dict.fromkeys(named, 1.0)
        for relation in await self.store.relations(owner, touching=named):
            for end in (relation.source, relation.target):
                weights.setdefault(end, 0.5)
        linked: dict[str, set[str]] = {}
        for name, memory_id in await self.store.linked(owner, list(weights)):
            linked.setdefault(name, set()).add(memory_id)
        gain: dict[str, float] = {}
        for name, memory_ids in linked.items():
            share = weights[name] / math.log2(2 + len(memory_ids))
            for memory_id in memory_ids:
                gain[memory_id] = gain.get(memory_id, 0.0) + share
        moved = [
            h.model_copy(update={"score": h.score * (1 + weight * gain.get(h.memory.id, 0.0))}) for h in hits
        ]
        return sorted(moved, key=lambda h: h.score, reverse=True)[:limit]

    async def link_back(self, owner: str, names: Sequence[str]) -> None:
        """Link new entities to the turns and facts already in memory that name them."""
        if not self.settings.link_memories or not names or len(names) > _BACKLINK_ENTITIES:
            return
        for name in names:
            matcher = EntityMatcher([name])
            hits = await self.long_term.search(
                owner, SearchQuery(text=name, mode="text", types=["turn", "fact"], limit=_BACKLINKS), None
            )
            links = [(name, h.memory.id, h.memory.thread_id) for h in hits if matcher.find(h.memory.content)]
            if links:
                await self.store.link(owner, links)


def _names_in(matcher: EntityMatcher, text: str) -> list[str]:
    """The graph's names the text holds (in the graph's spelling), then the names it mentions anew."""
    found = matcher.find(text)
    known = {key(name) for name in found}
    return found + [m.name for m in mentions(text) if key(m.name) not in known]
